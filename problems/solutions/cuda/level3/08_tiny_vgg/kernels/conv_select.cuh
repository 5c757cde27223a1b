#pragma once
// A 3x3 convolution, padding 1, stride 1, NCHW fp32, computed one of two ways, whichever measured
// faster for the shape at its first call (the choice depends only on the shape and is kept in
// static state; the measuring, with CUDA events and one synchronisation, happens at that first
// call only):
//  - cuDNN, FMA math, one whole-batch call, the exact GEMM-type algorithms only (IMPLICIT_GEMM,
//    IMPLICIT_PRECOMP_GEMM, GEMM; no Winograd / FFT), candidates from
//    cudnnFindConvolutionForwardAlgorithmEx on the real buffers and the caller's workspace;
//  - im2col + cuBLAS: per chunk of images, im2col3_k writes col[n] (C*9, H*W) and ONE
//    cublasSgemmStridedBatched computes y[n] (K, HW) = W (K, C*9) @ col[n] for the chunk (fp32,
//    default math; the weight is shared: stride 0). Column-major: y^T (HW x K) = col^T (HW x C*9)
//    * W^T (C*9 x K). Chunk sizes tried: col of ~24 MiB (L2), ~64 MiB, and the caller's whole buffer.
// The output is the raw convolution (no bias): the caller's epilogue adds bias + relu (+ pool).
#include <cublas_v2.h>
#include <cudnn.h>

#include <cstdio>
#include <map>
#include <tuple>

namespace cv {

inline cudnnHandle_t dnn() {
    static cudnnHandle_t h = [] {
        cudnnHandle_t t = nullptr;
        const cudnnStatus_t st = cudnnCreate(&t);
        if (st != CUDNN_STATUS_SUCCESS) {
            std::fprintf(stderr, "kagent kernel: cudnnCreate: %s\n", cudnnGetErrorString(st));
            t = nullptr;
        }
        return t;
    }();
    return h;  // on the default stream, the handle's default
}

inline cublasHandle_t blas() {
    static cublasHandle_t h = [] {
        cublasHandle_t t = nullptr;
        const cublasStatus_t st = cublasCreate(&t);
        if (st != CUBLAS_STATUS_SUCCESS) {
            std::fprintf(stderr, "kagent kernel: cublasCreate: %d\n", (int)st);
            t = nullptr;
        }
        return t;
    }();
    return h;  // on the default stream
}

inline bool dnn_ok(cudnnStatus_t s, const char* what) {
    if (s == CUDNN_STATUS_SUCCESS) return true;
    std::fprintf(stderr, "kagent kernel: cuDNN %s: %s\n", what, cudnnGetErrorString(s));
    return false;
}

inline bool blas_ok(cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    std::fprintf(stderr, "kagent kernel: cuBLAS %s: %d\n", what, (int)s);
    return false;
}

inline bool exact_algo(cudnnConvolutionFwdAlgo_t a) {
    return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
}

// col[((n * C + c) * 9 + r * 3 + s) * HW + p] = x[n, c, p / W + r - 1, p % W + s - 1] (0 outside).
__global__ void im2col3_k(const float* __restrict__ x, float* __restrict__ col, int64_t total, int H, int W) {
    const int64_t hw = (int64_t)H * W;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = i / hw;
        const int p = (int)(i - t * hw);
        const int64_t plane = t / 9;  // n * C + c
        const int q = (int)(t - plane * 9);
        const int r = q / 3, s = q - 3 * r;
        const int hh = p / W + r - 1, ww = p % W + s - 1;
        col[i] = (hh >= 0 && hh < H && ww >= 0 && ww < W) ? x[plane * hw + (int64_t)hh * W + ww] : 0.0f;
    }
}

struct Layer {
    cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
    cudnnFilterDescriptor_t wd = nullptr;
    cudnnConvolutionDescriptor_t cd = nullptr;
    int mode = -1;  // 0: cuDNN, 1: im2col + cuBLAS, -1: nothing works
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    size_t algo_ws = 0;
    int chunk = 1;
    float ms = 0.0f;  // the winner's measured time (diagnostics)
};

inline bool run_cudnn(const Layer& L, cudnnConvolutionFwdAlgo_t algo, size_t algo_ws, const float* x,
                      const float* w, float* y, void* ws) {
    const float one = 1.0f, zero = 0.0f;
    return dnn_ok(cudnnConvolutionForward(dnn(), &one, L.xd, x, L.wd, w, L.cd, algo, ws, algo_ws, &zero, L.yd, y),
                  "cudnnConvolutionForward");
}

inline bool run_gemm(int chunk, const float* x, const float* w, float* y, float* col, int n, int c, int h, int wd,
                     int k) {
    const int64_t hw = (int64_t)h * wd, kk = (int64_t)c * 9;
    const float one = 1.0f, zero = 0.0f;
    for (int n0 = 0; n0 < n; n0 += chunk) {
        const int nb = n - n0 < chunk ? n - n0 : chunk;
        const int64_t total = (int64_t)nb * kk * hw;
        const int64_t blocks = (total + 255) / 256;
        im2col3_k<<<(unsigned)(blocks < 16384 ? blocks : 16384), 256>>>(x + (int64_t)n0 * c * hw, col, total, h, wd);
        if (!blas_ok(cublasSgemmStridedBatched(blas(), CUBLAS_OP_N, CUBLAS_OP_N, (int)hw, k, (int)kk, &one, col,
                                               (int)hw, kk * hw, w, (int)kk, 0, &zero, y + (int64_t)n0 * k * hw,
                                               (int)hw, (int64_t)k * hw, nb),
                     "cublasSgemmStridedBatched"))
            return false;
    }
    return true;
}

// Mean ms of 3 runs after one warm-up run; a huge value when a run fails.
template <class F>
float time_it(F f) {
    if (!f()) return 1e30f;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, 0);
    bool good = true;
    for (int i = 0; i < 3 && good; ++i) good = f();
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return good ? ms / 3.0f : 1e30f;
}

// The layer for x (n, c, h, wd) -> y (n, k, h, wd); chosen at its first call by running the
// candidates on the real buffers (y is overwritten; the caller runs the layer afterwards).
inline const Layer& layer(int n, int c, int h, int wd, int k, const float* x, const float* w, float* y, float* col,
                          size_t col_bytes, void* ws, size_t ws_bytes) {
    static std::map<std::tuple<int, int, int, int, int, size_t, size_t>, Layer> layers;
    const auto key = std::make_tuple(n, c, h, wd, k, col_bytes, ws_bytes);
    auto it = layers.find(key);
    if (it != layers.end()) return it->second;
    Layer L;
    float best = 1e30f;
    cudnnHandle_t hd = dnn();
    bool good = hd != nullptr;
    good = good && dnn_ok(cudnnCreateTensorDescriptor(&L.xd), "create x descriptor");
    good = good && dnn_ok(cudnnSetTensor4dDescriptor(L.xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, wd), "x desc");
    good = good && dnn_ok(cudnnCreateTensorDescriptor(&L.yd), "create y descriptor");
    good = good && dnn_ok(cudnnSetTensor4dDescriptor(L.yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, k, h, wd), "y desc");
    good = good && dnn_ok(cudnnCreateFilterDescriptor(&L.wd), "create filter descriptor");
    good = good && dnn_ok(cudnnSetFilter4dDescriptor(L.wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, 3, 3), "w desc");
    good = good && dnn_ok(cudnnCreateConvolutionDescriptor(&L.cd), "create conv descriptor");
    good = good && dnn_ok(cudnnSetConvolution2dDescriptor(L.cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                          CUDNN_DATA_FLOAT),
                          "conv desc");
    good = good && dnn_ok(cudnnSetConvolutionMathType(L.cd, CUDNN_FMA_MATH), "FMA math");
    if (good) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int got = 0;
        if (dnn_ok(cudnnFindConvolutionForwardAlgorithmEx(hd, L.xd, x, L.wd, w, L.cd, L.yd, y,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf, ws, ws_bytes),
                   "cudnnFindConvolutionForwardAlgorithmEx")) {
            for (int i = 0; i < got; ++i) {
                const bool fma = perf[i].mathType == CUDNN_FMA_MATH || perf[i].mathType == CUDNN_DEFAULT_MATH;
                if (perf[i].status != CUDNN_STATUS_SUCCESS || !exact_algo(perf[i].algo) || !fma ||
                    perf[i].memory > ws_bytes)
                    continue;
                const cudnnConvolutionFwdAlgo_t algo = perf[i].algo;
                const size_t mem = perf[i].memory;
                const float t = time_it([&] { return run_cudnn(L, algo, mem, x, w, y, ws); });
                if (t < best) { best = t; L.mode = 0; L.algo = algo; L.algo_ws = mem; }
            }
        }
    }
    cudaGetLastError();  // a failed candidate's launch error is not the caller's
    if (blas() && blas_ok(cublasSetWorkspace(blas(), ws, ws_bytes), "cublasSetWorkspace")) {
        const size_t per = (size_t)c * 9 * h * wd * sizeof(float);  // one image's columns
        const size_t cmax = col_bytes / per;
        const size_t caps[3] = {(size_t)24 << 20, (size_t)64 << 20, col_bytes};
        int prev = 0;
        for (size_t cap : caps) {
            size_t ch = cap / per;
            if (ch < 1) ch = 1;
            if (ch > (size_t)n) ch = (size_t)n;
            if (ch > cmax || (int)ch == prev) continue;
            prev = (int)ch;
            const int chunk = (int)ch;
            const float t = time_it([&] { return run_gemm(chunk, x, w, y, col, n, c, h, wd, k); });
            if (t < best) { best = t; L.mode = 1; L.chunk = chunk; }
        }
    }
    cudaGetLastError();
    L.ms = best;
    if (L.mode < 0) std::fprintf(stderr, "kagent kernel: no convolution works for %d x %d x %d x %d -> %d\n", n, c, h,
                                 wd, k);
    return layers.emplace(key, L).first->second;
}

// y = conv3x3(x, w) (no bias); false when it failed (printed).
inline bool forward(int n, int c, int h, int wd, int k, const float* x, const float* w, float* y, float* col,
                    size_t col_bytes, void* ws, size_t ws_bytes) {
    const Layer& L = layer(n, c, h, wd, k, x, w, y, col, col_bytes, ws, ws_bytes);
    if (L.mode == 0) return run_cudnn(L, L.algo, L.algo_ws, x, w, y, ws);
    if (L.mode == 1) {
        // the cuBLAS workspace is the caller's buffer (it may move between calls)
        if (!blas_ok(cublasSetWorkspace(blas(), ws, ws_bytes), "cublasSetWorkspace")) return false;
        return run_gemm(L.chunk, x, w, y, col, n, c, h, wd, k);
    }
    return false;
}

}  // namespace cv
