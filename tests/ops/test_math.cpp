// Elementwise math functions and activations (spec section 2) against a double-precision
// reference, for float and double tensors, at odd sizes, on every host executor; NaN propagation;
// integer arguments.
#include "ops/ops_support.hpp"

#include <array>

namespace {

using namespace ops_test;
using fuse::index_t;

// Float results come from fuse::math's vectorisable implementations (a few ulp, see
// fuse/math/scalar_math.hpp); double results from std::. Tolerances: about 8 ulp of float for one
// function, a little more for activations composed of several; 1e-12 relative for double.
constexpr double kUlpF = 0x1p-24;
constexpr tols kFn{{8 * kUlpF, 0}, {1e-12, 0}};
// Bounded odd functions (sin, cos, tanh, erf): also an absolute 1 ulp of 1 near their zeros.
constexpr tols kBounded{{8 * kUlpF, 1e-7}, {1e-12, 1e-16}};
constexpr tols kActivation{{16 * kUlpF, 0}, {1e-12, 0}};
// gelu: 1 + tanh(u) (or erf) cancels for negative x, so the error is absolute there: about
// |x| * ulp(1). A wrong constant or the other gelu variant is off by 1e-5 .. 5e-4.
constexpr tols kGelu{{16 * kUlpF, 1e-6}, {1e-12, 1e-14}};
// gelu_erf is computed as 0.5 x erfc(-x / sqrt 2), relative to its own value down to x = -13
// (as 0.5 x (1 + erf) it was -0 from x = -6, where the value is -5.9e-9).
constexpr tols kGeluErf{{16 * kUlpF, 0}, {1e-12, 0}};

double ref_sigmoid(double v) { return v >= 0 ? 1 / (1 + std::exp(-v)) : std::exp(v) / (1 + std::exp(v)); }
// 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)): no cancellation in the reference.
double ref_gelu(double v) {
  const double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
  return v / (1 + std::exp(-2 * u));
}
// 0.5 v (1 + erf(v / sqrt 2)) = 0.5 v erfc(-v / sqrt 2).
double ref_gelu_erf(double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }
double ref_softplus(double v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); }

// f(x) for x uniform in [lo, hi] (log-uniform when `log_uniform`), at every odd size, on every
// executor; then f of a transposed 2-D view (the strided, non-vectorised path).
template <class T, class F, class Ref>
void check_unary(const std::string& name, F f, Ref ref, double lo, double hi, tols tt, bool log_uniform = false) {
  const tol t = tt.pick<T>();
  for (index_t n : odd_sizes) {
    fuse::tensor<T, 1> x(n);
    if (log_uniform) fill_log_uniform(x, lo, hi);
    else fill_random(x, lo, hi);
    auto e = f(x);
    static_assert(std::is_same_v<typename decltype(e)::value_type, T>, "a float function keeps float / double");
    std::vector<double> expect(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) expect[i] = ref(static_cast<double>(x.data()[i]));
    check_all_executors(e, [&](index_t i) { return expect[i]; }, t, type_name<T>() + " " + size_label(name, n));
  }
  // A transposed view: y(i, j) = f(x(j, i)).
  fuse::tensor<T, 2> x2(37, 29);
  if (log_uniform) fill_log_uniform(x2, lo, hi);
  else fill_random(x2, lo, hi);
  auto et = f(fuse::transpose(x2));
  REQUIRE(et.shape() == fuse::shape_t<2>{29, 37});
  check_all_executors(
      et, [&](index_t k) { return ref(static_cast<double>(x2(k % 37, k / 37))); }, t,
      type_name<T>() + " " + name + " of a transposed view");
}

#define FUSE_TEST_UNARY(NAME, REF, LO, HI, TOLS, ...) \
  check_unary<TestType>(#NAME, [](const auto& x) { return fuse::NAME(x); }, REF, LO, HI, TOLS, ##__VA_ARGS__)

}  // namespace

TEMPLATE_TEST_CASE("math functions match a double reference", "[ops][math]", float, double) {
  SECTION("exp") { FUSE_TEST_UNARY(exp, [](double v) { return std::exp(v); }, -20.0, 20.0, kFn); }
  SECTION("exp near overflow and underflow") {
    FUSE_TEST_UNARY(exp, [](double v) { return std::exp(v); }, -85.0, 88.0, kFn);
  }
  SECTION("log") { FUSE_TEST_UNARY(log, [](double v) { return std::log(v); }, 1e-4, 1e4, kFn, true); }
  SECTION("log near 1") { FUSE_TEST_UNARY(log, [](double v) { return std::log(v); }, 0.5, 2.0, kFn); }
  SECTION("log1p") { FUSE_TEST_UNARY(log1p, [](double v) { return std::log1p(v); }, -0.9, 10.0, kFn); }
  SECTION("log1p of tiny x (log(1 + x) would lose it)") {
    FUSE_TEST_UNARY(log1p, [](double v) { return std::log1p(v); }, 1e-7, 1e-2, kFn, true);
  }
  SECTION("expm1") { FUSE_TEST_UNARY(expm1, [](double v) { return std::expm1(v); }, -10.0, 10.0, kFn); }
  SECTION("expm1 of tiny x (exp(x) - 1 would lose it)") {
    FUSE_TEST_UNARY(expm1, [](double v) { return std::expm1(v); }, 1e-7, 1e-2, kFn, true);
    FUSE_TEST_UNARY(expm1, [](double v) { return std::expm1(v); }, -1e-2, -1e-7, kFn);
  }
  SECTION("sqrt") { FUSE_TEST_UNARY(sqrt, [](double v) { return std::sqrt(v); }, 1e-4, 1e4, kFn, true); }
  SECTION("rsqrt") { FUSE_TEST_UNARY(rsqrt, [](double v) { return 1 / std::sqrt(v); }, 1e-4, 1e4, kFn, true); }
  SECTION("abs") { FUSE_TEST_UNARY(abs, [](double v) { return std::fabs(v); }, -100.0, 100.0, exact); }
  SECTION("sin") { FUSE_TEST_UNARY(sin, [](double v) { return std::sin(v); }, -10.0, 10.0, kBounded); }
  SECTION("cos") { FUSE_TEST_UNARY(cos, [](double v) { return std::cos(v); }, -10.0, 10.0, kBounded); }
  SECTION("tanh") { FUSE_TEST_UNARY(tanh, [](double v) { return std::tanh(v); }, -6.0, 6.0, kBounded); }
  SECTION("erf") { FUSE_TEST_UNARY(erf, [](double v) { return std::erf(v); }, -4.0, 4.0, kBounded); }
  SECTION("square") { FUSE_TEST_UNARY(square, [](double v) { return v * v; }, -100.0, 100.0, rounded); }
}

TEMPLATE_TEST_CASE("activations match a double reference", "[ops][math][activation]", float, double) {
  SECTION("sigmoid") { FUSE_TEST_UNARY(sigmoid, ref_sigmoid, -30.0, 30.0, kActivation); }
  SECTION("relu") { FUSE_TEST_UNARY(relu, [](double v) { return v > 0 ? v : 0.0; }, -10.0, 10.0, exact); }
  SECTION("silu") { FUSE_TEST_UNARY(silu, [](double v) { return v * ref_sigmoid(v); }, -30.0, 30.0, kActivation); }
  SECTION("softplus") { FUSE_TEST_UNARY(softplus, ref_softplus, -30.0, 30.0, kActivation); }
  SECTION("gelu (tanh approximation)") { FUSE_TEST_UNARY(gelu, ref_gelu, -6.0, 6.0, kGelu); }
  SECTION("gelu_erf (exact)") { FUSE_TEST_UNARY(gelu_erf, ref_gelu_erf, -13.0, 6.0, kGeluErf); }
}

TEST_CASE("gelu and gelu_erf are different functions", "[ops][math][activation]") {
  // The tolerances above would not tell them apart if they were loose: the two differ by ~1e-3.
  fuse::tensor<double, 1> x(101);
  for (index_t i = 0; i < 101; ++i) x(i) = -5.0 + 0.1 * double(i);
  const auto a = fuse::eval(fuse::gelu(x));
  const auto b = fuse::eval(fuse::gelu_erf(x));
  double most = 0;
  for (index_t i = 0; i < 101; ++i) most = std::max(most, std::fabs(a(i) - b(i)));
  CHECK(most > 1e-4);
  CHECK(most < 1e-2);
}

TEMPLATE_TEST_CASE("math functions and activations propagate NaN", "[ops][math][nan]", float, double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (index_t n : {index_t(7), index_t(100003)}) {
    fuse::tensor<T, 1> x(n);
    fill_random(x, 0.25, 2.0);  // in every function's domain
    std::vector<index_t> nan_at{0, n / 2, n - 1};
    if (n > 100) nan_at.insert(nan_at.end(), {index_t(17), index_t(64), index_t(65), n - 9});
    for (index_t i : nan_at) x(i) = nan;
    const auto check = [&](const auto& e, const char* name) {
      for (const auto& y : {fuse::eval(e), fuse::eval(fuse::cpu{.threads = 1}, e), fuse::eval(fuse::eager(fuse::cpu{}), e)}) {
        index_t wrong = 0;
        for (index_t i = 0; i < n; ++i) {
          const bool should = x(i) != x(i);
          const bool is = y(i) != y(i);
          wrong += should != is;
        }
        INFO(type_name<T>() << " " << name << " n=" << n);
        CHECK(wrong == 0);
      }
    };
    check(fuse::exp(x), "exp");
    check(fuse::log(x), "log");
    check(fuse::log1p(x), "log1p");
    check(fuse::expm1(x), "expm1");
    check(fuse::sqrt(x), "sqrt");
    check(fuse::rsqrt(x), "rsqrt");
    check(fuse::abs(x), "abs");
    check(fuse::sin(x), "sin");
    check(fuse::cos(x), "cos");
    check(fuse::tanh(x), "tanh");
    check(fuse::erf(x), "erf");
    check(fuse::square(x), "square");
    check(fuse::sigmoid(x), "sigmoid");
    check(fuse::relu(x), "relu");
    check(fuse::relu(-x), "relu of -x");
    check(fuse::silu(x), "silu");
    check(fuse::softplus(x), "softplus");
    check(fuse::softplus(-x), "softplus of -x");
    check(fuse::gelu(x), "gelu");
    check(fuse::gelu_erf(x), "gelu_erf");
  }
}

TEST_CASE("math functions of integer tensors give double; abs, square, relu keep the integer type", "[ops][math][types]") {
  fuse::tensor<std::int32_t, 1> k(33);
  for (index_t i = 0; i < 33; ++i) k(i) = static_cast<std::int32_t>(i - 16 + (i >= 16));  // -16..-1, 1..17: no zero

  static_assert(std::is_same_v<decltype(fuse::exp(k))::value_type, double>);
  static_assert(std::is_same_v<decltype(fuse::log(k))::value_type, double>);
  static_assert(std::is_same_v<decltype(fuse::sqrt(k))::value_type, double>);
  static_assert(std::is_same_v<decltype(fuse::sin(k))::value_type, double>);
  static_assert(std::is_same_v<decltype(fuse::tanh(k))::value_type, double>);
  static_assert(std::is_same_v<decltype(fuse::sigmoid(k))::value_type, double>);
  static_assert(std::is_same_v<decltype(fuse::gelu(k))::value_type, double>);
  static_assert(std::is_same_v<decltype(fuse::abs(k))::value_type, std::int32_t>);
  static_assert(std::is_same_v<decltype(fuse::square(k))::value_type, std::int32_t>);
  static_assert(std::is_same_v<decltype(fuse::relu(k))::value_type, std::int32_t>);

  const auto e = fuse::eval(fuse::exp(k));
  const auto s = fuse::eval(fuse::sin(k));
  const auto sg = fuse::eval(fuse::sigmoid(k));
  const auto a = fuse::eval(fuse::abs(k));
  const auto q = fuse::eval(fuse::square(k));
  const auto r = fuse::eval(fuse::relu(k));
  for (index_t i = 0; i < 33; ++i) {
    const double v = k(i);
    CHECK(e(i) == std::exp(v));  // computed in double, not in int or float
    CHECK(s(i) == std::sin(v));
    CHECK(sg(i) == Approx(ref_sigmoid(v)).epsilon(1e-14));
    CHECK(a(i) == std::abs(k(i)));
    CHECK(q(i) == k(i) * k(i));
    CHECK(r(i) == std::max(k(i), 0));
  }
  // sqrt(2) of an int is the double, not a rounded float.
  fuse::tensor<std::int64_t, 1> two(1);
  two(0) = 2;
  CHECK(fuse::eval(fuse::sqrt(two))(0) == std::sqrt(2.0));
}
