#include "kagent.h"
#include "cudnn_conv.cuh"
#include "fail.cuh"

// out (N, K) = mean over H, W of gelu(conv3x3(x) + b), x (N, C, H, W), padding 1.
//
// Eager: cuDNN conv, its bias add, gelu, adaptive_avg_pool2d: after the conv writes the
// (N, K, H, W) activation, the bias pass reads and writes it, gelu reads and writes it, the pool
// reads it. Ours:
//  1. ONE cuDNN convolution over the whole batch, without bias, into `y` (scratch; FMA math, the
//     fastest exact GEMM-type algorithm, measured once per shape);
//  2. bias_gelu_mean_k reads y once: one block per (image, channel) plane, exact gelu (erff) of
//     y + b, a deterministic fp32 block sum (per-thread sums, then fixed shuffle trees), one value
//     per plane. float4 loads (four in flight per thread) when H*W % 4 == 0.
// So the activation crosses HBM twice (conv write, one read) instead of five times.

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__device__ __forceinline__ float gelu4(float4 v, float b) {
    return (gelu(v.x + b) + gelu(v.y + b)) + (gelu(v.z + b) + gelu(v.w + b));
}

__global__ void __launch_bounds__(kThreads) bias_gelu_mean_k(const float* __restrict__ y, const float* __restrict__ b,
                                                             float* __restrict__ out, int64_t k, int64_t hw) {
    __shared__ float partial[kThreads / 32];
    const int64_t plane = blockIdx.x;  // image * k + channel
    const float bias = b[plane % k];
    const float* p = y + plane * hw;
    float acc = 0.0f;
    if ((hw & 3) == 0) {  // every plane starts 16-byte aligned
        const float4* p4 = reinterpret_cast<const float4*>(p);
        const int64_t n4 = hw >> 2;
        for (int64_t base = threadIdx.x; base < n4; base += kUnroll * kThreads) {
            float4 v[kUnroll];
#pragma unroll
            for (int j = 0; j < kUnroll; ++j) {
                const int64_t i = base + (int64_t)j * kThreads;
                v[j] = i < n4 ? p4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int j = 0; j < kUnroll; ++j)
                if (base + (int64_t)j * kThreads < n4) acc += gelu4(v[j], bias);
        }
    } else {
        for (int64_t i = threadIdx.x; i < hw; i += kThreads) acc += gelu(p[i] + bias);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (threadIdx.x == 0) out[plane] = acc / (float)hw;
    }
}

}  // namespace

// y: n * k * h * w floats of scratch for the convolution; ws: ws_bytes bytes of cuDNN workspace
// (both torch.empty); out: (n, k).
KAGENT_EXPORT void conv_gelu_avgpool(const float* x, const float* weight, const float* b, float* y, uint8_t* ws,
                                     float* out, int n, int c, int h, int w, int k, int64_t ws_bytes) {
    const int64_t hw = (int64_t)h * w, planes = (int64_t)n * k;
    conv::Plan& p = conv::plan(n, c, h, w, k, 3, 3, 1, (size_t)ws_bytes);
    if (!p.ready || p.on != n || p.oc != k || p.oh != h || p.ow != w) {
        fail::report("conv_gelu_avgpool: cuDNN plan (or output shape)", out, planes);
        return;
    }
    if (!conv::forward(p, x, weight, y, ws, (size_t)ws_bytes)) {
        fail::report("conv_gelu_avgpool: cuDNN convolution", out, planes);
        return;
    }
    if (planes == 0) return;
    bias_gelu_mean_k<<<(unsigned)planes, kThreads>>>(y, b, out, k, hw);
}
