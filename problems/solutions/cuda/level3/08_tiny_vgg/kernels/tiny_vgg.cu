#include "kagent.h"
#include "conv_select.cuh"
#include "lt_linear.cuh"

// Tiny VGG: [conv3x3-relu] x 2 + maxpool2, twice, then fc1 + relu + fc2. x (N, 3, S, S).
//
// Each conv is cuDNN (exact GEMM-type algorithm) or im2col + cuBLAS strided-batched SGEMM,
// whichever measured faster for its shape at the first call (conv_select.cuh): cuDNN's fp32 FMA
// kernels are slow for these shapes (the 32x32 layers run at ~7-14 TFLOP/s). After each conv one
// epilogue pass: bias + relu in place (conv1, conv3), or bias + relu + 2x2 max-pool into the
// half-size buffer (conv2, conv4; the pooled conv4 output is the (N, 128*S/4*S/4) feature rows).
// fc1 is one cuBLASLt matmul with the bias+ReLU epilogue, fc2 with the bias epilogue.

namespace {

constexpr int kThreads = 256;

// y = relu(y + b[k]) in place; one block per (n, k) plane of hw floats.
__global__ void __launch_bounds__(kThreads) bias_relu_k(float* __restrict__ y, const float* __restrict__ b, int K,
                                                        int64_t hw) {
    const int64_t plane = blockIdx.x;
    const float bias = b[plane % K];
    float* p = y + plane * hw;
    if ((hw & 3) == 0) {
        float4* p4 = reinterpret_cast<float4*>(p);
        for (int64_t i = threadIdx.x; i < hw / 4; i += blockDim.x) {
            float4 v = p4[i];
            v.x = fmaxf(v.x + bias, 0.0f); v.y = fmaxf(v.y + bias, 0.0f);
            v.z = fmaxf(v.z + bias, 0.0f); v.w = fmaxf(v.w + bias, 0.0f);
            p4[i] = v;
        }
    } else {
        for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) p[i] = fmaxf(p[i] + bias, 0.0f);
    }
}

// out[plane, r, c] = relu(max of the 2x2 window of y + b[plane % K]) (the max of the biased values:
// rounding is monotonic); floor pooling like nn.MaxPool2d(2).
__global__ void __launch_bounds__(kThreads) bias_relu_pool_k(const float* __restrict__ y, const float* __restrict__ b,
                                                             float* __restrict__ out, int64_t planes, int K, int h,
                                                             int w) {
    const int oh = h / 2, ow = w / 2;
    const int64_t total = planes * oh * ow;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t plane = i / (oh * ow);
        const int rem = (int)(i - plane * oh * ow);
        const int r = rem / ow, c = rem - r * ow;
        const float* p = y + plane * h * w + (int64_t)(2 * r) * w + 2 * c;
        const float m = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[w], p[w + 1]));
        out[i] = fmaxf(m + b[plane % K], 0.0f);
    }
}

__global__ void fill_nan_k(float* y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __int_as_float(0x7fc00000);
}

void pool(const float* y, const float* b, float* out, int64_t planes, int K, int h, int w) {
    const int64_t total = planes * (h / 2) * (w / 2), blocks = (total + kThreads - 1) / kThreads;
    bias_relu_pool_k<<<(unsigned)(blocks < 16384 ? blocks : 16384), kThreads>>>(y, b, out, planes, K, h, w);
}

int64_t align256(int64_t v) { return (v + 255) & ~(int64_t)255; }

int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

}  // namespace

// Scratch layout (each piece 256-byte aligned; the same formula as model_new.py's scratch_bytes):
// [A: n*max(c1*s*s, c3*s2*s2)][B: n*max(c2*s*s, c4*s2*s2)][P: n*c2*s2*s2][F: n*c4*s4*s4][Hd: n*hid]
// floats, then [col: col_bytes][ws: ws_bytes] (cuDNN / cuBLAS / cuBLASLt workspace, one call at a time).
// conv1 x -> A, conv2 A -> B, pool B -> P, conv3 P -> A, conv4 A -> B, pool B -> F, fc1 F -> Hd, fc2 Hd -> out.
KAGENT_EXPORT void tiny_vgg(const float* x, const float* w1, const float* b1, const float* w2, const float* b2,
                            const float* w3, const float* b3, const float* w4, const float* b4, const float* fw1,
                            const float* fb1, const float* fw2, const float* fb2, float* out, uint8_t* scratch,
                            int64_t scratch_bytes, int64_t col_bytes, int64_t ws_bytes, int n, int cin, int s, int c1,
                            int c2, int c3, int c4, int hid, int classes) {
    const int s2 = s / 2, s4 = s2 / 2;
    const int64_t ss = (int64_t)s * s, ss2 = (int64_t)s2 * s2, ss4 = (int64_t)s4 * s4;
    int64_t off = 0;
    float* A = reinterpret_cast<float*>(scratch + off);
    off += align256(4 * n * max64(c1 * ss, c3 * ss2));
    float* B = reinterpret_cast<float*>(scratch + off);
    off += align256(4 * n * max64(c2 * ss, c4 * ss2));
    float* P = reinterpret_cast<float*>(scratch + off);
    off += align256(4 * n * c2 * ss2);
    float* F = reinterpret_cast<float*>(scratch + off);
    off += align256(4 * n * c4 * ss4);
    float* Hd = reinterpret_cast<float*>(scratch + off);
    off += align256(4 * (int64_t)n * hid);
    float* col = reinterpret_cast<float*>(scratch + off);
    off += align256(col_bytes);
    void* ws = scratch + off;
    off += align256(ws_bytes);
    const int64_t out_n = (int64_t)n * classes;
    bool good = off <= scratch_bytes;
    if (!good) std::fprintf(stderr, "tiny_vgg: scratch too small (%lld < %lld)\n", (long long)scratch_bytes,
                            (long long)off);
    const size_t cb = (size_t)col_bytes, wb = (size_t)ws_bytes;
    good = good && cv::forward(n, cin, s, s, c1, x, w1, A, col, cb, ws, wb);
    if (good) bias_relu_k<<<(unsigned)((int64_t)n * c1), kThreads>>>(A, b1, c1, ss);
    good = good && cv::forward(n, c1, s, s, c2, A, w2, B, col, cb, ws, wb);
    if (good) pool(B, b2, P, (int64_t)n * c2, c2, s, s);
    good = good && cv::forward(n, c2, s2, s2, c3, P, w3, A, col, cb, ws, wb);
    if (good) bias_relu_k<<<(unsigned)((int64_t)n * c3), kThreads>>>(A, b3, c3, ss2);
    good = good && cv::forward(n, c3, s2, s2, c4, A, w4, B, col, cb, ws, wb);
    if (good) pool(B, b4, F, (int64_t)n * c4, c4, s2, s2);
    good = good && lt::linear(F, fw1, fb1, Hd, n, hid, (int64_t)c4 * ss4, true, ws, wb);
    good = good && lt::linear(Hd, fw2, fb2, out, n, classes, hid, false, ws, wb);
    if (!good) {
        std::fprintf(stderr, "tiny_vgg: failed; the output is NaN\n");
        fill_nan_k<<<64, kThreads>>>(out, out_n);
    }
}
