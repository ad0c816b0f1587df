// tests/ops/ops_support.hpp - small helpers for the elementwise and plan tests: random data without
// zeros, a tolerance check against a double-precision reference, and evaluation of one expression
// by every host executor (into outputs pre-filled with a sentinel, so unwritten elements show).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <fuse/fuse.hpp>

namespace ops_test {

using fuse::index_t;

// Odd sizes: a single element, SIMD tails (7, 33), and a size above the multi-thread threshold
// (2 * 32768 elements) that no vector width or 16-element chunk divides.
inline constexpr index_t odd_sizes[] = {1, 7, 33, 100003};

inline std::mt19937_64& rng() {
  static std::mt19937_64 g(20261129);
  return g;
}

// Uniform in [lo, hi], never exactly zero (and never within `gap` of zero when the range spans it).
template <class T>
T random_value(double lo, double hi, double gap = 0.0) {
  std::uniform_real_distribution<double> d(lo, hi);
  for (;;) {
    const T v = static_cast<T>(d(rng()));
    if (v != T(0) && std::fabs(static_cast<double>(v)) >= gap) return v;
  }
}

template <class T, std::size_t R>
void fill_random(fuse::tensor<T, R>& t, double lo, double hi, double gap = 0.0) {
  for (index_t i = 0; i < t.size(); ++i) {
    if constexpr (std::is_integral_v<T>) {
      std::uniform_int_distribution<long long> d(static_cast<long long>(lo), static_cast<long long>(hi));
      T v;
      do v = static_cast<T>(d(rng()));
      while (v == T(0));
      t.data()[i] = v;
    } else {
      t.data()[i] = random_value<T>(lo, hi, gap);
    }
  }
}

template <class T, class... I>
fuse::tensor<T, sizeof...(I)> random_tensor(double lo, double hi, I... extents) {
  fuse::tensor<T, sizeof...(I)> t(static_cast<index_t>(extents)...);
  fill_random(t, lo, hi);
  return t;
}

// Log-uniform in [lo, hi] (lo > 0): covers several decades evenly.
template <class T, std::size_t R>
void fill_log_uniform(fuse::tensor<T, R>& t, double lo, double hi) {
  std::uniform_real_distribution<double> d(std::log(lo), std::log(hi));
  for (index_t i = 0; i < t.size(); ++i) t.data()[i] = static_cast<T>(std::exp(d(rng())));
}

// A value no executor produces by accident, written into outputs before evaluation.
template <class T>
T sentinel() {
  if constexpr (std::is_same_v<T, bool>) return true;
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(0x5A5A5A5A & std::numeric_limits<T>::max());
  else return static_cast<T>(-12345.6875);
}

template <class T, std::size_t R>
void fill_value(fuse::tensor<T, R>& t, T v) {
  for (index_t i = 0; i < t.size(); ++i) t.data()[i] = v;
}

// A fresh output of e's shape, filled with `fill`, then assigned by `exec`.
template <class Exec, class E>
auto eval_into(const Exec& exec, const E& e, typename E::value_type fill) {
  fuse::tensor<typename E::value_type, E::rank> y(e.shape());
  fill_value(y, fill);
  fuse::assign(exec, y, e);
  return y;
}

// Tolerance: |got - ref| <= rtol * |ref| + atol.
struct tol {
  double rtol = 0;
  double atol = 0;
};

// The float / double tolerance pair of a check; `pick<T>` chooses by the tensor's type.
struct tols {
  tol f;
  tol d;
  template <class T>
  tol pick() const { return std::is_same_v<T, float> ? f : d; }
};

// Exact (for results that are one correctly rounded operation, or a selection).
inline constexpr tols exact{{0, 0}, {0, 0}};
// One correctly rounded operation on float inputs vs the double result: half an ulp.
inline constexpr tols rounded{{0x1p-24, 0}, {0x1p-53, 0}};

inline bool is_nan(double v) { return v != v; }

// Checks every element of `got` against ref(i) (a double); NaN must match NaN, inf must match inf.
// Reports the worst element. Returns true when all pass.
template <class T, std::size_t R, class Ref>
bool check_against(const fuse::tensor<T, R>& got, Ref&& ref, tol t, const std::string& what) {
  index_t bad = 0, worst = -1;
  double worst_excess = -1;
  for (index_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got.data()[i]);
    const double r = static_cast<double>(ref(i));
    bool ok;
    double excess = 0;
    if (is_nan(r) || is_nan(g)) {
      ok = is_nan(r) && is_nan(g);
      excess = ok ? 0 : std::numeric_limits<double>::infinity();
    } else if (std::isinf(r) || std::isinf(g)) {
      ok = r == g;
      excess = ok ? 0 : std::numeric_limits<double>::infinity();
    } else {
      const double err = std::fabs(g - r);
      const double allowed = t.rtol * std::fabs(r) + t.atol;
      ok = err <= allowed;
      excess = err - allowed;
    }
    if (!ok) {
      ++bad;
      if (excess > worst_excess) worst_excess = excess, worst = i;
    }
  }
  if (bad) {
    std::ostringstream msg;
    msg.precision(17);
    msg << what << ": " << bad << " of " << got.size() << " elements out of tolerance (rtol " << t.rtol
        << ", atol " << t.atol << "); worst at " << worst << ": got " << static_cast<double>(got.data()[worst])
        << ", expected " << static_cast<double>(ref(worst));
    FAIL_CHECK(msg.str());
  }
  return bad == 0;
}

// |a - b| <= ulps units in the last place of max(|a|, |b|) (equal NaNs and infinities agree).
template <class T>
bool within_ulps(T a, T b, int ulps) {
  if constexpr (!std::is_floating_point_v<T>) {
    return a == b;
  } else {
    if (a != a || b != b) return a != a && b != b;
    if (a == b) return true;
    const T m = std::fmax(std::fabs(a), std::fabs(b));
    const T ulp = std::nextafter(m, std::numeric_limits<T>::infinity()) - m;
    return std::fabs(a - b) <= T(ulps) * ulp;
  }
}

// The fused executors must agree with each other to `ulps`: they run the same code, and only which
// elements fall in a SIMD body or a scalar tail changes with the thread split.
template <class T, std::size_t R>
bool check_agree(const fuse::tensor<T, R>& a, const fuse::tensor<T, R>& b, int ulps, const std::string& what) {
  REQUIRE(a.shape() == b.shape());
  for (index_t i = 0; i < a.size(); ++i) {
    if (!within_ulps(a.data()[i], b.data()[i], ulps)) {
      std::ostringstream msg;
      msg.precision(17);
      msg << what << ": executors disagree at " << i << ": " << +a.data()[i] << " vs " << +b.data()[i];
      FAIL_CHECK(msg.str());
      return false;
    }
  }
  return true;
}

// Evaluates e with fuse::eval, cpu{}, cpu{.threads = 1}, cpu{.threads = 3} (an odd split) and
// eager(cpu{}); checks each against ref(i) within t, and the fused executors against each other.
template <class E, class Ref>
void check_all_executors(const E& e, Ref&& ref, tol t, const std::string& what, int agree_ulps = 2) {
  using V = typename E::value_type;
  const auto fused = fuse::eval(e);
  check_against(fused, ref, t, what + " [fuse::eval]");
  // Two sentinels for bool (true and false), one otherwise: an element left unwritten shows.
  const int passes = std::is_same_v<V, bool> ? 2 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    const V fill = pass == 0 ? sentinel<V>() : V(!sentinel<V>());
    const auto y_default = eval_into(fuse::cpu{}, e, fill);
    const auto y_one = eval_into(fuse::cpu{.threads = 1}, e, fill);
    const auto y_three = eval_into(fuse::cpu{.threads = 3}, e, fill);
    const auto y_eager = eval_into(fuse::eager(fuse::cpu{}), e, fill);
    check_against(y_default, ref, t, what + " [cpu{}]");
    check_against(y_one, ref, t, what + " [cpu{.threads = 1}]");
    check_against(y_three, ref, t, what + " [cpu{.threads = 3}]");
    check_against(y_eager, ref, t, what + " [eager(cpu{})]");
    check_agree(y_default, y_one, agree_ulps, what + " cpu{} vs cpu{.threads = 1}");
    check_agree(y_default, y_three, agree_ulps, what + " cpu{} vs cpu{.threads = 3}");
    // eager(cpu{}) rounds every node to its temporary, where the fused pass may contract a product
    // into the following sum (an fma): with cancellation that differs by more than a few ulp of
    // the result, so the eager result is held to the reference tolerance only (above).
  }
}

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, double>) return "double";
  else return "T";
}

inline std::string size_label(const std::string& what, index_t n) { return what + " n=" + std::to_string(n); }

}  // namespace ops_test
