#include "kagent.h"

// y = max(x, 0) element-wise (NaN passes through, as torch.relu). One parallel pass; the loop
// body is a compare + blend that gcc vectorises with -O3 -march=native.
KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}
