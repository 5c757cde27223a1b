#include "kagent.h"
#include <cublas_v2.h>

#include <cstdio>

// MobileNet block, BN in training mode:
//   out = relu6(bn2(pw(relu6(bn1(dw(x)))))),  x (N, C, H, W), dw 3x3 groups=C pad 1, pw 1x1 C -> K.
//
// Eager: cuDNN depthwise conv, BN (stats + apply), relu6, cuDNN 1x1 conv, BN, relu6: each
// activation crosses HBM 4-6 times. Ours:
//  1. dw_k<false> over the whole batch: the depthwise conv in shared memory (a strip of rows of one
//     (n, c) plane with a zero halo), no output, only per-block fp64 (sum, sum of squares);
//  2. bn_finalize_k: per channel, the partials in a fixed order (deterministic) -> scale, shift
//     (and the running statistics, as nn.BatchNorm2d updates them);
//  3. per chunk of images (sized so the chunk's GEMM input and output fit in L2):
//     dw_k<true> recomputes the conv and writes a = relu6(bn1(.)) into an L2-resident scratch;
//     cublasSgemmStridedBatched: out[n] (K, HW) = W (K, C) @ a[n] (C, HW) (fp32, default math);
//     plane_stats_k reads the chunk's output back from L2: per (n, k) plane fp64 partials;
//  4. bn_finalize_k for BN2; 5. bn_relu6_k applies BN2 + relu6 in place (one read + one write).
// Column-major view of one image: out^T (HW x K) = (a as HW x C) * (W as C x K).

namespace {

constexpr int kThreads = 256;

cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t t = nullptr;
        const cublasStatus_t st = cublasCreate(&t);
        if (st != CUBLAS_STATUS_SUCCESS) std::fprintf(stderr, "dsb: cublasCreate failed: %d\n", (int)st);
        return t;
    }();
    return h;  // on the default stream, the handle's default
}

__device__ __forceinline__ float relu6(float v) { return fminf(fmaxf(v, 0.0f), 6.0f); }

// Block-wide sum of (a, b), fixed order; the result is valid in thread 0. blockDim.x % 32 == 0.
__device__ __forceinline__ void block_sum2(double& a, double& b) {
    __shared__ double sa[32], sb[32];
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, o);
        b += __shfl_down_sync(0xffffffffu, b, o);
    }
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) { sa[wid] = a; sb[wid] = b; }
    __syncthreads();
    if (threadIdx.x == 0) {
        a = 0.0; b = 0.0;
        for (int i = 0; i < (int)(blockDim.x >> 5); ++i) { a += sa[i]; b += sb[i]; }
    }
}

// One block per (plane, strip): plane = n * C + c of x, strip = rows [r0, r0 + th) of it.
// Shared tile: rows r0-1 .. r0+rows (zero outside the image), element (lr, j) at s[lr * pitch + 4 + j]
// for j in [-1, W] (columns -1 and W are the zero halo), pitch % 4 == 0 (float4 stores when W % 4 == 0).
// APPLY: a[plane] rows = relu6(conv * scale[c] + shift[c]); else part[2 * block] = (sum, sum of squares).
template <bool APPLY>
__global__ void __launch_bounds__(kThreads) dw_k(const float* __restrict__ x, const float* __restrict__ w,
                                                 const float* __restrict__ ss, float* __restrict__ a,
                                                 double* __restrict__ part, int C, int H, int W, int th, int strips,
                                                 int pitch) {
    extern __shared__ float4 smem4[];
    float* s = reinterpret_cast<float*>(smem4);
    const int64_t blk = blockIdx.x;
    const int64_t plane = blk / strips;
    const int strip = (int)(blk - plane * strips);
    const int c = (int)(plane % C);
    const int r0 = strip * th;
    const int rows = min(th, H - r0);
    const int lrows = rows + 2;
    const int64_t hw = (int64_t)H * W;
    const float* xp = x + plane * hw;

    for (int lr = threadIdx.x; lr < lrows; lr += blockDim.x) {
        s[lr * pitch + 3] = 0.0f;
        s[lr * pitch + 4 + W] = 0.0f;
    }
    if ((W & 3) == 0) {
        const int w4 = W >> 2;
        for (int i = threadIdx.x; i < lrows * w4; i += blockDim.x) {
            const int lr = i / w4, j4 = i - lr * w4;
            const int gr = r0 - 1 + lr;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (gr >= 0 && gr < H) v = reinterpret_cast<const float4*>(xp + (int64_t)gr * W)[j4];
            *reinterpret_cast<float4*>(s + lr * pitch + 4 + 4 * j4) = v;
        }
    } else {
        for (int i = threadIdx.x; i < lrows * W; i += blockDim.x) {
            const int lr = i / W, j = i - lr * W;
            const int gr = r0 - 1 + lr;
            s[lr * pitch + 4 + j] = (gr >= 0 && gr < H) ? xp[(int64_t)gr * W + j] : 0.0f;
        }
    }
    __syncthreads();

    float wk[9];
#pragma unroll
    for (int q = 0; q < 9; ++q) wk[q] = w[c * 9 + q];
    float sc = 1.0f, sh = 0.0f;
    if (APPLY) { sc = ss[c]; sh = ss[C + c]; }
    float* ap = a + plane * hw + (int64_t)r0 * W;
    double s1 = 0.0, s2 = 0.0;
    for (int i = threadIdx.x; i < rows * W; i += blockDim.x) {
        const int r = i / W, j = i - r * W;
        // output (r0 + r, j) reads input rows r0+r-1 .. r0+r+1 = local rows r .. r+2, columns j-1 .. j+1
        const float* q = s + r * pitch + 3 + j;
        float v = wk[0] * q[0];
        v = fmaf(wk[1], q[1], v);
        v = fmaf(wk[2], q[2], v);
        v = fmaf(wk[3], q[pitch], v);
        v = fmaf(wk[4], q[pitch + 1], v);
        v = fmaf(wk[5], q[pitch + 2], v);
        v = fmaf(wk[6], q[2 * pitch], v);
        v = fmaf(wk[7], q[2 * pitch + 1], v);
        v = fmaf(wk[8], q[2 * pitch + 2], v);
        if (APPLY) {
            ap[i] = relu6(fmaf(v, sc, sh));
        } else {
            s1 += (double)v;
            s2 += (double)v * (double)v;
        }
    }
    if (!APPLY) {
        block_sum2(s1, s2);
        if (threadIdx.x == 0) { part[2 * blk] = s1; part[2 * blk + 1] = s2; }
    }
}

// One block per plane of y (planes of hw floats): part[2 * plane] = (sum, sum of squares), fp64.
__global__ void __launch_bounds__(kThreads) plane_stats_k(const float* __restrict__ y, double* __restrict__ part,
                                                          int64_t hw) {
    const int64_t plane = blockIdx.x;
    const float* p = y + plane * hw;
    double s1 = 0.0, s2 = 0.0;
    if ((hw & 3) == 0) {
        const float4* p4 = reinterpret_cast<const float4*>(p);
        for (int64_t i = threadIdx.x; i < hw / 4; i += blockDim.x) {
            const float4 v = p4[i];
            s1 += ((double)v.x + (double)v.y) + ((double)v.z + (double)v.w);
            s2 += ((double)v.x * v.x + (double)v.y * v.y) + ((double)v.z * v.z + (double)v.w * v.w);
        }
    } else {
        for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) {
            const double v = p[i];
            s1 += v;
            s2 += v * v;
        }
    }
    block_sum2(s1, s2);
    if (threadIdx.x == 0) { part[2 * plane] = s1; part[2 * plane + 1] = s2; }
}

// One block per channel c. use_batch: the partials of channel c (at ((n * C + c) * S + s), n < N,
// s < S) give the batch mean and biased variance over `count` values; else the running stats.
// ss[c] = gamma * rsqrt(var + eps), ss[C + c] = beta - mean * ss[c]. With use_batch and running
// stats present, they are updated like nn.BatchNorm2d (unbiased variance; momentum < 0 means
// momentum=None: cumulative average with factor 1 / (num_batches_tracked + 1)).
__global__ void __launch_bounds__(kThreads) bn_finalize_k(const double* __restrict__ part, int N, int C, int S,
                                                          double count, const float* __restrict__ gamma,
                                                          const float* __restrict__ beta, float eps, float* ss,
                                                          float* rmean, float* rvar, const int64_t* nbt,
                                                          float momentum, int use_batch) {
    const int c = blockIdx.x;
    double a = 0.0, b = 0.0;
    if (use_batch) {
        for (int i = threadIdx.x; i < N * S; i += blockDim.x) {
            const int n = i / S, s = i - n * S;
            const int64_t idx = ((int64_t)n * C + c) * S + s;
            a += part[2 * idx];
            b += part[2 * idx + 1];
        }
        block_sum2(a, b);
    }
    if (threadIdx.x != 0) return;
    const double g = gamma ? (double)gamma[c] : 1.0, bt = beta ? (double)beta[c] : 0.0;
    double mean, var;
    if (use_batch) {
        mean = a / count;
        var = b / count - mean * mean;
        if (var < 0.0) var = 0.0;
    } else {
        mean = rmean[c];
        var = rvar[c];
    }
    const double scale = g / sqrt(var + (double)eps);
    ss[c] = (float)scale;
    ss[C + c] = (float)(bt - mean * scale);
    if (use_batch && rmean && rvar) {
        double f = momentum;
        if (momentum < 0.0f) f = nbt ? 1.0 / (double)(nbt[0] + 1) : 0.0;
        const double unbiased = count > 1.0 ? var * count / (count - 1.0) : var;
        rmean[c] = (float)((1.0 - f) * rmean[c] + f * mean);
        rvar[c] = (float)((1.0 - f) * rvar[c] + f * unbiased);
    }
}

__global__ void bump_k(int64_t* a, int64_t* b) {
    if (a) a[0] += 1;
    if (b) b[0] += 1;
}

// y = relu6(y * ss[k] + ss[K + k]) in place; one block per (n, k) plane, planes numbered from plane0.
__global__ void __launch_bounds__(kThreads) bn_relu6_k(float* __restrict__ y, const float* __restrict__ ss, int K,
                                                       int64_t hw, int64_t plane0) {
    const int64_t plane = plane0 + blockIdx.x;
    const int k = (int)(plane % K);
    const float sc = ss[k], sh = ss[K + k];
    float* p = y + plane * hw;
    if ((hw & 3) == 0) {
        float4* p4 = reinterpret_cast<float4*>(p);
        for (int64_t i = threadIdx.x; i < hw / 4; i += blockDim.x) {
            float4 v = p4[i];
            v.x = relu6(fmaf(v.x, sc, sh)); v.y = relu6(fmaf(v.y, sc, sh));
            v.z = relu6(fmaf(v.z, sc, sh)); v.w = relu6(fmaf(v.w, sc, sh));
            p4[i] = v;
        }
    } else {
        for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) p[i] = relu6(fmaf(p[i], sc, sh));
    }
}

__global__ void fill_nan_k(float* y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __int_as_float(0x7fc00000);
}

void fail(float* out, int64_t n, const char* what, int code) {
    std::fprintf(stderr, "dsb_forward: %s (status %d)\n", what, code);
    fill_nan_k<<<1024, kThreads>>>(out, n);
}

int64_t align256(int64_t v) { return (v + 255) & ~(int64_t)255; }

}  // namespace

// Scratch layout (each piece 256-byte aligned, the same formula as model_new.py's scratch_bytes):
// [cuBLAS workspace: ws_bytes][part1: N*C*strips double2][part2: N*K double2][ss1: 2C floats]
// [ss2: 2K floats][a: chunk*C*H*W floats].
// bn*_train: 1 = batch statistics (training mode), 0 = running statistics.
KAGENT_EXPORT void dsb_forward(const float* x, const float* dw_w, const float* g1, const float* b1, float* rm1,
                               float* rv1, int64_t* nbt1, const float* pw_w, const float* g2, const float* b2,
                               float* rm2, float* rv2, int64_t* nbt2, float* out, uint8_t* scratch, int64_t n,
                               int64_t c, int64_t k, int64_t h, int64_t w, int64_t th, int64_t strips, int64_t chunk,
                               int64_t ws_bytes, int64_t scratch_bytes, float eps1, float eps2, float mom1,
                               float mom2, int bn1_train, int bn2_train) {
    const int64_t hw = h * w;
    const int64_t out_n = n * k * hw;
    int64_t off = align256(ws_bytes);
    double* part1 = reinterpret_cast<double*>(scratch + off);
    off += align256(n * c * strips * 16);
    double* part2 = reinterpret_cast<double*>(scratch + off);
    off += align256(n * k * 16);
    float* ss1 = reinterpret_cast<float*>(scratch + off);
    off += align256(2 * c * 4);
    float* ss2 = reinterpret_cast<float*>(scratch + off);
    off += align256(2 * k * 4);
    float* abuf = reinterpret_cast<float*>(scratch + off);
    off += align256(chunk * c * hw * 4);
    if (off > scratch_bytes || th * strips < h || chunk < 1) {
        fail(out, out_n, "scratch too small or bad tiling", (int)(off - scratch_bytes));
        return;
    }
    cublasHandle_t hd = handle();
    if (!hd) { fail(out, out_n, "no cuBLAS handle", 0); return; }
    cublasStatus_t st = cublasSetWorkspace(hd, scratch, (size_t)ws_bytes);
    if (st != CUBLAS_STATUS_SUCCESS) { fail(out, out_n, "cublasSetWorkspace", (int)st); return; }

    const int pitch = (int)((w + 5 + 3) & ~3LL);
    const size_t smem = (size_t)(th + 2) * pitch * sizeof(float);
    const double cnt = (double)n * (double)hw;

    // BN1 statistics over the whole batch, then scale / shift.
    if (bn1_train)
        dw_k<false><<<(unsigned)(n * c * strips), kThreads, smem>>>(x, dw_w, nullptr, nullptr, part1, (int)c, (int)h,
                                                                     (int)w, (int)th, (int)strips, pitch);
    bn_finalize_k<<<(unsigned)c, kThreads>>>(part1, (int)n, (int)c, (int)strips, cnt, g1, b1, eps1, ss1, rm1, rv1,
                                             nbt1, mom1, bn1_train);
    if (!bn2_train)
        bn_finalize_k<<<(unsigned)k, kThreads>>>(part2, (int)n, (int)k, 1, cnt, g2, b2, eps2, ss2, rm2, rv2, nbt2,
                                                 mom2, 0);

    const float one = 1.0f, zero = 0.0f;
    for (int64_t n0 = 0; n0 < n; n0 += chunk) {
        const int64_t nb = n - n0 < chunk ? n - n0 : chunk;
        dw_k<true><<<(unsigned)(nb * c * strips), kThreads, smem>>>(x + n0 * c * hw, dw_w, ss1, abuf, nullptr,
                                                                    (int)c, (int)h, (int)w, (int)th, (int)strips,
                                                                    pitch);
        st = cublasSgemmStridedBatched(hd, CUBLAS_OP_N, CUBLAS_OP_N, (int)hw, (int)k, (int)c, &one, abuf, (int)hw,
                                       c * hw, pw_w, (int)c, 0, &zero, out + n0 * k * hw, (int)hw, k * hw, (int)nb);
        if (st != CUBLAS_STATUS_SUCCESS) { fail(out, out_n, "cublasSgemmStridedBatched", (int)st); return; }
        if (bn2_train)
            plane_stats_k<<<(unsigned)(nb * k), kThreads>>>(out + n0 * k * hw, part2 + 2 * n0 * k, hw);
        else
            bn_relu6_k<<<(unsigned)(nb * k), kThreads>>>(out, ss2, (int)k, hw, n0 * k);
    }
    if (bn2_train) {
        bn_finalize_k<<<(unsigned)k, kThreads>>>(part2, (int)n, (int)k, 1, cnt, g2, b2, eps2, ss2, rm2, rv2, nbt2,
                                                 mom2, 1);
        bn_relu6_k<<<(unsigned)(n * k), kThreads>>>(out, ss2, (int)k, hw, 0);
    }
    if ((bn1_train && nbt1) || (bn2_train && nbt2))
        bump_k<<<1, 1>>>(bn1_train ? nbt1 : nullptr, bn2_train ? nbt2 : nullptr);
}
