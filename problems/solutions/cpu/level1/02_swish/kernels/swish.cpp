#include "kagent.h"

#include "vmath.h"

// y = x * sigmoid(x), sigmoid(v) = 1 / (1 + exp(-v)) (the CUDA solution's formula; exp is the
// vectorisable kexpf of vmath.h, <= 1 ulp, instead of glibc's scalar expf). One parallel,
// vectorised pass instead of eager's sigmoid + mul (two passes and a temporary).
KAGENT_EXPORT void swish(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = v * (1.0f / (1.0f + kexpf(-v)));
  }
}
