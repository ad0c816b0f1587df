// examples/fused_vs_eager.cpp - a bias + GELU layer, evaluated fused (one pass) and eagerly (one
// pass per operator), with both plans printed before anything runs, and the measured times.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

#include <fuse/fuse.hpp>

template <class F>
double median_ms(F&& f, int reps = 7) {
  f();  // warm-up: page faults, the eager pool
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  const fuse::index_t rows = 8192, cols = 4096;
  fuse::tensor<float, 2> x(rows, cols), y(rows, cols), y_eager(rows, cols);
  fuse::tensor<float, 1> bias(cols);
  std::mt19937 gen(42);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (fuse::index_t i = 0; i < x.size(); ++i) x.data()[i] = normal(gen);
  for (fuse::index_t i = 0; i < cols; ++i) bias(i) = normal(gen);

  // Nothing runs here: `layer` records the expression.
  auto layer = fuse::gelu(x + bias);
  static_assert(fuse::kernels_v<decltype(layer)> == 1);

  std::cout << "y = gelu(x + bias), x [" << rows << ", " << cols << "], bias [" << cols << "]\n\n";
  std::cout << fuse::plan(fuse::cpu{}, layer) << "\n";
  std::cout << fuse::plan(fuse::eager(fuse::cpu{}), layer) << "\n";

  const double fused = median_ms([&] { fuse::assign(fuse::cpu{}, y, layer); });
  const double eager = median_ms([&] { fuse::assign(fuse::eager(fuse::cpu{}), y_eager, layer); });

  double max_diff = 0;
  for (fuse::index_t i = 0; i < y.size(); ++i)
    max_diff = std::max(max_diff, double(std::abs(y.data()[i] - y_eager.data()[i])));

  const double gb = double(fuse::plan(layer).bytes_read + fuse::plan(layer).bytes_written) / 1e9;
  std::printf("fused: %8.2f ms  (%6.2f GB/s of the fused plan's traffic)\n", fused, gb / (fused / 1e3));
  std::printf("eager: %8.2f ms  (%.2fx the fused time)\n", eager, eager / fused);
  std::printf("max |fused - eager| = %.3g\n", max_diff);
  return max_diff < 1e-5 ? 0 : 1;
}
