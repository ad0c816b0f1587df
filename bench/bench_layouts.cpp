// bench/bench_layouts.cpp - the layouts a probe found slow (2026-12-03), fused vs eager vs a
// hand-written OpenMP loop, as GB/s of minimal traffic and ratios to a copy of the same bytes:
//   channel_affine  y = x * scale[C, 1, 1] + shift[C, 1, 1] on NCHW [16, 64, 112, 112] (a
//                   batch-norm epilogue: leaves of stride 0 along the rows, backend/cpu/splat.hpp)
//   column_sum      sum(x, axis<0>) on [8192, 4096] (backend/cpu/column_reduce.hpp)
//   embedding       take(table[50257, 768], ids[16384]) -> [16384, 768], GPT-2's token lookup
//                   (one table row per index: core/evaluator.hpp, take_eval)
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

struct column_data {
  fuse::tensor<float, 2> x{kRows, kCols}, y{1, kCols};
  column_data() { bench::fill_random(x, 4); }
  double bytes() const { return double(kRows + 1) * double(kCols) * sizeof(float); }
};

template <class Exec>
void column_fuse(benchmark::State& s, Exec exec) {
  column_data d;
  fuse::assign(exec, d.y, fuse::sum(d.x, fuse::axis<0>));
  for (auto _ : s) fuse::assign(exec, d.y, fuse::sum(d.x, fuse::axis<0>)), benchmark::ClobberMemory();
  bench::set_bytes(s, d.bytes());
}

// Each thread sums its own band of columns over all rows in float (no blocking: the baseline a
// user would write).
void column_hand(benchmark::State& s) {
  column_data d;
  const float* __restrict__ x = d.x.data();
  float* __restrict__ y = d.y.data();
  for (auto _ : s) {
#pragma omp parallel
    {
#if defined(_OPENMP)
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
      const int t = 0, nt = 1;
#endif
      const index_t j0 = kCols * t / nt, j1 = kCols * (t + 1) / nt;
      for (index_t j = j0; j < j1; ++j) y[j] = 0.f;
      for (index_t i = 0; i < kRows; ++i) {
#pragma omp simd
        for (index_t j = j0; j < j1; ++j) y[j] += x[i * kCols + j];
      }
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

const auto reg = [] {
  auto add = [](const char* name, auto fn) {
    benchmark::RegisterBenchmark(name, fn)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);
  };
  add("channel_affine/copy", [](benchmark::State& s) { bench::copy_baseline(s, channel_data{}.bytes()); });
  add("channel_affine/fused", [](benchmark::State& s) { channel_fuse(s, fuse::cpu{}); });
  add("channel_affine/eager", [](benchmark::State& s) { channel_fuse(s, fuse::eager(fuse::cpu{})); });
  add("channel_affine/hand", channel_hand);
  add("column_sum/copy", [](benchmark::State& s) { bench::copy_baseline(s, column_data{}.bytes()); });
  add("column_sum/fused", [](benchmark::State& s) { column_fuse(s, fuse::cpu{}); });
  add("column_sum/eager", [](benchmark::State& s) { column_fuse(s, fuse::eager(fuse::cpu{})); });
  add("column_sum/hand", column_hand);
  add("embedding/copy", [](benchmark::State& s) { bench::copy_baseline(s, embedding_data{}.bytes()); });
  add("embedding/fused", [](benchmark::State& s) { embedding_fuse(s, fuse::cpu{}); });
  add("embedding/eager", [](benchmark::State& s) { embedding_fuse(s, fuse::eager(fuse::cpu{})); });
  add("embedding/hand", embedding_hand);
  return 0;
}();

}  // namespace

FUSE_BENCH_MAIN()
