#include "kagent.h"
#include <cublas_v2.h>

// p (B, Q, S) = softmax(q (B, Q, D) @ k (B, S, D)^T * scale, dim=-1).
//
// Eager: bmm, mul, softmax = 3 kernels; the (B, Q, S) scores cross HBM 5 times (write, read +
// write, read + write). Ours, per chunk of `chunk` batches (sized by the caller so a chunk's
// scores fit in L2, ~16 MiB of the H200's 50 MiB):
//  1. cublasSgemmStridedBatched writes scale * q k^T for the chunk straight into p (alpha = scale
//     folds the mul; fp32 SIMT math, the handle's default: no TF32);
//  2. softmax_rows_k rewrites those rows in place while they are still in L2.
// So the scores cross HBM about once (the final write-back). In cuBLAS's column-major terms one
// batch is p^T (S x Q) = op_T(k as D x S) * (q as D x Q).
// softmax_rows_k: one warp per row, online max/sum in one pass over the row, then a second pass
// writes expf(v - max) / sum (accurate expf, fp32).

namespace {

cublasHandle_t handle() {
    static cublasHandle_t h = [] { cublasHandle_t t; cublasCreate(&t); return t; }();
    return h;  // on the default stream, the handle's default
}

__device__ __forceinline__ void online(float& m, float& s, float v) {
    if (v > m) { s = s * expf(m - v) + 1.0f; m = v; } else { s += expf(v - m); }
}

__global__ void softmax_rows_k(float* __restrict__ p, int64_t rows, int64_t cols) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
        float* row = p + r * cols;
        float m = -INFINITY, s = 0.0f;
        for (int64_t c = lane; c < cols; c += 32) online(m, s, row[c]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
            const float mm = fmaxf(m, m2);
            s = (m == -INFINITY ? 0.0f : s * expf(m - mm)) + (m2 == -INFINITY ? 0.0f : s2 * expf(m2 - mm));
            m = mm;
        }
        const float inv = 1.0f / s;
        for (int64_t c = lane; c < cols; c += 32) row[c] = expf(row[c] - m) * inv;
    }
}

}  // namespace

KAGENT_EXPORT void scaled_scores_softmax(const float* q, const float* k, float* p, int64_t b, int64_t nq,
                                         int64_t s, int64_t d, float scale, int64_t chunk) {
    const float zero = 0.0f;
    for (int64_t b0 = 0; b0 < b; b0 += chunk) {
        const int64_t nb = b - b0 < chunk ? b - b0 : chunk;
        cublasSgemmStridedBatched(handle(), CUBLAS_OP_T, CUBLAS_OP_N, (int)s, (int)nq, (int)d, &scale,
                                  k + b0 * s * d, (int)d, s * d, q + b0 * nq * d, (int)d, nq * d, &zero,
                                  p + b0 * nq * s, (int)s, nq * s, (int)nb);
        const int64_t rows = nb * nq, blocks = (rows + 7) / 8;  // 8 warps (rows) per block
        softmax_rows_k<<<(unsigned)(blocks < 65535 ? blocks : 65535), 256>>>(p + b0 * nq * s, rows, s);
    }
}
