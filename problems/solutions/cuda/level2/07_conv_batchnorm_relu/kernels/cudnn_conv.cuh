#pragma once
// A cuDNN 2-D convolution, stride 1 / dilation 1, NCHW fp32 with FMA math (no TF32, no tensor
// cores). Descriptors and the algorithm are chosen once per shape and kept in static state (allowed:
// they depend on shapes, not on data); the handle is on the default stream.
#include <cudnn.h>

#include <map>
#include <tuple>

namespace conv {

struct Plan {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t desc;
    cudnnConvolutionFwdAlgo_t algo;
    size_t ws_bytes;
};

inline cudnnHandle_t handle() {
    static cudnnHandle_t h = [] { cudnnHandle_t t; cudnnCreate(&t); return t; }();
    return h;
}

// GEMM-type algorithms only: Winograd and FFT trade accuracy for speed.
inline bool exact_algo(cudnnConvolutionFwdAlgo_t a) {
    return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
}

// The plan for x (n, c, h, w) * weight (k, c, r, s) with `pad` zeros each side; the algorithm is
// the heuristic's best exact one whose workspace fits in ws_cap bytes.
inline const Plan& plan(int n, int c, int h, int w, int k, int r, int s, int pad, size_t ws_cap) {
    static std::map<std::tuple<int, int, int, int, int, int, int, int, size_t>, Plan> plans;
    const auto key = std::make_tuple(n, c, h, w, k, r, s, pad, ws_cap);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan p{};
    cudnnCreateTensorDescriptor(&p.x);
    cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w);
    cudnnCreateFilterDescriptor(&p.w);
    cudnnSetFilter4dDescriptor(p.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, s);
    cudnnCreateConvolutionDescriptor(&p.desc);
    cudnnSetConvolution2dDescriptor(p.desc, pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    cudnnSetConvolutionMathType(p.desc, CUDNN_FMA_MATH);
    int on = 0, oc = 0, oh = 0, ow = 0;
    cudnnGetConvolution2dForwardOutputDim(p.desc, p.x, p.w, &on, &oc, &oh, &ow);
    cudnnCreateTensorDescriptor(&p.y);
    cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    cudnnGetConvolutionForwardAlgorithm_v7(handle(), p.x, p.w, p.desc, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got,
                                           perf);
    p.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;  // needs no workspace
    p.ws_bytes = 0;
    for (int i = 0; i < got; ++i) {
        // FMA math was asked for on the descriptor; an entry may still report the default math type.
        const bool fma = perf[i].mathType == CUDNN_FMA_MATH || perf[i].mathType == CUDNN_DEFAULT_MATH;
        if (perf[i].status == CUDNN_STATUS_SUCCESS && exact_algo(perf[i].algo) && fma && perf[i].memory <= ws_cap) {
            p.algo = perf[i].algo;
            p.ws_bytes = perf[i].memory;
            break;
        }
    }
    return plans.emplace(key, p).first->second;
}

// y = conv(x, weight) for one plan; ws holds at least plan.ws_bytes bytes.
inline void forward(const Plan& p, const float* x, const float* weight, float* y, void* ws) {
    const float one = 1.0f, zero = 0.0f;
    cudnnConvolutionForward(handle(), &one, p.x, x, p.w, weight, p.desc, p.algo, ws, p.ws_bytes, &zero, p.y, y);
}

}  // namespace conv
