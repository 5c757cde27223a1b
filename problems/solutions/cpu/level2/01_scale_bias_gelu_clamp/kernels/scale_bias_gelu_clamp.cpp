#include "kagent.h"

#include "vmath.h"

// y = clamp(gelu(x * scale + bias[col]), -0.5, 2.0), gelu exact: 0.5 v (1 + erf(v / sqrt(2))),
// erf the vectorisable kerff of vmath.h (<= 1 ulp; glibc's erff is a slow scalar call).
// Rows in parallel, one vectorised pass (eager: mul, add, gelu, clamp = 4 passes and 3
// temporaries). Same per-element formula as the CUDA solution.
KAGENT_EXPORT void scale_bias_gelu_clamp(const float* __restrict__ x, const float* __restrict__ bias,
                                         float* __restrict__ y, int64_t rows, int64_t cols, float scale) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict__ xr = x + r * cols;
    float* __restrict__ yr = y + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) {
      const float t = xr[c] * scale + bias[c];
      const float g = 0.5f * t * (1.0f + kerff(t * 0.70710678f));
      yr[c] = g < -0.5f ? -0.5f : (g > 2.0f ? 2.0f : g);
    }
  }
}
