// fuse/math/scalar_math.hpp - branch-free scalar math for fused kernels.
//
// Why this exists: libm's expf/tanhf/... are opaque calls, so without -ffast-math
// GCC and clang cannot vectorise a loop that uses them.  The float functions here
// use only +,-,*,/, fma, integer bit tricks and bit-mask selects of values that
// are always computed, so `FUSE_SIMD_LOOP for (...) y[i] = f(x[i]);` turns into
// straight-line SIMD code (checked: every function and a tanh-GELU loop vectorise
// with g++ 12 -O3 and clang 14 -O2/-O3).  The same functor code runs in CUDA
// kernels: in nvcc's device pass every function forwards to the CUDA builtin.
//
// Float: Cephes-style range reduction + polynomial (Cephes coefficients for
// expm1/log/tanh/sin/cos; the exp and erf coefficients were fitted for this file).
// Double: std:: on the host (correct, but NOT vectorised) and the CUDA double
// builtins on the device; only sigmoid(double) is our formula (on std::exp).
//
// Semantics (float, host): IEEE/NumPy special values - NaN in -> NaN out,
// exp(+-inf) = inf/0, overflow -> inf, log(0) = -inf, log(<0) = NaN, log(inf) =
// inf, tanh/erf(+-inf) = +-1, sigmoid(+-inf) = 1/0, sin/cos(+-inf) = NaN.  The
// sign of zero is kept by the odd functions.  exp (and sigmoid, which uses it)
// flushes results below FLT_MIN (~1.2e-38) to 0: subnormal arithmetic is ~12x
// slower on x86 (see exp_f).
//
// Measured max error, float, vs a long double reference over every 3rd float
// (FMA build; every 11th without FMA, which gives the second figure when it differs):
//   exp 1.06 / 1.36 ulp, log 0.82, log1p 1.44, expm1 1.43 / 1.56, tanh 2.40,
//   sigmoid 2.40, erf 1.19 / 1.40, sin 1.55 / 1.56, cos 1.57 (|x| <= 1.3e7); erfc 7.3 / 8.2 and
//   gelu_erf 7.8 / 8.4 relative to their own value (every normal result, x in [-14, 13]).
// sin/cos: the range reduction is exact enough for |x| < ~8.4e8 in every build, and further
// with FMA (measured below); past that nothing is guaranteed, but results stay within [-1, 1].
//
// Requirements: round-to-nearest; no -ffast-math (-ffinite-math-only removes
// the NaN/inf handling, and reassociation would break the Cody-Waite steps).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "fuse/config.hpp"

namespace fuse::math {

namespace detail {

// Host-only helpers (the device pass never reaches them).
FUSE_INLINE std::uint32_t as_u32(float x) { return std::bit_cast<std::uint32_t>(x); }
FUSE_INLINE float as_f32(std::uint32_t u) { return std::bit_cast<float>(u); }
FUSE_INLINE std::uint64_t as_u64(double x) { return std::bit_cast<std::uint64_t>(x); }

// a*b + c.  Fused when the target has hardware FMA (one rounding, and it is what
// the vectoriser emits anyway); the algorithms below are accurate without it too.
FUSE_INLINE float mad(float a, float b, float c) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

// c ? a : b on floats, as a bit blend.  A plain ?: on floats becomes a branch in
// GIMPLE; GCC then sinks/PREs the (possibly trapping, under the default
// -ftrapping-math) arithmetic of one arm into it and the loop is no longer
// if-convertible ("control flow in loop").  Integer masks keep it straight-line.
FUSE_INLINE float sel(bool c, float a, float b) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return as_f32((as_u32(a) & m) | (as_u32(b) & ~m));
}

FUSE_INLINE float fabs_f(float x) { return as_f32(as_u32(x) & 0x7fffffffu); }
// -|x|: one or of the sign bit (-fabs_f is an and plus an xor).
FUSE_INLINE float neg_fabs_f(float x) { return as_f32(as_u32(x) | 0x80000000u); }
// |mag| with the sign bit of sgn.
FUSE_INLINE float copysign_f(float mag, float sgn) {
  return as_f32((as_u32(mag) & 0x7fffffffu) | (as_u32(sgn) & 0x80000000u));
}
// copysign_f(mag, sgn) for mag whose sign bit is clear (+0, positive, or a NaN): one operation
// fewer, since mag's sign bit need not be cleared.
FUSE_INLINE float xorsign_f(float mag, float sgn) { return as_f32(as_u32(mag) ^ (as_u32(sgn) & 0x80000000u)); }
// 2^n for -126 <= n <= 127, built directly in the exponent field.
FUSE_INLINE float pow2i(std::int32_t n) {
  return as_f32(static_cast<std::uint32_t>(n + 127) << 23);
}

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kLn2Hi = 0.693359375f;      // few mantissa bits: n*kLn2Hi is exact
inline constexpr float kLn2Lo = -2.12194440e-4f;   // ln2 - kLn2Hi
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2 = 0.693147180559945f;  // one-constant reduction (tanh_f)
// Adding 1.5*2^23 rounds a float with |v| < 2^22 to an integer held in the low
// mantissa bits; reading the bits back gives that integer without a float->int
// conversion (which would be UB for NaN).
inline constexpr float kRoundMagic = 12582912.0f;

// Round v to nearest integer n (|v| < 2^22); returns n as float and int. The float is
// t - magic (exact), not a conversion of n: one vector operation fewer per exp.
FUSE_INLINE float round_to_int(float v, std::int32_t& n) {
  const float t = v + kRoundMagic;
  n = static_cast<std::int32_t>(as_u32(t) - as_u32(kRoundMagic));
  return t - kRoundMagic;
}

// e^r - 1 for |r| <= ln2/2 (Cephes expf minimax polynomial, ~1e-9 relative).
FUSE_INLINE float expm1_poly(float r) {
  float p = 1.9875691500e-4f;
  p = mad(p, r, 1.3981999507e-3f);
  p = mad(p, r, 8.3334519073e-3f);
  p = mad(p, r, 4.1665795894e-2f);
  p = mad(p, r, 1.6666665459e-1f);
  p = mad(p, r, 5.0000001201e-1f);
  return mad(r * r, p, r);
}

// e^r for |r| <= ln2/2: degree 6, c0 = c1 = 1 up to rounding, a relative minimax fit for this
// file (1.8e-8 with these float coefficients). Horner straight to e^r is 6 FMAs where
// expm1_poly(r) + 1 takes 8 operations (its e^r - 1 form is kept for expm1 and tanh, which
// need it near 0): exp_nonpositive 0.31 -> 0.27 ns per element, tanh-free GELU 0.53 -> 0.50
// (one thread, L2). exp: 1.06 ulp (1.01 before), 1.36 without FMA (0.98 before).
FUSE_INLINE float exp_poly(float r) {
  float p = 1.3843605993e-03f;
  p = mad(p, r, 8.3741955459e-03f);
  p = mad(p, r, 4.1668005288e-02f);
  p = mad(p, r, 1.6666430235e-01f);
  p = mad(p, r, 4.9999994040e-01f);
  p = mad(p, r, 1.0f);
  return mad(p, r, 1.0f);
}

// Cody-Waite reduction x = n*ln2 + r, |r| <= ~ln2/2.
FUSE_INLINE float reduce_ln2(float x, std::int32_t& n) {
  const float nf = round_to_int(x * kLog2e, n);
  float r = mad(nf, -kLn2Hi, x);  // exact: nf*kLn2Hi has <= 17 significant bits
  return mad(nf, -kLn2Lo, r);
}

// Below this, e^x is under FLT_MIN and exp returns 0 (see exp_f).
inline constexpr float kExpFlush = -87.33654022f;  // the least float whose exp is >= FLT_MIN
inline constexpr float kExpOverflow = 88.72283173f;  // the largest float whose exp is finite

FUSE_INLINE float exp_f(float x) {
  // Results below FLT_MIN (x < -87.3365) are flushed to 0. Computing them as
  // subnormals costs a microcode assist per instruction on x86: exp over
  // [-100, -90] ran 12x slower than over [-10, -5] (2.0 vs 23.5 GB/s), and
  // masked softmax (exp of -inf - max) hit that on every masked element.
  // Inside [kExpFlush, ln FLT_MAX] the result is normal, so 2^n is applied by
  // adding n to the exponent field of p = e^r (an integer add).
  const bool under = x < kExpFlush;
  const bool over = x > kExpOverflow;
  const float xc = sel(under, kExpFlush, sel(over, kExpOverflow, x));
  std::int32_t n;
  const float r = reduce_ln2(xc, n);
  const float p = exp_poly(r);
  const float e = as_f32(as_u32(p) + (static_cast<std::uint32_t>(n) << 23));
  return sel(under, 0.0f, sel(over, kInf, sel(x == x, e, x)));  // NaN stays NaN
}

// exp(x) for x <= 0 or NaN, the arguments of exp(-|x|) (sigmoid, softplus) and of exp(x - max)
// (softmax).  Without exp_f's overflow test, and with 2^n applied by a multiply (n <= 0, so
// 2^n is a normal float) that keeps a NaN p NaN, it skips exp_f's three compare-and-blend
// pairs: 12% faster GELU in L2 (0.58 vs 0.66 ns per element, one thread).  Positive x is
// outside its contract.
FUSE_INLINE float exp_nonpositive_f(float x) {
  const bool under = x < kExpFlush;
  std::int32_t n;
  const float r = reduce_ln2(sel(under, kExpFlush, x), n);
  const float e = exp_poly(r) * pow2i(n);
  return sel(under, 0.0f, e);
}

// log(x) for positive finite x without special-value fixups.
FUSE_INLINE float log_core(float x) {
  // Subnormals: scale by 2^23 so the exponent field is meaningful.
  const bool sub = x < 1.17549435e-38f;
  const float xs = sel(sub, x * 8388608.0f, x);
  // Split x = 2^e * m with m in [sqrt(1/2), sqrt(2)): subtracting the bits of
  // sqrt(1/2) makes the exponent field carry exactly at m = sqrt(2).
  const std::uint32_t ix = as_u32(xs) - 0x3f3504f3u;
  const std::int32_t e = (static_cast<std::int32_t>(ix) >> 23) - (sub ? 23 : 0);
  const float m = as_f32((ix & 0x007fffffu) + 0x3f3504f3u);
  const float f = m - 1.0f;  // exact (Sterbenz)
  const float fe = static_cast<float>(e);
  // Cephes logf: log(1+f) = f - f^2/2 + f^3 P(f).
  float p = 7.0376836292e-2f;
  p = mad(p, f, -1.1514610310e-1f);
  p = mad(p, f, 1.1676998740e-1f);
  p = mad(p, f, -1.2420140846e-1f);
  p = mad(p, f, 1.4249322787e-1f);
  p = mad(p, f, -1.6668057665e-1f);
  p = mad(p, f, 2.0000714765e-1f);
  p = mad(p, f, -2.4999993993e-1f);
  p = mad(p, f, 3.3333331174e-1f);
  const float z = f * f;
  float y = p * f * z;
  y = mad(fe, kLn2Lo, y);
  y = mad(-0.5f, z, y);
  return mad(fe, kLn2Hi, f + y);
}

FUSE_INLINE float log_f(float x) {
  float r = log_core(x);
  r = sel(x == kInf, kInf, r);
  r = sel(x == 0.0f, -kInf, r);
  return sel(!(x >= 0.0f), kNaN, r);  // negative or NaN
}

FUSE_INLINE float log1p_f(float x) {
  // log1p(x) = log(u) - ((u-1)-x)/u with u = fl(1+x): the quotient undoes the
  // rounding of 1+x to first order (Goldberg's trick, ~1 extra ulp).
  const float u = 1.0f + x;
  const float c = ((u - 1.0f) - x) / u;
  float r = log_core(u) - c;
  r = sel(fabs_f(x) < 0x1p-24f, x, r);  // log1p(x) rounds to x; keeps -0
  r = sel(x == kInf, kInf, r);
  r = sel(x == -1.0f, -kInf, r);
  return sel(!(x >= -1.0f), kNaN, r);  // x < -1 or NaN
}

FUSE_INLINE float expm1_f(float x) {
  // Below -17.33 the result rounds to -1; above 88.73 it overflows.  The clamp
  // keeps n in [-29, 129].
  float xc = sel(x > 88.8f, 88.8f, x);
  xc = sel(xc < -20.0f, -20.0f, xc);
  std::int32_t n;
  const float r = reduce_ln2(xc, n);
  const float em = expm1_poly(r);
  // expm1(x) = 2^n*em + (2^n - 1).  2^n - 1 is exact for -24 <= n <= 24 and the
  // error outside that range is below 1/2 ulp of the result.
  const float s = pow2i(n > 24 ? 24 : n);
  const float small = mad(s, em, s - 1.0f);
  // Large n: the -1 is negligible; scale in two steps so overflow gives inf.
  const std::int32_t n1 = n >> 1;
  const float large = (em + 1.0f) * pow2i(n1) * pow2i(n - n1);
  const float res = sel(n > 24, large, small);
  return sel(fabs_f(x) < 0x1p-24f, x, res);  // tiny x (keeps -0)
}

FUSE_INLINE float sigmoid_f(float x) {
  // e = exp(-|x|) never overflows; sigmoid(x) = 1/(1+e) for x >= 0 and
  // e/(1+e) for x < 0 (so tiny results keep full relative accuracy).
  const float e = exp_nonpositive_f(neg_fabs_f(x));
  return sel(x >= 0.0f, 1.0f, e) / (1.0f + e);
}

FUSE_INLINE float tanh_f(float x) {
  // tanh(a) = em / (em + 2) with em = expm1(2a) >= 0, one formula for every a: em is accurate for
  // small a (n = 0: em is the polynomial itself) and em + 2 never cancels. Past a = 9.01 tanh
  // rounds to 1, so clamp there (n <= 26: 2^n - 1 rounds by less than em's own error). 2.40 ulp
  // at most (every 3rd float; 2.40 without FMA, every 11th), against 1.33 for the two-branch form it replaced
  // (odd polynomial below 0.625, 1 - 2/(e^2a + 1) above), which computed both branches: the
  // tanh form of GELU ran 0.70 -> 0.58 ns per element in L2 on one thread.
  const float a = fabs_f(x);
  const float y = 2.0f * sel(a > 9.1f, 9.1f, a);  // NaN stays NaN
  // y = n*ln2 + r with one constant, not reduce_ln2's two: n <= 27 keeps r's error below 5e-8,
  // and em / (em + 2) shrinks em's relative error by 2 / (em + 2) where n is large. Same maximum
  // error (2.42 ulp, every float in [-20, 20]); GELU in tanh form 0.481 -> 0.465 ns per element.
  std::int32_t n;
  const float r = mad(round_to_int(y * kLog2e, n), -kLn2, y);
  const float s = pow2i(n);
  const float em = mad(s, expm1_poly(r), s - 1.0f);
  // em / (em + 2) is +0 or positive (or NaN): GELU in tanh form 0.514 -> 0.494 ns per element
  // with xorsign_f instead of copysign_f (bit-identical).
  return xorsign_f(em / (em + 2.0f), x);
}

FUSE_INLINE float erf_f(float x) {
  const float a = fabs_f(x);
  // |x| < 1: erf(x) = x * P(x^2), P a relative minimax fit (1.2e-9).
  const float z = a * a;
  float p = 7.889285493e-05f;
  p = mad(p, z, -8.020894940e-04f);
  p = mad(p, z, 5.189542004e-03f);
  p = mad(p, z, -2.685444856e-02f);
  p = mad(p, z, 1.128360029e-01f);
  p = mad(p, z, -3.761262715e-01f);
  p = mad(p, z, 1.28379166e-01f);  // 2/sqrt(pi) - 1: a + a*p rounds less than a*(1+p)
  const float small = mad(a, p, a);
  // 1 <= |x| < 3.92: erf = 1 - exp(Q(|x|-1)), Q fitted to log(erfc) weighted by
  // erfc (absolute error 3.5e-4 ulp of 1).  Beyond 3.92 erf rounds to 1.
  const float t = sel(a < 3.92f, a, 3.92f) - 1.0f;
  float q = -2.168685125e-05f;
  q = mad(q, t, 2.895284382e-04f);
  q = mad(q, t, -2.011967493e-03f);
  q = mad(q, t, 1.004645332e-02f);
  q = mad(q, t, -4.156348136e-02f);
  q = mad(q, t, -8.431070816e-01f);
  q = mad(q, t, -2.638967515e+00f);
  q = mad(q, t, -1.849605510e+00f);
  float large = 1.0f - exp_f(q);
  large = sel(a >= 3.92f, 1.0f, large);
  const float r = sel(a < 1.0f, small, large);
  return copysign_f(sel(a != a, x, r), x);  // NaN would otherwise select 1
}

// s * erfc(c x) for c = 1, or 1 / sqrt(2) (Half), with a relative error of a few ulp also where
// erfc is small: gelu_erf(x) = 0.5 x erfc(-x / sqrt 2), whose 1 + erf(x / sqrt 2) cancels for
// negative x. For a = |c x|: erfc(a) = t R(t) exp(-a^2), t = 1 / (1 + 0.35 a), R a polynomial of
// degree 9 fitted (for this file) to erfc(a) exp(a^2) / t over a in [0, 9.5], 6.6e-9 relative.
// a^2 comes from x^2 = p + e, p = fl(x * x) and e its rounding error (exact: an fma, or Dekker's
// product), so that exp(-a^2) = exp(-c^2 p) (1 - c^2 e) keeps its accuracy where a^2 is large:
// exp of a rounded x * x, or of x / sqrt 2 rounded, was off by up to a^2 ulp (170 ulp at
// gelu_erf(-13)). s is multiplied in before the exponential, so that a normal result has no
// subnormal intermediate. Beyond a = 9.345 exp flushes to 0, as exp_f does; erfc(-a) = 2 -
// erfc(a).
template <bool Half>
FUSE_INLINE float erfc_times_f(float x, float s) {
  constexpr float c = Half ? 0.70710678f : 1.0f, c2 = Half ? 0.5f : 1.0f;
  const float ax = fabs_f(x);
  const float xc = sel(ax < 10.0f / c, ax, 10.0f / c);  // (inf and NaN: the bound; NaN is restored below)
  const float xx = xc * xc;
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  const float xe = __builtin_fmaf(xc, xc, -xx);
#else
  const float hi = as_f32(as_u32(xc) & 0xfffff000u), lo = xc - hi;  // 12 bits each: exact products
  const float xe = ((hi * hi - xx) + 2.0f * hi * lo) + lo * lo;
#endif
  const float p = c2 * xx, e = c2 * xe;  // (exact: c2 is 1 or 1/2)
  const float t = 1.0f / mad(0.35f * c, xc, 1.0f);
  float r = 3.760865885e-02f;
  r = mad(r, t, -1.544742709e-01f);
  r = mad(r, t, 1.705825281e-01f);
  r = mad(r, t, -1.257670400e-02f);
  r = mad(r, t, 7.383876570e-02f);
  r = mad(r, t, 1.534887682e-01f);
  r = mad(r, t, 1.484620879e-01f);
  r = mad(r, t, 1.885236487e-01f);
  r = mad(r, t, 1.970583106e-01f);
  r = mad(r, t, 1.974882135e-01f);
  const float ex = exp_f(-p);
  const float ex1 = mad(-e, ex, ex);
  // (2 - erfc(a)) s, not 2 s - erfc(a) s: an infinite s gives inf there, not NaN.
  const float result = sel(x < 0.0f, s * mad(-t * r, ex1, 2.0f), (s * t * r) * ex1);
  return sel(ax != ax, x * s, result);
}
FUSE_INLINE float erfc_f(float x) { return erfc_times_f<false>(x, 1.0f); }
// 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2).
FUSE_INLINE float gelu_erf_f(float x) { return erfc_times_f<true>(-x, 0.5f * x); }

// Sin/cos: reduce in double, x = j*pi/2 + r, pi/2 = kP1 + kP2 + kP3. kP1 and kP2 have 24
// significant bits, so j*kP1 and j*kP2 are exact for |j| < 2^29 (|x| < ~8.4e8) and r is then
// accurate to ~2^-80 absolute, far below float precision even when x is close to a multiple of
// pi/2. With FMA the subtractions are exact further out; j is exact (t - kMagic) for |x| < 2^51.
// Returns r as float and the quadrant j mod 4.
FUSE_INLINE float reduce_pio2(float x, std::uint32_t& q) {
  constexpr double kTwoOverPi = 0.63661977236758134;
  constexpr double kP1 = 0x1.921fb4p+0;
  constexpr double kP2 = 0x1.4442dp-24;
  constexpr double kP3 = 0x1.8469898cc517p-48;
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  const double xd = x;
  const double t = xd * kTwoOverPi + kMagic;
  // j sits in the low mantissa bits of t (as in round_to_int): its low bits are the quadrant, and
  // t - kMagic is j exactly (no integer conversion, which wrapped past ~3e9 as int32).
  q = static_cast<std::uint32_t>(as_u64(t)) & 3u;
  const double j = t - kMagic;
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  // Explicit: -std=c++20 (ISO mode) sets -ffp-contract=off, so the compiler never fuses these.
  const double r = __builtin_fma(-j, kP3, __builtin_fma(-j, kP2, __builtin_fma(-j, kP1, xd)));
#else
  const double r = ((xd - j * kP1) - j * kP2) - j * kP3;
#endif
  // x - x is 0, or NaN for x = +-inf / NaN, which must give NaN.
  float rf = static_cast<float>(r) + (x - x);
  // j is the nearest integer to x*2/pi up to t's rounding, so r may pass pi/4 by ~|x|*2^-53.
  // Clamping keeps the polynomials, and so the result, within [-1, 1] where that grows (huge
  // |x|, where nothing is guaranteed). NaN passes through.
  rf = sel(rf > 0.786f, 0.786f, rf);
  return sel(rf < -0.786f, -0.786f, rf);
}

// sin(r) and cos(r) for |r| <= pi/4 (Cephes sinf/cosf polynomials).
FUSE_INLINE float sin_poly(float r) {
  const float z = r * r;
  float p = -1.9515295891e-4f;
  p = mad(p, z, 8.3321608736e-3f);
  p = mad(p, z, -1.6666654611e-1f);
  return mad(p * z, r, r);
}
FUSE_INLINE float cos_poly(float r) {
  const float z = r * r;
  float p = 2.443315711809948e-5f;
  p = mad(p, z, -1.388731625493765e-3f);
  p = mad(p, z, 4.166664568298827e-2f);
  return mad(p * z, z, mad(-0.5f, z, 1.0f));
}

// Quadrant q: sin(x) = [sin r, cos r, -sin r, -cos r][q].
FUSE_INLINE float sin_quadrant(float r, std::uint32_t q) {
  const float s = sin_poly(r);
  const float c = cos_poly(r);
  const float v = sel(q & 1u, c, s);
  return as_f32(as_u32(v) ^ ((q & 2u) << 30));
}

FUSE_INLINE float sin_f(float x) {
  std::uint32_t q;
  const float r = reduce_pio2(x, q);
  const float v = sin_quadrant(r, q);
  return sel(x == 0.0f, x, v);  // keep the sign of zero
}

FUSE_INLINE float cos_f(float x) {
  std::uint32_t q;
  const float r = reduce_pio2(x, q);
  return sin_quadrant(r, q + 1u);
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Public API.  float: vectorisable implementations above (host) / CUDA float
// builtins (device).  double: std:: (host, not vectorised) / CUDA builtins.
// ---------------------------------------------------------------------------

#if FUSE_DEVICE_PASS
#define FUSE_MATH_PICK(dev, host) return dev
#else
#define FUSE_MATH_PICK(dev, host) return host
#endif

FUSE_HOST_DEVICE FUSE_INLINE float exp(float x) { FUSE_MATH_PICK(::expf(x), detail::exp_f(x)); }
FUSE_HOST_DEVICE FUSE_INLINE double exp(double x) { FUSE_MATH_PICK(::exp(x), std::exp(x)); }

// exp for x <= 0 or NaN only (see exp_nonpositive_f); the device has no cheaper form.
FUSE_HOST_DEVICE FUSE_INLINE float exp_nonpositive(float x) {
  FUSE_MATH_PICK(::expf(x), detail::exp_nonpositive_f(x));
}
FUSE_HOST_DEVICE FUSE_INLINE double exp_nonpositive(double x) { return exp(x); }

FUSE_HOST_DEVICE FUSE_INLINE float log(float x) { FUSE_MATH_PICK(::logf(x), detail::log_f(x)); }
FUSE_HOST_DEVICE FUSE_INLINE double log(double x) { FUSE_MATH_PICK(::log(x), std::log(x)); }

FUSE_HOST_DEVICE FUSE_INLINE float log1p(float x) {
  FUSE_MATH_PICK(::log1pf(x), detail::log1p_f(x));
}
FUSE_HOST_DEVICE FUSE_INLINE double log1p(double x) { FUSE_MATH_PICK(::log1p(x), std::log1p(x)); }

FUSE_HOST_DEVICE FUSE_INLINE float expm1(float x) {
  FUSE_MATH_PICK(::expm1f(x), detail::expm1_f(x));
}
FUSE_HOST_DEVICE FUSE_INLINE double expm1(double x) { FUSE_MATH_PICK(::expm1(x), std::expm1(x)); }

FUSE_HOST_DEVICE FUSE_INLINE float tanh(float x) { FUSE_MATH_PICK(::tanhf(x), detail::tanh_f(x)); }
FUSE_HOST_DEVICE FUSE_INLINE double tanh(double x) { FUSE_MATH_PICK(::tanh(x), std::tanh(x)); }

FUSE_HOST_DEVICE FUSE_INLINE float erf(float x) { FUSE_MATH_PICK(::erff(x), detail::erf_f(x)); }
FUSE_HOST_DEVICE FUSE_INLINE double erf(double x) { FUSE_MATH_PICK(::erf(x), std::erf(x)); }
FUSE_HOST_DEVICE FUSE_INLINE float erfc(float x) { FUSE_MATH_PICK(::erfcf(x), detail::erfc_f(x)); }
FUSE_HOST_DEVICE FUSE_INLINE double erfc(double x) { FUSE_MATH_PICK(::erfc(x), std::erfc(x)); }

// gelu_erf(x) = x Phi(x) = 0.5 x erfc(-x / sqrt 2) (CUDA's normcdf is Phi).
FUSE_HOST_DEVICE FUSE_INLINE float gelu_erf(float x) { FUSE_MATH_PICK(x * ::normcdff(x), detail::gelu_erf_f(x)); }
FUSE_HOST_DEVICE FUSE_INLINE double gelu_erf(double x) {
  FUSE_MATH_PICK(x * ::normcdf(x), 0.5 * x * std::erfc(x * -0.70710678118654752));
}

FUSE_HOST_DEVICE FUSE_INLINE float sin(float x) { FUSE_MATH_PICK(::sinf(x), detail::sin_f(x)); }
FUSE_HOST_DEVICE FUSE_INLINE double sin(double x) { FUSE_MATH_PICK(::sin(x), std::sin(x)); }

FUSE_HOST_DEVICE FUSE_INLINE float cos(float x) { FUSE_MATH_PICK(::cosf(x), detail::cos_f(x)); }
FUSE_HOST_DEVICE FUSE_INLINE double cos(double x) { FUSE_MATH_PICK(::cos(x), std::cos(x)); }

// sigmoid(x) = 1/(1+exp(-x)); written with exp(-|x|) so it never overflows and
// is exact-ish for very negative x (result ~ e^x, including subnormals).
#if FUSE_DEVICE_PASS
// n / d for d in [1, 2] (or NaN): the fast path of CUDA's IEEE division (reciprocal estimate, one
// Newton step, one residual correction) without its range check and slow-path call, which exist
// for operands near the ends of the exponent range, where d never is. The call is a branch region
// per element that kept an elementwise kernel from issuing its next loads early.
namespace detail {
__device__ FUSE_INLINE float divide_by_one_to_two(float n, float d) {
  float r = __fdividef(1.0f, d);
  r = fmaf(fmaf(-d, r, 1.0f), r, r);
  const float q = n * r;
  return fmaf(fmaf(-d, q, n), r, q);
}
}  // namespace detail
#endif

FUSE_HOST_DEVICE FUSE_INLINE float sigmoid(float x) {
#if FUSE_DEVICE_PASS
  const float e = ::expf(-::fabsf(x));
  return detail::divide_by_one_to_two(x >= 0.0f ? 1.0f : e, 1.0f + e);
#else
  return detail::sigmoid_f(x);
#endif
}
FUSE_HOST_DEVICE FUSE_INLINE double sigmoid(double x) {
#if FUSE_DEVICE_PASS
  const double e = ::exp(-::fabs(x));
#else
  const double e = std::exp(-std::fabs(x));
#endif
  return (x >= 0.0 ? 1.0 : e) / (1.0 + e);
}

#undef FUSE_MATH_PICK

}  // namespace fuse::math
