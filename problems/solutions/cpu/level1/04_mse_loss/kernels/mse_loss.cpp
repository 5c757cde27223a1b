#include "kagent.h"

// out[0] = mean((a - b)^2): one parallel pass, each square formed in fp32 (as eager) and
// accumulated in double (omp parallel reduction), no temporaries (eager: sub, pow, mean with two
// full-size temporaries). n == 0 gives NaN (0 / 0), as torch.mean of an empty tensor.
KAGENT_EXPORT void mse_loss(const float* a, const float* b, float* out, int64_t n) {
  double acc = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) {
    const float d = a[i] - b[i];
    acc += (double)(d * d);
  }
  out[0] = (float)(acc / (double)n);
}
