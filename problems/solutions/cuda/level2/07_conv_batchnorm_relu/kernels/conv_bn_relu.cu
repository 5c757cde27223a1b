#include "kagent.h"
#include "cudnn_conv.cuh"

// out = relu(batchnorm_eval(conv3x3(x))), x (N, C, H, W), padding 1, no conv bias; the batch norm
// uses the running statistics, so it folds into the convolution:
//   s[k] = gamma[k] / sqrt(var[k] + eps),  w'[k] = w[k] * s[k],  b'[k] = beta[k] - mean[k] * s[k],
//   out = relu(conv(x, w') + b').
//
// Eager: cuDNN conv, batch_norm, relu: the (N, K, H, W) output crosses HBM 5 times. Ours, one host call:
//  1. fold_k writes w' and b' into a small scratch buffer (every call: the weights and statistics
//     may change between calls);
//  2. ONE whole-batch cuDNN convolution with w' through the graph API (cudnn_conv.cuh: exact fp32
//     engines, the fastest measured at the first call, the plan built once);
//  3. bias + relu as one in-place float4 pass (planes in reverse order: the last planes cuDNN wrote
//     are the likeliest to be still in L2).
// cudnnConvolutionBiasActivationForward would fuse 3 into 2, but as a legacy call it spends ~150 us
// of host time per call before its kernel starts (probe_solution_kernels.py), more than the pass.

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float relu(float v) { return v < 0.0f ? 0.0f : v; }  // keeps NaN, like torch.relu

// w' = w * s[k], b' = beta - mean * s[k]; w (k, crs) contiguous.
__global__ void fold_k(const float* __restrict__ w, const float* __restrict__ mean, const float* __restrict__ var,
                       const float* __restrict__ gamma, const float* __restrict__ beta, float eps, int k,
                       int64_t crs, float* __restrict__ wf, float* __restrict__ bf) {
    const int64_t total = (int64_t)k * crs;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int ch = (int)(i / crs);
        const float g = gamma ? gamma[ch] : 1.0f;
        const float s = g / sqrtf(var[ch] + eps);
        wf[i] = w[i] * s;
        if (i % crs == 0) bf[ch] = (beta ? beta[ch] : 0.0f) - mean[ch] * s;
    }
}

// In place: y = relu(y + b[channel]); one block per (image, channel) plane, in reverse plane order.
__global__ void __launch_bounds__(kThreads) bias_relu_k(float* __restrict__ y, const float* __restrict__ b, int k,
                                                        int64_t hw) {
    const int64_t plane = (int64_t)gridDim.x - 1 - blockIdx.x;  // image * k + channel
    const float bt = b[plane % k];
    float* p = y + plane * hw;
    if ((hw & 3) == 0) {  // plane starts are 16-byte aligned
        float4* p4 = reinterpret_cast<float4*>(p);
        for (int64_t i = threadIdx.x; i < hw / 4; i += kThreads) {
            float4 v = p4[i];
            v.x = relu(v.x + bt);
            v.y = relu(v.y + bt);
            v.z = relu(v.z + bt);
            v.w = relu(v.w + bt);
            p4[i] = v;
        }
    } else {
        for (int64_t i = threadIdx.x; i < hw; i += kThreads) p[i] = relu(p[i] + bt);
    }
}

__global__ void fill_nan_k(float* y, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __int_as_float(0x7fc00000);
}

bool run_plain(conv::Plan& p, const float* x, const float* wf, const float* bf, float* y, void* ws, size_t ws_cap,
               int n, int k, int64_t hw) {
    if (!conv::forward(p, x, wf, y, ws, ws_cap)) return false;
    bias_relu_k<<<(unsigned)((int64_t)n * k), kThreads>>>(y, bf, k, hw);
    return true;
}

}  // namespace

// scratch: at least scratch_floats floats (w', b'); ws: ws_bytes bytes for cuDNN (both from torch.empty).
KAGENT_EXPORT void conv_bn_relu(const float* x, const float* weight, const float* mean, const float* var,
                                const float* gamma, const float* beta, float* scratch, uint8_t* ws, float* out, int n,
                                int c, int h, int w, int k, float eps, int64_t scratch_floats, int64_t ws_bytes) {
    const int64_t hw = (int64_t)h * w;
    const int64_t total = (int64_t)n * k * hw;
    const int64_t crs = (int64_t)c * 9;
    // Layout (offsets rounded to 64 floats = 256 bytes): w' | b'.
    const int64_t wf_off = 0, bf_off = ((int64_t)k * crs + 63) / 64 * 64, end = bf_off + ((int64_t)k + 63) / 64 * 64;
    if (scratch_floats < end) {
        std::fprintf(stderr, "kagent conv_bn_relu: scratch too small (%lld < %lld floats)\n",
                     (long long)scratch_floats, (long long)end);
        fill_nan_k<<<1024, 256>>>(out, total);
        return;
    }
    float* wf = scratch + wf_off;
    float* bf = scratch + bf_off;
    fold_k<<<(unsigned)(((int64_t)k * crs + 255) / 256 < 1024 ? ((int64_t)k * crs + 255) / 256 : 1024), 256>>>(
        weight, mean, var, gamma, beta, eps, k, crs, wf, bf);
    conv::Plan& p = conv::plan(n, c, h, w, k, 3, 3, 1, (size_t)ws_bytes);
    if (!p.ready || p.oh != h || p.ow != w || !run_plain(p, x, wf, bf, out, ws, (size_t)ws_bytes, n, k, hw))
        fill_nan_k<<<1024, 256>>>(out, total);
}
