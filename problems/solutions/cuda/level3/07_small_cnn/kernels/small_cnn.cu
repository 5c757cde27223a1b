#include "kagent.h"
#include "cudnn_conv.cuh"
#include "fail.cuh"
#include "lt_linear.cuh"

// fc2(relu(fc1(flatten(pool(relu(conv2(pool(relu(conv1(x)))))))))), x (N, C0, H, W); convs 3x3
// padding 1 with bias; pools 2x2 (floor).
//
// Eager: conv1, its bias add, relu, pool, conv2, its bias add, relu, pool, addmm, relu, addmm, each
// a kernel through nn.Module dispatch; every activation crosses HBM two or three times. Ours, one
// host call, six launches over the WHOLE batch (no chunks: one cuDNN call per conv is much faster
// than a call per L2-sized chunk):
//  1. cuDNN conv1 without bias (FMA math, the fastest exact GEMM-type algorithm, measured once per
//     shape) into s1;
//  2. bias_relu_pool: relu(max of the 2x2 window + bias) from s1 into s2 (a window's max plus the
//     bias equals the max of the biased values, and relu commutes with max: both are monotonic,
//     rounding included), float4 loads of two rows -> two outputs per thread when W % 4 == 0;
//  3. cuDNN conv2 without bias into s1 (its output, half of conv1's, fits in s1);
//  4. bias_relu_pool from s1 into the (N, C2 * H/4 * W/4) feature rows (NCHW order = flatten);
//  5. fc1 as one cuBLASLt matmul with the bias+ReLU epilogue; 6. fc2 with the bias epilogue.

namespace {

constexpr int kThreads = 256;

// Two pooled outputs per thread: rows 2r and 2r+1, columns 4q..4q+3 of one plane (w % 4 == 0, so
// every row starts 16-byte aligned and ow = w / 2 is even: the float2 store is 8-byte aligned).
template <typename Idx>
__global__ void __launch_bounds__(kThreads) bias_relu_pool4_k(const float* __restrict__ y, const float* __restrict__ b,
                                                              float* __restrict__ out, Idx total, Idx k, Idx h, Idx w) {
    const Idx oh = h / 2, ow = w / 2, pw = w / 4;
    for (Idx i = blockIdx.x * (Idx)blockDim.x + threadIdx.x; i < total; i += (Idx)gridDim.x * blockDim.x) {
        const Idx q = i % pw, t = i / pw;
        const Idx r = t % oh, plane = t / oh;
        const float* p = y + plane * h * w + 2 * r * w + 4 * q;
        const float4 a = *reinterpret_cast<const float4*>(p);
        const float4 c = *reinterpret_cast<const float4*>(p + w);
        const float bias = b[plane % k];
        float2 o;
        o.x = fmaxf(fmaxf(fmaxf(a.x, a.y), fmaxf(c.x, c.y)) + bias, 0.0f);
        o.y = fmaxf(fmaxf(fmaxf(a.z, a.w), fmaxf(c.z, c.w)) + bias, 0.0f);
        *reinterpret_cast<float2*>(out + plane * oh * ow + r * ow + 2 * q) = o;
    }
}

// Any w: one pooled output per thread.
template <typename Idx>
__global__ void __launch_bounds__(kThreads) bias_relu_pool1_k(const float* __restrict__ y, const float* __restrict__ b,
                                                              float* __restrict__ out, Idx total, Idx k, Idx h, Idx w) {
    const Idx oh = h / 2, ow = w / 2;
    for (Idx i = blockIdx.x * (Idx)blockDim.x + threadIdx.x; i < total; i += (Idx)gridDim.x * blockDim.x) {
        const Idx col = i % ow, t = i / ow;
        const Idx r = t % oh, plane = t / oh;
        const float* p = y + plane * h * w + 2 * r * w + 2 * col;
        const float m = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[w], p[w + 1]));
        out[i] = fmaxf(m + b[plane % k], 0.0f);
    }
}

template <typename Idx>
void pool_as(const float* y, const float* b, float* out, int64_t planes, int64_t k, int64_t h, int64_t w) {
    const bool vec = (w & 3) == 0;
    const int64_t total = planes * (h / 2) * (vec ? w / 4 : w / 2);
    if (total <= 0) return;
    int64_t blocks = (total + kThreads - 1) / kThreads;
    if (blocks > (1 << 16)) blocks = 1 << 16;  // grid-stride beyond
    if (vec)
        bias_relu_pool4_k<Idx><<<(unsigned)blocks, kThreads>>>(y, b, out, (Idx)total, (Idx)k, (Idx)h, (Idx)w);
    else
        bias_relu_pool1_k<Idx><<<(unsigned)blocks, kThreads>>>(y, b, out, (Idx)total, (Idx)k, (Idx)h, (Idx)w);
}

// out (planes, h/2, w/2) = relu(maxpool2x2(y (planes, h, w)) + b[plane % k]).
void pool(const float* y, const float* b, float* out, int64_t planes, int64_t k, int64_t h, int64_t w) {
    // 32-bit index arithmetic when every offset (input elements, the largest) fits.
    if (planes * h * w < (int64_t(1) << 32) - 2 * kThreads * (int64_t(1) << 16))
        pool_as<uint32_t>(y, b, out, planes, k, h, w);
    else
        pool_as<uint64_t>(y, b, out, planes, k, h, w);
}

}  // namespace

// s1: n * max(c1 * h * w, c2 * (h/2) * (w/2)) floats; s2: n * c1 * (h/2) * (w/2); feat: n * c2 *
// (h/4) * (w/4) (w/4 meaning (w/2)/2); hidden: n * fc1_out; ws: ws_bytes bytes (cuDNN and cuBLASLt,
// one call at a time); out: (n, classes).
KAGENT_EXPORT void small_cnn(const float* x, const float* w1, const float* b1, const float* w2, const float* b2,
                             const float* fw1, const float* fb1, const float* fw2, const float* fb2, float* s1,
                             float* s2, float* feat, float* hidden, uint8_t* ws, float* out, int n, int c0, int h,
                             int w, int c1, int c2, int fc1_out, int classes, int64_t ws_bytes) {
    const int hp = h / 2, wp = w / 2, hq = hp / 2, wq = wp / 2;  // after the first and second pool
    const int64_t feat_len = (int64_t)c2 * hq * wq, out_len = (int64_t)n * classes;
    const size_t cap = (size_t)ws_bytes;
    conv::Plan& p1 = conv::plan(n, c0, h, w, c1, 3, 3, 1, cap);
    if (!p1.ready || p1.oh != h || p1.ow != w || p1.oc != c1) {
        fail::report("small_cnn: conv1 plan (or output shape)", out, out_len);
        return;
    }
    if (!conv::forward(p1, x, w1, s1, ws, cap)) {
        fail::report("small_cnn: conv1", out, out_len);
        return;
    }
    pool(s1, b1, s2, (int64_t)n * c1, c1, h, w);
    conv::Plan& p2 = conv::plan(n, c1, hp, wp, c2, 3, 3, 1, cap);
    if (!p2.ready || p2.oh != hp || p2.ow != wp || p2.oc != c2) {
        fail::report("small_cnn: conv2 plan (or output shape)", out, out_len);
        return;
    }
    if (!conv::forward(p2, s2, w2, s1, ws, cap)) {
        fail::report("small_cnn: conv2", out, out_len);
        return;
    }
    pool(s1, b2, feat, (int64_t)n * c2, c2, hp, wp);
    if (!lt::linear(feat, fw1, fb1, hidden, n, fc1_out, feat_len, true, ws, cap)) {
        fail::report("small_cnn: fc1", out, out_len);
        return;
    }
    if (!lt::linear(hidden, fw2, fb2, out, n, classes, fc1_out, false, ws, cap)) fail::report("small_cnn: fc2", out, out_len);
}
