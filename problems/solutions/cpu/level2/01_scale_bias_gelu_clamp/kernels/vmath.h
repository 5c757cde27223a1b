// Vectorisable fp32 exp / erf for the CPU solutions (plain arithmetic + a bit cast, so gcc
// vectorises loops that call them; glibc's expf / erff are scalar calls without -ffast-math).
#pragma once
#include <cmath>
#include <cstdint>

// exp(x), max error 0.99 ulp on [-87, 88] (measured on a dense grid against fp64); the argument
// is clamped to that range (results stay finite and normal). Cephes expf: n = round(x / ln2) by
// the 1.5 * 2^23 trick, r = x - n ln2 (two-part ln2), e^r by a polynomial, times 2^n built in
// the exponent bits. No floor / fmin / fmax: those keep gcc from vectorising without -ffast-math.
static inline float kexpf(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  const float n = std::fma(x, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
  float z = std::fma(n, -0.693359375f, x);
  z = std::fma(n, 2.12194440e-4f, z);
  float p = 1.9875691500e-4f;
  p = std::fma(p, z, 1.3981999507e-3f);
  p = std::fma(p, z, 8.3334519073e-3f);
  p = std::fma(p, z, 4.1665795894e-2f);
  p = std::fma(p, z, 1.6666665459e-1f);
  p = std::fma(p, z, 5.0000001201e-1f);
  const float r = std::fma(p, z * z, z) + 1.0f;
  const int32_t bits = ((int32_t)n + 127) << 23;
  return r * __builtin_bit_cast(float, bits);
}

// erf(x), max error 1.0 ulp (measured as above; N. Juffa's erff: odd polynomial below |x| = 0.927734375, else
// 1 - exp(poly(|x|)) with the sign restored). Both branches are computed and one is selected,
// so the loop stays branch-free.
static inline float kerff(float a) {
  const float t = std::fabs(a);
  const float s = a * a;
  // large |a|
  float r = std::fma(-1.72853470e-5f, t, 3.83197126e-4f);
  const float u = std::fma(-3.88396438e-3f, t, 2.42546219e-2f);
  r = std::fma(r, s, u);
  r = std::fma(r, t, -1.06777877e-1f);
  r = std::fma(r, t, -6.34846687e-1f);
  r = std::fma(r, t, -1.28717512e-1f);
  r = std::fma(r, t, -t);
  const float big = std::copysign(1.0f - kexpf(r), a);
  // small |a|
  float q = -5.96761703e-4f;
  q = std::fma(q, s, 4.99119423e-3f);
  q = std::fma(q, s, -2.67681349e-2f);
  q = std::fma(q, s, 1.12819925e-1f);
  q = std::fma(q, s, -3.76125336e-1f);
  q = std::fma(q, s, 1.28379166e-1f);
  const float small = std::fma(q, a, a);
  return t > 0.927734375f ? big : small;
}
