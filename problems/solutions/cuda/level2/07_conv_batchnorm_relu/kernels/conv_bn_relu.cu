#include "kagent.h"
#include "cudnn_conv.cuh"

// out = relu(batchnorm_eval(conv3x3(x))), x (N, C, H, W), padding 1, no conv bias; the batch norm
// uses the running statistics: y * g / sqrt(var + eps) + (beta - mean * g / sqrt(var + eps)).
//
// Eager: cuDNN conv, batch_norm, relu: the (N, K, H, W) output crosses HBM 5 times (write, read +
// write, read + write). Ours, per chunk of `chunk` images (sized by the caller, ~16 MiB of output,
// so that it stays in the H200's 50 MiB L2):
//  1. cuDNN writes the chunk's conv into `out` (FMA math, exact GEMM-type algorithm);
//  2. bn_relu_k rewrites it in place from L2: one block per (image, channel) plane computes the
//     channel's scale and shift once, then float4 passes over the plane.
// So the output crosses HBM about once.

namespace {

__global__ void bn_relu_k(float* __restrict__ y, const float* __restrict__ mean, const float* __restrict__ var,
                          const float* __restrict__ gamma, const float* __restrict__ beta, float eps, int64_t k,
                          int64_t hw) {
    const int64_t plane = blockIdx.x;  // within the chunk: image * k + channel
    const int64_t ch = plane % k;
    const float inv = 1.0f / sqrtf(var[ch] + eps);
    const float mu = mean[ch], g = gamma[ch], bt = beta[ch];
    float* p = y + plane * hw;
    if ((hw & 3) == 0) {
        float4* p4 = reinterpret_cast<float4*>(p);
        for (int64_t i = threadIdx.x; i < hw / 4; i += blockDim.x) {
            float4 v = p4[i];
            v.x = fmaxf((v.x - mu) * inv * g + bt, 0.0f);
            v.y = fmaxf((v.y - mu) * inv * g + bt, 0.0f);
            v.z = fmaxf((v.z - mu) * inv * g + bt, 0.0f);
            v.w = fmaxf((v.w - mu) * inv * g + bt, 0.0f);
            p4[i] = v;
        }
    } else {
        for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) p[i] = fmaxf((p[i] - mu) * inv * g + bt, 0.0f);
    }
}

}  // namespace

// ws: ws_bytes bytes for cuDNN (from torch.empty).
KAGENT_EXPORT void conv_bn_relu(const float* x, const float* weight, const float* mean, const float* var,
                                const float* gamma, const float* beta, uint8_t* ws, float* out, int n, int c, int h,
                                int w, int k, int chunk, float eps, int64_t ws_bytes) {
    const int64_t hw = (int64_t)h * w;
    for (int n0 = 0; n0 < n; n0 += chunk) {
        const int nb = n - n0 < chunk ? n - n0 : chunk;
        const conv::Plan& p = conv::plan(nb, c, h, w, k, 3, 3, 1, (size_t)ws_bytes);
        float* y = out + (int64_t)n0 * k * hw;
        conv::forward(p, x + (int64_t)n0 * c * hw, weight, y, ws);
        bn_relu_k<<<(unsigned)(nb * k), 256>>>(y, mean, var, gamma, beta, eps, k, hw);
    }
}
