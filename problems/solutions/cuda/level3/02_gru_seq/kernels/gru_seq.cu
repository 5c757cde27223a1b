#include "kagent.h"

// nn.GRUCell stepped over x (T, B, I), weights W_ih (3H, I), W_hh (3H, H) row-major, gate order
// (r, z, n): r = sigmoid(x W_ir + b_ir + h W_hr + b_hr), z = sigmoid(x W_iz + b_iz + h W_hz + b_hz),
// n = tanh(x W_in + b_in + r * (h W_hn + b_hn)), h' = n + z * (h - n) (eager's fused GRU cell
// form); sigmoid(v) = 1 / (1 + expf(-v)).
//
// Eager per step: 2 GEMM launches + 1 fused-cell launch + Python dispatch. Ours: the C++ loop in
// gru_seq launches ONE fused kernel per step (gate GEMV for the whole batch + cell update); h
// ping-pongs between the caller's output and a scratch buffer, the parity chosen so the last step
// writes h_out. No host sync, no state kept between calls.
//
// gru_step launch: grid (ceil(H / 8), ceil(B / 16)), 512 threads = 4 k-groups of 128. Block
// (bx, by) owns hidden units j0 = 8 bx .. j0 + 7 and batch rows b0 = 16 by .. b0 + 15; thread t of
// a k-group works on (b0 + t / 8, j0 + t % 8) for all 3 gates. The reduction runs over chunks
// of 128: chunks 0 .. nqx-1 walk K = I with (x_t, W_ih), the rest walk K = H with (h, W_hh). Per
// chunk the 16 input rows and the 3 x 8 weight rows are staged in shared memory (coalesced
// 128-byte row segments, zero-filled outside B / H / K, rows padded to 129 floats: conflict-free),
// barrier; k-group g multiplies columns g, g + 4, ...; barrier. Register double buffering: chunk
// q+1 is loaded from global (L2) into registers during chunk q's FMAs. Then k-groups 1..3 pass
// their partial sums through shared memory, barrier, and k-group 0 adds them in a fixed order and
// applies the cell update. The x part and the h part accumulate separately (like eager's two
// GEMMs) and are combined in the epilogue. fp32 FMA throughout; deterministic.

namespace {

constexpr int TB = 16;                  // batch rows per block
constexpr int TJ = 8;                   // hidden units per block
constexpr int KS = 4;                   // k-groups (in-block split of the reduction)
constexpr int KC = 128;                 // reduction chunk
constexpr int GT = TB * TJ;             // threads per k-group (128)
constexpr int NT = KS * GT;             // threads per block (512)
constexpr int NG = 3;                  // gates (r, z, n)
constexpr int XPT = TB * KC / NT;       // input values per thread per chunk (4)
constexpr int WPT = NG * TJ * KC / NT;  // weight values per thread per chunk (6)
static_assert((TB * KC) % NT == 0 && (NG * TJ * KC) % NT == 0 && KC % KS == 0, "tile shape");

__device__ __forceinline__ float sigmoidf_(float v) { return 1.0f / (1.0f + expf(-v)); }

struct StepArgs {
  const float* x_t;   // (B, I)
  const float* h;     // (B, H)
  const float* w_ih;  // (NG H, I)
  const float* w_hh;  // (NG H, H)
  int B, I, H, b0, j0, nqx;
};

// Global -> registers for chunk q: element e = threadIdx.x + u * NT of the chunk's TB x KC input
// tile / (NG TJ) x KC weight tile sits at row e / KC, column e % KC (a warp reads 32 consecutive
// k of one row: one 128-byte segment). Zero outside B, H and K.
__device__ __forceinline__ void load_chunk(const StepArgs& a, int q, float (&rx)[XPT], float (&rw)[WPT]) {
  const bool hp = q >= a.nqx;
  const float* __restrict__ in = hp ? a.h : a.x_t;
  const float* __restrict__ W = hp ? a.w_hh : a.w_ih;
  const int K = hp ? a.H : a.I;
  const int k0 = (hp ? q - a.nqx : q) * KC;
#pragma unroll
  for (int u = 0; u < XPT; ++u) {
    const int e = threadIdx.x + u * NT, r = e / KC, c = e % KC, b = a.b0 + r, k = k0 + c;
    rx[u] = (b < a.B && k < K) ? in[(int64_t)b * K + k] : 0.0f;
  }
#pragma unroll
  for (int u = 0; u < WPT; ++u) {
    const int e = threadIdx.x + u * NT, r = e / KC, c = e % KC, g = r / TJ, j = a.j0 + r % TJ, k = k0 + c;
    rw[u] = (j < a.H && k < K) ? W[((int64_t)g * a.H + j) * K + k] : 0.0f;
  }
}

__device__ __forceinline__ void store_chunk(const float (&rx)[XPT], const float (&rw)[WPT], float (*xs)[KC + 1],
                                            float (*ws)[KC + 1]) {
#pragma unroll
  for (int u = 0; u < XPT; ++u) {
    const int e = threadIdx.x + u * NT;
    xs[e / KC][e % KC] = rx[u];
  }
#pragma unroll
  for (int u = 0; u < WPT; ++u) {
    const int e = threadIdx.x + u * NT;
    ws[e / KC][e % KC] = rw[u];
  }
}

// k-group grp takes columns c = grp, grp + KS, ... of the chunk.
__device__ __forceinline__ void fma_chunk(float (&acc)[NG], const float (*xs)[KC + 1], const float (*ws)[KC + 1],
                                          int grp, int tb, int tj) {
#pragma unroll 8
  for (int q = 0; q < KC / KS; ++q) {
    const int c = q * KS + grp;
    const float xv = xs[tb][c];
#pragma unroll
    for (int g = 0; g < NG; ++g) acc[g] = fmaf(xv, ws[g * TJ + tj][c], acc[g]);
  }
}

// Runs the whole reduction of one step; on return, threads of k-group 0 (threadIdx.x < GT) hold
// the complete sums ax (x part) and ah (h part) for their (b, j). Other threads' values are
// partial. Contains barriers: every thread of the block must call it.
__device__ __forceinline__ void step_gemv(const StepArgs& a, float (&ax)[NG], float (&ah)[NG]) {
  __shared__ float xs[TB][KC + 1];
  __shared__ float ws[NG * TJ][KC + 1];
  __shared__ float red[KS - 1][2 * NG][GT];
  const int grp = threadIdx.x / GT, t = threadIdx.x % GT, tb = t / TJ, tj = t % TJ;
  const int nq = a.nqx + (a.H + KC - 1) / KC;
#pragma unroll
  for (int g = 0; g < NG; ++g) ax[g] = ah[g] = 0.0f;
  float rx[XPT], rw[WPT];
  load_chunk(a, 0, rx, rw);
  for (int q = 0; q < nq; ++q) {
    store_chunk(rx, rw, xs, ws);
    __syncthreads();
    if (q + 1 < nq) load_chunk(a, q + 1, rx, rw);  // in flight during the FMAs below
    if (q < a.nqx) fma_chunk(ax, xs, ws, grp, tb, tj);  // block-uniform branch
    else fma_chunk(ah, xs, ws, grp, tb, tj);
    __syncthreads();
  }
  if (grp > 0) {
#pragma unroll
    for (int g = 0; g < NG; ++g) {
      red[grp - 1][g][t] = ax[g];
      red[grp - 1][NG + g][t] = ah[g];
    }
  }
  __syncthreads();
  if (grp == 0) {
#pragma unroll
    for (int s = 0; s < KS - 1; ++s)
#pragma unroll
      for (int g = 0; g < NG; ++g) {
        ax[g] += red[s][g][t];
        ah[g] += red[s][NG + g][t];
      }
  }
}

__device__ __forceinline__ StepArgs step_args(const float* x_t, const float* h, const float* w_ih, const float* w_hh,
                                              int B, int I, int H) {
  StepArgs a;
  a.x_t = x_t;
  a.h = h;
  a.w_ih = w_ih;
  a.w_hh = w_hh;
  a.B = B;
  a.I = I;
  a.H = H;
  a.b0 = blockIdx.y * TB;
  a.j0 = blockIdx.x * TJ;
  a.nqx = (I + KC - 1) / KC;
  return a;
}

__global__ void __launch_bounds__(NT)
gru_step(const float* __restrict__ x_t, const float* __restrict__ h, const float* __restrict__ w_ih,
         const float* __restrict__ w_hh, const float* __restrict__ b_ih, const float* __restrict__ b_hh,
         float* __restrict__ h_next, int B, int I, int H) {
  const StepArgs a = step_args(x_t, h, w_ih, w_hh, B, I, H);
  float ax[NG], ah[NG];
  step_gemv(a, ax, ah);
  if (threadIdx.x >= GT) return;
  const int b = a.b0 + threadIdx.x / TJ, j = a.j0 + threadIdx.x % TJ;
  if (b < B && j < H) {
    const float rg = sigmoidf_(ax[0] + ah[0] + b_ih[j] + b_hh[j]);
    const float zg = sigmoidf_(ax[1] + ah[1] + b_ih[H + j] + b_hh[H + j]);
    const float ng = tanhf(ax[2] + b_ih[2 * H + j] + rg * (ah[2] + b_hh[2 * H + j]));
    const int64_t o = (int64_t)b * H + j;
    h_next[o] = ng + zg * (h[o] - ng);
  }
}

__global__ void copy1(const float* __restrict__ a, float* __restrict__ a_out, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    a_out[i] = a[i];
}

}  // namespace

// x (T, B, I); h0 (B, H); output h_out (B, H); h_tmp (B, H) scratch.
KAGENT_EXPORT void gru_seq(const float* x, const float* h0, const float* w_ih, const float* w_hh, const float* b_ih,
                           const float* b_hh, float* h_out, float* h_tmp, int64_t T, int64_t B, int64_t I, int64_t H) {
  if (B <= 0 || H <= 0) return;
  if (T <= 0) {  // no step: the result is h0
    const int64_t n = B * H;
    const int64_t blocks = (n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096;
    copy1<<<(unsigned)blocks, 256>>>(h0, h_out, n);
    return;
  }
  const dim3 grid((unsigned)((H + TJ - 1) / TJ), (unsigned)((B + TB - 1) / TB));
  const float* hp = h0;
  for (int64_t t = 0; t < T; ++t) {
    float* hn = ((T - 1 - t) & 1) == 0 ? h_out : h_tmp;  // step T-1 writes the output
    gru_step<<<grid, NT>>>(x + t * B * I, hp, w_ih, w_hh, b_ih, b_hh, hn, (int)B, (int)I, (int)H);
    hp = hn;
  }
}
