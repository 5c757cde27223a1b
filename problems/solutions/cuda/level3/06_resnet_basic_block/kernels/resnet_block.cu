#include "kagent.h"
#include "cudnn_conv.cuh"

// out = relu(bn2(conv2(relu(bn1(conv1(x))))) + x), x (N, C, H, W), 3x3 convs (padding 1, no bias)
// C -> C; BatchNorm2d in training mode (the batch's own mean and biased variance over N*H*W per
// channel) or, when the module is in eval mode, its running statistics.
//
// Eager: conv, batch_norm (statistics + normalise), relu, conv, batch_norm, add, relu through
// nn.Module dispatch, each pass a kernel of its own. Ours, one host call:
//  1. cuDNN conv1 over the whole batch into `scratch` (fastest exact algorithm, measured once);
//  2. stats_k: per-channel partial sums / sums of squares in double, one block per (channel, group
//     of images), written to fixed slots (deterministic, no atomics);
//  3. bn_act_k: one block per (image, channel) plane sums its channel's partials in a fixed order,
//     then normalise + affine + relu in place (scratch becomes conv2's input);
//  4. cuDNN conv2 into `out`; 5. stats_k on out;
//  6. bn_act_k: normalise + affine + residual x + relu in place in out.
// The activation (25.7 MiB at the default size) stays mostly in the H200's 50 MiB L2 between passes.

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// part[(ch * groups + g) * 2 + {0, 1}] = sum, sum of squares of channel ch over images g, g + groups, ...
__global__ void __launch_bounds__(kThreads) stats_k(const float* __restrict__ y, double* __restrict__ part, int n,
                                                    int c, int64_t hw, int groups) {
    const int g = blockIdx.x, ch = blockIdx.y;
    double s = 0.0, ss = 0.0;
    for (int img = g; img < n; img += groups) {
        const float* p = y + ((int64_t)img * c + ch) * hw;
        if ((hw & 3) == 0) {  // plane starts are 16-byte aligned
            const float4* p4 = reinterpret_cast<const float4*>(p);
            for (int64_t i = threadIdx.x; i < hw / 4; i += kThreads) {
                const float4 v = p4[i];
                const double a = v.x, b = v.y, cc = v.z, d = v.w;
                s += (a + b) + (cc + d);
                ss += (a * a + b * b) + (cc * cc + d * d);
            }
        } else {
            for (int64_t i = threadIdx.x; i < hw; i += kThreads) {
                const double a = p[i];
                s += a;
                ss += a * a;
            }
        }
    }
    __shared__ double sh[2][kThreads / 32];
    s = warp_sum(s);
    ss = warp_sum(ss);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        sh[0][warp] = s;
        sh[1][warp] = ss;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double ts = 0.0, tss = 0.0;
        for (int i = 0; i < kThreads / 32; ++i) {
            ts += sh[0][i];
            tss += sh[1][i];
        }
        part[((int64_t)ch * groups + g) * 2 + 0] = ts;
        part[((int64_t)ch * groups + g) * 2 + 1] = tss;
    }
}

__device__ __forceinline__ float relu(float v) { return v < 0.0f ? 0.0f : v; }  // keeps NaN, like torch.relu

// In place on y: v = y * scale + shift (+ res), then relu; one block per (image, channel) plane.
// Training (part != nullptr): mean / biased variance from the channel's `groups` partials over
// cnt = N*H*W values. Eval (part == nullptr): rmean / rvar. gamma / beta may be null (1 / 0).
__global__ void __launch_bounds__(kThreads) bn_act_k(float* __restrict__ y, const float* __restrict__ res,
                                                     const double* __restrict__ part, int groups, double cnt,
                                                     const float* __restrict__ rmean, const float* __restrict__ rvar,
                                                     const float* __restrict__ gamma, const float* __restrict__ beta,
                                                     float eps, int c, int64_t hw) {
    const int64_t plane = blockIdx.x;  // image * c + channel
    const int ch = (int)(plane % c);
    __shared__ float coef[2];
    if (threadIdx.x == 0) {
        double mean, var;
        if (part) {
            double s = 0.0, ss = 0.0;
            for (int g = 0; g < groups; ++g) {
                s += part[((int64_t)ch * groups + g) * 2 + 0];
                ss += part[((int64_t)ch * groups + g) * 2 + 1];
            }
            mean = s / cnt;
            var = ss / cnt - mean * mean;
            if (var < 0.0) var = 0.0;
        } else {
            mean = rmean[ch];
            var = rvar[ch];
        }
        const double inv = 1.0 / sqrt(var + (double)eps);
        const double gm = gamma ? (double)gamma[ch] : 1.0;
        const double bt = beta ? (double)beta[ch] : 0.0;
        coef[0] = (float)(gm * inv);
        coef[1] = (float)(bt - mean * gm * inv);
    }
    __syncthreads();
    const float sc = coef[0], sh = coef[1];
    float* p = y + plane * hw;
    const float* r = res ? res + plane * hw : nullptr;
    if ((hw & 3) == 0) {
        float4* p4 = reinterpret_cast<float4*>(p);
        const float4* r4 = reinterpret_cast<const float4*>(r);
        for (int64_t i = threadIdx.x; i < hw / 4; i += kThreads) {
            float4 v = p4[i];
            v.x = fmaf(v.x, sc, sh);
            v.y = fmaf(v.y, sc, sh);
            v.z = fmaf(v.z, sc, sh);
            v.w = fmaf(v.w, sc, sh);
            if (r4) {
                const float4 q = r4[i];
                v.x += q.x;
                v.y += q.y;
                v.z += q.z;
                v.w += q.w;
            }
            v.x = relu(v.x);
            v.y = relu(v.y);
            v.z = relu(v.z);
            v.w = relu(v.w);
            p4[i] = v;
        }
    } else {
        for (int64_t i = threadIdx.x; i < hw; i += kThreads) {
            float v = fmaf(p[i], sc, sh);
            if (r) v += r[i];
            p[i] = relu(v);
        }
    }
}

__global__ void fill_nan_k(float* y, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __int_as_float(0x7fc00000);
}

}  // namespace

// scratch: N*C*H*W floats; part: at least 2*C*N doubles; ws: ws_bytes bytes for cuDNN (all from
// torch.empty). eval_mode: use running_mean / running_var instead of the batch statistics.
KAGENT_EXPORT void resnet_block(const float* x, const float* w1, const float* g1, const float* b1,
                                const float* rm1, const float* rv1, const float* w2, const float* g2,
                                const float* b2, const float* rm2, const float* rv2, float* scratch, double* part,
                                uint8_t* ws, float* out, int n, int c, int h, int w, float eps1, float eps2,
                                bool eval_mode, int64_t ws_bytes) {
    const int64_t hw = (int64_t)h * w;
    const int64_t total = (int64_t)n * c * hw;
    const unsigned planes = (unsigned)((int64_t)n * c);
    // About 1024 statistics blocks: groups of images per channel (<= n, so part holds 2*c*n doubles).
    int groups = (1024 + c - 1) / c;
    if (groups > n) groups = n;
    if (groups < 1) groups = 1;
    const double cnt = (double)n * (double)hw;
    const dim3 sgrid((unsigned)groups, (unsigned)c);

    // conv1 and conv2 have the same shape: one plan (timed at the first call on conv1's buffers).
    conv::Plan& p = conv::plan(n, c, h, w, c, 3, 3, 1, (size_t)ws_bytes);
    if (!conv::forward(p, x, w1, scratch, ws, (size_t)ws_bytes)) {
        fill_nan_k<<<1024, 256>>>(out, total);
        return;
    }
    if (!eval_mode) stats_k<<<sgrid, kThreads>>>(scratch, part, n, c, hw, groups);
    bn_act_k<<<planes, kThreads>>>(scratch, nullptr, eval_mode ? nullptr : part, groups, cnt, rm1, rv1, g1, b1, eps1,
                                   c, hw);
    if (!conv::forward(p, scratch, w2, out, ws, (size_t)ws_bytes)) {
        fill_nan_k<<<1024, 256>>>(out, total);
        return;
    }
    if (!eval_mode) stats_k<<<sgrid, kThreads>>>(out, part, n, c, hw, groups);
    bn_act_k<<<planes, kThreads>>>(out, x, eval_mode ? nullptr : part, groups, cnt, rm2, rv2, g2, b2, eps2, c, hw);
}
