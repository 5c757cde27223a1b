#pragma once
// y (M, N) = epilogue(x (M, K) @ W (N, K)^T + b (N)), row-major nn.Linear layout, as ONE cuBLASLt
// matmul with a bias (+ ReLU) epilogue, fp32 compute (CUBLAS_COMPUTE_32F: no TF32). In cuBLAS's
// column-major terms y^T (N x M) = op_T(W as K x N) * (x^T as K x M): the bias is per row of D,
// which is what the epilogue adds. Where no algorithm has the epilogue for the shape, the plain
// matmul runs and bias_act_k applies it. The handle and, per shape, the descriptors and the
// heuristic's algorithm are kept in static state (shapes only, never data). Every status is
// checked: linear() returns false when cuBLASLt failed (the caller fills its output with NaN).
#include <cublasLt.h>

#include <cstdio>
#include <map>
#include <tuple>

namespace lt {

inline bool ok(cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    std::fprintf(stderr, "kagent kernel: cuBLASLt %s: %s\n", what, cublasLtGetStatusString(s));
    return false;
}

__global__ void bias_act_k(float* __restrict__ y, const float* __restrict__ b, int64_t m, int64_t n, int relu) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = y[i] + b[i % n];
        y[i] = relu ? fmaxf(v, 0.0f) : v;
    }
}

struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool fused = false;  // the algorithm applies the bias (+ relu) epilogue itself
    bool ok = false;     // descriptors made and an algorithm found
};

inline cublasLtHandle_t handle() {
    static cublasLtHandle_t h = [] {
        cublasLtHandle_t t = nullptr;
        if (!ok(cublasLtCreate(&t), "cublasLtCreate")) t = nullptr;
        return t;
    }();
    return h;
}

inline bool pick(Plan& p, cublasLtEpilogue_t epi, size_t ws_bytes) {
    if (!ok(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), "set epilogue"))
        return false;
    cublasLtMatmulPreference_t pref = nullptr;
    if (!ok(cublasLtMatmulPreferenceCreate(&pref), "create preference")) return false;
    bool good = ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                        sizeof(ws_bytes)),
                   "set workspace preference");
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    // No algorithm for this epilogue is not an error (the caller falls back), so no message.
    good = good && cublasLtMatmulAlgoGetHeuristic(handle(), p.op, p.a, p.b, p.d, p.d, pref, 1, &res, &found) ==
                       CUBLAS_STATUS_SUCCESS && found > 0 && res.state == CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulPreferenceDestroy(pref);
    if (good) p.algo = res.algo;
    return good;
}

inline Plan& plan(int64_t m, int64_t n, int64_t k, bool relu, size_t ws_bytes) {
    static std::map<std::tuple<int64_t, int64_t, int64_t, bool, size_t>, Plan> plans;
    const auto key = std::make_tuple(m, n, k, relu, ws_bytes);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan p;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    bool good = handle() != nullptr;
    good = good && ok(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "create matmul descriptor");
    good = good && ok(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "set transa");
    good = good && ok(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "set transb");
    good = good && ok(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, k, n, k), "layout A");
    good = good && ok(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_32F, k, m, k), "layout B");
    good = good && ok(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_32F, n, m, n), "layout D");
    if (good) {
        p.fused = pick(p, relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS, ws_bytes);
        p.ok = p.fused || pick(p, CUBLASLT_EPILOGUE_DEFAULT, ws_bytes);
        if (!p.ok) std::fprintf(stderr, "kagent kernel: cuBLASLt found no algorithm for %lld x %lld x %lld\n",
                                (long long)m, (long long)n, (long long)k);
    }
    return plans.emplace(key, p).first->second;
}

// ws: ws_bytes bytes of scratch for cuBLASLt; true when the matmul (and its epilogue) launched.
inline bool linear(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t n, int64_t k,
                   bool relu, void* ws, size_t ws_bytes) {
    Plan& p = plan(m, n, k, relu, ws_bytes);
    if (!p.ok) return false;
    if (p.fused && !ok(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof(b)),
                       "set bias pointer"))
        return false;
    const float one = 1.0f, zero = 0.0f;
    if (!ok(cublasLtMatmul(handle(), p.op, &one, w, p.a, x, p.b, &zero, y, p.d, y, p.d, &p.algo, ws, ws_bytes, 0),
            "matmul"))
        return false;
    if (!p.fused) {
        const int64_t blocks = (m * n + 255) / 256;
        bias_act_k<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256>>>(y, b, m, n, relu ? 1 : 0);
    }
    return true;
}

}  // namespace lt
