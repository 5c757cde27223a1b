#include "kagent.h"

// p (B, Q, 256) = softmax(q (B, Q, D) @ k (B, 256, D)^T * scale, dim=-1) in one kernel, fp32 SIMT.
//
// With 256 keys a block can hold whole rows of scores: each block computes a 64-query x 256-key
// tile of q k^T in registers (256 threads, 8 x 8 each), takes the softmax of its rows there and
// writes the probabilities once. The scores never reach memory; HBM sees q and k read and p
// written once (eager's bmm, mul and softmax move the scores through it five times).
//
// Thread (tm = tid / 32, tn = tid % 32) owns rows tm*8 .. tm*8+7 and columns tn + 32j (j < 8): a
// warp holds 8 whole rows (row max and sum are warp shuffles) and writes each row as coalesced
// 128-byte runs. q and k tiles stay row-major in shared memory (cp.async, 16 bytes a copy, three
// stages in flight), rows padded to 20 floats so that a warp's float4 reads of 32 key rows are
// conflict-free; each float4 carries 4 steps of K, so 24 shared loads (A's broadcast) feed 256 FMAs.
// fp32 throughout, accurate expf; the scale is applied to the scores before the max, as torch does.

namespace {

constexpr int BM = 64, BN = 256, BK = 16, THREADS = 256, STAGES = 3;
constexpr int LD = BK + 4;  // padded row: 5 float4s, odd, so 8 consecutive rows hit 8 bank groups
constexpr int STAGE_FLOATS = (BM + BN) * LD;
constexpr int SMEM_BYTES = STAGES * STAGE_FLOATS * 4;

__device__ __forceinline__ void cp16(float* dst, const float* src, bool ok) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    const int n = ok ? 16 : 0;  // src-size 0: the 16 bytes are zero-filled (rows past nq)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(d), "l"(src), "r"(n));
}

__global__ void __launch_bounds__(THREADS, 2)
attn_fused_k(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ p,
             int nq, int d, float scale) {
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x, tn = tid & 31, tm = tid >> 5;
    const int m0 = blockIdx.x * BM;
    const int64_t b = blockIdx.y;
    const float* qb = q + b * (int64_t)nq * d;
    const float* kb = k + b * (int64_t)BN * d;
    const int tiles = d / BK;

    // one stage: A rows (64 x 4 chunks: one per thread), B rows (256 x 4 chunks: four per thread)
    auto issue = [&](int t) {
        float* As = smem + (t % STAGES) * STAGE_FLOATS;
        float* Bs = As + BM * LD;
        const int k0 = t * BK;
        {
            const int r = tid >> 2, c = (tid & 3) * 4;
            const bool ok = m0 + r < nq;
            cp16(As + r * LD + c, qb + (int64_t)(ok ? m0 + r : 0) * d + k0 + c, ok);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int idx = tid + THREADS * i, r = idx >> 2, c = (idx & 3) * 4;
            cp16(Bs + r * LD + c, kb + (int64_t)r * d + k0 + c, true);
        }
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        if (t < tiles) issue(t);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int t = 0; t < tiles; ++t) {
        asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2));
        __syncthreads();  // tile t is in; every warp is done with tile t - 1, whose stage is refilled next
        if (t + STAGES - 1 < tiles) issue(t + STAGES - 1);
        asm volatile("cp.async.commit_group;\n" ::);
        const float* As = smem + (t % STAGES) * STAGE_FLOATS;
        const float* Bs = As + BM * LD;
#pragma unroll 1
        for (int kk = 0; kk < BK; kk += 4) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {  // columns in two halves: 16 registers of B fragments, not 32
                float4 bv[4];
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    bv[j] = *reinterpret_cast<const float4*>(Bs + (tn + 32 * (4 * h + j)) * LD + kk);
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    const float4 av = *reinterpret_cast<const float4*>(As + (tm * 8 + i) * LD + kk);
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        float& c = acc[i][4 * h + j];
                        c = fmaf(av.x, bv[j].x, c);
                        c = fmaf(av.y, bv[j].y, c);
                        c = fmaf(av.z, bv[j].z, c);
                        c = fmaf(av.w, bv[j].w, c);
                    }
                }
            }
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::);

    // softmax of each of the warp's 8 rows: max and sum over its 32 lanes x 8 columns
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = m0 + tm * 8 + i;
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; ++j) { acc[i][j] *= scale; mx = fmaxf(mx, acc[i][j]); }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < 8; ++j) { acc[i][j] = expf(acc[i][j] - mx); sum += acc[i][j]; }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        const float inv = 1.0f / sum;
        if (row < nq) {
            float* out = p + (b * nq + row) * (int64_t)BN;
#pragma unroll
            for (int j = 0; j < 8; ++j) out[tn + 32 * j] = acc[i][j] * inv;
        }
    }
}

}  // namespace

// For 256 keys and a head_dim that is a multiple of 16 (model_new.py checks; other sizes go through
// attn_probs.cu's cuBLAS path).
KAGENT_EXPORT void attn_probs_fused(const float* q, const float* k, float* p, int64_t b, int64_t nq, int64_t d,
                                    float scale) {
    static const bool sized = [] {  // more than 48 KiB of dynamic shared memory must be asked for
        return cudaFuncSetAttribute(attn_fused_k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES) ==
               cudaSuccess;
    }();
    (void)sized;
    const dim3 grid((unsigned)((nq + BM - 1) / BM), (unsigned)b);
    attn_fused_k<<<grid, THREADS, SMEM_BYTES>>>(q, k, p, (int)nq, (int)d, scale);
}
