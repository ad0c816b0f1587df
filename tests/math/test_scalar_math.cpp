// Accuracy and special-value tests for fuse/math/scalar_math.hpp.
//
// Every function is evaluated through a FUSE_SIMD_LOOP over an array (so at -O3
// the vectorised code path is what gets tested) on 2^20 random inputs from a
// fixed seed, and compared with the long double std:: function.  The bound is
// in units in the last place of the result type; a wrong polynomial, a wrong
// range reduction or a lost correction term costs far more than the bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "fuse/math/scalar_math.hpp"

namespace fm = fuse::math;
using LD = long double;

namespace {

constexpr std::size_t kSamples = std::size_t{1} << 20;
constexpr double kMaxUlp = 4.0;

// Long double must be wider than double for the double checks to mean much.
constexpr bool kWideLongDouble = std::numeric_limits<LD>::digits > std::numeric_limits<double>::digits;

template <class T>
LD ulp_of(LD ref) {
  using L = std::numeric_limits<T>;
  const LD a = std::fabs(ref);
  int k = 0;
  std::frexp(a, &k);  // a = m * 2^k, m in [0.5, 1)
  const int e = (a < static_cast<LD>(L::min())) ? L::min_exponent : k;  // subnormals: fixed ulp
  return std::ldexp(LD{1}, e - L::digits);
}

// Error of y in ulps of T; +inf if the special-value behaviour is wrong.
template <class T>
double ulp_error(T y, LD ref) {
  constexpr double kBad = std::numeric_limits<double>::infinity();
  if (std::isnan(ref)) return std::isnan(y) ? 0.0 : kBad;
  if (std::isnan(y)) return kBad;
  const LD big = static_cast<LD>(std::numeric_limits<T>::max());
  if (std::isinf(y)) {
    // Overflow is fine once the true result is within the bound of overflowing.
    const bool ok = std::signbit(y) == std::signbit(ref) && std::fabs(ref) >= big * (1 - kMaxUlp * ulp_of<T>(1) / 2);
    return ok ? 0.0 : kBad;
  }
  if (std::isinf(ref)) return kBad;
  return static_cast<double>(std::fabs(static_cast<LD>(y) - ref) / ulp_of<T>(ref));
}

struct Report {
  double max_ulp = 0;
  LD worst_x = 0;
};

// Simd: evaluate under FUSE_SIMD_LOOP (the float functions); off for loops
// that call libm (double host path), which clang would warn it cannot vectorise.
template <class T, bool Simd = std::is_same_v<T, float>, class F, class R>
Report measure(const std::vector<T>& x, F f, R ref) {
  std::vector<T> y(x.size());
  const T* xp = x.data();
  T* yp = y.data();
  const std::size_t n = x.size();
  if constexpr (Simd) {
    FUSE_SIMD_LOOP
    for (std::size_t i = 0; i < n; ++i) yp[i] = f(xp[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) yp[i] = f(xp[i]);
  }
  Report r;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = ulp_error<T>(y[i], ref(static_cast<LD>(x[i])));
    if (!(e <= r.max_ulp)) {
      r.max_ulp = e;
      r.worst_x = x[i];
    }
  }
  return r;
}

// Inputs: 3/4 uniform in [lo, hi], 1/4 log-uniform magnitudes in [tiny, max(|lo|,|hi|)]
// with the sign allowed by the range (to exercise small arguments).
template <class T>
std::vector<T> make_inputs(T lo, T hi, T tiny, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(static_cast<double>(lo), static_cast<double>(hi));
  const double top = std::log2(std::max(std::fabs(static_cast<double>(lo)), std::fabs(static_cast<double>(hi))));
  std::uniform_real_distribution<double> lg(std::log2(static_cast<double>(tiny)), top);
  std::vector<T> v(kSamples);
  for (std::size_t i = 0; i < kSamples; ++i) {
    T x;
    if (i % 4 != 3) {
      x = static_cast<T>(uni(rng));
    } else {
      x = static_cast<T>(std::exp2(lg(rng)));
      if ((rng() & 1) && lo < 0) x = -x;
      if (x < lo || x > hi) x = static_cast<T>(uni(rng));
    }
    v[i] = x;
  }
  return v;
}

template <class T, class F, class R>
void check_accuracy(const char* name, T lo, T hi, T tiny, F f, R ref, double bound = kMaxUlp) {
  // Fixed seed per check (FNV-1a of the name), independent of test order.
  std::uint64_t seed = 1469598103934665603ull ^ sizeof(T);
  for (const char* c = name; *c; ++c) seed = (seed ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  const auto x = make_inputs<T>(lo, hi, tiny, seed);
  const Report r = measure<T>(x, f, ref);
  INFO(name << (sizeof(T) == 4 ? " (float)" : " (double)") << " on [" << lo << ", " << hi << "]: max "
            << r.max_ulp << " ulp at x = " << static_cast<double>(r.worst_x));
  CHECK(r.max_ulp <= bound);
}

LD sigmoid_ref(LD x) { return 1 / (1 + std::exp(-x)); }

template <class T>
bool same(T got, T want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

}  // namespace

// ---------------------------------------------------------------------------
// float: our polynomial implementations.
// ---------------------------------------------------------------------------

TEST_CASE("float accuracy against long double", "[math][float]") {
  const float tiny = 1e-30f;
  check_accuracy<float>("exp", -87.3f, 89.f, tiny, [](float x) { return fm::exp(x); },
                        [](LD x) { return std::exp(x); });
  check_accuracy<float>("exp_nonpositive", -87.3f, 0.f, tiny, [](float x) { return fm::exp_nonpositive(x); },
                        [](LD x) { return std::exp(x); });
  check_accuracy<float>("log", 1e-44f, 3e38f, 1e-44f, [](float x) { return fm::log(x); },
                        [](LD x) { return std::log(x); });
  check_accuracy<float>("log (near 1)", 0.5f, 2.f, 0.5f, [](float x) { return fm::log(x); },
                        [](LD x) { return std::log(x); });
  check_accuracy<float>("log1p", -1.f, 1e30f, tiny, [](float x) { return fm::log1p(x); },
                        [](LD x) { return std::log1p(x); });
  check_accuracy<float>("log1p (small)", -1.f, 1.f, tiny, [](float x) { return fm::log1p(x); },
                        [](LD x) { return std::log1p(x); });
  check_accuracy<float>("expm1", -25.f, 89.f, tiny, [](float x) { return fm::expm1(x); },
                        [](LD x) { return std::expm1(x); });
  check_accuracy<float>("expm1 (small)", -1.f, 1.f, tiny, [](float x) { return fm::expm1(x); },
                        [](LD x) { return std::expm1(x); });
  check_accuracy<float>("tanh", -12.f, 12.f, tiny, [](float x) { return fm::tanh(x); },
                        [](LD x) { return std::tanh(x); });
  check_accuracy<float>("tanh (small)", -1.f, 1.f, tiny, [](float x) { return fm::tanh(x); },
                        [](LD x) { return std::tanh(x); });
  check_accuracy<float>("sigmoid", -87.33654f, 110.f, tiny, [](float x) { return fm::sigmoid(x); }, sigmoid_ref);
  check_accuracy<float>("erf", -5.f, 5.f, tiny, [](float x) { return fm::erf(x); },
                        [](LD x) { return std::erf(x); });
  // erfc and gelu_erf relative to their own value down to the smallest normal results (a sum of
  // a few roundings, amplified up to 3x through t = 1 / (1 + 0.35 a): 7.3 and 7.8 ulp measured
  // over every third float). gelu_erf as 0.5 x (1 + erf(x / sqrt 2)) was 4100 ulp off at x = -4
  // and -0 from x = -6.
  constexpr double kErfcUlp = 10;
  check_accuracy<float>("erfc", -4.f, 9.3f, tiny, [](float x) { return fm::erfc(x); },
                        [](LD x) { return std::erfc(x); }, kErfcUlp);
  check_accuracy<float>("gelu_erf", -13.1f, 30.f, tiny, [](float x) { return fm::gelu_erf(x); },
                        [](LD x) { return x / 2 * std::erfc(-x / std::sqrt(LD{2})); }, kErfcUlp);
  check_accuracy<float>("gelu_erf (tail)", -13.1f, -3.f, tiny, [](float x) { return fm::gelu_erf(x); },
                        [](LD x) { return x / 2 * std::erfc(-x / std::sqrt(LD{2})); }, kErfcUlp);
  check_accuracy<float>("sin (|x|<=10)", -10.f, 10.f, tiny, [](float x) { return fm::sin(x); },
                        [](LD x) { return std::sin(x); });
  check_accuracy<float>("sin (|x|<=1e4)", -1e4f, 1e4f, tiny, [](float x) { return fm::sin(x); },
                        [](LD x) { return std::sin(x); });
  check_accuracy<float>("sin (|x|<=1e6)", -1e6f, 1e6f, tiny, [](float x) { return fm::sin(x); },
                        [](LD x) { return std::sin(x); });
  check_accuracy<float>("cos (|x|<=10)", -10.f, 10.f, tiny, [](float x) { return fm::cos(x); },
                        [](LD x) { return std::cos(x); });
  check_accuracy<float>("cos (|x|<=1e4)", -1e4f, 1e4f, tiny, [](float x) { return fm::cos(x); },
                        [](LD x) { return std::cos(x); });
  check_accuracy<float>("cos (|x|<=1e6)", -1e6f, 1e6f, tiny, [](float x) { return fm::cos(x); },
                        [](LD x) { return std::cos(x); });
  // Every build (with or without FMA) reduces exactly to |x| < 8.4e8: the quadrant used to wrap
  // as an int32 past ~3e9, and without FMA j*pi/2 lost bits past ~1.3e7 (sin(1.24e9) had the
  // wrong sign). [1e8, 8e8] samples only that range's top decade.
  check_accuracy<float>("sin (|x|<=8e8)", -8e8f, 8e8f, tiny, [](float x) { return fm::sin(x); },
                        [](LD x) { return std::sin(x); });
  check_accuracy<float>("cos (1e8<=x<=8e8)", 1e8f, 8e8f, tiny, [](float x) { return fm::cos(x); },
                        [](LD x) { return std::cos(x); });
#if defined(__FMA__)
  // With FMA the reduction's subtractions stay exact further out (sin(1e10) was 0.707 for -0.4875).
  check_accuracy<float>("sin (|x|<=1e12, FMA)", -1e12f, 1e12f, tiny, [](float x) { return fm::sin(x); },
                        [](LD x) { return std::sin(x); });
  check_accuracy<float>("cos (3e9<=x<=1e11, FMA)", 3e9f, 1e11f, tiny, [](float x) { return fm::cos(x); },
                        [](LD x) { return std::cos(x); });
#endif
}

TEST_CASE("float sin/cos arguments near multiples of pi/2", "[math][float]") {
  // Worst case for range reduction: x closest to k*pi/2, so the result is tiny
  // and all leading bits cancel.  Take the float nearest k*pi/2 and neighbours.
  std::vector<float> x;
  for (int k = 1; k < 8000; ++k) {
    float c = static_cast<float>(k * 1.5707963267948966192L);
    for (int d = -2; d <= 2; ++d) {
      float v = c;
      for (int s = 0; s < (d < 0 ? -d : d); ++s) v = std::nextafter(v, d < 0 ? 0.0f : 1e30f);
      x.push_back(v);
      x.push_back(-v);
    }
  }
  const Report rs = measure<float>(x, [](float v) { return fm::sin(v); }, [](LD v) { return std::sin(v); });
  const Report rc = measure<float>(x, [](float v) { return fm::cos(v); }, [](LD v) { return std::cos(v); });
  INFO("sin max " << rs.max_ulp << " ulp at " << static_cast<double>(rs.worst_x));
  INFO("cos max " << rc.max_ulp << " ulp at " << static_cast<double>(rc.worst_x));
  CHECK(rs.max_ulp <= kMaxUlp);
  CHECK(rc.max_ulp <= kMaxUlp);
}

TEST_CASE("the ulp check rejects a slightly wrong function", "[math]") {
  // Guards the test itself: a 1e-6 relative error (~8-17 ulp) must not pass.
  const auto x = make_inputs<float>(-10.f, 10.f, 1e-30f, 99);
  const Report r = measure<float>(x, [](float v) { return fm::exp(v) * (1.0f + 1e-6f); },
                                  [](LD v) { return std::exp(v); });
  CHECK(r.max_ulp > kMaxUlp);
  const Report t = measure<float, false>(x, [](float v) { return static_cast<float>(std::tanh(static_cast<double>(v) + 1e-7)); },
                                  [](LD v) { return std::tanh(v); });
  CHECK(t.max_ulp > kMaxUlp);
}

TEST_CASE("float special values", "[math][float]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float big = std::numeric_limits<float>::max();
  const float den = std::numeric_limits<float>::denorm_min();

  SECTION("NaN propagates") {
    for (float v : {nan, -nan}) {
      CHECK(std::isnan(fm::exp(v)));
      CHECK(std::isnan(fm::exp_nonpositive(v)));
      CHECK(std::isnan(fm::log(v)));
      CHECK(std::isnan(fm::log1p(v)));
      CHECK(std::isnan(fm::expm1(v)));
      CHECK(std::isnan(fm::tanh(v)));
      CHECK(std::isnan(fm::erf(v)));
      CHECK(std::isnan(fm::erfc(v)));
      CHECK(std::isnan(fm::gelu_erf(v)));
      CHECK(std::isnan(fm::sin(v)));
      CHECK(std::isnan(fm::cos(v)));
      CHECK(std::isnan(fm::sigmoid(v)));
    }
  }
  SECTION("exp") {
    // exp scales by adding n to the exponent bits: a NaN's payload must not leak into them.
    for (std::uint32_t bits : {0x7fc00001u, 0x7fffffffu, 0xffc12345u, 0x7f800001u}) {
      float p;
      std::memcpy(&p, &bits, sizeof p);
      CHECK(std::isnan(fm::exp(p)));
    }
    CHECK(std::isfinite(fm::exp(88.72283173f)));  // the largest float whose exp is finite
    CHECK(same(fm::exp(88.72283936f), inf));
    CHECK(same(fm::exp(0.0f), 1.0f));
    CHECK(same(fm::exp(-0.0f), 1.0f));
    CHECK(same(fm::exp(inf), inf));
    CHECK(same(fm::exp(-inf), 0.0f));
    CHECK(same(fm::exp(big), inf));
    CHECK(same(fm::exp(-big), 0.0f));
    CHECK(same(fm::exp(88.73f), inf));            // just past ln(FLT_MAX) = 88.7228
    CHECK(std::isfinite(fm::exp(88.72f)));
    CHECK(same(fm::exp(-104.0f), 0.0f));
    CHECK(same(fm::exp(-100.0f), 0.0f));          // subnormal results are flushed to 0
    CHECK(same(fm::exp(-87.34f), 0.0f));          // e^-87.34 = 1.17e-38 < FLT_MIN
    CHECK(fm::exp(-87.3f) >= std::numeric_limits<float>::min());
    CHECK(fm::exp(-87.3f) == Approx(std::exp(double(-87.3f))).epsilon(1e-6));
    CHECK(fm::exp(-87.33654022f) >= std::numeric_limits<float>::min());  // the last value not flushed
    CHECK(same(fm::exp(den), 1.0f));
  }
  SECTION("exp_nonpositive") {
    // It must give exp's result bit for bit: every 1009th float of [-90, -0] and every float
    // within 4096 ulp of the flush threshold, where 2^n is smallest.
    std::vector<float> x;
    for (std::uint32_t bits = 0x80000000u;; bits += 1009) {
      float v;
      std::memcpy(&v, &bits, sizeof v);
      if (v < -90.0f) break;
      x.push_back(v);
    }
    float up = -87.33654022f, down = up;
    for (int i = 0; i < 4096; ++i) {
      x.push_back(up), x.push_back(down);
      up = std::nextafter(up, 0.0f), down = std::nextafter(down, -inf);
    }
    std::vector<float> got(x.size()), want(x.size());
    const float* xp = x.data();
    float* gp = got.data();
    float* wp = want.data();
    const std::size_t n = x.size();
    FUSE_SIMD_LOOP
    for (std::size_t i = 0; i < n; ++i) gp[i] = fm::exp_nonpositive(xp[i]);
    FUSE_SIMD_LOOP
    for (std::size_t i = 0; i < n; ++i) wp[i] = fm::exp(xp[i]);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i) differ += !same(got[i], want[i]);
    INFO(differ << " of " << x.size() << " differ from exp");
    CHECK(differ == 0);
    for (std::uint32_t bits : {0x7fc00001u, 0x7fffffffu, 0xffc12345u, 0x7f800001u}) {
      float p;
      std::memcpy(&p, &bits, sizeof p);
      CHECK(std::isnan(fm::exp_nonpositive(p)));
    }
    CHECK(same(fm::exp_nonpositive(-inf), 0.0f));
    CHECK(same(fm::exp_nonpositive(-big), 0.0f));
    CHECK(same(fm::exp_nonpositive(-0.0f), 1.0f));
    CHECK(same(fm::exp_nonpositive(0.0f), 1.0f));
    CHECK(same(fm::exp_nonpositive(-den), 1.0f));
  }
  SECTION("log") {
    CHECK(same(fm::log(1.0f), 0.0f));
    CHECK(same(fm::log(0.0f), -inf));
    CHECK(same(fm::log(-0.0f), -inf));
    CHECK(same(fm::log(inf), inf));
    CHECK(std::isnan(fm::log(-1.0f)));
    CHECK(std::isnan(fm::log(-inf)));
    CHECK(std::isnan(fm::log(-den)));
    CHECK(fm::log(den) == Approx(-103.27893f));
    CHECK(fm::log(big) == Approx(88.72284f));
  }
  SECTION("log1p") {
    CHECK(same(fm::log1p(0.0f), 0.0f));
    CHECK(same(fm::log1p(-0.0f), -0.0f));
    CHECK(same(fm::log1p(-1.0f), -inf));
    CHECK(same(fm::log1p(inf), inf));
    CHECK(std::isnan(fm::log1p(-1.5f)));
    CHECK(std::isnan(fm::log1p(-inf)));
    CHECK(same(fm::log1p(den), den));
    CHECK(same(fm::log1p(1e-30f), 1e-30f));
    CHECK(fm::log1p(big) == Approx(88.72284f));
  }
  SECTION("expm1") {
    CHECK(same(fm::expm1(0.0f), 0.0f));
    CHECK(same(fm::expm1(-0.0f), -0.0f));
    CHECK(same(fm::expm1(inf), inf));
    CHECK(same(fm::expm1(-inf), -1.0f));
    CHECK(same(fm::expm1(-30.0f), -1.0f));
    CHECK(same(fm::expm1(big), inf));
    CHECK(same(fm::expm1(88.73f), inf));
    CHECK(std::isfinite(fm::expm1(88.72f)));
    CHECK(same(fm::expm1(den), den));
    CHECK(same(fm::expm1(-1e-30f), -1e-30f));
  }
  SECTION("tanh") {
    CHECK(same(fm::tanh(0.0f), 0.0f));
    CHECK(same(fm::tanh(-0.0f), -0.0f));
    CHECK(same(fm::tanh(inf), 1.0f));
    CHECK(same(fm::tanh(-inf), -1.0f));
    CHECK(same(fm::tanh(100.0f), 1.0f));
    CHECK(same(fm::tanh(-big), -1.0f));
    CHECK(same(fm::tanh(den), den));
    CHECK(same(fm::tanh(-1e-30f), -1e-30f));
  }
  SECTION("erf") {
    CHECK(same(fm::erf(0.0f), 0.0f));
    CHECK(same(fm::erf(-0.0f), -0.0f));
    CHECK(same(fm::erf(inf), 1.0f));
    CHECK(same(fm::erf(-inf), -1.0f));
    CHECK(same(fm::erf(4.0f), 1.0f));
    CHECK(same(fm::erf(-big), -1.0f));
    CHECK(fm::erf(1e-30f) == Approx(1.1283792e-30f));
  }
  SECTION("erfc and gelu_erf") {
    CHECK(same(fm::erfc(0.0f), 1.0f));
    CHECK(same(fm::erfc(-0.0f), 1.0f));
    CHECK(same(fm::erfc(inf), 0.0f));
    CHECK(same(fm::erfc(-inf), 2.0f));
    CHECK(same(fm::erfc(10.0f), 0.0f));  // 2.1e-45: subnormal, flushed as exp does
    CHECK(same(fm::erfc(-big), 2.0f));
    CHECK(same(fm::gelu_erf(0.0f), 0.0f));
    CHECK(same(fm::gelu_erf(-0.0f), -0.0f));
    CHECK(same(fm::gelu_erf(inf), inf));
    CHECK(std::isnan(fm::gelu_erf(-inf)));  // -inf * 0, as 0.5 x (1 + erf(x / sqrt 2)) gives
    CHECK(same(fm::gelu_erf(big), big));
    CHECK(same(fm::gelu_erf(-20.0f), -0.0f));  // -5.5e-88
    CHECK(fm::gelu_erf(-6.0f) == Approx(-5.9196e-9).epsilon(1e-4));  // was -0
  }
  SECTION("sigmoid") {
    CHECK(same(fm::sigmoid(0.0f), 0.5f));
    CHECK(same(fm::sigmoid(inf), 1.0f));
    CHECK(same(fm::sigmoid(-inf), 0.0f));
    CHECK(same(fm::sigmoid(big), 1.0f));
    CHECK(same(fm::sigmoid(-big), 0.0f));
    CHECK(same(fm::sigmoid(100.0f), 1.0f));
    CHECK(same(fm::sigmoid(-100.0f), 0.0f));  // e^-100 ~ 3.7e-44: subnormal, flushed
    CHECK(fm::sigmoid(-87.0f) == Approx(std::exp(-87.0)).epsilon(1e-5));
  }
  SECTION("sin/cos") {
    CHECK(same(fm::sin(0.0f), 0.0f));
    CHECK(same(fm::sin(-0.0f), -0.0f));
    CHECK(same(fm::cos(0.0f), 1.0f));
    CHECK(same(fm::cos(-0.0f), 1.0f));
    CHECK(same(fm::sin(den), den));
    CHECK(std::isnan(fm::sin(inf)));
    CHECK(std::isnan(fm::sin(-inf)));
    CHECK(std::isnan(fm::cos(inf)));
    CHECK(std::isnan(fm::cos(-inf)));
    // Beyond the documented range the result is inexact but must stay in [-1, 1].
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> e(20.f, 38.f);
    for (int i = 0; i < 10000; ++i) {
      const float v = std::pow(10.f, e(rng)) * ((i & 1) ? -1.f : 1.f);
      CHECK(std::fabs(fm::sin(v)) <= 1.0f);
      CHECK(std::fabs(fm::cos(v)) <= 1.0f);
    }
    CHECK(std::fabs(fm::sin(big)) <= 1.0f);
    CHECK(std::fabs(fm::cos(-big)) <= 1.0f);
  }
}

// ---------------------------------------------------------------------------
// double: host path is std:: (sigmoid is our formula on top of std::exp).
// ---------------------------------------------------------------------------

TEST_CASE("double accuracy against long double", "[math][double]") {
  if (!kWideLongDouble) {
    WARN("long double is not wider than double; skipping double accuracy checks");
    return;
  }
  const double tiny = 1e-300;
  check_accuracy<double>("exp", -745.0, 709.0, tiny, [](double x) { return fm::exp(x); },
                         [](LD x) { return std::exp(x); });
  check_accuracy<double>("log", 1e-320, 1e308, 1e-320, [](double x) { return fm::log(x); },
                         [](LD x) { return std::log(x); });
  check_accuracy<double>("log1p", -1.0, 1e300, tiny, [](double x) { return fm::log1p(x); },
                         [](LD x) { return std::log1p(x); });
  check_accuracy<double>("expm1", -40.0, 709.0, tiny, [](double x) { return fm::expm1(x); },
                         [](LD x) { return std::expm1(x); });
  check_accuracy<double>("tanh", -20.0, 20.0, tiny, [](double x) { return fm::tanh(x); },
                         [](LD x) { return std::tanh(x); });
  check_accuracy<double>("sigmoid", -740.0, 740.0, tiny, [](double x) { return fm::sigmoid(x); }, sigmoid_ref);
  check_accuracy<double>("erf", -7.0, 7.0, tiny, [](double x) { return fm::erf(x); },
                         [](LD x) { return std::erf(x); });
  check_accuracy<double>("sin", -1e4, 1e4, tiny, [](double x) { return fm::sin(x); },
                         [](LD x) { return std::sin(x); });
  check_accuracy<double>("cos", -1e4, 1e4, tiny, [](double x) { return fm::cos(x); },
                         [](LD x) { return std::cos(x); });
}

TEST_CASE("double special values", "[math][double]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double big = std::numeric_limits<double>::max();

  CHECK(std::isnan(fm::exp(nan)));
  CHECK(std::isnan(fm::log(nan)));
  CHECK(std::isnan(fm::log1p(nan)));
  CHECK(std::isnan(fm::expm1(nan)));
  CHECK(std::isnan(fm::tanh(nan)));
  CHECK(std::isnan(fm::erf(nan)));
  CHECK(std::isnan(fm::sin(nan)));
  CHECK(std::isnan(fm::cos(nan)));
  CHECK(std::isnan(fm::sigmoid(nan)));

  CHECK(same(fm::exp(inf), inf));
  CHECK(same(fm::exp(-inf), 0.0));
  CHECK(same(fm::exp(710.0), inf));
  CHECK(same(fm::exp(-746.0), 0.0));
  CHECK(same(fm::log(0.0), -inf));
  CHECK(same(fm::log(inf), inf));
  CHECK(std::isnan(fm::log(-1.0)));
  CHECK(same(fm::log1p(-1.0), -inf));
  CHECK(same(fm::log1p(-0.0), -0.0));
  CHECK(std::isnan(fm::log1p(-2.0)));
  CHECK(same(fm::expm1(-inf), -1.0));
  CHECK(same(fm::expm1(-0.0), -0.0));
  CHECK(same(fm::tanh(inf), 1.0));
  CHECK(same(fm::tanh(-inf), -1.0));
  CHECK(same(fm::tanh(-0.0), -0.0));
  CHECK(same(fm::erf(inf), 1.0));
  CHECK(same(fm::erf(-inf), -1.0));
  CHECK(same(fm::sigmoid(inf), 1.0));
  CHECK(same(fm::sigmoid(-inf), 0.0));
  CHECK(same(fm::sigmoid(big), 1.0));
  CHECK(same(fm::sigmoid(-big), 0.0));
  CHECK(same(fm::sigmoid(0.0), 0.5));
  CHECK(fm::sigmoid(-740.0) > 0.0);
  CHECK(std::isnan(fm::sin(inf)));
  CHECK(std::isnan(fm::cos(-inf)));
  CHECK(same(fm::sin(-0.0), -0.0));
}
