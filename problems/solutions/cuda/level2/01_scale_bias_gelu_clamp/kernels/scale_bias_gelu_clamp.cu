#include "kagent.h"

// y = clamp(gelu(x * scale + bias[col]), -0.5, 2.0), gelu the exact erf form
// 0.5 * v * (1 + erff(v / sqrt(2))) as in eager F.gelu.
//
// One pass: reads x once (plus the bias row, cached), writes y once (eager: mul, add, gelu, clamp
// = 4 kernels and 8 tensor passes).
// Launch: grid (ceil(cols_v / 256), min(rows, 65535)), 256 threads; block (bx, by) handles column
// vector c = bx * 256 + tid of rows by, by + gridDim.y, ... The vector kind is float4 when cols % 4
// == 0 and all pointers are 16-byte aligned (cols_v = cols / 4), else scalar (cols_v = cols).

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float sbgc1(float v, float scale, float b) {
  const float t = v * scale + b;
  const float g = 0.5f * t * (1.0f + erff(t * 0.70710678f));
  return fminf(fmaxf(g, -0.5f), 2.0f);
}

__global__ void __launch_bounds__(kThreads)
sbgc_vec4(const float4* __restrict__ x, const float4* __restrict__ bias, float4* __restrict__ y,
          int64_t rows, int64_t cols4, float scale) {
  const int64_t c = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (c >= cols4) return;
  const float4 b = bias[c];
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float4 v = x[r * cols4 + c];
    float4 o;
    o.x = sbgc1(v.x, scale, b.x);
    o.y = sbgc1(v.y, scale, b.y);
    o.z = sbgc1(v.z, scale, b.z);
    o.w = sbgc1(v.w, scale, b.w);
    y[r * cols4 + c] = o;
  }
}

__global__ void __launch_bounds__(kThreads)
sbgc_scalar(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
            int64_t rows, int64_t cols, float scale) {
  const int64_t c = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (c >= cols) return;
  const float b = bias[c];
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) y[r * cols + c] = sbgc1(x[r * cols + c], scale, b);
}

}  // namespace

KAGENT_EXPORT void scale_bias_gelu_clamp(const float* x, const float* bias, float* y, int64_t rows,
                                         int64_t cols, float scale) {
  if (rows <= 0 || cols <= 0) return;
  const uintptr_t bits = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(bias) |
                         reinterpret_cast<uintptr_t>(y);
  const bool vec = cols % 4 == 0 && (bits & 15) == 0;
  const int64_t cv = vec ? cols / 4 : cols;
  const dim3 grid((unsigned)((cv + kThreads - 1) / kThreads), (unsigned)(rows < 65535 ? rows : 65535));
  if (vec) {
    sbgc_vec4<<<grid, kThreads>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(bias),
                                  reinterpret_cast<float4*>(y), rows, cv, scale);
  } else {
    sbgc_scalar<<<grid, kThreads>>>(x, bias, y, rows, cols, scale);
  }
}
