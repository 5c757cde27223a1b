#include "kagent.h"

// y[r, :] = softmax(x[r, :] / temperature): z = x / T (true division, as eager), m = max(z),
// e = expf(z - m), y = e / sum(e).
//
// One pass: reads x once, writes y once (eager: div kernel + softmax kernel, >= 4 passes).
// Launch: one 256-thread block per row (grid = min(rows, 2^30), rows strided by gridDim.x).
//  - softmax_temperature_vec<NV>: D % 4 == 0, pointers 16-byte aligned, D / 4 <= 256 * NV (NV in
//    1, 2, 4, 8): thread t keeps float4 #(t + 256 * i), i < NV, in registers (z, then e), block max
//    and block sum (fp32) by warp butterflies plus one shared-memory round each.
//  - softmax_temperature_generic: any D; three passes over the row (re-reads hit L1/L2).

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float warp_allsum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_allmax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Block-wide sum / max; every thread gets the same value. sh: 32 floats of shared memory.
// Each ends with a barrier so sh can be reused right away.
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

__device__ __forceinline__ float block_allmax(float v, float* sh) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  v = warp_allmax(v);
  if (lane == 0) sh[wid] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? sh[lane] : -INFINITY;
  v = warp_allmax(v);
  __syncthreads();
  return v;
}

template <int NV>
__global__ void __launch_bounds__(kThreads)
softmax_temperature_vec(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int D, float temperature) {
  __shared__ float sh[32];
  const int D4 = D >> 2;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float4* __restrict__ xr = reinterpret_cast<const float4*>(x + row * D);
    float4* __restrict__ yr = reinterpret_cast<float4*>(y + row * D);
    float4 v[NV];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int c = threadIdx.x + i * kThreads;
      if (c < D4) {
        v[i] = xr[c];
        v[i].x = v[i].x / temperature;
        v[i].y = v[i].y / temperature;
        v[i].z = v[i].z / temperature;
        v[i].w = v[i].w / temperature;
        m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
      }
    }
    m = block_allmax(m, sh);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int c = threadIdx.x + i * kThreads;
      if (c < D4) {
        v[i].x = expf(v[i].x - m);
        v[i].y = expf(v[i].y - m);
        v[i].z = expf(v[i].z - m);
        v[i].w = expf(v[i].w - m);
        s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
      }
    }
    s = block_allsum(s, sh);
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int c = threadIdx.x + i * kThreads;
      if (c < D4) {
        float4 o;
        o.x = v[i].x / s;
        o.y = v[i].y / s;
        o.z = v[i].z / s;
        o.w = v[i].w / s;
        yr[c] = o;
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads)
softmax_temperature_generic(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int D, float temperature) {
  __shared__ float sh[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* __restrict__ xr = x + row * D;
    float* __restrict__ yr = y + row * D;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < D; c += kThreads) m = fmaxf(m, xr[c] / temperature);
    m = block_allmax(m, sh);
    float s = 0.0f;
    for (int c = threadIdx.x; c < D; c += kThreads) s += expf(xr[c] / temperature - m);
    s = block_allsum(s, sh);
    for (int c = threadIdx.x; c < D; c += kThreads) yr[c] = expf(xr[c] / temperature - m) / s;
  }
}

}  // namespace

KAGENT_EXPORT void softmax_temperature(const float* x, float* y, int64_t rows, int64_t dim, float temperature) {
  if (rows <= 0 || dim <= 0) return;
  const unsigned grid = (unsigned)(rows < ((int64_t)1 << 30) ? rows : ((int64_t)1 << 30));
  const int D = (int)dim;
  const uintptr_t bits = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
  const int64_t d4 = dim / 4;
  if (dim % 4 == 0 && (bits & 15) == 0 && d4 <= 8 * kThreads) {
    if (d4 <= kThreads) softmax_temperature_vec<1><<<grid, kThreads>>>(x, y, rows, D, temperature);
    else if (d4 <= 2 * kThreads) softmax_temperature_vec<2><<<grid, kThreads>>>(x, y, rows, D, temperature);
    else if (d4 <= 4 * kThreads) softmax_temperature_vec<4><<<grid, kThreads>>>(x, y, rows, D, temperature);
    else softmax_temperature_vec<8><<<grid, kThreads>>>(x, y, rows, D, temperature);
  } else {
    softmax_temperature_generic<<<grid, kThreads>>>(x, y, rows, D, temperature);
  }
}
