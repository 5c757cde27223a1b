#include "kagent.h"
#include <cublas_v2.h>

// out (B, S, D) = softmax(scores (B, S, S), dim=-1) @ values (B, S, D).
//
// Eager: softmax writes the (B, S, S) probabilities to HBM and bmm reads them back. Ours, per
// chunk of `chunk` batches (the caller sizes it so a chunk of probabilities, ~16 MiB, stays in
// the H200's 50 MiB L2):
//  1. softmax_rows_k reads the chunk's scores once and writes the probabilities into `scratch`;
//  2. cublasSgemmStridedBatched multiplies them by the values while they are still in L2 (fp32
//     SIMT math, the handle's default: no TF32).
// The scratch is rewritten by every chunk, so the probabilities barely reach HBM. In cuBLAS's
// column-major terms one batch is out^T (D x S) = (values as D x S) * (p as S x S, i.e. p^T).
// softmax_rows_k: one warp per row, online max/sum in one pass, then expf(v - max) / sum.

namespace {

cublasHandle_t handle() {
    static cublasHandle_t h = [] { cublasHandle_t t; cublasCreate(&t); return t; }();
    return h;  // on the default stream, the handle's default
}

__device__ __forceinline__ void online(float& m, float& s, float v) {
    if (v > m) { s = s * expf(m - v) + 1.0f; m = v; } else { s += expf(v - m); }
}

__global__ void softmax_rows_k(const float* __restrict__ x, float* __restrict__ p, int64_t rows, int64_t cols) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
        const float* in = x + r * cols;
        float* out = p + r * cols;
        float m = -INFINITY, s = 0.0f;
        for (int64_t c = lane; c < cols; c += 32) online(m, s, in[c]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
            const float mm = fmaxf(m, m2);
            s = (m == -INFINITY ? 0.0f : s * expf(m - mm)) + (m2 == -INFINITY ? 0.0f : s2 * expf(m2 - mm));
            m = mm;
        }
        const float inv = 1.0f / s;
        for (int64_t c = lane; c < cols; c += 32) out[c] = expf(in[c] - m) * inv;
    }
}

}  // namespace

// scratch: chunk * s * s floats (allocated by the caller with torch.empty).
KAGENT_EXPORT void softmax_bmm(const float* scores, const float* values, float* scratch, float* out, int64_t b,
                               int64_t s, int64_t d, int64_t chunk) {
    const float one = 1.0f, zero = 0.0f;
    for (int64_t b0 = 0; b0 < b; b0 += chunk) {
        const int64_t nb = b - b0 < chunk ? b - b0 : chunk;
        const int64_t rows = nb * s, blocks = (rows + 7) / 8;  // 8 warps (rows) per block
        softmax_rows_k<<<(unsigned)(blocks < 65535 ? blocks : 65535), 256>>>(scores + b0 * s * s, scratch, rows, s);
        cublasSgemmStridedBatched(handle(), CUBLAS_OP_N, CUBLAS_OP_N, (int)d, (int)s, (int)s, &one,
                                  values + b0 * s * d, (int)d, s * d, scratch, (int)s, s * s, &zero,
                                  out + b0 * s * d, (int)d, s * d, (int)nb);
    }
}
