#include "kagent.h"

// y[r, j] = sum_{k >= j} x[r, k]  (== cumsum(x.flip(1), 1).flip(1)), rows of length L.
//
// One pass: reads x once, writes y once (eager: flip copy, cumsum, flip copy = 6 passes).
// Launch: one 512-thread block per row (grid = min(rows, 2^30), rows strided by gridDim.x).
// A row is processed in tiles of TILE = NV * 512 * VW elements, last tile first, carrying the sum
// of everything to the right of the tile. Inside a tile, vector p = i * 512 + t (i < NV, VW = 4
// floats when L % 4 == 0 and both pointers are 16-byte aligned, else VW = 1) belongs to thread t,
// so loads and stores are coalesced. Vectors are grouped in "chunks" of 32 consecutive vectors
// (chunk c = i * 16 + warp covers vectors [32c, 32c + 32)), so the suffix sum of a value is
//   carry + (sum of chunks after its chunk) + (sum of later vectors in its chunk, by lanes)
//   + (suffix inside its vector).
// Steps per tile: (1) suffix sums inside each vector, (2) warp inclusive suffix scan of the vector
// totals with __shfl_down_sync (exclusive value = the neighbour's inclusive), lane 0 stores the
// chunk total, barrier, (3) warp 0 turns the NV * 16 chunk totals into exclusive suffix sums in
// place (K consecutive chunks per lane, sequential, then a warp scan over lanes) and stores the
// tile total, barrier, (4) every thread adds the offsets and stores, carry += tile total, barrier
// (shared memory is rewritten by the next tile).
// All sums are fp32; the longest sequential chain is VW + K, the rest is a tree.

namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

template <int NV, bool VEC>
__global__ void __launch_bounds__(kThreads)
reverse_cumsum_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t L) {
  constexpr int VW = VEC ? 4 : 1;
  constexpr int C = NV * kWarps;     // chunks per tile
  constexpr int K = (C + 31) / 32;   // chunks per lane in step (3)
  constexpr int64_t TILE = (int64_t)NV * kThreads * VW;
  __shared__ float s_chunk[C];
  __shared__ float s_tile_total;
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  const int64_t ntiles = (L + TILE - 1) / TILE;

  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* __restrict__ xr = x + row * L;
    float* __restrict__ yr = y + row * L;
    float carry = 0.0f;
    for (int64_t tile = ntiles - 1; tile >= 0; --tile) {
      const int64_t base = tile * TILE;
      float s[NV][VW];
      float lane_excl[NV];
#pragma unroll
      for (int i = 0; i < NV; ++i) {
        const int64_t e = base + ((int64_t)i * kThreads + threadIdx.x) * VW;  // first element
        float v[VW];
        if (VEC) {
          // L % 4 == 0 here, so e < L means the whole float4 is in the row.
          float4 q = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          if (e < L) q = *reinterpret_cast<const float4*>(xr + e);
          v[0] = q.x;
          v[VW > 1 ? 1 : 0] = q.y;
          v[VW > 2 ? 2 : 0] = q.z;
          v[VW > 3 ? 3 : 0] = q.w;
        } else {
          v[0] = e < L ? xr[e] : 0.0f;
        }
        s[i][VW - 1] = v[VW - 1];
#pragma unroll
        for (int q = VW - 2; q >= 0; --q) s[i][q] = v[q] + s[i][q + 1];
        float incl = s[i][0];
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const float nb = __shfl_down_sync(0xffffffffu, incl, o);
          if (lane + o < 32) incl += nb;
        }
        const float ex = __shfl_down_sync(0xffffffffu, incl, 1);
        lane_excl[i] = lane == 31 ? 0.0f : ex;
        if (lane == 0) s_chunk[i * kWarps + wid] = incl;
      }
      __syncthreads();
      if (wid == 0) {
        float loc[K];
        float t = 0.0f;
#pragma unroll
        for (int j = K - 1; j >= 0; --j) {
          const int c = lane * K + j;
          const float cv = c < C ? s_chunk[c] : 0.0f;
          loc[j] = t;
          t += cv;
        }
        float incl = t;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const float nb = __shfl_down_sync(0xffffffffu, incl, o);
          if (lane + o < 32) incl += nb;
        }
        float ex = __shfl_down_sync(0xffffffffu, incl, 1);
        if (lane == 31) ex = 0.0f;
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int c = lane * K + j;
          if (c < C) s_chunk[c] = loc[j] + ex;
        }
        if (lane == 0) s_tile_total = incl;
      }
      __syncthreads();
#pragma unroll
      for (int i = 0; i < NV; ++i) {
        const int64_t e = base + ((int64_t)i * kThreads + threadIdx.x) * VW;
        const float off = (carry + s_chunk[i * kWarps + wid]) + lane_excl[i];
        if (VEC) {
          if (e < L) {
            float4 o;
            o.x = s[i][0] + off;
            o.y = s[i][VW > 1 ? 1 : 0] + off;
            o.z = s[i][VW > 2 ? 2 : 0] + off;
            o.w = s[i][VW > 3 ? 3 : 0] + off;
            *reinterpret_cast<float4*>(yr + e) = o;
          }
        } else {
          if (e < L) yr[e] = s[i][0] + off;
        }
      }
      carry += s_tile_total;
      __syncthreads();
    }
  }
}

}  // namespace

KAGENT_EXPORT void reverse_cumsum(const float* x, float* y, int64_t rows, int64_t length) {
  if (rows <= 0 || length <= 0) return;
  const unsigned grid = (unsigned)(rows < ((int64_t)1 << 30) ? rows : ((int64_t)1 << 30));
  const bool vec = length % 4 == 0 && ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
  if (vec) {
    const int64_t nv = length / 4;  // float4s per row
    if (nv <= kThreads) reverse_cumsum_kernel<1, true><<<grid, kThreads>>>(x, y, rows, length);
    else if (nv <= 2 * kThreads) reverse_cumsum_kernel<2, true><<<grid, kThreads>>>(x, y, rows, length);
    else reverse_cumsum_kernel<4, true><<<grid, kThreads>>>(x, y, rows, length);
  } else {
    if (length <= kThreads) reverse_cumsum_kernel<1, false><<<grid, kThreads>>>(x, y, rows, length);
    else if (length <= 2 * kThreads) reverse_cumsum_kernel<2, false><<<grid, kThreads>>>(x, y, rows, length);
    else if (length <= 4 * kThreads) reverse_cumsum_kernel<4, false><<<grid, kThreads>>>(x, y, rows, length);
    else reverse_cumsum_kernel<8, false><<<grid, kThreads>>>(x, y, rows, length);
  }
}
