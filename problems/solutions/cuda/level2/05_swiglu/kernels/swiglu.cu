#include "kagent.h"

// x: (rows, 2 * hidden) row-major; a = x[:, :hidden], b = x[:, hidden:];
// out (rows, hidden) = silu(a) * b with silu(v) = v / (1 + expf(-v)) (eager's silu formula).
//
// One pass: reads x once, writes out once (eager: silu over the strided half, then mul:
// 2 kernels, 5 half-size passes; ours 3).
// Launch: grid (ceil(hidden_v / 256), min(rows, 65535)), 256 threads; block (bx, by) handles
// column vector c = bx * 256 + tid of rows by, by + gridDim.y, ... float4 vectors when hidden % 4
// == 0 and both pointers are 16-byte aligned (hidden_v = hidden / 4), else scalar.

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float swiglu1(float a, float b) { return (a / (1.0f + expf(-a))) * b; }

__global__ void __launch_bounds__(kThreads)
swiglu_vec4(const float4* __restrict__ x, float4* __restrict__ out, int64_t rows, int64_t h4) {
  const int64_t c = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (c >= h4) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float4 a = x[r * 2 * h4 + c];
    const float4 b = x[r * 2 * h4 + h4 + c];
    float4 o;
    o.x = swiglu1(a.x, b.x);
    o.y = swiglu1(a.y, b.y);
    o.z = swiglu1(a.z, b.z);
    o.w = swiglu1(a.w, b.w);
    out[r * h4 + c] = o;
  }
}

__global__ void __launch_bounds__(kThreads)
swiglu_scalar(const float* __restrict__ x, float* __restrict__ out, int64_t rows, int64_t h) {
  const int64_t c = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (c >= h) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    out[r * h + c] = swiglu1(x[r * 2 * h + c], x[r * 2 * h + h + c]);
}

}  // namespace

KAGENT_EXPORT void swiglu(const float* x, float* out, int64_t rows, int64_t hidden) {
  if (rows <= 0 || hidden <= 0) return;
  const uintptr_t bits = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(out);
  const bool vec = hidden % 4 == 0 && (bits & 15) == 0;
  const int64_t hv = vec ? hidden / 4 : hidden;
  const dim3 grid((unsigned)((hv + kThreads - 1) / kThreads), (unsigned)(rows < 65535 ? rows : 65535));
  if (vec) {
    swiglu_vec4<<<grid, kThreads>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(out), rows, hv);
  } else {
    swiglu_scalar<<<grid, kThreads>>>(x, out, rows, hidden);
  }
}
