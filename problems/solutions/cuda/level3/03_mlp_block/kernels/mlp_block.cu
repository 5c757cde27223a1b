#include "kagent.h"

// y = x + fc2(gelu(fc1(layernorm(x)))), x (M, D), fc1: W1 (HID, D), b1; fc2: W2 (D, HID), b2
// (nn.Linear layout: y = a @ W^T + b, W row-major (out, in)); gelu exact erf form.
//
// Eager: layer_norm, addmm, gelu, addmm, add = 5 launches (plus the interpreter between them).
// Ours: 3 launches from one host call, with gelu fused into fc1's epilogue and the residual add
// into fc2's:
//  1. layernorm_rows: one 128-thread block per row (grid = min(M, 2^30), rows strided), the row
//     in registers when D <= 1024 (else re-read), exact two-pass mean / biased variance (fp32
//     block reductions), writes xn (M, D) into the OUTPUT buffer (used as scratch: kernel 2 has
//     consumed it before kernel 3 overwrites it, by stream order; saves an allocation).
//  2. gemm_bias_epi<.., EPI_GELU>: hbuf (M, HID) = gelu(xn @ W1^T + b1).
//  3. gemm_bias_epi<.., EPI_RESID>: out (M, D) = x + (hbuf @ W2^T + b2).
// GEMM (SIMT fp32 FMA, no tensor cores / TF32): C (M, N) = A (M, K) @ W (N, K)^T. Block tile
// BM x BN, grid (ceil(N / BN), ceil(M / BM)). The block's KS * (BM/4) * (BN/4) threads form KS
// k-groups of (BM/4) * (BN/4) threads; each thread owns a 4 x 4 micro-tile (rows tm*4.., cols
// tn*4..). K is walked in chunks of BK: the A chunk (BM x BK) and the W chunk (BN x BK) are read
// coalesced along K (element e = tid + u * NT -> row e / BK, col e % BK; zero outside M / N / K),
// stored k-major (As[k][m], Ws[k][n], rows padded by 4 floats, 16-byte aligned for the float4
// reads), barrier; k-group g multiplies k = q * KS + g (q < BK / KS) of the chunk; barrier.
// Register double buffering: chunk c+1 is loaded from global into registers during chunk c's
// FMAs. At the end the KS partial tiles go through shared memory (reusing the tile buffer) and
// are summed in a fixed order (deterministic in-block split-K), then bias + epilogue, coalesced
// stores with M / N guards.
// Configs: BM = BN = 32, BK = 64, KS = 4 (256 threads) when that tiling gives >= 96 blocks
// (fc1 at 64 x 2048: 128 blocks, 8 chunks); otherwise BM = BN = 16, BK = 256, KS = 16 (256
// threads; fc2 at 64 x 512: 128 blocks with a 16-way in-block split of K = 2048, 8 chunks).

namespace {

constexpr int kLnThreads = 128;
enum { EPI_GELU = 0, EPI_RESID = 1 };

__device__ __forceinline__ float gelu1(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__device__ __forceinline__ float warp_allsum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block; every thread gets the same value. sh: 32 floats. Ends with a barrier.
__device__ __forceinline__ float block_allsum(float v, float* sh) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  v = warp_allsum(v);
  if (lane == 0) sh[wid] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? sh[lane] : 0.0f;
  v = warp_allsum(v);
  __syncthreads();
  return v;
}

// NV > 0: the row is held in registers (element tid + 128 i, i < NV; needs D <= 128 NV).
// NV == 0: any D, the row is re-read (L1 / L2 hits).
template <int NV>
__global__ void __launch_bounds__(kLnThreads)
layernorm_rows(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
               float* __restrict__ xn, int64_t M, int D, float eps) {
  __shared__ float sh[32];
  for (int64_t row = blockIdx.x; row < M; row += gridDim.x) {
    const float* __restrict__ xr = x + row * D;
    float* __restrict__ yr = xn + row * D;
    if (NV > 0) {
      float v[NV > 0 ? NV : 1];
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < NV; ++i) {
        const int c = threadIdx.x + i * kLnThreads;
        v[i] = c < D ? xr[c] : 0.0f;
        s += v[i];
      }
      const float mean = block_allsum(s, sh) / (float)D;
      float q = 0.0f;
#pragma unroll
      for (int i = 0; i < NV; ++i) {
        const int c = threadIdx.x + i * kLnThreads;
        const float d = v[i] - mean;
        if (c < D) q += d * d;
      }
      const float rstd = rsqrtf(block_allsum(q, sh) / (float)D + eps);
#pragma unroll
      for (int i = 0; i < NV; ++i) {
        const int c = threadIdx.x + i * kLnThreads;
        if (c < D) yr[c] = (v[i] - mean) * rstd * gamma[c] + beta[c];
      }
    } else {
      float s = 0.0f;
      for (int c = threadIdx.x; c < D; c += kLnThreads) s += xr[c];
      const float mean = block_allsum(s, sh) / (float)D;
      float q = 0.0f;
      for (int c = threadIdx.x; c < D; c += kLnThreads) {
        const float d = xr[c] - mean;
        q += d * d;
      }
      const float rstd = rsqrtf(block_allsum(q, sh) / (float)D + eps);
      for (int c = threadIdx.x; c < D; c += kLnThreads) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
    }
  }
}

template <int BM, int BN, int BK, int KS, int EPI>
__global__ void __launch_bounds__(KS * (BM / 4) * (BN / 4))
gemm_bias_epi(const float* __restrict__ A, const float* __restrict__ W, const float* __restrict__ bias,
              const float* __restrict__ resid, float* __restrict__ C, int M, int N, int K) {
  constexpr int GT = (BM / 4) * (BN / 4);  // threads per k-group
  constexpr int NT = KS * GT;
  constexpr int KPG = BK / KS;             // k per group per chunk
  constexpr int LA = BM * BK / NT;         // A values per thread per chunk
  constexpr int LW = BN * BK / NT;         // W values per thread per chunk
  static_assert(BM % 4 == 0 && BN % 4 == 0 && BK % KS == 0, "tile shape");
  static_assert((BM * BK) % NT == 0 && (BN * BK) % NT == 0 && (BM * BN) % NT == 0, "tile / thread count");

  // One buffer: As (BK x (BM+4)) and Ws (BK x (BN+4)) during the K loop, then the KS partial
  // tiles (KS x BM x BN); the loop's last barrier separates the two uses.
  constexpr int kTileFloats = BK * (BM + 4) + BK * (BN + 4);
  constexpr int kRedFloats = KS * BM * BN;
  __shared__ __align__(16) float smem[kTileFloats > kRedFloats ? kTileFloats : kRedFloats];
  float (*As)[BM + 4] = reinterpret_cast<float (*)[BM + 4]>(smem);
  float (*Ws)[BN + 4] = reinterpret_cast<float (*)[BN + 4]>(smem + BK * (BM + 4));
  float (*red)[BM][BN] = reinterpret_cast<float (*)[BM][BN]>(smem);

  const int tid = threadIdx.x;
  const int grp = tid / GT, t = tid % GT, tm = t / (BN / 4), tn = t % (BN / 4);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int nchunks = (K + BK - 1) / BK;

  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

  float ra[LA], rw[LW];
  auto load = [&](int kc) {
    const int k0 = kc * BK;
#pragma unroll
    for (int u = 0; u < LA; ++u) {
      const int e = tid + u * NT, r = e / BK, c = e % BK, m = m0 + r, k = k0 + c;
      ra[u] = (m < M && k < K) ? A[(int64_t)m * K + k] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < LW; ++u) {
      const int e = tid + u * NT, r = e / BK, c = e % BK, n = n0 + r, k = k0 + c;
      rw[u] = (n < N && k < K) ? W[(int64_t)n * K + k] : 0.0f;
    }
  };

  if (nchunks > 0) load(0);
  for (int kc = 0; kc < nchunks; ++kc) {
#pragma unroll
    for (int u = 0; u < LA; ++u) {
      const int e = tid + u * NT;
      As[e % BK][e / BK] = ra[u];
    }
#pragma unroll
    for (int u = 0; u < LW; ++u) {
      const int e = tid + u * NT;
      Ws[e % BK][e / BK] = rw[u];
    }
    __syncthreads();
    if (kc + 1 < nchunks) load(kc + 1);  // in flight during the FMAs below
#pragma unroll
    for (int q = 0; q < KPG; ++q) {
      const int kk = q * KS + grp;
      const float4 a = *reinterpret_cast<const float4*>(&As[kk][tm * 4]);
      const float4 w = *reinterpret_cast<const float4*>(&Ws[kk][tn * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w};
      const float wv[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], wv[j], acc[i][j]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 4; ++i)
    *reinterpret_cast<float4*>(&red[grp][tm * 4 + i][tn * 4]) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  __syncthreads();
#pragma unroll
  for (int u = 0; u < BM * BN / NT; ++u) {
    const int e = tid + u * NT, r = e / BN, c = e % BN, m = m0 + r, n = n0 + c;
    if (m < M && n < N) {
      float s = red[0][r][c];
#pragma unroll
      for (int g = 1; g < KS; ++g) s += red[g][r][c];
      const float v = s + bias[n];
      const int64_t o = (int64_t)m * N + n;
      C[o] = EPI == EPI_GELU ? gelu1(v) : resid[o] + v;
    }
  }
}

template <int EPI>
void launch_gemm(const float* A, const float* W, const float* bias, const float* resid, float* C, int64_t M,
                 int64_t N, int64_t K) {
  if (M <= 0 || N <= 0) return;
  const int64_t big_blocks = ((M + 31) / 32) * ((N + 31) / 32);
  if (big_blocks >= 96) {
    const dim3 grid((unsigned)((N + 31) / 32), (unsigned)((M + 31) / 32));
    gemm_bias_epi<32, 32, 64, 4, EPI><<<grid, 256>>>(A, W, bias, resid, C, (int)M, (int)N, (int)K);
  } else {
    const dim3 grid((unsigned)((N + 15) / 16), (unsigned)((M + 15) / 16));
    gemm_bias_epi<16, 16, 256, 16, EPI><<<grid, 256>>>(A, W, bias, resid, C, (int)M, (int)N, (int)K);
  }
}

}  // namespace

// x (M, D); ln_w, ln_b (D); w1 (HID, D), b1 (HID); w2 (D, HID), b2 (D); hbuf (M, HID) scratch;
// out (M, D), also the scratch of the normalised x between kernels 1 and 2.
KAGENT_EXPORT void mlp_block(const float* x, const float* ln_w, const float* ln_b, const float* w1, const float* b1,
                             const float* w2, const float* b2, float* hbuf, float* out, int64_t M, int64_t D,
                             int64_t HID, float eps) {
  if (M <= 0 || D <= 0) return;
  float* xn = out;
  const unsigned ln_grid = (unsigned)(M < ((int64_t)1 << 30) ? M : ((int64_t)1 << 30));
  if (D <= kLnThreads) layernorm_rows<1><<<ln_grid, kLnThreads>>>(x, ln_w, ln_b, xn, M, (int)D, eps);
  else if (D <= 2 * kLnThreads) layernorm_rows<2><<<ln_grid, kLnThreads>>>(x, ln_w, ln_b, xn, M, (int)D, eps);
  else if (D <= 4 * kLnThreads) layernorm_rows<4><<<ln_grid, kLnThreads>>>(x, ln_w, ln_b, xn, M, (int)D, eps);
  else if (D <= 8 * kLnThreads) layernorm_rows<8><<<ln_grid, kLnThreads>>>(x, ln_w, ln_b, xn, M, (int)D, eps);
  else layernorm_rows<0><<<ln_grid, kLnThreads>>>(x, ln_w, ln_b, xn, M, (int)D, eps);
  launch_gemm<EPI_GELU>(xn, w1, b1, nullptr, hbuf, M, HID, D);
  launch_gemm<EPI_RESID>(hbuf, w2, b2, x, out, M, D, HID);
}
