#include "kagent.h"

// out = sigmoid(a) * tanh(b) + a, with sigmoid(v) = 1 / (1 + expf(-v)) (eager's formula) and tanhf.
//
// One pass: reads a and b once, writes out once (eager: sigmoid, tanh, mul, add = 4 kernels and
// 10 tensor passes). Launch: 1-D grid of 256-thread blocks, grid-stride over float4s, then a
// grid-stride scalar loop over what the float4 loop did not cover (the n % 4 tail, or all of it
// when a pointer is not 16-byte aligned, in which case n4 == 0).

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float gate1(float a, float b) {
  const float s = 1.0f / (1.0f + expf(-a));
  return s * tanhf(b) + a;
}

__global__ void __launch_bounds__(kThreads)
sigmoid_gate_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                    int64_t n4, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * kThreads;
  const int64_t tid = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
  const float4* __restrict__ b4 = reinterpret_cast<const float4*>(b);
  float4* __restrict__ o4 = reinterpret_cast<float4*>(out);
  for (int64_t i = tid; i < n4; i += stride) {
    const float4 va = a4[i];
    const float4 vb = b4[i];
    float4 r;
    r.x = gate1(va.x, vb.x);
    r.y = gate1(va.y, vb.y);
    r.z = gate1(va.z, vb.z);
    r.w = gate1(va.w, vb.w);
    o4[i] = r;
  }
  for (int64_t i = n4 * 4 + tid; i < n; i += stride) out[i] = gate1(a[i], b[i]);
}

}  // namespace

KAGENT_EXPORT void sigmoid_gate(const float* a, const float* b, float* out, int64_t n) {
  if (n <= 0) return;
  const uintptr_t bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                         reinterpret_cast<uintptr_t>(out);
  const int64_t n4 = (bits & 15) == 0 ? n / 4 : 0;
  const int64_t work = n4 > 0 ? n4 : n;
  int64_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > (int64_t)1 << 20) blocks = (int64_t)1 << 20;
  sigmoid_gate_kernel<<<(unsigned)blocks, kThreads>>>(a, b, out, n4, n);
}
