// Helpers for the reduction tests: random tensors and double-precision row references.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <fuse/fuse.hpp>

namespace rt {

using fuse::index_t;

// An identity map on float that counts its calls: how often an operand was read.
inline auto counting_identity(std::atomic<long>& calls) {
  return [&calls](float v) {
    calls.fetch_add(1, std::memory_order_relaxed);
    return v;
  };
}

template <class T = float, std::size_t R>
fuse::tensor<T, R> random(fuse::shape_t<R> s, unsigned seed, double lo = -3, double hi = 3) {
  fuse::tensor<T, R> t(s);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  for (index_t i = 0; i < t.size(); ++i) t.data()[i] = static_cast<T>(d(gen));
  return t;
}

// Reference over rows of a row-major [m, n] array: f(row pointer, n) -> double.
template <class T, class F>
std::vector<double> per_row(const T* x, index_t m, index_t n, F f) {
  std::vector<double> out(m);
  for (index_t r = 0; r < m; ++r) {
    std::vector<double> row(x + r * n, x + (r + 1) * n);
    out[r] = f(row);
  }
  return out;
}

inline double ref_max(const std::vector<double>& v) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : v) m = (x > m || std::isnan(x)) ? x : m;
  return m;
}
inline double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
inline double ref_mean(const std::vector<double>& v) { return ref_sum(v) / double(v.size()); }
inline double ref_var(const std::vector<double>& v) {
  const double m = ref_mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size());
}
inline std::vector<double> softmax_ref(const std::vector<double>& row) {
  const double m = ref_max(row);
  double s = 0;
  for (double v : row) s += std::exp(v - m);
  std::vector<double> out;
  for (double v : row) out.push_back(std::exp(v - m) / s);
  return out;
}

inline bool close(double got, double ref, double rel, double abs_tol = 0) {
  if (std::isnan(ref)) return std::isnan(got);
  if (std::isinf(ref)) return got == ref;
  return std::abs(got - ref) <= rel * std::abs(ref) + abs_tol;
}

}  // namespace rt
