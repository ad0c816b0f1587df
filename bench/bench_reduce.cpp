// bench/bench_reduce.cpp - reductions and reduction-broadcast layers: fused (one row kernel) vs
// eager vs a hand-written OpenMP loop vs Eigen Tensor (when installed). GB/s of minimal traffic
// and ratios to a copy of the same bytes, all from one run (see bench_common.hpp).
//   softmax      [16384, 1024] and [64, 262144] over the last axis
//   layer_norm   [16384, 1024] with gamma, beta
//   rms_norm     [16384, 1024] with gamma
//   softmax_short [65536, 256], rms_norm_short [262144, 64]: rows short enough that per-row costs show
//   rms_norm_short_off: the same over views 16 bytes off a line; softmax_seq128 [131072, 128]
//   softmax_router [1048576, 8]: a mixture-of-experts router over 8 experts, rows shorter than a vector
//   softmax_router_temp: the same over x * t[m, 1] (a per-row temperature, read through rows of copies)
//   sum_squares  sum(x * x) over 2^25 floats
//   variance     var(x) over the same 2^25 floats (one row split across the threads)
#include <cmath>

#include "bench_common.hpp"

#if __has_include(<unsupported/Eigen/CXX11/Tensor>)
#define FUSE_BENCH_EIGEN 1
#include <unsupported/Eigen/CXX11/Tensor>
#endif

namespace {

using fuse::index_t;

struct rows_data {
  index_t m, n;
  fuse::tensor<float, 2> x, y;
  fuse::tensor<float, 1> gamma, beta;
  fuse::tensor<float, 2> temp;  // [m, 1]: a per-row temperature
  rows_data(index_t m_, index_t n_) : m(m_), n(n_), x(m_, n_), y(m_, n_), gamma(n_), beta(n_), temp(m_, 1) {
    bench::fill_random(x, 11, -4.f, 4.f), bench::fill_random(y, 12);
    bench::fill_random(gamma, 13, 0.5f, 1.5f), bench::fill_random(beta, 14, -0.5f, 0.5f);
    bench::fill_random(temp, 15, 0.5f, 2.f);
  }
  double bytes() const { return 2.0 * double(m) * double(n) * sizeof(float); }
};

template <class Exec, class Make>
void run_fuse(benchmark::State& s, rows_data& d, Exec exec, Make make) {
  fuse::assign(exec, d.y, make(d));  // warm-up: page faults, the eager pool
  for (auto _ : s) fuse::assign(exec, d.y, make(d)), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

// run_fuse over views 16 bytes off a line (a std::vector's memory): x and y start 4 floats into
// their tensors. make(x, d): the expression over x.
template <class Make>
void run_fuse_off(benchmark::State& s, index_t m, index_t n, Make make) {
  rows_data d(m + 1, n);
  auto x = fuse::view(d.x.data() + 4, m, n);
  auto y = fuse::view(d.y.data() + 4, m, n);
  fuse::assign(fuse::cpu{}, y, make(x, d));
  for (auto _ : s) fuse::assign(fuse::cpu{}, y, make(x, d)), benchmark::ClobberMemory();
  bench::set_bytes(s, 2.0 * double(m) * double(n) * sizeof(float));
}

auto softmax_of = [](rows_data& d) { return fuse::softmax(d.x, fuse::axis<-1>); };
auto softmax_temp_of = [](rows_data& d) { return fuse::softmax(d.x * d.temp, fuse::axis<-1>); };
auto layer_norm_of = [](rows_data& d) { return fuse::layer_norm(d.x, d.gamma, d.beta, 1e-5); };
auto rms_norm_of = [](rows_data& d) { return fuse::rms_norm(d.x, d.gamma, 1e-6); };

// Largest |d.y - fuse's result| over the largest |fuse's result|, as a counter: a peer's kernel
// is only worth timing when it computes the same thing.
template <class Make>
void check_rows(benchmark::State& s, rows_data& d, Make make) {
  fuse::tensor<float, 2> ref(d.m, d.n);
  fuse::assign(fuse::cpu{}, ref, make(d));
  double err = 0, scale = 0;
  for (index_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::abs(double(d.y.data()[i]) - ref.data()[i]));
    scale = std::max(scale, std::abs(double(ref.data()[i])));
  }
  s.counters["rel_err"] = err / scale;
}

// --- hand-written loops: the best a careful user writes with OpenMP and fuse::math's exp ---
void softmax_hand(benchmark::State& s, index_t m, index_t n) {
  rows_data d(m, n);
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < m; ++r) {
      const float* __restrict__ x = d.x.data() + r * n;
      float* __restrict__ y = d.y.data() + r * n;
      float mx[16];
      for (int l = 0; l < 16; ++l) mx[l] = -INFINITY;
      for (index_t i = 0; i + 16 <= n; i += 16)
#pragma omp simd
        for (int l = 0; l < 16; ++l) mx[l] = std::max(mx[l], x[i + l]);
      float m1 = mx[0];
      for (int l = 1; l < 16; ++l) m1 = std::max(m1, mx[l]);
      for (index_t i = n - n % 16; i < n; ++i) m1 = std::max(m1, x[i]);  // the tail (n not a multiple of 16)
      double sum = 0;
      for (index_t b = 0; b < n; b += 4096) {
        float acc = 0;
#pragma omp simd reduction(+ : acc)
        for (index_t i = b; i < std::min(n, b + 4096); ++i) acc += (y[i] = fuse::math::exp(x[i] - m1));
        sum += acc;
      }
      const float inv = float(1.0 / sum);
#pragma omp simd
      for (index_t i = 0; i < n; ++i) y[i] *= inv;
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

// Rows of a few elements (a router's 8 experts): plain loops per row, as a user writes them.
// Scaled: of x times the row's temperature.
template <bool Scaled = false>
void softmax_tiny_hand(benchmark::State& s, index_t m, index_t n) {
  rows_data d(m, n);
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < m; ++r) {
      const float* __restrict__ x = d.x.data() + r * n;
      float* __restrict__ y = d.y.data() + r * n;
      [[maybe_unused]] const float t = d.temp.data()[r];
      auto at = [&](index_t i) {
        if constexpr (Scaled) return x[i] * t;
        else return x[i];
      };
      float mx = at(0);
      for (index_t i = 1; i < n; ++i) mx = std::max(mx, at(i));
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (index_t i = 0; i < n; ++i) sum += (y[i] = fuse::math::exp(at(i) - mx));
      const float inv = 1.f / sum;
      for (index_t i = 0; i < n; ++i) y[i] *= inv;
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

void layer_norm_hand(benchmark::State& s) {
  rows_data d(16384, 1024);
  const index_t n = d.n;
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < d.m; ++r) {
      const float* __restrict__ x = d.x.data() + r * n;
      float* __restrict__ y = d.y.data() + r * n;
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (index_t i = 0; i < n; ++i) sum += x[i];
      const float mean = sum / float(n);
      float sq = 0;
#pragma omp simd reduction(+ : sq)
      for (index_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
      const float rstd = 1.f / std::sqrt(sq / float(n) + 1e-5f);
#pragma omp simd
      for (index_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * d.gamma.data()[i] + d.beta.data()[i];
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

// off: x and y start that many floats into their tensors (rows off a line, as in a std::vector).
void rms_norm_hand(benchmark::State& s, index_t m, index_t n, index_t off = 0) {
  rows_data d(m + (off > 0), n);
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < m; ++r) {
      const float* __restrict__ x = d.x.data() + off + r * n;
      float* __restrict__ y = d.y.data() + off + r * n;
      float sq = 0;
#pragma omp simd reduction(+ : sq)
      for (index_t i = 0; i < n; ++i) sq += x[i] * x[i];
      const float rs = 1.f / std::sqrt(sq / float(n) + 1e-6f);
#pragma omp simd
      for (index_t i = 0; i < n; ++i) y[i] = x[i] * rs * d.gamma.data()[i];
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, 2.0 * double(m) * double(n) * sizeof(float));
}

// --- sum of squares over 2^25 floats: the value is checked against a double reference ---
constexpr index_t kSumN = index_t(1) << 25;
struct sum_data {
  fuse::tensor<float, 1> x{kSumN};
  double ref = 0;
  sum_data() {
    bench::fill_random(x, 21);
    for (index_t i = 0; i < kSumN; ++i) ref += double(x.data()[i]) * x.data()[i];
  }
  void check(benchmark::State& s, double got) const {
    s.counters["rel_err"] = std::abs(got - ref) / ref;
  }
};

template <class Exec>
void sum_squares_fuse(benchmark::State& s, Exec exec) {
  sum_data d;
  float v = fuse::eval(exec, fuse::sum(d.x * d.x));
  for (auto _ : s) benchmark::DoNotOptimize(v = fuse::eval(exec, fuse::sum(d.x * d.x)));
  d.check(s, v);
  bench::set_bytes(s, kSumN * 4.0);
}

// The sum of f(x[i]) over the 2^25 floats as a careful OpenMP loop: float lanes per block of
// 4096, blocks added in double (the hand-written loops of sum_squares and variance).
template <class F>
double blocked_sum(const float* __restrict__ x, F f) {
  double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (index_t b = 0; b < kSumN; b += 4096) {
    float acc = 0;
#pragma omp simd reduction(+ : acc)
    for (index_t i = b; i < b + 4096; ++i) acc += f(x[i]);
    total += acc;
  }
  return total;
}

void sum_squares_hand(benchmark::State& s) {
  sum_data d;
  double v = 0;
  for (auto _ : s) benchmark::DoNotOptimize(v = blocked_sum(d.x.data(), [](float a) { return a * a; }));
  d.check(s, v);
  bench::set_bytes(s, kSumN * 4.0);
}

// --- var(x) over all 2^25 floats: one long row split across the threads (the online pair) ---
template <class Exec>
void variance_fuse(benchmark::State& s, Exec exec) {
  sum_data d;
  float v = fuse::eval(exec, fuse::var(d.x));
  for (auto _ : s) benchmark::DoNotOptimize(v = fuse::eval(exec, fuse::var(d.x)));
  double mean = 0, ref = 0;
  for (index_t i = 0; i < kSumN; ++i) mean += d.x.data()[i];
  mean /= double(kSumN);
  for (index_t i = 0; i < kSumN; ++i) ref += (d.x.data()[i] - mean) * (d.x.data()[i] - mean);
  ref /= double(kSumN);
  s.counters["rel_err"] = std::abs(v - ref) / ref;
  bench::set_bytes(s, kSumN * 4.0);
}
// Two passes, the mean then the squares about it: the careful form (one pass of sum and sum of
// squares cancels when the mean is large).
void variance_hand(benchmark::State& s) {
  sum_data d;
  double v = 0;
  for (auto _ : s) {
    const float mean = float(blocked_sum(d.x.data(), [](float a) { return a; }) / double(kSumN));
    v = blocked_sum(d.x.data(), [mean](float a) { return (a - mean) * (a - mean); }) / double(kSumN);
    benchmark::DoNotOptimize(v);
  }
  bench::set_bytes(s, kSumN * 4.0);
}

#ifdef FUSE_BENCH_EIGEN
using emap2 = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
struct eigen_env {
  Eigen::ThreadPool pool{2};
  Eigen::ThreadPoolDevice dev{&pool, 2};
};
// [16384, 1024] rows as Eigen sees them: maps of x, y, gamma and beta, and the reshapes and
// broadcasts a per-row value needs.
struct eigen_rows {
  rows_data d{16384, 1024};
  eigen_env env;
  emap2 x{d.x.data(), d.m, d.n}, y{d.y.data(), d.m, d.n}, g{d.gamma.data(), 1, d.n}, b{d.beta.data(), 1, d.n};
  const Eigen::array<int, 1> last{1};
  const Eigen::array<index_t, 2> col{d.m, 1}, across{1, d.n}, down{d.m, 1};
};
void softmax_eigen(benchmark::State& s) {
  eigen_rows r;
  Eigen::Tensor<float, 2, Eigen::RowMajor> mx(r.d.m, 1), sum(r.d.m, 1);
  for (auto _ : s) {
    // The reductions are evaluated into temporaries: without that Eigen recomputes them per element.
    mx.device(r.env.dev) = r.x.maximum(r.last).reshape(r.col);
    r.y.device(r.env.dev) = (r.x - mx.broadcast(r.across)).exp();
    sum.device(r.env.dev) = r.y.sum(r.last).reshape(r.col);
    r.y.device(r.env.dev) = r.y / sum.broadcast(r.across);
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, r.d.bytes());
}
// The same as one Eigen expression (what anchors.md calls "Eigen Tensor fused"): the row
// reductions forced with .eval() (without it Eigen recomputes them for every element).
void softmax_eigen_fused(benchmark::State& s) {
  eigen_rows r;
  for (auto _ : s) {
    const auto e = (r.x - r.x.maximum(r.last).eval().reshape(r.col).broadcast(r.across)).exp();
    r.y.device(r.env.dev) = e / e.sum(r.last).eval().reshape(r.col).broadcast(r.across);
    benchmark::ClobberMemory();
  }
  check_rows(s, r.d, softmax_of);
  bench::set_bytes(s, r.d.bytes());
}
void layer_norm_eigen(benchmark::State& s) {
  eigen_rows r;
  Eigen::Tensor<float, 2, Eigen::RowMajor> mean(r.d.m, 1), rstd(r.d.m, 1);
  for (auto _ : s) {
    mean.device(r.env.dev) = r.x.mean(r.last).reshape(r.col);
    rstd.device(r.env.dev) = ((r.x - mean.broadcast(r.across)).square().mean(r.last).reshape(r.col) + 1e-5f).rsqrt();
    r.y.device(r.env.dev) =
        (r.x - mean.broadcast(r.across)) * rstd.broadcast(r.across) * r.g.broadcast(r.down) + r.b.broadcast(r.down);
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, r.d.bytes());
}
void layer_norm_eigen_fused(benchmark::State& s) {
  eigen_rows r;
  for (auto _ : s) {
    const auto centred = r.x - r.x.mean(r.last).eval().reshape(r.col).broadcast(r.across);
    const auto rstd = (centred.square().mean(r.last).eval().reshape(r.col) + 1e-5f).rsqrt().broadcast(r.across);
    r.y.device(r.env.dev) = centred * rstd * r.g.broadcast(r.down) + r.b.broadcast(r.down);
    benchmark::ClobberMemory();
  }
  check_rows(s, r.d, layer_norm_of);
  bench::set_bytes(s, r.d.bytes());
}
void sum_squares_eigen(benchmark::State& s) {
  sum_data d;
  eigen_env env;
  Eigen::TensorMap<Eigen::Tensor<float, 1>> x(d.x.data(), kSumN);
  Eigen::Tensor<float, 0> r;
  for (auto _ : s) r.device(env.dev) = x.square().sum(), benchmark::DoNotOptimize(r.data());
  d.check(s, r());
  bench::set_bytes(s, kSumN * 4.0);
}
#endif

const auto reg = [] {
  auto add = [](const char* name, auto fn) {
    benchmark::RegisterBenchmark(name, fn)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);
  };
  add("softmax/copy", [](benchmark::State& s) { bench::copy_baseline(s, 2.0 * 16384 * 1024 * 4); });
  add("softmax/fused", [](benchmark::State& s) { rows_data d(16384, 1024); run_fuse(s, d, fuse::cpu{}, softmax_of); });
  add("softmax/eager", [](benchmark::State& s) { rows_data d(16384, 1024); run_fuse(s, d, fuse::eager(fuse::cpu{}), softmax_of); });
  add("softmax/hand", [](benchmark::State& s) { softmax_hand(s, 16384, 1024); });
  add("softmax_long/copy", [](benchmark::State& s) { bench::copy_baseline(s, 2.0 * 64 * 262144 * 4); });
  add("softmax_long/fused", [](benchmark::State& s) { rows_data d(64, 262144); run_fuse(s, d, fuse::cpu{}, softmax_of); });
  add("softmax_long/eager", [](benchmark::State& s) { rows_data d(64, 262144); run_fuse(s, d, fuse::eager(fuse::cpu{}), softmax_of); });
  add("softmax_long/hand", [](benchmark::State& s) { softmax_hand(s, 64, 262144); });
  add("layer_norm/copy", [](benchmark::State& s) { bench::copy_baseline(s, 2.0 * 16384 * 1024 * 4); });
  add("layer_norm/fused", [](benchmark::State& s) { rows_data d(16384, 1024); run_fuse(s, d, fuse::cpu{}, layer_norm_of); });
  add("layer_norm/eager", [](benchmark::State& s) { rows_data d(16384, 1024); run_fuse(s, d, fuse::eager(fuse::cpu{}), layer_norm_of); });
  add("layer_norm/hand", layer_norm_hand);
  add("rms_norm/copy", [](benchmark::State& s) { bench::copy_baseline(s, 2.0 * 16384 * 1024 * 4); });
  add("rms_norm/fused", [](benchmark::State& s) { rows_data d(16384, 1024); run_fuse(s, d, fuse::cpu{}, rms_norm_of); });
  add("rms_norm/eager", [](benchmark::State& s) { rows_data d(16384, 1024); run_fuse(s, d, fuse::eager(fuse::cpu{}), rms_norm_of); });
  add("rms_norm/hand", [](benchmark::State& s) { rms_norm_hand(s, 16384, 1024); });
  // Short rows: the row kernel's fixed cost per row (docs/performance.md, Zen 4 runs) shows here.
  add("softmax_short/copy", [](benchmark::State& s) { bench::copy_baseline(s, 2.0 * 65536 * 256 * 4); });
  add("softmax_short/fused", [](benchmark::State& s) { rows_data d(65536, 256); run_fuse(s, d, fuse::cpu{}, softmax_of); });
  add("softmax_short/hand", [](benchmark::State& s) { softmax_hand(s, 65536, 256); });
  add("rms_norm_short/copy", [](benchmark::State& s) { bench::copy_baseline(s, 2.0 * 262144 * 64 * 4); });
  add("rms_norm_short/fused", [](benchmark::State& s) { rows_data d(262144, 64); run_fuse(s, d, fuse::cpu{}, rms_norm_of); });
  add("rms_norm_short/hand", [](benchmark::State& s) { rms_norm_hand(s, 262144, 64); });
  add("rms_norm_short_off/fused", [](benchmark::State& s) { run_fuse_off(s, 262144, 64, [](auto x, rows_data& d) { return fuse::rms_norm(x, d.gamma, 1e-6); }); });
  add("rms_norm_short_off/hand", [](benchmark::State& s) { rms_norm_hand(s, 262144, 64, 4); });
  add("softmax_seq128/copy", [](benchmark::State& s) { bench::copy_baseline(s, 2.0 * 131072 * 128 * 4); });
  add("softmax_seq128/fused", [](benchmark::State& s) { rows_data d(131072, 128); run_fuse(s, d, fuse::cpu{}, softmax_of); });
  add("softmax_seq128/hand", [](benchmark::State& s) { softmax_hand(s, 131072, 128); });
  add("softmax_router/copy", [](benchmark::State& s) { bench::copy_baseline(s, 2.0 * 1048576 * 8 * 4); });
  add("softmax_router/fused", [](benchmark::State& s) { rows_data d(1048576, 8); run_fuse(s, d, fuse::cpu{}, softmax_of); });
  add("softmax_router/eager", [](benchmark::State& s) { rows_data d(1048576, 8); run_fuse(s, d, fuse::eager(fuse::cpu{}), softmax_of); });
  add("softmax_router/hand", [](benchmark::State& s) { softmax_tiny_hand(s, 1048576, 8); });
  add("softmax_router_temp/copy", [](benchmark::State& s) { bench::copy_baseline(s, 2.0 * 1048576 * 8 * 4); });
  add("softmax_router_temp/fused", [](benchmark::State& s) { rows_data d(1048576, 8); run_fuse(s, d, fuse::cpu{}, softmax_temp_of); });
  add("softmax_router_temp/hand", [](benchmark::State& s) { softmax_tiny_hand<true>(s, 1048576, 8); });
  add("sum_squares/copy", [](benchmark::State& s) { bench::copy_baseline(s, kSumN * 4.0); });
  add("sum_squares/fused", [](benchmark::State& s) { sum_squares_fuse(s, fuse::cpu{}); });
  add("sum_squares/fused_square", [](benchmark::State& s) { sum_data d; float v = 0; for (auto _ : s) benchmark::DoNotOptimize(v = fuse::eval(fuse::sum(fuse::square(d.x)))); d.check(s, v); bench::set_bytes(s, kSumN * 4.0); });
  add("sum_squares/eager", [](benchmark::State& s) { sum_squares_fuse(s, fuse::eager(fuse::cpu{})); });
  add("sum_squares/hand", sum_squares_hand);
  add("variance/copy", [](benchmark::State& s) { bench::copy_baseline(s, kSumN * 4.0); });
  add("variance/fused", [](benchmark::State& s) { variance_fuse(s, fuse::cpu{}); });
  add("variance/eager", [](benchmark::State& s) { variance_fuse(s, fuse::eager(fuse::cpu{})); });
  add("variance/hand", variance_hand);
#ifdef FUSE_BENCH_EIGEN
  add("softmax/eigen", softmax_eigen);
  add("softmax/eigen_fused", softmax_eigen_fused);
  add("layer_norm/eigen", layer_norm_eigen);
  add("layer_norm/eigen_fused", layer_norm_eigen_fused);
  add("sum_squares/eigen", sum_squares_eigen);
#endif
  return 0;
}();

}  // namespace

FUSE_BENCH_MAIN()
