#include "kagent.h"
#include "cudnn_conv.cuh"

// out (N, K) = mean over H, W of gelu(conv3x3(x) + b), x (N, C, H, W), padding 1.
//
// Eager: cuDNN conv (+ bias), gelu, adaptive_avg_pool2d: the (N, K, H, W) activation is written
// to HBM and read back twice. Ours, per chunk of `chunk` images (sized by the caller so the
// chunk's activation, ~16 MiB, stays in the H200's 50 MiB L2):
//  1. cuDNN writes the chunk's conv into `scratch` (FMA math, exact GEMM-type algorithm);
//  2. bias_gelu_mean_k reads it back from L2: one block per (image, channel) plane, exact gelu
//     (erff), fp32 block sum, one value per plane.
// The scratch is rewritten by every chunk, so the activation barely reaches HBM.

namespace {

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void bias_gelu_mean_k(const float* __restrict__ y, const float* __restrict__ b, float* __restrict__ out,
                                 int64_t k, int64_t hw) {
    __shared__ float partial[32];
    const int64_t plane = blockIdx.x;  // within the chunk: image * k + channel
    const float bias = b[plane % k];
    const float* p = y + plane * hw;
    float acc = 0.0f;
    if ((hw & 3) == 0) {
        const float4* p4 = reinterpret_cast<const float4*>(p);
        for (int64_t i = threadIdx.x; i < hw / 4; i += blockDim.x) {
            const float4 v = p4[i];
            acc += (gelu(v.x + bias) + gelu(v.y + bias)) + (gelu(v.z + bias) + gelu(v.w + bias));
        }
    } else {
        for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) acc += gelu(p[i] + bias);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (threadIdx.x == 0) out[plane] = acc / (float)hw;
    }
}

}  // namespace

// scratch: chunk * k * h * w floats; ws: ws_bytes bytes for cuDNN (both from torch.empty).
KAGENT_EXPORT void conv_gelu_avgpool(const float* x, const float* weight, const float* b, float* scratch,
                                     uint8_t* ws, float* out, int n, int c, int h, int w, int k, int chunk,
                                     int64_t ws_bytes) {
    const int64_t hw = (int64_t)h * w;
    for (int n0 = 0; n0 < n; n0 += chunk) {
        const int nb = n - n0 < chunk ? n - n0 : chunk;
        const conv::Plan& p = conv::plan(nb, c, h, w, k, 3, 3, 1, (size_t)ws_bytes);
        conv::forward(p, x + (int64_t)n0 * c * hw, weight, scratch, ws);
        bias_gelu_mean_k<<<(unsigned)(nb * k), 256>>>(scratch, b, out + (int64_t)n0 * k, k, hw);
    }
}
