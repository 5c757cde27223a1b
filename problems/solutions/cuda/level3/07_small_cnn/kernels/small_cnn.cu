#include "kagent.h"
#include "cudnn_conv.cuh"
#include "lt_linear.cuh"

// fc2(relu(fc1(flatten(pool(relu(conv2(pool(relu(conv1(x)))))))))), x (N, 3, 32, 32); convs 3x3
// padding 1 with bias; pools 2x2.
//
// Eager: conv1, relu, pool, conv2, relu, pool, addmm, relu, addmm (plus bias passes): every
// activation crosses HBM two or three times. Ours: per chunk of `chunk` images (the caller sizes
// it so conv1's output, the largest, ~8 MiB, stays in L2):
//  1. cuDNN conv1 (FMA math, exact GEMM-type algorithm) into scratch1;
//  2. bias_relu_pool_k: relu(max of the 2x2 window + bias) from L2 into scratch2 (a window's max
//     plus the bias equals the max of the biased values: rounding is monotonic);
//  3. cuDNN conv2 into scratch1; 4. bias_relu_pool_k into the (N, 4096) feature rows.
// Then fc1 as one cuBLASLt matmul with the bias+ReLU epilogue and fc2 with the bias epilogue.

namespace {

__global__ void bias_relu_pool_k(const float* __restrict__ y, const float* __restrict__ b, float* __restrict__ out,
                                 int64_t planes, int64_t k, int h, int w) {
    const int oh = h / 2, ow = w / 2;
    const int64_t total = planes * oh * ow;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t plane = i / (oh * ow);
        const int r = (int)(i % (oh * ow)) / ow, c = (int)(i % ow);
        const float* p = y + plane * h * w + (int64_t)(2 * r) * w + 2 * c;
        const float m = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[w], p[w + 1]));
        out[i] = fmaxf(m + b[plane % k], 0.0f);
    }
}

void pool(const float* y, const float* b, float* out, int64_t planes, int64_t k, int h, int w) {
    const int64_t total = planes * (h / 2) * (w / 2), blocks = (total + 255) / 256;
    bias_relu_pool_k<<<(unsigned)(blocks < 8192 ? blocks : 8192), 256>>>(y, b, out, planes, k, h, w);
}

}  // namespace

// scratch1: chunk * 32 * h * w floats; scratch2: chunk * 32 * (h/2) * (w/2); feat: n * 64 * (h/4) *
// (w/4); hidden: n * fc1_out; ws: ws_bytes bytes (cuDNN and cuBLASLt, one call at a time).
KAGENT_EXPORT void small_cnn(const float* x, const float* w1, const float* b1, const float* w2, const float* b2,
                             const float* fw1, const float* fb1, const float* fw2, const float* fb2, float* scratch1,
                             float* scratch2, float* feat, float* hidden, uint8_t* ws, float* out, int n, int h,
                             int w, int c1, int c2, int fc1_out, int classes, int chunk, int64_t ws_bytes) {
    const int64_t feat_len = (int64_t)c2 * (h / 4) * (w / 4);
    for (int n0 = 0; n0 < n; n0 += chunk) {
        const int nb = n - n0 < chunk ? n - n0 : chunk;
        const conv::Plan& p1 = conv::plan(nb, 3, h, w, c1, 3, 3, 1, (size_t)ws_bytes);
        conv::forward(p1, x + (int64_t)n0 * 3 * h * w, w1, scratch1, ws);
        pool(scratch1, b1, scratch2, (int64_t)nb * c1, c1, h, w);
        const conv::Plan& p2 = conv::plan(nb, c1, h / 2, w / 2, c2, 3, 3, 1, (size_t)ws_bytes);
        conv::forward(p2, scratch2, w2, scratch1, ws);
        pool(scratch1, b2, feat + (int64_t)n0 * feat_len, (int64_t)nb * c2, c2, h / 2, w / 2);
    }
    lt::linear(feat, fw1, fb1, hidden, n, fc1_out, feat_len, true, ws, (size_t)ws_bytes);
    lt::linear(hidden, fw2, fb2, out, n, classes, fc1_out, false, ws, (size_t)ws_bytes);
}
