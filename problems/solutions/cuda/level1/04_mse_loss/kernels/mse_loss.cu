#include "kagent.h"

// out[0] = mean((a - b)^2) over n elements.
//
// Reads a and b once (eager: sub, pow, mean = 3 kernels and 6 full-size passes).
// Kernel 1 (mse_partial): grid = min(partials_cap, ceil(n4 / 256)) blocks of 256 threads,
//   grid-stride over float4 pairs (4 independent pairs in flight per iteration, then a remainder
//   loop), then a scalar grid-stride loop over what the float4 part did not cover (n % 4 tail, or
//   everything when a pointer is not 16-byte aligned: then n4 == 0). Each float4's 4 squares are
//   summed in fp32, accumulated per thread in double; block tree-reduction in double (warp
//   shuffles + shared memory); block b writes partials[b].
// Kernel 2 (mse_finish): one block of 1024 threads sums partials[0 .. nblocks) in a fixed order
//   (strided per thread, then a tree), and writes (float)(sum / n).
// Deterministic; no atomics, no state kept between calls, no host sync.

namespace {

constexpr int kThreads = 256;
constexpr int kFinishThreads = 1024;

__device__ __forceinline__ float sq4(float4 a, float4 b) {
  const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z, dw = a.w - b.w;
  return (dx * dx + dy * dy) + (dz * dz + dw * dw);
}

__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block sum in double; the result is valid in thread 0. sh: 32 doubles.
__device__ __forceinline__ double block_sum_d(double v, double* sh) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  v = warp_sum_d(v);
  if (lane == 0) sh[wid] = v;
  __syncthreads();
  if (wid == 0) {
    v = lane < (int)(blockDim.x >> 5) ? sh[lane] : 0.0;
    v = warp_sum_d(v);
  }
  return v;
}

__global__ void __launch_bounds__(kThreads)
mse_partial(const float* __restrict__ a, const float* __restrict__ b, double* __restrict__ partials,
            int64_t n4, int64_t n) {
  __shared__ double sh[32];
  const int64_t stride = (int64_t)gridDim.x * kThreads;
  const int64_t tid = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  const float4* __restrict__ a4 = reinterpret_cast<const float4*>(a);
  const float4* __restrict__ b4 = reinterpret_cast<const float4*>(b);
  double acc = 0.0;
  int64_t i = tid;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    const float4 a0 = a4[i], b0 = b4[i];
    const float4 a1 = a4[i + stride], b1 = b4[i + stride];
    const float4 a2 = a4[i + 2 * stride], b2 = b4[i + 2 * stride];
    const float4 a3 = a4[i + 3 * stride], b3 = b4[i + 3 * stride];
    acc += (double)sq4(a0, b0);
    acc += (double)sq4(a1, b1);
    acc += (double)sq4(a2, b2);
    acc += (double)sq4(a3, b3);
  }
  for (; i < n4; i += stride) acc += (double)sq4(a4[i], b4[i]);
  for (int64_t j = n4 * 4 + tid; j < n; j += stride) {
    const float d = a[j] - b[j];
    acc += (double)(d * d);
  }
  acc = block_sum_d(acc, sh);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void __launch_bounds__(kFinishThreads)
mse_finish(const double* __restrict__ partials, int nparts, float* __restrict__ out, int64_t n) {
  __shared__ double sh[32];
  double acc = 0.0;
  for (int i = threadIdx.x; i < nparts; i += kFinishThreads) acc += partials[i];
  acc = block_sum_d(acc, sh);
  if (threadIdx.x == 0) out[0] = (float)(acc / (double)n);
}

}  // namespace

// partials: scratch of at least partials_cap doubles, allocated by the caller (8192: ~10 waves of
// blocks on an H200 for 64M elements, so the last-wave imbalance stays small).
// n == 0 gives NaN (0 / 0), as torch.mean of an empty tensor.
KAGENT_EXPORT void mse_loss(const float* a, const float* b, double* partials, int64_t partials_cap, float* out,
                            int64_t n) {
  if (partials_cap <= 0) return;
  const bool aligned = ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) & 15) == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  const int64_t work = n4 > 0 ? n4 : (n > 0 ? n : 1);
  int64_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > partials_cap) blocks = partials_cap;
  mse_partial<<<(unsigned)blocks, kThreads>>>(a, b, partials, n4, n > 0 ? n : 0);
  mse_finish<<<1, kFinishThreads>>>(partials, (int)blocks, out, n);
}
