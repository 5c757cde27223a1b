#include "kagent.h"

// nn.LSTMCell stepped over x (T, B, I): gates (i, f, g, o) = x_t W_ih^T + h W_hh^T + b_ih + b_hh
// (W_ih (4H, I), W_hh (4H, H) row-major, gate k = rows [kH, (k+1)H)); c' = f*c + i*g;
// h' = o * tanh(c'); sigmoid(v) = 1 / (1 + expf(-v)) as in eager's fused LSTM cell.
//
// Eager per step: 2 GEMM launches + 1 fused-cell launch + Python dispatch. Ours: the C++ loop in
// lstm_seq launches ONE fused kernel per step (gate GEMV for the whole batch + cell update); h/c
// ping-pong between the caller's output and scratch buffers, the parity chosen so the last step
// writes h_out/c_out. No host sync, no state kept between calls.
//
// lstm_step launch: grid (ceil(H / 8), ceil(B / 16)), 512 threads = 4 k-groups of 128. Block
// (bx, by) owns hidden units j0 = 8 bx .. j0 + 7 and batch rows b0 = 16 by .. b0 + 15; thread t of
// a k-group works on (b0 + t / 8, j0 + t % 8) for all 4 gates. The reduction runs over chunks
// of 128: chunks 0 .. nqx-1 walk K = I with (x_t, W_ih), the rest walk K = H with (h, W_hh). Per
// chunk the 16 input rows and the 4 x 8 weight rows are staged in shared memory (coalesced
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
constexpr int NG = 4;                  // gates (i, f, g, o)
constexpr int XPT = TB * KC / NT;       // input values per thread per chunk (4)
constexpr int WPT = NG * TJ * KC / NT;  // weight values per thread per chunk (8)
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
lstm_step(const float* __restrict__ x_t, const float* __restrict__ h, const float* __restrict__ c,
          const float* __restrict__ w_ih, const float* __restrict__ w_hh, const float* __restrict__ b_ih,
          const float* __restrict__ b_hh, float* __restrict__ h_next, float* __restrict__ c_next, int B, int I,
          int H) {
  const StepArgs a = step_args(x_t, h, w_ih, w_hh, B, I, H);
  float ax[NG], ah[NG];
  step_gemv(a, ax, ah);
  if (threadIdx.x >= GT) return;
  const int b = a.b0 + threadIdx.x / TJ, j = a.j0 + threadIdx.x % TJ;
  if (b < B && j < H) {
    const float ig = sigmoidf_(ax[0] + ah[0] + b_ih[j] + b_hh[j]);
    const float fg = sigmoidf_(ax[1] + ah[1] + b_ih[H + j] + b_hh[H + j]);
    const float gg = tanhf(ax[2] + ah[2] + b_ih[2 * H + j] + b_hh[2 * H + j]);
    const float og = sigmoidf_(ax[3] + ah[3] + b_ih[3 * H + j] + b_hh[3 * H + j]);
    const int64_t o = (int64_t)b * H + j;
    const float cy = fg * c[o] + ig * gg;
    c_next[o] = cy;
    h_next[o] = og * tanhf(cy);
  }
}

__global__ void copy2(const float* __restrict__ a, float* __restrict__ a_out, const float* __restrict__ b,
                      float* __restrict__ b_out, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    a_out[i] = a[i];
    b_out[i] = b[i];
  }
}

}  // namespace

// x (T, B, I); h0, c0 (B, H); outputs h_out, c_out (B, H); h_tmp, c_tmp (B, H) scratch.
KAGENT_EXPORT void lstm_seq(const float* x, const float* h0, const float* c0, const float* w_ih, const float* w_hh,
                            const float* b_ih, const float* b_hh, float* h_out, float* c_out, float* h_tmp,
                            float* c_tmp, int64_t T, int64_t B, int64_t I, int64_t H) {
  if (B <= 0 || H <= 0) return;
  if (T <= 0) {  // no step: the result is (h0, c0)
    const int64_t n = B * H;
    const int64_t blocks = (n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096;
    copy2<<<(unsigned)blocks, 256>>>(h0, h_out, c0, c_out, n);
    return;
  }
  const dim3 grid((unsigned)((H + TJ - 1) / TJ), (unsigned)((B + TB - 1) / TB));
  const float* hp = h0;
  const float* cp = c0;
  for (int64_t t = 0; t < T; ++t) {
    const bool to_out = ((T - 1 - t) & 1) == 0;  // step T-1 writes the outputs
    float* hn = to_out ? h_out : h_tmp;
    float* cn = to_out ? c_out : c_tmp;
    lstm_step<<<grid, NT>>>(x + t * B * I, hp, cp, w_ih, w_hh, b_ih, b_hh, hn, cn, (int)B, (int)I, (int)H);
    hp = hn;
    cp = cn;
  }
}
