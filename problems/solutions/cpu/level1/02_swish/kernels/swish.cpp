#include "kagent.h"

#include <cmath>

// y = x * sigmoid(x), sigmoid(v) = 1 / (1 + expf(-v)) (the CUDA solution's formula). One parallel
// pass instead of eager's sigmoid + mul (two passes and a temporary).
KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = v * (1.0f / (1.0f + std::exp(-v)));
  }
}
