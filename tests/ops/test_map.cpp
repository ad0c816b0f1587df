// fuse::map with user callables (unary, binary, ternary, capturing state, changing the type), and a
// user's hand-written layer (GELU over a named, reused subexpression) against the library's.
#include "ops/ops_support.hpp"

#include <array>
#include <atomic>
#include <functional>

namespace {
using namespace ops_test;
using fuse::index_t;
}  // namespace

TEMPLATE_TEST_CASE("fuse::map applies user lambdas elementwise", "[ops][map]", float, double) {
  using T = TestType;
  for (index_t n : odd_sizes) {
    fuse::tensor<T, 1> a(n), b(n), c(n);
    fill_random(a, -4, 4);
    fill_random(b, -4, 4);
    fill_random(c, 0.5, 2);
    const std::string tn = type_name<T>() + " ";

    {  // unary
      auto e = fuse::map([](T v) { return v * v * v - v; }, a);
      static_assert(std::is_same_v<typename decltype(e)::value_type, T>);
      check_all_executors(e, [&](index_t i) { T v = a(i); return double(v * v * v - v); },
                          tol{4 * double(std::numeric_limits<T>::epsilon()), 64 * double(std::numeric_limits<T>::epsilon())},
                          tn + size_label("map(v^3 - v)", n));
    }
    {  // binary
      auto e = fuse::map([](T x, T y) { return x > y ? x - y : y * T(0.5); }, a, b);
      check_all_executors(e, [&](index_t i) { return double(a(i) > b(i) ? T(a(i) - b(i)) : T(b(i) * T(0.5))); }, tol{},
                          tn + size_label("map(x > y ? x - y : y / 2)", n));
    }
    {  // ternary
      auto e = fuse::map([](T x, T y, T z) { return (x + y) / z; }, a, b, c);
      check_all_executors(e, [&](index_t i) { return double(T(a(i) + b(i)) / c(i)); }, tol{},
                          tn + size_label("map((x + y) / z)", n));
    }
    {  // capturing state by value and by reference
      const T scale = T(1.75), shift = T(-0.5);
      const std::array<T, 4> table{T(1), T(-2), T(3), T(-4)};
      auto e = fuse::map([scale, shift, &table](T x) { return scale * x + shift + table[x > 0 ? 1 : 3]; }, a);
      check_all_executors(e, [&](index_t i) { return double(scale) * a(i) + double(shift) + double(table[a(i) > 0 ? 1 : 3]); },
                          tol{4 * double(std::numeric_limits<T>::epsilon()), 32 * double(std::numeric_limits<T>::epsilon())},
                          tn + size_label("map(captures)", n));
    }
    {  // changing the type: the result type is the lambda's
      auto e = fuse::map([](T x) { return static_cast<std::int32_t>(x * 10); }, a);
      static_assert(std::is_same_v<typename decltype(e)::value_type, std::int32_t>);
      check_all_executors(e, [&](index_t i) { return double(static_cast<std::int32_t>(a(i) * 10)); }, tol{},
                          tn + size_label("map(int(10 x))", n));
      auto p = fuse::map([](T x, T y) { return x * y > T(1); }, a, b);
      static_assert(std::is_same_v<typename decltype(p)::value_type, bool>);
      check_all_executors(p, [&](index_t i) { return a(i) * b(i) > T(1) ? 1.0 : 0.0; }, tol{},
                          tn + size_label("map(x * y > 1)", n));
    }
    {  // inside a larger expression, with scalars and library functions
      auto e = fuse::exp(fuse::map([](T x, double s) { return x * T(s); }, a, 0.25)) - fuse::map([](T y) { return y; }, b);
      check_all_executors(e, [&](index_t i) { return std::exp(double(a(i)) * 0.25) - double(b(i)); },
                          tol{16 * double(std::numeric_limits<T>::epsilon()), 16 * double(std::numeric_limits<T>::epsilon())},
                          tn + size_label("exp(map(x * 0.25)) - map(y)", n));
    }
  }
}

TEST_CASE("fuse::map broadcasts its operands", "[ops][map][broadcast]") {
  const index_t m = 33, n = 7;
  auto x = random_tensor<float>(-4, 4, m, n);
  auto row = random_tensor<float>(-4, 4, n);
  auto col = random_tensor<double>(-4, 4, m, 1);
  auto e = fuse::map([](float v, float r, double c) { return double(v * r) + c; }, x, row, col);
  static_assert(std::is_same_v<decltype(e)::value_type, double>);
  REQUIRE(e.shape() == fuse::shape_t<2>{m, n});
  check_all_executors(e, [&](index_t k) { return double(x.data()[k] * row(k % n)) + col(k / n, 0); }, tol{},
                      "map over (m, n), (n), (m, 1)");
}

TEST_CASE("fuse::map of a transposed view and of a generator", "[ops][map][view]") {
  auto x = random_tensor<double>(-4, 4, 5, 9);
  auto e = fuse::map([](double v, fuse::index_t j) { return v * double(j); }, fuse::transpose(x),
                     fuse::iota<1>(fuse::shape_t<2>{9, 5}));
  check_all_executors(e, [&](index_t k) { return x(k % 5, k / 5) * double(k % 5); }, tol{}, "map(transpose(x), iota<1>)");
}

TEMPLATE_TEST_CASE("a hand-written GELU over a named, reused subexpression equals fuse::gelu", "[ops][map][gelu]", float,
                   double) {
  using T = TestType;
  for (auto [m, n] : {std::pair<index_t, index_t>{1, 1}, {3, 7}, {33, 33}, {129, 1031}}) {
    fuse::tensor<T, 2> x(m, n);
    fuse::tensor<T, 1> bias(n);
    fill_random(x, -5, 5);
    fill_random(bias, -1, 1);
    // What a user writes: z is one node, used five times.
    auto z = x + bias;
    auto hand = T(0.5) * z * (T(1) + fuse::tanh(T(0.7978845608028654) * (z + T(0.044715) * z * z * z)));
    auto lib = fuse::gelu(x + bias);
    static_assert(std::is_same_v<typename decltype(hand)::value_type, T>);
    const auto want = fuse::eval(lib);
    const auto want_eager = fuse::eval(fuse::eager(fuse::cpu{}), lib);
    // The same operations in the same order: equal up to FMA contraction (a couple of ulp, or an
    // absolute error of ulp(1) where 1 + tanh cancels).
    const double eps = double(std::numeric_limits<T>::epsilon());
    const std::string what = type_name<T>() + " hand gelu (" + std::to_string(m) + ", " + std::to_string(n) + ")";
    check_all_executors(hand, [&](index_t k) { return double(want.data()[k]); }, tol{4 * eps, 8 * eps}, what);
    check_against(want_eager, [&](index_t k) { return double(want.data()[k]); }, tol{4 * eps, 8 * eps},
                  what + ": fuse::gelu eager vs fused");
  }
}

namespace {
bool near(double got, double want, double rtol, double atol) { return std::abs(got - want) <= atol + rtol * std::abs(want); }
}  // namespace

// A subexpression that occurs several times with the same value is evaluated once per element
// (core/shared_subtree.hpp). A counting functor shows how often it ran; its counter is atomic:
// the kernel's loops are `omp simd`, and a plain `++*c` in SIMD lanes loses increments (a tile of
// short rows, backend/cpu/tile.hpp, counted 257 calls of 3737).
TEST_CASE("a repeated subexpression is evaluated once per element, only when the copies are equal", "[ops][map][shared]") {
  const index_t m = 37, n = 101;
  fuse::tensor<float, 2> x(m, n), w(m, n);
  fuse::tensor<float, 1> bias(n);
  fill_random(x, -3, 3);
  fill_random(w, -3, 3);
  fill_random(bias, -1, 1);
  std::atomic<long> calls{0};
  auto count = [c = &calls](float v, float b) {
    c->fetch_add(1, std::memory_order_relaxed);
    return v + b;
  };
  const fuse::cpu one{.threads = 1};
  auto ref = [&](index_t r, index_t j, const fuse::tensor<float, 2>& a, const fuse::tensor<float, 2>& b) {
    const double z1 = double(a(r, j) + bias(j)), z2 = double(b(r, j) + bias(j));
    return 0.5 * z1 * z2 + 0.25 * z1 - z2;
  };
  auto check = [&](const fuse::tensor<float, 2>& y, const fuse::tensor<float, 2>& a, const fuse::tensor<float, 2>& b) {
    for (index_t r = 0; r < m; ++r)
      for (index_t j = 0; j < n; ++j) REQUIRE(near(y(r, j), ref(r, j, a, b), 1e-5, 1e-5));
  };
  SECTION("three equal copies (and 0.5f * z beside 0.25f * z: one shape, two values): one call") {
    auto z = fuse::map(count, x, bias);
    auto y = fuse::eval(one, 0.5f * z * z + 0.25f * z - z);
    CHECK(calls == m * n);
    check(y, x, x);
  }
  SECTION("the same shape over different tensors: each copy runs") {
    auto y = fuse::eval(one, 0.5f * fuse::map(count, x, bias) * fuse::map(count, w, bias) + 0.25f * fuse::map(count, x, bias) -
                                 fuse::map(count, w, bias));
    CHECK(calls == 4 * m * n);
    check(y, x, w);
  }
  SECTION("a functor with other state is another value") {
    auto count2 = [c = &calls, k = 0.0f](float v, float b) {
      c->fetch_add(1, std::memory_order_relaxed);
      return v + b + k;
    };
    auto y = fuse::eval(one, 0.5f * fuse::map(count, x, bias) * fuse::map(count2, x, bias) + 0.25f * fuse::map(count, x, bias) -
                                 fuse::map(count, x, bias));
    CHECK(calls == 2 * m * n);  // the three count copies once, count2 once
    check(y, x, x);
  }
  SECTION("in a row kernel: a phase's operand and the epilogue") {
    // Rows of 101, and contiguous rows of 8 (a copy of their first 8), which run as tiles of rows
    // (row_tiles.hpp).
    for (const index_t k : {n, index_t(8)}) {
      CAPTURE(k);
      auto xs = fuse::eval(fuse::slice<1>(x, 0, k));
      calls = 0;
      auto z = fuse::map(count, xs, fuse::slice<0>(bias, 0, k));
      auto y = fuse::eval(one, z * z - fuse::sum(z * z, fuse::axis<-1>));
      CHECK(calls == 2 * m * k);  // once in the phase, once in the epilogue
      for (index_t r = 0; r < m; ++r) {
        double s = 0;
        for (index_t j = 0; j < k; ++j) s += double(x(r, j) + bias(j)) * double(x(r, j) + bias(j));
        for (index_t j = 0; j < k; ++j) {
          const double zz = double(x(r, j) + bias(j));
          REQUIRE(near(y(r, j), zz * zz - s, 1e-5, 1e-3));
        }
      }
    }
  }
}

// An empty callable (a captureless lambda, a functor without members) held by fn::user had one
// byte of indeterminate value, which the repeated-phase match and the plan's identity key
// compared: softmax(map(f, x)) called f 4 times per element instead of 2, and its plan printed
// a third phase (a probe, 2026-12-03).
namespace {
std::atomic<long> empty_calls{0};  // atomic: see above
struct counting_identity {
  float operator()(float v) const { return ++empty_calls, v; }
};
}  // namespace

TEST_CASE("an empty callable is one value: softmax(map(f, x)) calls f twice per element", "[ops][map][shared]") {
  const index_t m = 9, n = 67;
  fuse::tensor<float, 2> x(m, n), y(m, n);
  fill_random(x, -3, 3);
  const fuse::cpu one{.threads = 1};
  auto lambda = [](float v) { return ++empty_calls, v; };
  empty_calls = 0;
  fuse::assign(one, y, fuse::softmax(fuse::map(counting_identity{}, x), fuse::axis<-1>));
  CHECK(empty_calls == 2 * m * n);  // the max phase, then the sum phase that keeps exp for the epilogue
  empty_calls = 0;
  fuse::assign(one, y, fuse::softmax(fuse::map(lambda, x), fuse::axis<-1>));
  CHECK(empty_calls == 2 * m * n);
  // The plan as for a callable with state (well-defined bytes): two phases, not three.
  long unused = 0;
  auto with_state = [c = &unused](float v) { return ++*c, v; };
  const auto empty_plan = fuse::plan(fuse::softmax(fuse::map(lambda, x), fuse::axis<-1>));
  const auto state_plan = fuse::plan(fuse::softmax(fuse::map(with_state, x), fuse::axis<-1>));
  CHECK(empty_plan.kernels == 1);
  CHECK(empty_plan.flops == state_plan.flops);
  std::ostringstream printed;
  printed << empty_plan;
  CAPTURE(printed.str());
  CHECK(printed.str().find("2 phases") != std::string::npos);
  for (index_t r = 0; r < m; ++r) {
    double mx = -1e300, s = 0;
    for (index_t j = 0; j < n; ++j) mx = std::max(mx, double(x(r, j)));
    for (index_t j = 0; j < n; ++j) s += std::exp(double(x(r, j)) - mx);
    for (index_t j = 0; j < n; ++j) REQUIRE(near(y(r, j), std::exp(double(x(r, j)) - mx) / s, 1e-5, 1e-6));
  }
}

// A standard-library callable brings namespace std into argument-dependent lookup: unqualified
// apply(...) calls inside fuse met std::apply and were ambiguous (a probe, 2026-12-03).
TEST_CASE("fuse::map with std callables: reused, eager, in softmax, squeezed", "[ops][map][std]") {
  auto x = random_tensor<float>(-3, 3, index_t(3), index_t(17));
  auto n = fuse::map(std::negate<>{}, x);
  fuse::tensor<float, 2> y(3, 17);
  y = n * n;
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 17; ++j) CHECK(y(i, j) == x(i, j) * x(i, j));
  fuse::assign(fuse::eager(fuse::cpu{}), y, n * 2.f);
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 17; ++j) CHECK(y(i, j) == -2.f * x(i, j));
  auto s = fuse::eval(fuse::softmax(fuse::map(std::negate<>{}, x), fuse::axis<-1>));
  auto s_ref = fuse::eval(fuse::softmax(-x, fuse::axis<-1>));
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 17; ++j) CHECK(s(i, j) == Approx(s_ref(i, j)));
  auto row = fuse::eval(fuse::squeeze<0>(fuse::map(std::plus<>{}, fuse::slice<0>(x, 0, 1), 1.f) * 2.f));
  for (index_t j = 0; j < 17; ++j) CHECK(row(j) == Approx(2 * (x(0, j) + 1.f)));
}
