// bench/bench_elementwise.cpp - Core's two workloads: fused vs eager vs a hand-written OpenMP loop
// vs Eigen Tensor (when installed), all as GB/s of minimal traffic and as ratios to a copy of the
// same bytes measured in the same run.
//   axpby_relu  y = max(a*x + b*w, 0)          on 2^25 floats
//   bias_gelu   y = gelu(x + bias)             on [8192, 4096] + [4096]
//   gelu_cse    the same GELU written by hand with `z = x + bias` used five times
//   axpby_256, axpby_4096   axpby_relu on 256 / 4096 floats, one thread: the cost of an assign
//               beyond its loop (plan, checks, set-up), against a hand-written loop
#include <cmath>
#include <string>

#include "bench_common.hpp"

#if __has_include(<unsupported/Eigen/CXX11/Tensor>)
#define FUSE_BENCH_EIGEN 1
#include <unsupported/Eigen/CXX11/Tensor>
#endif

namespace {

using fuse::index_t;
constexpr index_t kAxpbyN = index_t(1) << 25;
constexpr index_t kRows = 8192, kCols = 4096;

struct axpby_data {
  fuse::tensor<float, 1> x{kAxpbyN}, w{kAxpbyN}, y{kAxpbyN};
  float a = 1.5f, b = -0.75f;
  axpby_data() { bench::fill_random(x, 2), bench::fill_random(w, 3), bench::fill_random(y, 9); }
  double bytes() const { return 3.0 * double(kAxpbyN) * sizeof(float); }
  auto expr() { return fuse::max(a * x + b * w, 0.f); }
};

struct gelu_data {
  fuse::tensor<float, 2> x{kRows, kCols}, y{kRows, kCols};
  fuse::tensor<float, 1> bias{kCols};
  gelu_data() { bench::fill_random(x, 4), bench::fill_random(bias, 5), bench::fill_random(y, 9); }
  double bytes() const { return (2.0 * double(kRows) + 1.0) * double(kCols) * sizeof(float); }
};

template <class Exec>
void axpby_fuse(benchmark::State& s, Exec exec) {
  axpby_data d;
  fuse::assign(exec, d.y, d.expr());  // warm-up: the eager pool and page faults
  for (auto _ : s) fuse::assign(exec, d.y, d.expr()), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

void axpby_hand(benchmark::State& s) {
  axpby_data d;
  const float a = d.a, b = d.b;
  const float* __restrict__ x = d.x.data();
  const float* __restrict__ w = d.w.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
#pragma omp parallel for simd schedule(static)
    for (index_t i = 0; i < kAxpbyN; ++i) y[i] = std::max(a * x[i] + b * w[i], 0.f);
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

template <class Exec>
void gelu_fuse(benchmark::State& s, Exec exec) {
  gelu_data d;
  fuse::assign(exec, d.y, fuse::gelu(d.x + d.bias));  // warm-up: the eager pool and page faults
  for (auto _ : s) fuse::assign(exec, d.y, fuse::gelu(d.x + d.bias)), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

// The user's own GELU: z is named once and used five times; it must cost one evaluation.
void gelu_cse_fuse(benchmark::State& s) {
  gelu_data d;
  for (auto _ : s) {
    auto z = d.x + d.bias;
    fuse::assign(d.y, 0.5f * z * (1.f + fuse::tanh(0.7978845608f * (z + 0.044715f * z * z * z))));
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

// The same tanh formula with z computed once per element by construction (a user lambda): the
// yardstick for the CSE variant above, which differs only in naming z five times.
void gelu_tanh_once_fuse(benchmark::State& s) {
  gelu_data d;
  auto layer = [](float x, float b) {
    const float z = x + b;
    return 0.5f * z * (1.f + fuse::math::tanh(0.7978845608f * (z + 0.044715f * z * z * z)));
  };
  for (auto _ : s) fuse::assign(d.y, fuse::map(layer, d.x, d.bias)), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

void gelu_hand(benchmark::State& s) {
  gelu_data d;
  const float* __restrict__ x = d.x.data();
  const float* __restrict__ bias = d.bias.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < kRows; ++r) {
#pragma omp simd
      for (index_t c = 0; c < kCols; ++c) {
        const float z = x[r * kCols + c] + bias[c];
        y[r * kCols + c] = 0.5f * z * (1.f + fuse::math::tanh(0.7978845608f * (z + 0.044715f * z * z * z)));
      }
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

// Small tensors, one thread (in L1): what an assign costs beyond its loop.
struct small_axpby {
  index_t n;
  fuse::tensor<float, 1> x{n}, w{n}, y{n};
  explicit small_axpby(index_t n) : n(n) { bench::fill_random(x, 2), bench::fill_random(w, 3), bench::fill_random(y, 9); }
  double bytes() const { return 3.0 * double(n) * sizeof(float); }
};
void axpby_small_fuse(benchmark::State& s, index_t n) {
  small_axpby d(n);
  const fuse::cpu one{.threads = 1};
  for (auto _ : s) fuse::assign(one, d.y, fuse::max(1.5f * d.x - 0.75f * d.w, 0.f)), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}
void axpby_small_hand(benchmark::State& s, index_t n) {
  small_axpby d(n);
  const float* __restrict__ x = d.x.data();
  const float* __restrict__ w = d.w.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
#pragma omp simd
    for (index_t i = 0; i < n; ++i) y[i] = std::max(1.5f * x[i] - 0.75f * w[i], 0.f);
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

#ifdef FUSE_BENCH_EIGEN
void axpby_eigen(benchmark::State& s) {
  axpby_data d;
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice dev(&pool, 2);
  Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>> x(d.x.data(), kAxpbyN), w(d.w.data(), kAxpbyN),
      y(d.y.data(), kAxpbyN);
  for (auto _ : s) y.device(dev) = (d.a * x + d.b * w).cwiseMax(0.f), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}
void gelu_eigen(benchmark::State& s) {
  gelu_data d;
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice dev(&pool, 2);
  Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>> x(d.x.data(), kRows, kCols), y(d.y.data(), kRows, kCols);
  Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>> bias(d.bias.data(), 1, kCols);
  const Eigen::array<index_t, 2> bc{kRows, 1};
  for (auto _ : s) {
    auto z = x + bias.broadcast(bc);
    y.device(dev) = 0.5f * z * (1.f + (0.7978845608f * (z + 0.044715f * z * z * z)).tanh());
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}
#endif

void axpby_copy(benchmark::State& s) { bench::copy_baseline(s, axpby_data{}.bytes()); }
void gelu_copy(benchmark::State& s) { bench::copy_baseline(s, (2.0 * kRows + 1) * kCols * sizeof(float)); }

const auto reg = [] {
  auto add = [](const char* name, auto fn) {
    benchmark::RegisterBenchmark(name, fn)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);
  };
  add("axpby_relu/copy", axpby_copy);
  add("axpby_relu/fused", [](benchmark::State& s) { axpby_fuse(s, fuse::cpu{}); });
  add("axpby_relu/eager", [](benchmark::State& s) { axpby_fuse(s, fuse::eager(fuse::cpu{})); });
  add("axpby_relu/hand", axpby_hand);
  add("bias_gelu/copy", gelu_copy);
  add("bias_gelu/fused", [](benchmark::State& s) { gelu_fuse(s, fuse::cpu{}); });
  add("bias_gelu/eager", [](benchmark::State& s) { gelu_fuse(s, fuse::eager(fuse::cpu{})); });
  add("bias_gelu/hand", gelu_hand);
  add("bias_gelu/fused_cse", gelu_cse_fuse);
  add("bias_gelu/fused_tanh_once", gelu_tanh_once_fuse);
  for (index_t n : {256, 4096}) {
    const std::string w = "axpby_" + std::to_string(n);
    benchmark::RegisterBenchmark((w + "/fused").c_str(), [n](benchmark::State& s) { axpby_small_fuse(s, n); })
        ->Unit(benchmark::kNanosecond)->MinTime(0.2);
    benchmark::RegisterBenchmark((w + "/hand").c_str(), [n](benchmark::State& s) { axpby_small_hand(s, n); })
        ->Unit(benchmark::kNanosecond)->MinTime(0.2);
  }
#ifdef FUSE_BENCH_EIGEN
  add("axpby_relu/eigen", axpby_eigen);
  add("bias_gelu/eigen", gelu_eigen);
#endif
  return 0;
}();

}  // namespace

FUSE_BENCH_MAIN()
