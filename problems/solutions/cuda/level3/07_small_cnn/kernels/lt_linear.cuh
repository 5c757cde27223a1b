#pragma once
// y (M, N) = epilogue(x (M, K) @ W (N, K)^T + b (N)), row-major nn.Linear layout, as ONE cuBLASLt
// matmul with a bias (+ ReLU) epilogue, fp32 compute (CUBLAS_COMPUTE_32F: no TF32). In cuBLAS's
// column-major terms y^T (N x M) = op_T(W as K x N) * (x^T as K x M): the bias is per row of D,
// which is what the epilogue adds. Where no algorithm has the epilogue for the shape, the plain
// matmul runs and bias_act_k applies it. The handle and, per shape, the descriptors and the
// heuristic's algorithm are kept in static state (shapes only, never data).
#include <cublasLt.h>

#include <map>
#include <tuple>

namespace lt {

__global__ void bias_act_k(float* __restrict__ y, const float* __restrict__ b, int64_t m, int64_t n, int relu) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = y[i] + b[i % n];
        y[i] = relu ? fmaxf(v, 0.0f) : v;
    }
}

struct Plan {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    bool fused;
    bool ok;
};

inline cublasLtHandle_t handle() {
    static cublasLtHandle_t h = [] { cublasLtHandle_t t; cublasLtCreate(&t); return t; }();
    return h;
}

inline bool pick(Plan& p, cublasLtEpilogue_t epi, size_t ws_bytes) {
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes));
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle(), p.op, p.a, p.b, p.d, p.d, pref, 1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) return false;
    p.algo = res.algo;
    return true;
}

inline const Plan& plan(int64_t m, int64_t n, int64_t k, bool relu, size_t ws_bytes) {
    static std::map<std::tuple<int64_t, int64_t, int64_t, bool, size_t>, Plan> plans;
    const auto key = std::make_tuple(m, n, k, relu, ws_bytes);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan p{};
    cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
    cublasLtMatrixLayoutCreate(&p.a, CUDA_R_32F, k, n, k);
    cublasLtMatrixLayoutCreate(&p.b, CUDA_R_32F, k, m, k);
    cublasLtMatrixLayoutCreate(&p.d, CUDA_R_32F, n, m, n);
    p.fused = pick(p, relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS, ws_bytes);
    p.ok = p.fused || pick(p, CUBLASLT_EPILOGUE_DEFAULT, ws_bytes);
    return plans.emplace(key, p).first->second;
}

// ws: ws_bytes bytes of scratch for cuBLASLt.
inline void linear(const float* x, const float* w, const float* b, float* y, int64_t m, int64_t n, int64_t k,
                   bool relu, void* ws, size_t ws_bytes) {
    const Plan& p = plan(m, n, k, relu, ws_bytes);
    if (!p.ok) return;  // no algorithm: y stays unwritten and the correctness check says so
    if (p.fused) cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof(b));
    const float one = 1.0f, zero = 0.0f;
    cublasLtMatmul(handle(), p.op, &one, w, p.a, x, p.b, &zero, y, p.d, y, p.d, &p.algo, ws, ws_bytes, 0);
    if (!p.fused) {
        const int64_t blocks = (m * n + 255) / 256;
        bias_act_k<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256>>>(y, b, m, n, relu ? 1 : 0);
    }
}

}  // namespace lt
