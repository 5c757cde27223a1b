#include "kagent.h"

#include <cmath>

// y[r, :] = x[r, :] * (1 / sqrtf(mean(x[r, :]^2) + eps)) * w. Rows in parallel; per row one
// sum-of-squares loop (double accumulator, omp simd reduction) and one scaling loop, the same
// algorithm as the CUDA solution (which accumulates in fp32 per row of 4096).
KAGENT_EXPORT void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double ss = 0.0;
#pragma omp simd reduction(+ : ss)
    for (int64_t c = 0; c < dim; ++c) ss += (double)xr[c] * (double)xr[c];
    const float inv = 1.0f / std::sqrt((float)(ss / (double)dim) + eps);
#pragma omp simd
    for (int64_t c = 0; c < dim; ++c) yr[c] = xr[c] * inv * w[c];
  }
}
