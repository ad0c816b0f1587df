// Arithmetic operators, comparisons, logical operators, min / max / pow / clamp / where / cast
// (spec section 2): values against a double-precision reference, for float and double tensors, at
// odd sizes and on every host executor; broadcasting; NaN semantics; type promotion.
#include "ops/ops_support.hpp"

#include <algorithm>

namespace {

using namespace ops_test;
using fuse::index_t;

// Binary a op b over [lo, hi] (b at least `gap` from zero) at every odd size.
template <class T, class F, class Ref>
void check_binary(const std::string& name, F f, Ref ref, tols tt, double lo = -4, double hi = 4, double gap = 0) {
  for (index_t n : odd_sizes) {
    fuse::tensor<T, 1> a(n), b(n);
    fill_random(a, lo, hi);
    fill_random(b, lo, hi, gap);
    auto e = f(a, b);
    static_assert(std::is_same_v<typename decltype(e)::value_type, T>);
    check_all_executors(
        e, [&](index_t i) { return ref(double(a.data()[i]), double(b.data()[i])); }, tt.pick<T>(),
        type_name<T>() + " " + size_label(name, n));
  }
}

// A comparison (or logical operator) against the same operator on doubles, exactly; about a
// quarter of the elements are equal so that <= and == are exercised on ties.
template <class T, class F, class Ref>
void check_predicate(const std::string& name, F f, Ref ref) {
  for (index_t n : odd_sizes) {
    fuse::tensor<T, 1> a(n), b(n);
    fill_random(a, -4, 4);
    fill_random(b, -4, 4);
    for (index_t i = 0; i < n; i += 4) b(i) = a(i);
    auto e = f(a, b);
    static_assert(std::is_same_v<typename decltype(e)::value_type, bool>, "comparisons give bool");
    check_all_executors(
        e, [&](index_t i) { return ref(double(a.data()[i]), double(b.data()[i])) ? 1.0 : 0.0; }, tol{},
        type_name<T>() + " " + size_label(name, n));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("arithmetic operators match a double reference", "[ops][arith]", float, double) {
  using T = TestType;
  // One correctly rounded operation: within half an ulp of the exact (double) result for float,
  // exact for double.
  SECTION("+") { check_binary<T>("a + b", [](auto& a, auto& b) { return a + b; }, [](double a, double b) { return a + b; }, rounded); }
  SECTION("-") { check_binary<T>("a - b", [](auto& a, auto& b) { return a - b; }, [](double a, double b) { return a - b; }, rounded); }
  SECTION("*") { check_binary<T>("a * b", [](auto& a, auto& b) { return a * b; }, [](double a, double b) { return a * b; }, rounded); }
  SECTION("/") {
    check_binary<T>("a / b", [](auto& a, auto& b) { return a / b; }, [](double a, double b) { return a / b; }, rounded,
                    -4, 4, 0.25);
  }
  SECTION("unary -") {
    check_binary<T>("-a", [](auto& a, auto&) { return -a; }, [](double a, double) { return -a; }, exact);
    check_binary<T>("-(-a)", [](auto& a, auto&) { return -(-a); }, [](double a, double) { return a; }, exact);
  }
  SECTION("operand order matters for - and /") {
    check_binary<T>("b - a", [](auto& a, auto& b) { return b - a; }, [](double a, double b) { return b - a; }, rounded);
    check_binary<T>("b / a", [](auto& a, auto& b) { return b / a; }, [](double a, double b) { return b / a; }, rounded,
                    0.25, 4);
  }
  SECTION("with scalars on either side") {
    check_binary<T>("2.5 * a - b / 4", [](auto& a, auto& b) { return 2.5 * a - b / 4; },
                    [](double a, double b) { return 2.5 * a - b / 4; },
                    tols{{3 * 0x1p-24, 2 * 0x1p-24 * 16}, {3 * 0x1p-53, 2 * 0x1p-53 * 16}});
    check_binary<T>("1 - a", [](auto& a, auto&) { return 1 - a; }, [](double a, double) { return 1 - a; }, rounded);
    check_binary<T>("3 / a", [](auto& a, auto&) { return 3.0 / a; }, [](double a, double) { return 3 / a; }, rounded,
                    0.25, 4);
  }
}

TEMPLATE_TEST_CASE("arithmetic broadcasts like NumPy", "[ops][arith][broadcast]", float, double) {
  using T = TestType;
  // (m, n) + (n) + (m, 1) - (1, 1) * (1, n): rows, columns and a single value stretch.
  for (auto [m, n] : {std::pair<index_t, index_t>{1, 1}, {7, 33}, {33, 7}, {257, 1031}}) {
    fuse::tensor<T, 2> x(m, n), col(m, 1), one(1, 1), rowm(1, n);
    fuse::tensor<T, 1> row(n);
    fill_random(x, -4, 4);
    fill_random(col, -4, 4);
    fill_random(one, 0.5, 2);
    fill_random(rowm, -4, 4);
    fill_random(row, -4, 4);
    auto e = x + row + col - one * rowm;
    REQUIRE(e.shape() == fuse::shape_t<2>{m, n});
    // The same operations in T, in the same order: exact (no product feeds a sum directly except
    // one * rowm, which is subtracted last; allow for its contraction into an fma).
    auto ref = [&, cols = n](index_t k) {  // clang 14 cannot capture structured bindings
      const index_t i = k / cols, j = k % cols;
      return double(T(T(T(x(i, j) + row(j)) + col(i, 0)) - T(one(0, 0) * rowm(0, j))));
    };
    const T eps = std::numeric_limits<T>::epsilon();
    check_all_executors(e, ref, tol{0, 4 * double(eps) * 16}, type_name<T>() + " broadcast (" + std::to_string(m) + ", " + std::to_string(n) + ")");
  }
  // Rank 3 against rank 1 and rank 2: (4, 5, 6) * (6) + (5, 1).
  fuse::tensor<T, 3> x3(4, 5, 6);
  fuse::tensor<T, 1> r6(6);
  fuse::tensor<T, 2> c5(5, 1);
  fill_random(x3, -4, 4);
  fill_random(r6, -4, 4);
  fill_random(c5, -4, 4);
  auto e3 = x3 * r6 + c5;
  REQUIRE(e3.shape() == fuse::shape_t<3>{4, 5, 6});
  check_all_executors(
      e3, [&](index_t k) { return double(x3.data()[k]) * double(r6(k % 6)) + double(c5((k / 6) % 5, 0)); },
      tol{4 * double(std::numeric_limits<T>::epsilon()), 4 * double(std::numeric_limits<T>::epsilon()) * 16},
      type_name<T>() + " rank-3 broadcast");
}

TEMPLATE_TEST_CASE("comparisons give bool and match the double comparison", "[ops][compare]", float, double) {
  using T = TestType;
  check_predicate<T>("a < b", [](auto& a, auto& b) { return a < b; }, [](double a, double b) { return a < b; });
  check_predicate<T>("a <= b", [](auto& a, auto& b) { return a <= b; }, [](double a, double b) { return a <= b; });
  check_predicate<T>("a > b", [](auto& a, auto& b) { return a > b; }, [](double a, double b) { return a > b; });
  check_predicate<T>("a >= b", [](auto& a, auto& b) { return a >= b; }, [](double a, double b) { return a >= b; });
  check_predicate<T>("a == b", [](auto& a, auto& b) { return a == b; }, [](double a, double b) { return a == b; });
  check_predicate<T>("a != b", [](auto& a, auto& b) { return a != b; }, [](double a, double b) { return a != b; });
  check_predicate<T>("a < 0.5", [](auto& a, auto&) { return a < 0.5; }, [](double a, double) { return a < 0.5; });
  check_predicate<T>("0.5 < a", [](auto& a, auto&) { return 0.5 < a; }, [](double a, double) { return 0.5 < a; });
  check_predicate<T>("a + b > 1", [](auto& a, auto& b) { return a + b > 1; },
                     [](double a, double b) { return T(T(a) + T(b)) > 1; });
}

TEMPLATE_TEST_CASE("logical operators && || ! give bool", "[ops][compare][logical]", float, double) {
  using T = TestType;
  check_predicate<T>("(a > 0) && (b < 1)", [](auto& a, auto& b) { return (a > 0) && (b < 1); },
                     [](double a, double b) { return (a > 0) && (b < 1); });
  check_predicate<T>("(a > 0) || (b < -1)", [](auto& a, auto& b) { return (a > 0) || (b < -1); },
                     [](double a, double b) { return (a > 0) || (b < -1); });
  check_predicate<T>("!(a > b)", [](auto& a, auto& b) { return !(a > b); }, [](double a, double b) { return !(a > b); });
  check_predicate<T>("!(a < 0) && !(b < 0) || a == b", [](auto& a, auto& b) { return (!(a < 0) && !(b < 0)) || a == b; },
                     [](double a, double b) { return (!(a < 0) && !(b < 0)) || a == b; });
  // Numbers as truth values (non-zero is true), as NumPy's logical_and / logical_not.
  fuse::tensor<T, 1> x(9), y(9);
  for (index_t i = 0; i < 9; ++i) x(i) = T(i % 3) - T(1), y(i) = T(i / 3) - T(1);  // -1, 0, 1 combinations
  const auto nx = fuse::eval(!x);
  const auto xy = fuse::eval(x && y);
  const auto xoy = fuse::eval(x || y);
  for (index_t i = 0; i < 9; ++i) {
    CHECK(nx(i) == (x(i) == 0));
    CHECK(xy(i) == (x(i) != 0 && y(i) != 0));
    CHECK(xoy(i) == (x(i) != 0 || y(i) != 0));
  }
  // bool tensors in, bool out.
  fuse::tensor<bool, 1> p(4), q(4);
  for (index_t i = 0; i < 4; ++i) p(i) = (i & 1) != 0, q(i) = (i & 2) != 0;
  static_assert(std::is_same_v<decltype(p && q)::value_type, bool>);
  const auto pq = fuse::eval(fuse::eager(fuse::cpu{}), (p && q) || !p);
  for (index_t i = 0; i < 4; ++i) CHECK(pq(i) == ((p(i) && q(i)) || !p(i)));
}

TEMPLATE_TEST_CASE("min, max, pow, clamp, where match a double reference", "[ops][select]", float, double) {
  using T = TestType;
  SECTION("max and min") {
    check_binary<T>("max(a, b)", [](auto& a, auto& b) { return fuse::max(a, b); },
                    [](double a, double b) { return std::max(a, b); }, exact);
    check_binary<T>("min(a, b)", [](auto& a, auto& b) { return fuse::min(a, b); },
                    [](double a, double b) { return std::min(a, b); }, exact);
    check_binary<T>("max(a, 0.5)", [](auto& a, auto&) { return fuse::max(a, 0.5); },
                    [](double a, double) { return std::max(a, 0.5); }, exact);
    check_binary<T>("min(-0.5, a)", [](auto& a, auto&) { return fuse::min(-0.5, a); },
                    [](double a, double) { return std::min(-0.5, a); }, exact);
  }
  SECTION("pow") {
    check_binary<T>("pow(a, b)", [](auto& a, auto& b) { return fuse::pow(a, b); },
                    [](double a, double b) { return std::pow(a, b); }, tols{{4 * 0x1p-24, 0}, {1e-15, 0}}, 0.25, 3);
    check_binary<T>("pow(a, 3)", [](auto& a, auto&) { return fuse::pow(a, 3); },
                    [](double a, double) { return a * a * a; }, tols{{4 * 0x1p-24, 0}, {1e-15, 0}});
    check_binary<T>("pow(2, a)", [](auto& a, auto&) { return fuse::pow(2.0, a); },
                    [](double a, double) { return std::exp2(a); }, tols{{4 * 0x1p-24, 0}, {1e-15, 0}});
  }
  SECTION("clamp") {
    check_binary<T>("clamp(a, -1, 2)", [](auto& a, auto&) { return fuse::clamp(a, -1.0, 2); },
                    [](double a, double) { return std::clamp(a, -1.0, 2.0); }, exact);
    // Tensor bounds: lo = min(b, 0.5), hi = lo + 1.
    check_binary<T>("clamp(a, lo, lo + 1)",
                    [](auto& a, auto& b) { return fuse::clamp(a, fuse::min(b, 0.5), fuse::min(b, 0.5) + 1); },
                    [](double a, double b) {
                      const double lo = std::min(b, 0.5);
                      return std::clamp(a, lo, double(T(T(lo) + T(1))));
                    },
                    exact);
  }
  SECTION("where") {
    check_binary<T>("where(a > b, a, b)", [](auto& a, auto& b) { return fuse::where(a > b, a, b); },
                    [](double a, double b) { return a > b ? a : b; }, exact);
    check_binary<T>("where(a > 0, a, 0.125 * a) (leaky relu)",
                    [](auto& a, auto&) { return fuse::where(a > 0, a, 0.125 * a); },
                    [](double a, double) { return a > 0 ? a : 0.125 * a; }, exact);
    check_binary<T>("where(a < 0, -1, 1)", [](auto& a, auto&) { return fuse::where(a < 0, T(-1), a * 0 + 1); },
                    [](double a, double) { return a < 0 ? -1.0 : 1.0; }, exact);
  }
}

TEST_CASE("where broadcasts its condition and both branches", "[ops][select][broadcast]") {
  // A causal mask: where(iota<1>(s) <= iota<0>(s), x, -inf) over (m, n).
  const index_t m = 7, n = 33;
  auto x = random_tensor<float>(-4, 4, m, n);
  fuse::tensor<float, 1> alt(n);
  fill_random(alt, -4, 4);
  const fuse::shape_t<2> s{m, n};
  auto e = fuse::where(fuse::iota<1>(s) <= fuse::iota<0>(s), x, alt);
  static_assert(std::is_same_v<decltype(e)::value_type, float>);
  check_all_executors(e, [&](index_t k) { return (k % n <= k / n) ? double(x.data()[k]) : double(alt(k % n)); }, tol{},
                      "where(causal mask, x, row)");
  // A column condition (m, 1) against rows (n).
  fuse::tensor<bool, 2> c(m, 1);
  for (index_t i = 0; i < m; ++i) c(i, 0) = i % 2;
  auto e2 = fuse::where(c, x, 0.f);
  check_all_executors(e2, [&](index_t k) { return (k / n) % 2 ? double(x.data()[k]) : 0.0; }, tol{}, "where((m, 1), x, 0)");
}

TEST_CASE("cast<U> converts as static_cast", "[ops][cast]") {
  for (index_t n : odd_sizes) {
    auto x = random_tensor<float>(-100, 100, n);
    auto ci = fuse::cast<std::int32_t>(x);
    static_assert(std::is_same_v<decltype(ci)::value_type, std::int32_t>);
    check_all_executors(ci, [&](index_t i) { return double(static_cast<std::int32_t>(x.data()[i])); }, tol{},
                        size_label("cast<int32>(float)", n));
    auto cd = fuse::cast<double>(x);
    static_assert(std::is_same_v<decltype(cd)::value_type, double>);
    check_all_executors(cd, [&](index_t i) { return double(x.data()[i]); }, tol{}, size_label("cast<double>(float)", n));
    // Round-trip through double with an operation in double: (double)x / 3 is not (float)(x / 3).
    auto cdd = fuse::cast<float>(fuse::cast<double>(x) / 3);
    static_assert(std::is_same_v<decltype(cdd)::value_type, float>);
    check_all_executors(cdd, [&](index_t i) { return double(float(double(x.data()[i]) / 3)); }, tol{},
                        size_label("cast<float>(cast<double>(x) / 3)", n));
    auto cb = fuse::cast<bool>(fuse::cast<std::int32_t>(x));
    static_assert(std::is_same_v<decltype(cb)::value_type, bool>);
    check_all_executors(cb, [&](index_t i) { return static_cast<std::int32_t>(x.data()[i]) != 0 ? 1.0 : 0.0; }, tol{},
                        size_label("cast<bool>(cast<int32>(x))", n));
  }
  // Integer to float: 2^24 + 1 is not a float; cast rounds it like static_cast.
  fuse::tensor<std::int32_t, 1> big(2);
  big(0) = (1 << 24) + 1;
  big(1) = -7;
  const auto f = fuse::eval(fuse::cast<float>(big));
  CHECK(f(0) == static_cast<float>((1 << 24) + 1));
  CHECK(f(1) == -7.f);
}

TEMPLATE_TEST_CASE("NaN propagates through arithmetic, min, max, clamp; where selects; comparisons are false",
                   "[ops][nan]", float, double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (index_t n : {index_t(7), index_t(100003)}) {
    fuse::tensor<T, 1> a(n), b(n);
    fill_random(a, -4, 4, 0.25);
    fill_random(b, -4, 4, 0.25);
    // NaN in a at some places, in b at others, in both at one.
    std::vector<index_t> in_a{0, n - 1, n / 3}, in_b{1, n / 2}, in_both{n / 5 + 2};
    if (n > 100) in_a.insert(in_a.end(), {index_t(16), index_t(33), n - 17}), in_b.insert(in_b.end(), {index_t(15), index_t(64)});
    for (index_t i : in_a) a(i) = nan;
    for (index_t i : in_b) b(i) = nan;
    for (index_t i : in_both) a(i) = b(i) = nan;
    auto any_nan = [&](index_t i) { return a(i) != a(i) || b(i) != b(i); };
    auto a_nan = [&](index_t i) { return a(i) != a(i); };

    const auto propagates = [&](const auto& e, auto expect_nan, const std::string& name) {
      for (const auto& y : {fuse::eval(e), fuse::eval(fuse::cpu{.threads = 1}, e), fuse::eval(fuse::eager(fuse::cpu{}), e)}) {
        index_t wrong = 0, first = -1;
        for (index_t i = 0; i < n; ++i)
          if ((y(i) != y(i)) != expect_nan(i)) wrong += 1, first = first < 0 ? i : first;
        INFO(type_name<T>() << " " << name << " n=" << n << ", first wrong element " << first);
        CHECK(wrong == 0);
      }
    };
    propagates(a + b, any_nan, "a + b");
    propagates(a - b, any_nan, "a - b");
    propagates(a * b, any_nan, "a * b");
    propagates(a / b, any_nan, "a / b");
    propagates(-a, a_nan, "-a");
    propagates(a * 0, a_nan, "a * 0");
    propagates(fuse::max(a, b), any_nan, "max(a, b)");
    propagates(fuse::max(b, a), any_nan, "max(b, a)");
    propagates(fuse::min(a, b), any_nan, "min(a, b)");
    propagates(fuse::min(b, a), any_nan, "min(b, a)");
    propagates(fuse::max(a, -1e30), a_nan, "max(a, -1e30)");
    propagates(fuse::min(1e30, a), a_nan, "min(1e30, a)");
    propagates(fuse::clamp(a, -1, 1), a_nan, "clamp(a, -1, 1)");
    propagates(fuse::clamp(b, -1, 1) + 0 * a, any_nan, "clamp(b, -1, 1) + 0 * a");
    propagates(fuse::relu(a), a_nan, "relu(a)");
    propagates(fuse::pow(a, T(2)), a_nan, "pow(a, 2)");
    // where selects: NaN only where the chosen branch has it.
    // where(b == b, 1, a) picks a only where b is NaN: NaN only where both are.
    propagates(fuse::where(b == b, T(1), a), [&](index_t i) { return a(i) != a(i) && b(i) != b(i); },
               "where(b == b, 1, a)");
    propagates(fuse::where(a == a, a, T(7)), [](index_t) { return false; }, "where(a == a, a, 7)");
    propagates(fuse::where(a != a, T(0), a), [](index_t) { return false; }, "where(a != a, 0, a)");
    propagates(fuse::where(a > b, a, b), [&](index_t i) { return b(i) != b(i); },
               "where(a > b, a, b) (a comparison with NaN is false: picks b)");

    // Comparisons with NaN: < <= > >= == are false; != is true (IEEE 754, NumPy).
    const auto compares = [&](const auto& e, bool when_nan, const std::string& name) {
      const auto y = fuse::eval(e);
      index_t wrong = 0;
      for (index_t i = 0; i < n; ++i)
        if (any_nan(i) && y(i) != when_nan) ++wrong;
      INFO(type_name<T>() << " " << name << " n=" << n);
      CHECK(wrong == 0);
    };
    compares(a < b, false, "a < b");
    compares(a <= b, false, "a <= b");
    compares(a > b, false, "a > b");
    compares(a >= b, false, "a >= b");
    compares(a == b, false, "a == b");
    compares(a != b, true, "a != b");
    compares(a <= b || a > b, false, "a <= b || a > b");
  }
}

TEST_CASE("integer tensors keep their type; weak scalars adopt the tensor's type", "[ops][types]") {
  fuse::tensor<std::int32_t, 1> i(33), j(33);
  for (index_t k = 0; k < 33; ++k) i(k) = std::int32_t(k * 7919 % 201 - 100) | 1, j(k) = std::int32_t(k % 5 - 2) | 1;
  fuse::tensor<float, 1> f(33);
  fuse::tensor<double, 1> d(33);
  fill_random(f, -4, 4);
  fill_random(d, -4, 4);
  fuse::tensor<std::int16_t, 1> h(33);
  for (index_t k = 0; k < 33; ++k) h(k) = std::int16_t(k - 16) | 1;

  SECTION("int32 with int32 stays int32, exactly") {
    static_assert(std::is_same_v<decltype(i + j)::value_type, std::int32_t>);
    static_assert(std::is_same_v<decltype(i * j - i)::value_type, std::int32_t>);
    static_assert(std::is_same_v<decltype(fuse::max(i, j))::value_type, std::int32_t>);
    static_assert(std::is_same_v<decltype(fuse::pow(i, j * 0 + 3))::value_type, std::int32_t>);
    static_assert(std::is_same_v<decltype(-i)::value_type, std::int32_t>);
    check_all_executors(i + j, [&](index_t k) { return double(i(k) + j(k)); }, tol{}, "i + j");
    check_all_executors(i * j - i, [&](index_t k) { return double(i(k) * j(k) - i(k)); }, tol{}, "i * j - i");
    check_all_executors(-i, [&](index_t k) { return double(-i(k)); }, tol{}, "-i");
    check_all_executors(fuse::max(i, j), [&](index_t k) { return double(std::max(i(k), j(k))); }, tol{}, "max(i, j)");
    // Integer power by squaring: exact where a double pow would round (3^19 > 2^30).
    fuse::tensor<std::int64_t, 1> base(3), ex(3);
    base(0) = 3, ex(0) = 39;  // 3^39 = 4052555153018976267 > 2^53
    base(1) = -2, ex(1) = 61;
    base(2) = 7, ex(2) = 1;
    const auto p = fuse::eval(fuse::pow(base, ex));
    static_assert(std::is_same_v<decltype(fuse::pow(base, ex))::value_type, std::int64_t>);
    CHECK(p(0) == 4052555153018976267LL);
    CHECK(p(1) == -(std::int64_t(1) << 61));
    CHECK(p(2) == 7);
  }
  SECTION("weak scalars: float tensor * 2.0 stays float, int + 2 stays int, int * 2.0 gives double") {
    static_assert(std::is_same_v<decltype(f * 2.0)::value_type, float>);
    static_assert(std::is_same_v<decltype(2.0 * f)::value_type, float>);
    static_assert(std::is_same_v<decltype(f + 1)::value_type, float>);
    static_assert(std::is_same_v<decltype(d * 2.f)::value_type, double>);
    static_assert(std::is_same_v<decltype(i + 2)::value_type, std::int32_t>);
    static_assert(std::is_same_v<decltype(i + 2LL)::value_type, std::int32_t>);
    static_assert(std::is_same_v<decltype(h + 2)::value_type, std::int16_t>);
    static_assert(std::is_same_v<decltype(i * 2.0)::value_type, double>);
    static_assert(std::is_same_v<decltype(i * 0.5f)::value_type, double>);
    static_assert(std::is_same_v<decltype(fuse::max(f, 0.0))::value_type, float>);
    static_assert(std::is_same_v<decltype(fuse::clamp(f, 0.0, 1.0))::value_type, float>);
    static_assert(std::is_same_v<decltype(fuse::where(f > 0, f, 0.0))::value_type, float>);
    static_assert(std::is_same_v<decltype(fuse::pow(f, 2.0))::value_type, float>);
    check_all_executors(f * 2.0, [&](index_t k) { return double(f(k) * 2.0f); }, tol{}, "f * 2.0");
    // The scalar is converted to float and the division done in float, as NumPy 2.
    check_all_executors(f / 3.0, [&](index_t k) { return double(f(k) / 3.0f); }, tol{}, "f / 3.0");
    check_all_executors(i + 2, [&](index_t k) { return double(i(k) + 2); }, tol{}, "i + 2");
    // int * 0.5: double, not truncated to int.
    check_all_executors(i * 0.5, [&](index_t k) { return i(k) * 0.5; }, tol{}, "i * 0.5");
    check_all_executors(h + 2, [&](index_t k) { return double(std::int16_t(h(k) + 2)); }, tol{}, "h + 2");
  }
  SECTION("two tensors combine by std::common_type") {
    static_assert(std::is_same_v<decltype(f + d)::value_type, double>);
    static_assert(std::is_same_v<decltype(i + std::declval<fuse::tensor<std::int64_t, 1>&>())::value_type, std::int64_t>);
    static_assert(std::is_same_v<decltype(i + h)::value_type, std::int32_t>);
    check_all_executors(f + d, [&](index_t k) { return double(f(k)) + d(k); }, tol{}, "f + d");
  }
  SECTION("an int tensor compared with a float scalar compares in floating point") {
    static_assert(std::is_same_v<decltype(i < 2.5)::value_type, bool>);
    fuse::tensor<std::int32_t, 1> small(5);
    for (index_t k = 0; k < 5; ++k) small(k) = std::int32_t(k) + 1;  // 1..5
    const auto lt = fuse::eval(small < 2.5);   // 2 < 2.5: true (false if 2.5 became 2)
    const auto gt = fuse::eval(small > 2.5);   // 3 > 2.5: true
    const auto eq = fuse::eval(small == 2.5);  // never
    for (index_t k = 0; k < 5; ++k) {
      CHECK(lt(k) == (small(k) < 2.5));
      CHECK(gt(k) == (small(k) > 2.5));
      CHECK(eq(k) == false);
    }
  }
}

TEST_CASE("min, max and clamp of integers with scalars outside their type order by value", "[ops][select][types]") {
  // The scalar adopts the tensor's type (spec section 2), but converted by static_cast -1 would be
  // 255 in uint8 and 300 would be 44 in int8: clamp(u8, -1, 10) gave 10 everywhere. It saturates,
  // so that the result is NumPy 2's np.clip; min and max order by value likewise.
  fuse::tensor<std::uint8_t, 1> u(6);
  const int uv[] = {255, 255, 0, 1, 200, 7};
  for (index_t k = 0; k < 6; ++k) u(k) = std::uint8_t(uv[k]);
  fuse::tensor<std::int8_t, 1> s(6);
  const int sv[] = {100, 100, -128, 127, 5, -7};
  for (index_t k = 0; k < 6; ++k) s(k) = std::int8_t(sv[k]);
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    const auto cu = fuse::eval(exec, fuse::clamp(u, -1, 10));
    const auto cs = fuse::eval(exec, fuse::clamp(s, -5, 300));
    const auto mx = fuse::eval(exec, fuse::max(u, -1));
    const auto mn = fuse::eval(exec, fuse::min(s, 300));
    const auto top = fuse::eval(exec, fuse::max(s, 1000));      // saturates: the type's largest
    const auto bottom = fuse::eval(exec, fuse::min(u, -1000));  // and its smallest
    static_assert(std::is_same_v<decltype(cu)::value_type, std::uint8_t>);
    static_assert(std::is_same_v<decltype(mn)::value_type, std::int8_t>);
    for (index_t k = 0; k < 6; ++k) {
      CHECK(int(cu(k)) == std::clamp(uv[k], 0, 10));
      CHECK(int(cs(k)) == std::clamp(sv[k], -5, 127));
      CHECK(int(mx(k)) == uv[k]);
      CHECK(int(mn(k)) == sv[k]);
      CHECK(int(top(k)) == 127);
      CHECK(int(bottom(k)) == 0);
    }
  }
  // Within the type, and with floating scalars, nothing changes.
  const auto in_range = fuse::eval(fuse::clamp(s, -6, 6));
  const auto floating = fuse::eval(fuse::max(u, 2.5));
  static_assert(std::is_same_v<decltype(floating)::value_type, double>);
  for (index_t k = 0; k < 6; ++k) {
    CHECK(int(in_range(k)) == std::clamp(sv[k], -6, 6));
    CHECK(floating(k) == std::max(double(uv[k]), 2.5));
  }
}

TEST_CASE("integers compare by value, also with scalars outside their type (NumPy 2)", "[ops][compare][types]") {
  // Converted to uint8, -1 would be 255 and 256 would be 0; NumPy 2 compares Python ints by value.
  fuse::tensor<std::uint8_t, 1> u(4);
  u(0) = 0, u(1) = 5, u(2) = 255, u(3) = 128;
  fuse::tensor<std::int8_t, 1> s(4);
  s(0) = -128, s(1) = 0, s(2) = 127, s(3) = -1;
  fuse::tensor<std::int64_t, 1> big(4);
  big(0) = -1, big(1) = 5, big(2) = std::int64_t(1) << 40, big(3) = 128;
  fuse::tensor<std::uint64_t, 1> ubig(4);
  ubig(0) = ~std::uint64_t(0), ubig(1) = 5, ubig(2) = std::uint64_t(1) << 40, ubig(3) = 127;
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    const auto gt = fuse::eval(exec, u > -1);
    const auto eq = fuse::eval(exec, u == 256);
    const auto lt = fuse::eval(exec, s < 200);
    const auto ne = fuse::eval(exec, s != 383);       // 383 as int8 would be 127
    const auto mixed = fuse::eval(exec, big < ubig);  // int64 against uint64: -1 < 2^64 - 1
    const auto same = fuse::eval(exec, ubig == big);
    const auto uint_vs_int = fuse::eval(exec, u <= s);  // 128 <= -1 is false; 255 <= 127 false
    for (index_t k = 0; k < 4; ++k) {
      CHECK(gt(k));
      CHECK_FALSE(eq(k));
      CHECK(lt(k));
      CHECK(ne(k));
      CHECK(uint_vs_int(k) == (int(u(k)) <= int(s(k))));
    }
    CHECK(mixed(0));
    CHECK_FALSE(mixed(1));
    CHECK_FALSE(mixed(2));
    CHECK_FALSE(mixed(3));
    CHECK_FALSE(same(0));
    CHECK(same(1));
    CHECK(same(2));
    CHECK_FALSE(same(3));
    // Mixed with floating values, the promoted type as before: u > 2.5 compares in double.
    const auto f = fuse::eval(exec, u > 2.5);
    CHECK_FALSE(f(0));
    CHECK(f(1));
    // Character types are integers too: 'a' < 200 and 'a' != 353 ('a' + 256) by value, as
    // np.int8 / np.uint8 would (they converted 200 and 353 to char and wrapped).
    fuse::tensor<char, 1> c(3);
    c(0) = 'a', c(1) = 'z', c(2) = '0';
    const auto c_lt = fuse::eval(exec, c < 200);
    const auto c_eq = fuse::eval(exec, c == 353);
    const auto c_ge = fuse::eval(exec, c >= -200);
    for (index_t k = 0; k < 3; ++k) {
      CHECK(c_lt(k));
      CHECK_FALSE(c_eq(k));
      CHECK(c_ge(k));
    }
  }
}

namespace user_code {
using namespace std;
using namespace fuse;
// A layer over const references with both namespaces open: std::max(const T&, const T&) used to
// be the better match for two const lvalues of one type (an error inside <algorithm>).
auto clipped(const tensor<float, 1>& a, const tensor<float, 1>& b) { return clamp(max(a, b), min(a, b), a); }
}  // namespace user_code

TEST_CASE("max, min and clamp of const tensors under using namespace std", "[ops][select]") {
  const auto a = random_tensor<float>(-4, 4, 37);
  const auto b = random_tensor<float>(-4, 4, 37);
  const auto y = fuse::eval(user_code::clipped(a, b));
  for (index_t i = 0; i < 37; ++i) {
    const float x = std::max(a(i), b(i)), lo = std::min(a(i), b(i)), hi = a(i);
    CHECK(y(i) == (x < lo ? lo : (x > hi ? hi : x)));
  }
  CHECK(std::max(2.f, 3.f) == 3.f);  // std's own on scalars is untouched
}

// NumPy's integer arithmetic wraps modulo 2^N. In C++ a signed overflow is undefined, and an
// optimiser folded the fused `(x + 1) > x` to true (a probe, 2026-12-02); UBSan (the sanitize
// build) also reports any signed overflow left.
TEST_CASE("integer + - * and reductions wrap modulo 2^N, as NumPy", "[ops][arith][types]") {
  constexpr std::int32_t imax = std::numeric_limits<std::int32_t>::max();
  constexpr std::int32_t imin = std::numeric_limits<std::int32_t>::min();
  const auto wrap32 = [](std::int64_t v) { return std::int32_t(std::uint32_t(std::uint64_t(v))); };
  fuse::tensor<std::int32_t, 1> x(37), y(37);
  for (index_t k = 0; k < 37; ++k) {
    x(k) = k % 3 == 0 ? imax - std::int32_t(k) : (k % 3 == 1 ? imin + std::int32_t(k - 1) : std::int32_t(k * 977) - 15000);
    y(k) = std::int32_t((k * 7919) % 4001) * 524287 + 3;  // products far beyond int32
  }
  fuse::tensor<std::uint16_t, 1> u(37);  // uint16 * uint16 is computed in int: 65535^2 > INT_MAX
  for (index_t k = 0; k < 37; ++k) u(k) = std::uint16_t(65535 - k * 3);
  fuse::tensor<std::int64_t, 1> big(37);
  for (index_t k = 0; k < 37; ++k) big(k) = std::numeric_limits<std::int64_t>::max() - k;

  const auto all_execs = [](auto&& e, auto&& ref, const char* what) {
    using V = typename std::remove_cvref_t<decltype(e)>::value_type;
    for (int pass = 0; pass < 3; ++pass) {
      fuse::tensor<V, 1> out(e.shape()[0]);
      if (pass == 0) fuse::assign(fuse::cpu{.threads = 1}, out, e);
      if (pass == 1) fuse::assign(fuse::cpu{}, out, e);
      if (pass == 2) fuse::assign(fuse::eager(fuse::cpu{}), out, e);
      for (index_t k = 0; k < out.size(); ++k) {
        INFO(what << " pass " << pass << " at " << k);
        CHECK(out(k) == ref(k));
      }
    }
  };
  all_execs((x + 1) > x, [&](index_t k) { return x(k) != imax; }, "(x + 1) > x");
  all_execs(x + y, [&](index_t k) { return wrap32(std::int64_t(x(k)) + y(k)); }, "x + y");
  all_execs(x - y, [&](index_t k) { return wrap32(std::int64_t(x(k)) - y(k)); }, "x - y");
  all_execs(x * y, [&](index_t k) { return wrap32(std::int64_t(x(k)) * y(k)); }, "x * y");
  all_execs(-x, [&](index_t k) { return wrap32(-std::int64_t(x(k))); }, "-x");
  all_execs(fuse::abs(x), [&](index_t k) { return wrap32(std::abs(std::int64_t(x(k)))); }, "abs(x)");
  all_execs(fuse::square(y), [&](index_t k) { return wrap32(std::int64_t(y(k)) * y(k)); }, "square(y)");
  all_execs(fuse::pow(y, 3), [&](index_t k) { return std::int32_t(std::uint32_t(y(k)) * std::uint32_t(y(k)) * std::uint32_t(y(k))); },
            "pow(y, 3)");
  all_execs(u * u, [&](index_t k) { return std::uint16_t(std::uint32_t(u(k)) * u(k)); }, "u * u");
  all_execs(big + big, [&](index_t k) { return std::int64_t(std::uint64_t(big(k)) * 2); }, "big + big");
  // Reductions accumulate integers in int64, wrapping too.
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    std::uint64_t s = 0, p = 1;
    for (index_t k = 0; k < 37; ++k) s += std::uint64_t(big(k)), p *= std::uint64_t(big(k));
    CHECK(fuse::eval(exec, fuse::sum(big)) == std::int64_t(s));
    CHECK(fuse::eval(exec, fuse::prod(big)) == std::int64_t(p));
    CHECK(fuse::eval(fuse::eager(exec), fuse::sum(big)) == std::int64_t(s));
  }
}

TEST_CASE("integer pow with a negative exponent truncates toward zero", "[ops][select][types]") {
  // NumPy raises; fuse cannot throw inside a kernel and gives a^b rounded toward zero.
  fuse::tensor<std::int32_t, 1> a(9);
  const std::int32_t base[] = {1, -1, 2, -2, 0, 7, -1, 1, 3};
  for (index_t i = 0; i < 9; ++i) a(i) = base[i];
  for (std::int32_t e : {-1, -2, -3, std::numeric_limits<std::int32_t>::min()}) {
    CAPTURE(e);
    const auto p = fuse::eval(fuse::pow(a, e));
    for (index_t i = 0; i < 9; ++i) {
      const std::int32_t want = base[i] == 1 ? 1 : base[i] == -1 ? ((e & 1) ? -1 : 1) : 0;
      REQUIRE(p(i) == want);
    }
  }
  CHECK(fuse::eval(fuse::pow(a, 3))(3) == -8);  // positive exponents as before
  // Unsigned bases: the exponent keeps its own type (converted to uint8, -1 was 255 and
  // pow(3, -1) gave 3^255 mod 256 = 171; a probe, 2026-12-03). A tensor exponent as well.
  fuse::tensor<std::uint8_t, 1> u(4);
  fuse::tensor<std::int32_t, 1> minus_one(4);
  const std::uint8_t ubase[] = {1, 2, 3, 255};
  for (index_t i = 0; i < 4; ++i) u(i) = ubase[i], minus_one(i) = -1;
  const auto pu = fuse::eval(fuse::pow(u, -1));
  const auto pt = fuse::eval(fuse::pow(u, minus_one));
  const auto p2 = fuse::eval(fuse::pow(u, 2));
  for (index_t i = 0; i < 4; ++i) {
    CHECK(int(pu(i)) == (ubase[i] == 1 ? 1 : 0));
    CHECK(pt(i) == (ubase[i] == 1 ? 1 : 0));
    CHECK(int(p2(i)) == (ubase[i] * ubase[i]) % 256);
  }
  fuse::tensor<std::uint32_t, 1> w(2);
  w(0) = 3, w(1) = 1;
  const auto pw = fuse::eval(fuse::pow(w, -2));
  CHECK(pw(0) == 0u);
  CHECK(pw(1) == 1u);
}
