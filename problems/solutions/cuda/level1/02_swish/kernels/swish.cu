#include "kagent.h"

// y = x * sigmoid(x) with sigmoid(v) = 1 / (1 + expf(-v)), the formula of eager's sigmoid kernel.
//
// One pass: reads x once, writes y once (eager: sigmoid kernel + mul kernel, 5 tensor passes).
// Launch: 1-D grid of 256-thread blocks, grid-stride over float4s (16-byte loads/stores), then a
// grid-stride scalar loop over the elements the float4 part did not cover: the n % 4 tail when
// the pointers are 16-byte aligned, or every element when they are not (then n4 == 0).

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float swish1(float v) { return v * (1.0f / (1.0f + expf(-v))); }

__global__ void __launch_bounds__(kThreads)
swish_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n4, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * kThreads;
  const int64_t tid = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
  float4* __restrict__ y4 = reinterpret_cast<float4*>(y);
  for (int64_t i = tid; i < n4; i += stride) {
    float4 v = x4[i];
    v.x = swish1(v.x);
    v.y = swish1(v.y);
    v.z = swish1(v.z);
    v.w = swish1(v.w);
    y4[i] = v;
  }
  for (int64_t i = n4 * 4 + tid; i < n; i += stride) y[i] = swish1(x[i]);
}

}  // namespace

KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  const int64_t work = n4 > 0 ? n4 : n;  // items of the longer loop
  int64_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > (int64_t)1 << 20) blocks = (int64_t)1 << 20;
  swish_kernel<<<(unsigned)blocks, kThreads>>>(x, y, n4, n);
}
