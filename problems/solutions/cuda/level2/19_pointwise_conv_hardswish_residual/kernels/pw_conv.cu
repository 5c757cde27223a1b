#include "kagent.h"
#include <cublas_v2.h>

// out = x + hardswish(conv1x1(x) + b), x (N, C, H, W), weight (K, C, 1, 1), K == C.
//
// A 1x1 convolution is one GEMM per image: y[n] (K, HW) = W (K, C) @ x[n] (C, HW). Eager: cuDNN
// conv (+ its bias pass), hardswish, add: the (N, K, H, W) activation crosses HBM ~6 times.
// Ours, per chunk of `chunk` images (sized by the caller so the chunk's x and y, ~2 x 16 MiB, fit
// in the H200's 50 MiB L2):
//  1. cublasSgemmStridedBatched writes y for the chunk into `out` (fp32 SIMT, no TF32; the
//     weight is shared by every image: stride 0);
//  2. bias_hswish_res_k rewrites out = x + hardswish(out + b[k]) in place, reading x and out while
//     they are still in L2; one block per (image, channel) plane, so b[k] is read once, float4
//     accesses when HW % 4 == 0.
// Column-major view of one image: y^T (HW x K) = (x as HW x C) * (W as C x K).

namespace {

cublasHandle_t handle() {
    static cublasHandle_t h = [] { cublasHandle_t t; cublasCreate(&t); return t; }();
    return h;  // on the default stream, the handle's default
}

__device__ __forceinline__ float hswish_res(float x, float y) {
    return x + y * fminf(fmaxf(y + 3.0f, 0.0f), 6.0f) / 6.0f;
}

__global__ void bias_hswish_res_k(const float* __restrict__ x, float* __restrict__ out, const float* __restrict__ b,
                                  int64_t k, int64_t hw) {
    const int64_t plane = blockIdx.x;  // image-major: plane = n * k + channel
    const float bias = b[plane % k];
    const float* xp = x + plane * hw;
    float* op = out + plane * hw;
    if ((hw & 3) == 0) {
        const float4* x4 = reinterpret_cast<const float4*>(xp);
        float4* o4 = reinterpret_cast<float4*>(op);
        for (int64_t i = threadIdx.x; i < hw / 4; i += blockDim.x) {
            const float4 a = x4[i];
            float4 y = o4[i];
            y.x = hswish_res(a.x, y.x + bias); y.y = hswish_res(a.y, y.y + bias);
            y.z = hswish_res(a.z, y.z + bias); y.w = hswish_res(a.w, y.w + bias);
            o4[i] = y;
        }
    } else {
        for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) op[i] = hswish_res(xp[i], op[i] + bias);
    }
}

}  // namespace

KAGENT_EXPORT void pw_conv_hswish_res(const float* x, const float* w, const float* b, float* out, int64_t n,
                                      int64_t c, int64_t k, int64_t hw, int64_t chunk) {
    const float one = 1.0f, zero = 0.0f;
    for (int64_t n0 = 0; n0 < n; n0 += chunk) {
        const int64_t nb = n - n0 < chunk ? n - n0 : chunk;
        cublasSgemmStridedBatched(handle(), CUBLAS_OP_N, CUBLAS_OP_N, (int)hw, (int)k, (int)c, &one,
                                  x + n0 * c * hw, (int)hw, c * hw, w, (int)c, 0, &zero,
                                  out + n0 * k * hw, (int)hw, k * hw, (int)nb);
        bias_hswish_res_k<<<(unsigned)(nb * k), 256>>>(x + n0 * c * hw, out + n0 * k * hw, b, k, hw);
    }
}
