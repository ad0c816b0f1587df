// bench/bench_layouts.cpp - the layouts a probe found slow (2026-12-03), fused vs eager vs a
// hand-written OpenMP loop, as GB/s of minimal traffic and ratios to a copy of the same bytes:
//   channel_affine  y = x * scale[C, 1, 1] + shift[C, 1, 1] on NCHW [16, 64, 112, 112] (a
//                   batch-norm epilogue: leaves of stride 0 along the rows, backend/cpu/splat.hpp)
//   channel_norm    y = relu((x - mean) * rsqrt(var + eps) * gamma + beta), per-channel [C, 1, 1]
//                   operands on the same NCHW x (an inference batch norm and ReLU; rsqrt once per
//                   row, backend/cpu/hoist.hpp)
//   batch_norm_train the same with the statistics of x itself, mean and var over axes<0, 2, 3>: one
//                   row kernel per channel, its row 16 runs of 112 * 112 (plan/fusion.hpp); the
//                   hand loop makes three passes over each channel
//   batch_norm_nhwc the training batch norm and ReLU on NHWC [64, 56, 56, 64], statistics over
//                   N, H, W: a column pair (mean and variance in one pass, the rows split across
//                   threads: core/column_pair.hpp), then the normalisation; the hand loop makes
//                   three passes (the means, the squares about them, the normalisation)
//   column_sum      sum(x, axis<0>) on [8192, 4096] (backend/cpu/column_reduce.hpp)
//   column_var      var(x, axis<0>) on the same x: a column pair, the mean and the variance in one
//                   pass (core/column_pair.hpp, backend/cpu/column_moments.hpp), eager too (var is
//                   one node); the hand loop makes two (the mean, then the squares about it)
//   column_logsumexp logsumexp(x, axis<0>) on the same x: a column pair of the softmax kind (each
//                   column's max and sum of exp(x - max) in one pass over memory,
//                   backend/cpu/column_softmax.hpp), then the one value per column; the hand loop
//                   makes two passes (the maxima, then the sums)
//   image_norm      y = (img - mean[3]) / sd[3] on HWC [2048, 2048, 3]: rows of 3 run as tiles
//                   of rows (backend/cpu/tile.hpp)
//   embedding       take(table[50257, 768], ids[16384]) -> [16384, 768], GPT-2's token lookup
//                   (one table row per index: core/evaluator.hpp, take_eval)
//   gated_bias      y = x * gelu(b[N]) on [8192, 1024] (memory) and [512, 256] (cache): an
//                   expensive function of a row operand, computed once per thread, not per
//                   element (backend/cpu/hoist.hpp); the hand-written loop computes gelu(b) once
//   cross_entropy   loss[N, 1] = logsumexp(z) - z[label] on [4096, 8192] with label[N, 1]: one row
//                   kernel whose label stays put along the row (read through rows of copies,
//                   backend/cpu/row_copies.hpp)
//   transpose       y = transpose(x) on [4096, 4096] floats: a leaf closer to contiguous across
//                   the rows than along them runs in tiles (backend/cpu/transpose_tiles.hpp); the
//                   hand loop copies 32 x 32 blocks
//   nhwc_to_nchw    y = permute<0, 3, 1, 2>(x) on NHWC [32, 56, 56, 64]: tiles whose band is all
//                   of C
//   causal_softmax  softmax(where(k <= q, scores, -inf)) on 16 heads of [1024, 1024] attention
//                   scores: a phase reduces only the interval its mask keeps (backend/cpu/row_mask.hpp);
//                   minimal traffic is the kept half read and every element written
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "bench_common.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using fuse::index_t;
constexpr index_t kN = 16, kC = 64, kHW = 112 * 112;
constexpr index_t kRows = 8192, kCols = 4096;

struct channel_data {
  fuse::tensor<float, 4> x{kN, kC, 112, 112}, y{kN, kC, 112, 112};
  fuse::tensor<float, 3> scale{kC, 1, 1}, shift{kC, 1, 1};
  channel_data() { bench::fill_random(x, 1), bench::fill_random(scale, 2), bench::fill_random(shift, 3); }
  double bytes() const { return 2.0 * double(kN * kC * kHW) * sizeof(float); }
};

// Times d.y = e on exec (after one warm-up assignment: the eager pool, page faults).
template <class Exec, class D, class E>
void time_assign(benchmark::State& s, Exec exec, D& d, const E& e) {
  fuse::assign(exec, d.y, e);
  for (auto _ : s) fuse::assign(exec, d.y, e), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

template <class Exec>
void channel_fuse(benchmark::State& s, Exec exec) {
  channel_data d;
  fuse::assign(exec, d.y, d.x * d.scale + d.shift);  // warm-up: the eager pool and page faults
  for (auto _ : s) fuse::assign(exec, d.y, d.x * d.scale + d.shift), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

void channel_hand(benchmark::State& s) {
  channel_data d;
  const float* __restrict__ x = d.x.data();
  const float* __restrict__ a = d.scale.data();
  const float* __restrict__ b = d.shift.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t p = 0; p < kN * kC; ++p) {
      const float sc = a[p % kC], sh = b[p % kC];
#pragma omp simd
      for (index_t k = 0; k < kHW; ++k) y[p * kHW + k] = x[p * kHW + k] * sc + sh;
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

template <class Exec>
void channel_norm_fuse(benchmark::State& s, Exec exec) {
  channel_data d;  // scale as the mean, shift as gamma
  fuse::tensor<float, 3> var{kC, 1, 1}, beta{kC, 1, 1};
  bench::fill_random(var, 9), bench::fill_random(beta, 10);
  fuse::assign(var, fuse::abs(var) + 0.5f);
  auto e = fuse::relu((d.x - d.scale) * fuse::rsqrt(var + 1e-5f) * d.shift + beta);
  fuse::assign(exec, d.y, e);
  for (auto _ : s) fuse::assign(exec, d.y, e), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

void channel_norm_hand(benchmark::State& s) {
  channel_data d;
  fuse::tensor<float, 3> var{kC, 1, 1}, beta{kC, 1, 1};
  bench::fill_random(var, 9), bench::fill_random(beta, 10);
  fuse::assign(var, fuse::abs(var) + 0.5f);
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t p = 0; p < kN * kC; ++p) {
      const index_t c = p % kC;
      const float a = d.shift(c, 0, 0) / std::sqrt(var(c, 0, 0) + 1e-5f), m = d.scale(c, 0, 0), b = beta(c, 0, 0);
#pragma omp simd
      for (index_t k = 0; k < kHW; ++k) y[p * kHW + k] = std::max((x[p * kHW + k] - m) * a + b, 0.f);
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

template <class Exec>
void batch_norm_train_fuse(benchmark::State& s, Exec exec) {
  channel_data d;  // scale as gamma, shift as beta
  time_assign(s, exec, d, fuse::relu((d.x - fuse::mean(d.x, fuse::axes<0, 2, 3>)) * fuse::rsqrt(fuse::var(d.x, fuse::axes<0, 2, 3>) + 1e-5f) *
                                         d.scale + d.shift));
}

void batch_norm_train_hand(benchmark::State& s) {
  channel_data d;
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  constexpr float count = float(kN * kHW);
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t c = 0; c < kC; ++c) {
      float sum = 0, sq = 0;
      for (index_t n = 0; n < kN; ++n) {
        const float* p = x + (n * kC + c) * kHW;
#pragma omp simd reduction(+ : sum)
        for (index_t k = 0; k < kHW; ++k) sum += p[k];
      }
      const float mean = sum / count;
      for (index_t n = 0; n < kN; ++n) {
        const float* p = x + (n * kC + c) * kHW;
#pragma omp simd reduction(+ : sq)
        for (index_t k = 0; k < kHW; ++k) sq += (p[k] - mean) * (p[k] - mean);
      }
      const float a = d.scale(c, 0, 0) / std::sqrt(sq / count + 1e-5f), b = d.shift(c, 0, 0) - mean * a;
      for (index_t n = 0; n < kN; ++n) {
        const float* p = x + (n * kC + c) * kHW;
        float* q = y + (n * kC + c) * kHW;
#pragma omp simd
        for (index_t k = 0; k < kHW; ++k) q[k] = std::max(p[k] * a + b, 0.f);
      }
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

constexpr index_t kNhwcN = 64, kNhwcHW = 56 * 56;
struct nhwc_data {
  fuse::tensor<float, 4> x{kNhwcN, 56, 56, kC}, y{kNhwcN, 56, 56, kC};
  fuse::tensor<float, 1> gamma{kC}, beta{kC};
  nhwc_data() { bench::fill_random(x, 11), bench::fill_random(gamma, 12), bench::fill_random(beta, 13); }
  double bytes() const { return 2.0 * double(kNhwcN * kNhwcHW * kC) * sizeof(float); }
};

template <class Exec>
void batch_norm_nhwc_fuse(benchmark::State& s, Exec exec) {
  nhwc_data d;
  time_assign(s, exec, d, fuse::relu((d.x - fuse::mean(d.x, fuse::axes<0, 1, 2>)) * fuse::rsqrt(fuse::var(d.x, fuse::axes<0, 1, 2>) + 1e-5f) *
                                         d.gamma + d.beta));
}

// Per-thread column sums over a share of the rows (then combined), for the means and then the
// squares about them; then the normalisation.
void batch_norm_nhwc_hand(benchmark::State& s) {
  nhwc_data d;
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  constexpr index_t rows = kNhwcN * kNhwcHW;
  std::vector<float> mean(kC), a(kC), b(kC);
  for (auto _ : s) {
    std::vector<double> sum(kC), sq(kC);
#pragma omp parallel
    {
      std::vector<float> part(kC);
#pragma omp for schedule(static)
      for (index_t r = 0; r < rows; ++r) {
#pragma omp simd
        for (index_t c = 0; c < kC; ++c) part[c] += x[r * kC + c];
      }
#pragma omp critical
      for (index_t c = 0; c < kC; ++c) sum[c] += part[c];
#pragma omp barrier
#pragma omp single
      for (index_t c = 0; c < kC; ++c) mean[c] = float(sum[c] / double(rows));
      std::fill(part.begin(), part.end(), 0.f);
#pragma omp for schedule(static)
      for (index_t r = 0; r < rows; ++r) {
#pragma omp simd
        for (index_t c = 0; c < kC; ++c) part[c] += (x[r * kC + c] - mean[c]) * (x[r * kC + c] - mean[c]);
      }
#pragma omp critical
      for (index_t c = 0; c < kC; ++c) sq[c] += part[c];
#pragma omp barrier
#pragma omp single
      for (index_t c = 0; c < kC; ++c) {
        a[c] = d.gamma(c) / std::sqrt(float(sq[c] / double(rows)) + 1e-5f);
        b[c] = d.beta(c) - mean[c] * a[c];
      }
#pragma omp for schedule(static)
      for (index_t r = 0; r < rows; ++r) {
#pragma omp simd
        for (index_t c = 0; c < kC; ++c) y[r * kC + c] = std::max(x[r * kC + c] * a[c] + b[c], 0.f);
      }
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

struct column_data {
  fuse::tensor<float, 2> x{kRows, kCols}, y{1, kCols};
  column_data() { bench::fill_random(x, 4); }
  double bytes() const { return double(kRows + 1) * double(kCols) * sizeof(float); }
};

// The column workloads: y = make(x) over the same x.
template <class Exec, class Make>
void column_fuse(benchmark::State& s, Exec exec, Make make) {
  column_data d;
  fuse::assign(exec, d.y, make(d.x));
  for (auto _ : s) fuse::assign(exec, d.y, make(d.x)), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}
auto column_sum_of = [](const auto& x) { return fuse::sum(x, fuse::axis<0>); };
auto column_var_of = [](const auto& x) { return fuse::var(x, fuse::axis<0>); };
auto column_logsumexp_of = [](const auto& x) { return fuse::logsumexp(x, fuse::axis<0>); };

// f(j0, j1) on each thread, for its own band of the kCols columns.
template <class F>
void in_column_bands(const F& f) {
#pragma omp parallel
  {
#if defined(_OPENMP)
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    const int t = 0, nt = 1;
#endif
    f(kCols * t / nt, kCols * (t + 1) / nt);
  }
}

// Each thread sums its own band of columns over all rows in float (no blocking: the baseline a
// user would write).
void column_hand(benchmark::State& s) {
  column_data d;
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
    in_column_bands([&](index_t j0, index_t j1) {
      for (index_t j = j0; j < j1; ++j) y[j] = 0.f;
      for (index_t i = 0; i < kRows; ++i) {
#pragma omp simd
        for (index_t j = j0; j < j1; ++j) y[j] += x[i * kCols + j];
      }
    });
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

// Two passes per band of columns, each over all rows in memory order: the column sums, then the
// sums of squares about the mean (in double, as fuse's accuracy allows comparing).
void column_var_hand(benchmark::State& s) {
  column_data d;
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  std::vector<double> mean(kCols), sq(kCols);
  for (auto _ : s) {
    in_column_bands([&](index_t j0, index_t j1) {
      for (index_t j = j0; j < j1; ++j) mean[j] = sq[j] = 0;
      for (index_t i = 0; i < kRows; ++i) {
#pragma omp simd
        for (index_t j = j0; j < j1; ++j) mean[j] += x[i * kCols + j];
      }
      for (index_t j = j0; j < j1; ++j) mean[j] /= double(kRows);
      for (index_t i = 0; i < kRows; ++i) {
#pragma omp simd
        for (index_t j = j0; j < j1; ++j) sq[j] += (x[i * kCols + j] - mean[j]) * (x[i * kCols + j] - mean[j]);
      }
      for (index_t j = j0; j < j1; ++j) y[j] = float(sq[j] / double(kRows));
    });
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

// Two passes per band of columns, each over all rows in memory order: the column maxima, then
// the sums of exp(x - max) (fuse::math's exp, in float).
void column_logsumexp_hand(benchmark::State& s) {
  column_data d;
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  std::vector<float> mx(kCols), sum(kCols);
  for (auto _ : s) {
    in_column_bands([&](index_t j0, index_t j1) {
      for (index_t j = j0; j < j1; ++j) mx[j] = x[j], sum[j] = 0;
      for (index_t i = 1; i < kRows; ++i) {
#pragma omp simd
        for (index_t j = j0; j < j1; ++j) mx[j] = std::max(mx[j], x[i * kCols + j]);
      }
      for (index_t i = 0; i < kRows; ++i) {
#pragma omp simd
        for (index_t j = j0; j < j1; ++j) sum[j] += fuse::math::exp(x[i * kCols + j] - mx[j]);
      }
      for (index_t j = j0; j < j1; ++j) y[j] = mx[j] + std::log(sum[j]);
    });
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

constexpr index_t kImage = 2048;
struct image_data {
  fuse::tensor<float, 3> img{kImage, kImage, 3}, y{kImage, kImage, 3};
  fuse::tensor<float, 1> mean{3}, sd{3};
  image_data() {
    bench::fill_random(img, 7, 0.f, 255.f);
    for (index_t c = 0; c < 3; ++c) mean(c) = 110.f + 10.f * float(c), sd(c) = 50.f + 5.f * float(c);
  }
  double bytes() const { return 2.0 * double(img.size()) * sizeof(float); }
};

template <class Exec>
void image_fuse(benchmark::State& s, Exec exec) {
  image_data d;
  fuse::assign(exec, d.y, (d.img - d.mean) / d.sd);
  for (auto _ : s) fuse::assign(exec, d.y, (d.img - d.mean) / d.sd), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

void image_hand(benchmark::State& s) {
  image_data d;
  const float* __restrict__ x = d.img.data();
  float* __restrict__ y = d.y.data();
  const float m0 = d.mean(0), m1 = d.mean(1), m2 = d.mean(2), s0 = d.sd(0), s1 = d.sd(1), s2 = d.sd(2);
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t p = 0; p < kImage * kImage; ++p) {
      y[3 * p] = (x[3 * p] - m0) / s0;
      y[3 * p + 1] = (x[3 * p + 1] - m1) / s1;
      y[3 * p + 2] = (x[3 * p + 2] - m2) / s2;
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

constexpr index_t kVocab = 50257, kEmbed = 768, kTokens = 16384;

struct embedding_data {
  fuse::tensor<float, 2> table{kVocab, kEmbed}, y{kTokens, kEmbed};
  fuse::tensor<std::int32_t, 1> ids{kTokens};
  embedding_data() {
    bench::fill_random(table, 5);
    std::uint64_t h = 6;
    for (index_t t = 0; t < kTokens; ++t) h = h * 6364136223846793005ull + 1442695040888963407ull, ids(t) = std::int32_t((h >> 33) % kVocab);
  }
  // The rows read, the output written and the indices.
  double bytes() const { return 2.0 * double(kTokens * kEmbed) * sizeof(float) + double(kTokens) * sizeof(std::int32_t); }
};

template <class Exec>
void embedding_fuse(benchmark::State& s, Exec exec) {
  embedding_data d;
  fuse::assign(exec, d.y, fuse::take(d.table, d.ids));
  for (auto _ : s) fuse::assign(exec, d.y, fuse::take(d.table, d.ids)), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

void embedding_hand(benchmark::State& s) {
  embedding_data d;
  const float* __restrict__ table = d.table.data();
  const std::int32_t* __restrict__ ids = d.ids.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t t = 0; t < kTokens; ++t) {
      const float* row = table + index_t(ids[t]) * kEmbed;
#pragma omp simd
      for (index_t k = 0; k < kEmbed; ++k) y[t * kEmbed + k] = row[k];
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

struct gated_data {
  index_t rows, cols;
  fuse::tensor<float, 2> x{rows, cols}, y{rows, cols};
  fuse::tensor<float, 1> b{cols};
  gated_data(index_t m, index_t n) : rows(m), cols(n) { bench::fill_random(x, 7), bench::fill_random(b, 8); }
  double bytes() const { return 2.0 * double(rows * cols) * sizeof(float); }
};

template <class Exec>
void gated_fuse(benchmark::State& s, index_t m, index_t n, Exec exec) {
  gated_data d(m, n);
  fuse::assign(exec, d.y, d.x * fuse::gelu(d.b));
  for (auto _ : s) fuse::assign(exec, d.y, d.x * fuse::gelu(d.b)), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

void gated_hand(benchmark::State& s, index_t m, index_t n) {
  gated_data d(m, n);
  std::vector<float> g(std::size_t(n), 0.f);
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
    for (index_t k = 0; k < n; ++k) {  // gelu, tanh form
      const float v = d.b(k);
      g[std::size_t(k)] = 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
    const float* __restrict__ gp = g.data();
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < m; ++r) {
#pragma omp simd
      for (index_t k = 0; k < n; ++k) y[r * n + k] = x[r * n + k] * gp[k];
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

constexpr index_t kCeRows = 4096, kCeCols = 8192;
struct ce_data {
  fuse::tensor<float, 2> z{kCeRows, kCeCols}, loss{kCeRows, 1};
  fuse::tensor<std::int32_t, 2> label{kCeRows, 1};
  ce_data() {
    bench::fill_random(z, 7, -4.f, 4.f);
    for (index_t i = 0; i < kCeRows; ++i) label(i, 0) = std::int32_t((i * 7919) % kCeCols);
  }
  double bytes() const { return double(kCeRows) * (double(kCeCols) + 2.0) * sizeof(float); }  // z, label, loss
};

auto ce_of(ce_data& d) {
  const std::array<index_t, 2> shape{kCeRows, kCeCols};
  return fuse::logsumexp(d.z, fuse::axis<-1>) - fuse::sum(fuse::where(fuse::iota<1>(shape) == d.label, d.z, 0.f), fuse::axis<-1>);
}

template <class Exec>
void ce_fuse(benchmark::State& s, Exec exec) {
  ce_data d;
  fuse::assign(exec, d.loss, ce_of(d));  // warm-up: the eager pool and page faults
  for (auto _ : s) fuse::assign(exec, d.loss, ce_of(d)), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

// Per row: the max, the sum of exp(z - max) (fuse::math's exp, as softmax_hand), the label's logit.
void ce_hand(benchmark::State& s) {
  ce_data d;
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < kCeRows; ++r) {
      const float* __restrict__ z = d.z.data() + r * kCeCols;
      float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
      for (index_t i = 0; i < kCeCols; ++i) mx = std::max(mx, z[i]);
      double sum = 0;
      for (index_t b = 0; b < kCeCols; b += 4096) {
        float acc = 0;
#pragma omp simd reduction(+ : acc)
        for (index_t i = b; i < std::min(kCeCols, b + 4096); ++i) acc += fuse::math::exp(z[i] - mx);
        sum += acc;
      }
      d.loss(r, 0) = float(double(mx) + std::log(sum) - double(z[d.label(r, 0)]));
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, d.bytes());
}

// --- causal softmax over attention scores [heads, seq, seq] ---
constexpr index_t kHeads = 16, kSeq = 1024;
struct causal_data {
  fuse::tensor<float, 3> x{kHeads, kSeq, kSeq}, y{kHeads, kSeq, kSeq};
  causal_data() { bench::fill_random(x, 31, -4.f, 4.f), bench::fill_random(y, 32); }
  // Query q reads keys 0..q (the kept half) and writes all kSeq.
  static double bytes() { return double(kHeads) * (double(kSeq) * (kSeq + 1) / 2 + double(kSeq) * kSeq) * sizeof(float); }
};

auto causal_of(causal_data& d) {
  const auto s = d.x.shape();
  return fuse::softmax(fuse::where(fuse::iota<2>(s) <= fuse::iota<1>(s), d.x, -INFINITY), fuse::axis<-1>);
}

template <class Exec>
void causal_fuse(benchmark::State& s, Exec exec) {
  causal_data d;
  fuse::assign(exec, d.y, causal_of(d));  // warm-up: the eager pool and page faults
  for (auto _ : s) fuse::assign(exec, d.y, causal_of(d)), benchmark::ClobberMemory();
  bench::set_bytes(s, causal_data::bytes());
}

// Per row q: the max and the sum of exp over keys 0..q (fuse::math's exp), the rest written 0.
void causal_hand(benchmark::State& s) {
  causal_data d;
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < kHeads * kSeq; ++r) {
      const index_t keep = r % kSeq + 1;
      const float* __restrict__ x = d.x.data() + r * kSeq;
      float* __restrict__ y = d.y.data() + r * kSeq;
      float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
      for (index_t i = 0; i < keep; ++i) mx = std::max(mx, x[i]);
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (index_t i = 0; i < keep; ++i) sum += (y[i] = fuse::math::exp(x[i] - mx));
      const float inv = 1.f / sum;
#pragma omp simd
      for (index_t i = 0; i < keep; ++i) y[i] *= inv;
      std::fill(y + keep, y + kSeq, 0.f);
    }
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, causal_data::bytes());
}

struct transpose_data {
  static constexpr index_t m = 4096, n = 4096;
  fuse::tensor<float, 2> x{m, n}, y{n, m};
  transpose_data() { bench::fill_random(x, 31); }
  static double bytes() { return 2.0 * double(m * n) * sizeof(float); }
};

template <class Exec>
void transpose_fuse(benchmark::State& s, Exec exec) {
  transpose_data d;
  time_assign(s, exec, d, fuse::transpose(d.x));
}

// Blocks of 32 x 32: a row of a block reads one source line pair, writes 32 destination rows.
void transpose_hand(benchmark::State& s) {
  transpose_data d;
  constexpr index_t m = transpose_data::m, n = transpose_data::n, b = 32;
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
#pragma omp parallel for schedule(static)
    for (index_t ib = 0; ib < m; ib += b)
      for (index_t jb = 0; jb < n; jb += b)
        for (index_t j = jb; j < std::min(n, jb + b); ++j)
          for (index_t i = ib; i < std::min(m, ib + b); ++i) y[j * m + i] = x[i * n + j];
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, transpose_data::bytes());
}

struct nchw_data {
  static constexpr index_t N = 32, H = 56, W = 56, C = 64;
  fuse::tensor<float, 4> x{N, H, W, C}, y{N, C, H, W};
  nchw_data() { bench::fill_random(x, 32); }
  static double bytes() { return 2.0 * double(N * H * W * C) * sizeof(float); }
};

template <class Exec>
void nchw_fuse(benchmark::State& s, Exec exec) {
  nchw_data d;
  time_assign(s, exec, d, fuse::permute<0, 3, 1, 2>(d.x));
}

// Per image and block of 32 pixels: each pixel's C values (a line's worth of reads) to C rows.
void nchw_hand(benchmark::State& s) {
  nchw_data d;
  constexpr index_t N = nchw_data::N, HW = nchw_data::H * nchw_data::W, C = nchw_data::C, b = 32;
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
#pragma omp parallel for collapse(2) schedule(static)
    for (index_t img = 0; img < N; ++img)
      for (index_t pb = 0; pb < HW; pb += b)
        for (index_t c = 0; c < C; ++c)
          for (index_t p = pb; p < std::min(HW, pb + b); ++p) y[(img * C + c) * HW + p] = x[(img * HW + p) * C + c];
    benchmark::ClobberMemory();
  }
  bench::set_bytes(s, nchw_data::bytes());
}

const auto reg = [] {
  auto add = [](const char* name, auto fn) {
    benchmark::RegisterBenchmark(name, fn)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);
  };
  add("channel_affine/copy", [](benchmark::State& s) { bench::copy_baseline(s, channel_data{}.bytes()); });
  add("channel_affine/fused", [](benchmark::State& s) { channel_fuse(s, fuse::cpu{}); });
  add("channel_affine/eager", [](benchmark::State& s) { channel_fuse(s, fuse::eager(fuse::cpu{})); });
  add("channel_affine/hand", channel_hand);
  add("channel_norm/copy", [](benchmark::State& s) { bench::copy_baseline(s, channel_data{}.bytes()); });
  add("channel_norm/fused", [](benchmark::State& s) { channel_norm_fuse(s, fuse::cpu{}); });
  add("channel_norm/eager", [](benchmark::State& s) { channel_norm_fuse(s, fuse::eager(fuse::cpu{})); });
  add("channel_norm/hand", channel_norm_hand);
  add("batch_norm_train/copy", [](benchmark::State& s) { bench::copy_baseline(s, channel_data{}.bytes()); });
  add("batch_norm_train/fused", [](benchmark::State& s) { batch_norm_train_fuse(s, fuse::cpu{}); });
  add("batch_norm_train/eager", [](benchmark::State& s) { batch_norm_train_fuse(s, fuse::eager(fuse::cpu{})); });
  add("batch_norm_train/hand", batch_norm_train_hand);
  add("batch_norm_nhwc/copy", [](benchmark::State& s) { bench::copy_baseline(s, nhwc_data{}.bytes()); });
  add("batch_norm_nhwc/fused", [](benchmark::State& s) { batch_norm_nhwc_fuse(s, fuse::cpu{}); });
  add("batch_norm_nhwc/eager", [](benchmark::State& s) { batch_norm_nhwc_fuse(s, fuse::eager(fuse::cpu{})); });
  add("batch_norm_nhwc/hand", batch_norm_nhwc_hand);
  add("column_sum/copy", [](benchmark::State& s) { bench::copy_baseline(s, column_data{}.bytes()); });
  add("column_sum/fused", [](benchmark::State& s) { column_fuse(s, fuse::cpu{}, column_sum_of); });
  add("column_sum/eager", [](benchmark::State& s) { column_fuse(s, fuse::eager(fuse::cpu{}), column_sum_of); });
  add("column_sum/hand", column_hand);
  add("column_var/copy", [](benchmark::State& s) { bench::copy_baseline(s, column_data{}.bytes()); });
  add("column_var/fused", [](benchmark::State& s) { column_fuse(s, fuse::cpu{}, column_var_of); });
  add("column_var/eager", [](benchmark::State& s) { column_fuse(s, fuse::eager(fuse::cpu{}), column_var_of); });
  add("column_var/hand", column_var_hand);
  add("column_logsumexp/copy", [](benchmark::State& s) { bench::copy_baseline(s, column_data{}.bytes()); });
  add("column_logsumexp/fused", [](benchmark::State& s) { column_fuse(s, fuse::cpu{}, column_logsumexp_of); });
  add("column_logsumexp/eager", [](benchmark::State& s) { column_fuse(s, fuse::eager(fuse::cpu{}), column_logsumexp_of); });
  add("column_logsumexp/hand", column_logsumexp_hand);
  add("image_norm/copy", [](benchmark::State& s) { bench::copy_baseline(s, image_data{}.bytes()); });
  add("image_norm/fused", [](benchmark::State& s) { image_fuse(s, fuse::cpu{}); });
  add("image_norm/eager", [](benchmark::State& s) { image_fuse(s, fuse::eager(fuse::cpu{})); });
  add("image_norm/hand", image_hand);
  add("embedding/copy", [](benchmark::State& s) { bench::copy_baseline(s, embedding_data{}.bytes()); });
  add("embedding/fused", [](benchmark::State& s) { embedding_fuse(s, fuse::cpu{}); });
  add("embedding/eager", [](benchmark::State& s) { embedding_fuse(s, fuse::eager(fuse::cpu{})); });
  add("embedding/hand", embedding_hand);
  add("transpose/copy", [](benchmark::State& s) { bench::copy_baseline(s, transpose_data::bytes()); });
  add("transpose/fused", [](benchmark::State& s) { transpose_fuse(s, fuse::cpu{}); });
  add("transpose/eager", [](benchmark::State& s) { transpose_fuse(s, fuse::eager(fuse::cpu{})); });
  add("transpose/hand", transpose_hand);
  add("nhwc_to_nchw/copy", [](benchmark::State& s) { bench::copy_baseline(s, nchw_data::bytes()); });
  add("nhwc_to_nchw/fused", [](benchmark::State& s) { nchw_fuse(s, fuse::cpu{}); });
  add("nhwc_to_nchw/eager", [](benchmark::State& s) { nchw_fuse(s, fuse::eager(fuse::cpu{})); });
  add("nhwc_to_nchw/hand", nchw_hand);
  add("causal_softmax/copy", [](benchmark::State& s) { bench::copy_baseline(s, causal_data::bytes()); });
  add("causal_softmax/fused", [](benchmark::State& s) { causal_fuse(s, fuse::cpu{}); });
  add("causal_softmax/eager", [](benchmark::State& s) { causal_fuse(s, fuse::eager(fuse::cpu{})); });
  add("causal_softmax/hand", causal_hand);
  add("cross_entropy/copy", [](benchmark::State& s) { bench::copy_baseline(s, ce_data{}.bytes()); });
  add("cross_entropy/fused", [](benchmark::State& s) { ce_fuse(s, fuse::cpu{}); });
  add("cross_entropy/eager", [](benchmark::State& s) { ce_fuse(s, fuse::eager(fuse::cpu{})); });
  add("cross_entropy/hand", ce_hand);
  for (auto [name, m, n] : {std::tuple<const char*, index_t, index_t>{"gated_bias", 8192, 1024}, {"gated_bias_cache", 512, 256}}) {
    const std::string w = name;
    add((w + "/copy").c_str(), [m, n](benchmark::State& s) { bench::copy_baseline(s, gated_data(m, n).bytes()); });
    add((w + "/fused").c_str(), [m, n](benchmark::State& s) { gated_fuse(s, m, n, fuse::cpu{}); });
    add((w + "/eager").c_str(), [m, n](benchmark::State& s) { gated_fuse(s, m, n, fuse::eager(fuse::cpu{})); });
    add((w + "/hand").c_str(), [m, n](benchmark::State& s) { gated_hand(s, m, n); });
  }
  return 0;
}();

}  // namespace

FUSE_BENCH_MAIN()
