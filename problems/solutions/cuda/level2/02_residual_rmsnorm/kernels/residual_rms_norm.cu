#include "kagent.h"

// h = x + res; y[r, :] = h[r, :] * rsqrtf(mean(h[r, :]^2) + eps) * w, rows of length D.
//
// One pass: reads x and res once, writes y once; h never touches memory (eager: add, pow, mean,
// add, rsqrt, mul, mul: 7 kernels, ~10 full-size passes).
// Launch: one 256-thread block per row (grid = min(rows, 2^30), rows strided by gridDim.x).
//  - residual_rms_norm_vec<NV>: D % 4 == 0, pointers 16-byte aligned, D / 4 <= 256 * NV (NV in 1,
//    2, 4, 8): thread t keeps h float4 #(t + 256 * i), i < NV, in registers; sum of squares in
//    fp32 (per thread, warp butterfly, then across the 8 warps).
//  - residual_rms_norm_generic: any D; recomputes h in the second pass (re-read hits L1/L2).

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float warp_allsum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block; every thread gets the same value. sh: 32 floats of shared memory.
// Ends with a barrier so sh can be reused right away.
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
residual_rms_norm_vec(const float* __restrict__ x, const float* __restrict__ res, const float* __restrict__ w,
                      float* __restrict__ y, int64_t rows, int D, float eps) {
  __shared__ float sh[32];
  const int D4 = D >> 2;
  const float4* __restrict__ w4 = reinterpret_cast<const float4*>(w);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float4* __restrict__ xr = reinterpret_cast<const float4*>(x + row * D);
    const float4* __restrict__ rr = reinterpret_cast<const float4*>(res + row * D);
    float4* __restrict__ yr = reinterpret_cast<float4*>(y + row * D);
    float4 h[NV];
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int c = threadIdx.x + i * kThreads;
      h[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (c < D4) {
        const float4 a = xr[c];
        const float4 b = rr[c];
        h[i].x = a.x + b.x;
        h[i].y = a.y + b.y;
        h[i].z = a.z + b.z;
        h[i].w = a.w + b.w;
      }
      ss += h[i].x * h[i].x + h[i].y * h[i].y + h[i].z * h[i].z + h[i].w * h[i].w;
    }
    ss = block_allsum(ss, sh);
    const float r = rsqrtf(ss / (float)D + eps);
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int c = threadIdx.x + i * kThreads;
      if (c < D4) {
        const float4 g = w4[c];
        float4 o;
        o.x = h[i].x * r * g.x;
        o.y = h[i].y * r * g.y;
        o.z = h[i].z * r * g.z;
        o.w = h[i].w * r * g.w;
        yr[c] = o;
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads)
residual_rms_norm_generic(const float* __restrict__ x, const float* __restrict__ res, const float* __restrict__ w,
                          float* __restrict__ y, int64_t rows, int D, float eps) {
  __shared__ float sh[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* __restrict__ xr = x + row * D;
    const float* __restrict__ rr = res + row * D;
    float* __restrict__ yr = y + row * D;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < D; c += kThreads) {
      const float h = xr[c] + rr[c];
      ss += h * h;
    }
    ss = block_allsum(ss, sh);
    const float r = rsqrtf(ss / (float)D + eps);
    for (int c = threadIdx.x; c < D; c += kThreads) yr[c] = (xr[c] + rr[c]) * r * w[c];
  }
}

}  // namespace

KAGENT_EXPORT void residual_rms_norm(const float* x, const float* res, const float* w, float* y, int64_t rows,
                                     int64_t dim, float eps) {
  if (rows <= 0 || dim <= 0) return;
  const unsigned grid = (unsigned)(rows < ((int64_t)1 << 30) ? rows : ((int64_t)1 << 30));
  const int D = (int)dim;
  const uintptr_t bits = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(res) |
                         reinterpret_cast<uintptr_t>(w) | reinterpret_cast<uintptr_t>(y);
  const int64_t d4 = dim / 4;
  if (dim % 4 == 0 && (bits & 15) == 0 && d4 <= 8 * kThreads) {
    if (d4 <= kThreads) residual_rms_norm_vec<1><<<grid, kThreads>>>(x, res, w, y, rows, D, eps);
    else if (d4 <= 2 * kThreads) residual_rms_norm_vec<2><<<grid, kThreads>>>(x, res, w, y, rows, D, eps);
    else if (d4 <= 4 * kThreads) residual_rms_norm_vec<4><<<grid, kThreads>>>(x, res, w, y, rows, D, eps);
    else residual_rms_norm_vec<8><<<grid, kThreads>>>(x, res, w, y, rows, D, eps);
  } else {
    residual_rms_norm_generic<<<grid, kThreads>>>(x, res, w, y, rows, D, eps);
  }
}
