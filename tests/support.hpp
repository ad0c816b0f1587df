// tests/support.hpp - shared helpers for the CPU tests: seeded random data (never all zeros), a
// multi-index loop for double-precision references, tolerant comparison, and strided / misaligned
// views carved out of an over-allocated buffer.
#pragma once

#include <catch2/catch.hpp>
#include <fuse/fuse.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace fuse_test {

using fuse::index_t;
template <std::size_t R>
using shape = std::array<index_t, R>;

// ---------------------------------------------------------------------------------------------
// Random data. Floating values lie in +-[lo_mag, hi_mag] (never 0, never tiny), integers in
// +-[1, 9]; bool is a fair coin. A fixed seed per call site keeps failures reproducible.

template <class T>
T random_value(std::mt19937_64& g, double hi_mag = 2.0) {
  if constexpr (std::is_same_v<T, bool>) {
    return std::uniform_int_distribution<int>(0, 1)(g) == 1;
  } else if constexpr (std::is_integral_v<T>) {
    const int v = std::uniform_int_distribution<int>(1, 9)(g);
    if constexpr (std::is_signed_v<T>) return static_cast<T>(std::uniform_int_distribution<int>(0, 1)(g) ? v : -v);
    else return static_cast<T>(v);
  } else {
    const double m = std::uniform_real_distribution<double>(0.0625, hi_mag)(g);
    return static_cast<T>(std::uniform_int_distribution<int>(0, 1)(g) ? m : -m);
  }
}

template <class T>
void fill_random(T* p, index_t n, std::uint64_t seed, double hi_mag = 2.0) {
  std::mt19937_64 g(seed);
  for (index_t i = 0; i < n; ++i) p[i] = random_value<T>(g, hi_mag);
}

template <class T, std::size_t R>
fuse::tensor<T, R> random_tensor(const shape<R>& s, std::uint64_t seed, double hi_mag = 2.0) {
  fuse::tensor<T, R> t(s);
  fill_random(t.data(), t.size(), seed, hi_mag);
  return t;
}

template <class T, std::size_t R>
void fill_value(fuse::tensor<T, R>& t, T v) {
  for (index_t i = 0; i < t.size(); ++i) t.data()[i] = v;
}

// ---------------------------------------------------------------------------------------------
// Multi-index loops and element access through (shape, strides).

// Calls f(idx) for every multi-index of `s` in row-major order (nothing when an extent is 0).
template <std::size_t R, class F>
void for_each_index(const shape<R>& s, F&& f) {
  for (auto e : s)
    if (e == 0) return;
  shape<R> idx{};
  while (true) {
    f(static_cast<const shape<R>&>(idx));
    std::size_t d = R;
    while (d > 0) {
      --d;
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if constexpr (R == 0) return;
  }
}

template <std::size_t R>
index_t numel(const shape<R>& s) {
  index_t n = 1;
  for (auto e : s) n *= e;
  return n;
}

template <std::size_t R>
index_t linear(const shape<R>& idx, const shape<R>& strides) {
  index_t off = 0;
  for (std::size_t d = 0; d < R; ++d) off += idx[d] * strides[d];
  return off;
}

template <std::size_t R>
shape<R> row_major_strides(const shape<R>& s) {
  shape<R> st{};
  index_t acc = 1;
  for (std::size_t d = R; d-- > 0;) st[d] = acc, acc *= s[d];
  return st;
}

// Element `idx` of a host tensor or view, read through data() and strides(), as double.
template <class V, std::size_t R>
double at(const V& v, const shape<R>& idx) {
  return static_cast<double>(v.data()[linear(idx, v.strides())]);
}

// The operand index that output index `out` reads under NumPy broadcasting (trailing axes
// aligned; an extent of 1 reads index 0).
template <std::size_t RA, std::size_t RO>
shape<RA> broadcast_index(const shape<RO>& out, const shape<RA>& operand_shape) {
  static_assert(RA <= RO);
  shape<RA> idx{};
  for (std::size_t j = 0; j < RA; ++j) idx[j] = operand_shape[j] == 1 ? 0 : out[RO - RA + j];
  return idx;
}

template <std::size_t R>
std::string to_string(const shape<R>& s) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < R; ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
}

// A double-precision reference of shape `s`, filled by f(idx) -> double.
template <std::size_t R>
struct reference {
  shape<R> s;
  std::vector<double> v;
  template <class F>
  reference(const shape<R>& sh, F&& f) : s(sh), v(static_cast<std::size_t>(numel(sh))) {
    const auto st = row_major_strides(sh);
    for_each_index(sh, [&](const shape<R>& i) { v[static_cast<std::size_t>(linear(i, st))] = f(i); });
  }
  double operator()(const shape<R>& i) const { return v[static_cast<std::size_t>(linear(i, row_major_strides(s)))]; }
};

// ---------------------------------------------------------------------------------------------
// Comparison: |a - r| <= atol + rtol * |r|; exact equality when both tolerances are 0. One Catch
// assertion per array; the first mismatches are reported with their index.

inline bool close(double a, double r, double rtol, double atol) {
  if (std::isnan(r)) return std::isnan(a);
  if (std::isinf(r)) return a == r;
  return std::fabs(a - r) <= atol + rtol * std::fabs(r);
}

template <class T>
constexpr double default_rtol() {
  if constexpr (std::is_same_v<std::remove_cv_t<T>, float>) return 2e-6;
  else if constexpr (std::is_floating_point_v<T>) return 1e-13;
  else return 0.0;
}

// Checks every element of host array `v` (tensor or view) against f(idx) (a double).
template <class V, class F>
void check_all(const V& v, F&& f, double rtol = default_rtol<typename V::value_type>(), double atol = -1) {
  constexpr std::size_t R = std::remove_cvref_t<V>::rank;
  if (atol < 0) atol = rtol;  // inputs are O(1): an absolute floor for results that cancel
  index_t bad = 0, total = 0;
  std::string first;
  for_each_index<R>(v.shape(), [&](const shape<R>& i) {
    ++total;
    const double a = at(v, i);
    const double r = static_cast<double>(f(i));
    if (!close(a, r, rtol, atol)) {
      if (bad < 5) first += "  at " + to_string(i) + ": got " + std::to_string(a) + ", want " + std::to_string(r) + "\n";
      ++bad;
    }
  });
  INFO("shape " << to_string(v.shape()) << ", " << bad << " of " << total << " elements differ\n" << first);
  CHECK(bad == 0);
}

template <class V, std::size_t R>
void check_all(const V& v, const reference<R>& ref, double rtol = default_rtol<typename V::value_type>(), double atol = -1) {
  REQUIRE(v.shape() == ref.s);
  check_all(v, [&](const shape<R>& i) { return ref(i); }, rtol, atol);
}

// Two host arrays of the same shape are element-for-element equal (within rtol).
template <class A, class B>
void check_same(const A& a, const B& b, double rtol = 0.0, double atol = 0.0) {
  constexpr std::size_t R = std::remove_cvref_t<A>::rank;
  REQUIRE(a.shape() == b.shape());
  check_all(a, [&](const shape<R>& i) { return at(b, i); }, rtol, atol);
}

// ---------------------------------------------------------------------------------------------
// Strided and misaligned destinations / sources. A `buffer` owns an over-allocated vector filled
// with a sentinel; `view()` is a fuse::strided_view of `s` placed inside it with the layout asked
// for, so that tests can check that elements outside the view are never touched.

enum class layout {
  contiguous,   // row-major
  misaligned,   // row-major, data pointer offset by one element from a 64-byte boundary
  padded,       // row-major with each row padded by 3 elements (last-axis stride 1)
  transposed,   // column-major (the transpose of a row-major array)
  step2,        // every other element along the last axis
  reversed,     // row-major, all strides negative
};

inline const char* name(layout l) {
  switch (l) {
    case layout::contiguous: return "contiguous";
    case layout::misaligned: return "misaligned";
    case layout::padded: return "padded";
    case layout::transposed: return "transposed";
    case layout::step2: return "step2";
    case layout::reversed: return "reversed";
  }
  return "?";
}

inline constexpr layout all_layouts[] = {layout::contiguous, layout::misaligned, layout::padded,
                                          layout::transposed, layout::step2, layout::reversed};

template <class T, std::size_t R>
class buffer {
 public:
  static constexpr index_t guard = 32;  // sentinel elements on each side

  buffer(const shape<R>& s, layout l, T sentinel) : s_(s), sentinel_(sentinel) {
    // Strides of the chosen layout, then the span they cover.
    index_t acc = 1;
    switch (l) {
      case layout::transposed:
        for (std::size_t d = 0; d < R; ++d) st_[d] = acc, acc *= s[d];
        break;
      default: {
        const index_t inner = l == layout::step2 ? 2 : 1;
        for (std::size_t d = R; d-- > 0;) {
          st_[d] = acc * (d + 1 == R ? inner : 1);
          acc = (d + 1 == R ? s[d] * inner : acc * s[d]) + (l == layout::padded && d + 1 == R ? 3 : 0);
        }
      }
    }
    index_t lo = 0, hi = 0;
    for (std::size_t d = 0; d < R; ++d) hi += (s[d] > 0 ? s[d] - 1 : 0) * st_[d];
    if (l == layout::reversed) {
      for (auto& x : st_) x = -x;
      std::swap(lo, hi);
      lo = -lo;
    }
    // 64-byte aligned base (a fuse::tensor), then guard elements, then the array.
    storage_ = fuse::tensor<T, 1>(hi - lo + 1 + 2 * guard + 64);
    for (index_t i = 0; i < storage_.size(); ++i) storage_.data()[i] = sentinel;
    const index_t align = 64 / static_cast<index_t>(sizeof(T)) > 0 ? 64 / static_cast<index_t>(sizeof(T)) : 1;
    origin_ = align * ((guard + align - 1) / align) + (l == layout::misaligned ? 1 : 0) - lo;
  }

  fuse::strided_view<T, R> view() { return fuse::view(storage_.data() + origin_, s_, st_); }
  fuse::strided_view<const T, R> cview() const {
    return fuse::view(static_cast<const T*>(storage_.data() + origin_), s_, st_);
  }
  const shape<R>& strides() const { return st_; }
  T* base() { return storage_.data() + origin_; }

  void fill_random(std::uint64_t seed, double hi_mag = 2.0) {
    std::mt19937_64 g(seed);
    auto v = view();
    for_each_index(s_, [&](const shape<R>& i) { v.data()[linear(i, st_)] = random_value<T>(g, hi_mag); });
  }
  void fill_sentinel() {
    auto v = view();
    for_each_index(s_, [&](const shape<R>& i) { v.data()[linear(i, st_)] = sentinel_; });
  }

  // Number of storage elements outside the view that no longer hold the sentinel.
  index_t touched_outside() const {
    std::vector<char> inside(static_cast<std::size_t>(storage_.size()), 0);
    for_each_index(s_, [&](const shape<R>& i) { inside[static_cast<std::size_t>(origin_ + linear(i, st_))] = 1; });
    index_t n = 0;
    for (index_t k = 0; k < storage_.size(); ++k)
      if (!inside[static_cast<std::size_t>(k)] && !same_bits(storage_.data()[k], sentinel_)) ++n;
    return n;
  }
  // Number of elements inside the view that still hold the sentinel.
  index_t untouched_inside() const {
    index_t n = 0;
    auto v = cview();
    for_each_index(s_, [&](const shape<R>& i) { n += same_bits(v.data()[linear(i, st_)], sentinel_); });
    return n;
  }

 private:
  static bool same_bits(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return (a == b) || (std::isnan(a) && std::isnan(b));
    else return a == b;
  }
  shape<R> s_;
  shape<R> st_{};
  T sentinel_;
  fuse::tensor<T, 1> storage_;
  index_t origin_ = 0;
};

// A value no computation in the tests produces.
template <class T>
constexpr T sentinel() {
  if constexpr (std::is_floating_point_v<T>) return T(-12345.25);
  else if constexpr (std::is_same_v<T, bool>) return true;
  else return T(-101);
}

}  // namespace fuse_test
