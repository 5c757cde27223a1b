#include "kagent.h"

// y[r, :] = gelu((x[r, :] - mean) * rstd * gamma + beta), rstd = rsqrtf(var + eps) with the
// biased variance (nn.LayerNorm), gelu the exact erf form 0.5 * v * (1 + erff(v / sqrt(2))).
//
// One pass: reads x once, writes y once (eager: layer_norm kernel + gelu kernel, 4 passes).
// Launch: one 256-thread block per row (grid = min(rows, 2^30), rows strided by gridDim.x).
//  - layernorm_gelu_vec<NV>: D % 4 == 0, pointers 16-byte aligned, D / 4 <= 256 * NV (NV in 1, 2,
//    4, 8): thread t keeps float4 #(t + 256 * i), i < NV, in registers; exact two-pass statistics
//    from registers (mean first, then sum of squared deviations), fp32 block reductions.
//  - layernorm_gelu_generic: any D; the same two-pass statistics re-reading the row (L1/L2 hits).

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float gelu1(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }

__device__ __forceinline__ float warp_allsum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block; every thread gets the same value. sh: 32 floats of shared memory.
// Ends with a barrier so sh can be reused right away (this kernel reduces twice per row).
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

template <int NV>
__global__ void __launch_bounds__(kThreads)
layernorm_gelu_vec(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                   float* __restrict__ y, int64_t rows, int D, float eps) {
  __shared__ float sh[32];
  const int D4 = D >> 2;
  const float4* __restrict__ g4 = reinterpret_cast<const float4*>(gamma);
  const float4* __restrict__ b4 = reinterpret_cast<const float4*>(beta);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float4* __restrict__ xr = reinterpret_cast<const float4*>(x + row * D);
    float4* __restrict__ yr = reinterpret_cast<float4*>(y + row * D);
    float4 v[NV];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int c = threadIdx.x + i * kThreads;
      v[i] = c < D4 ? xr[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
    }
    const float mean = block_allsum(s, sh) / (float)D;
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int c = threadIdx.x + i * kThreads;
      if (c < D4) {  // padding lanes hold 0, not mean: keep them out of the variance
        const float dx = v[i].x - mean, dy = v[i].y - mean, dz = v[i].z - mean, dw = v[i].w - mean;
        q += dx * dx + dy * dy + dz * dz + dw * dw;
      }
    }
    const float var = block_allsum(q, sh) / (float)D;
    const float rstd = rsqrtf(var + eps);
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int c = threadIdx.x + i * kThreads;
      if (c < D4) {
        const float4 g = g4[c];
        const float4 b = b4[c];
        float4 o;
        o.x = gelu1((v[i].x - mean) * rstd * g.x + b.x);
        o.y = gelu1((v[i].y - mean) * rstd * g.y + b.y);
        o.z = gelu1((v[i].z - mean) * rstd * g.z + b.z);
        o.w = gelu1((v[i].w - mean) * rstd * g.w + b.w);
        yr[c] = o;
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads)
layernorm_gelu_generic(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                       float* __restrict__ y, int64_t rows, int D, float eps) {
  __shared__ float sh[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* __restrict__ xr = x + row * D;
    float* __restrict__ yr = y + row * D;
    float s = 0.0f;
    for (int c = threadIdx.x; c < D; c += kThreads) s += xr[c];
    const float mean = block_allsum(s, sh) / (float)D;
    float q = 0.0f;
    for (int c = threadIdx.x; c < D; c += kThreads) {
      const float d = xr[c] - mean;
      q += d * d;
    }
    const float rstd = rsqrtf(block_allsum(q, sh) / (float)D + eps);
    for (int c = threadIdx.x; c < D; c += kThreads) yr[c] = gelu1((xr[c] - mean) * rstd * gamma[c] + beta[c]);
  }
}

}  // namespace

KAGENT_EXPORT void layernorm_gelu(const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
                                  int64_t dim, float eps) {
  if (rows <= 0 || dim <= 0) return;
  const unsigned grid = (unsigned)(rows < ((int64_t)1 << 30) ? rows : ((int64_t)1 << 30));
  const int D = (int)dim;
  const uintptr_t bits = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(gamma) |
                         reinterpret_cast<uintptr_t>(beta) | reinterpret_cast<uintptr_t>(y);
  const int64_t d4 = dim / 4;
  if (dim % 4 == 0 && (bits & 15) == 0 && d4 <= 8 * kThreads) {
    if (d4 <= kThreads) layernorm_gelu_vec<1><<<grid, kThreads>>>(x, gamma, beta, y, rows, D, eps);
    else if (d4 <= 2 * kThreads) layernorm_gelu_vec<2><<<grid, kThreads>>>(x, gamma, beta, y, rows, D, eps);
    else if (d4 <= 4 * kThreads) layernorm_gelu_vec<4><<<grid, kThreads>>>(x, gamma, beta, y, rows, D, eps);
    else layernorm_gelu_vec<8><<<grid, kThreads>>>(x, gamma, beta, y, rows, D, eps);
  } else {
    layernorm_gelu_generic<<<grid, kThreads>>>(x, gamma, beta, y, rows, D, eps);
  }
}
