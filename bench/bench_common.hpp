// bench/bench_common.hpp - shared setup for the benchmarks: random inputs, a copy baseline over the
// same number of bytes, and a reporter that prints every variant as GB/s and as ratios taken in
// the same run (to copy, to eager, to the hand-written loop).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fuse/fuse.hpp>

namespace bench {

template <class T, std::size_t R>
void fill_random(fuse::tensor<T, R>& t, unsigned seed, float lo = -2.f, float hi = 2.f) {
  // A cheap generator: setup of 2^25-element inputs must not dominate the run.
  std::uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (fuse::index_t i = 0; i < t.size(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float u = float(state >> 40) * (1.0f / float(1 << 24));
    t.data()[i] = static_cast<T>(lo + (hi - lo) * u);
  }
}

// Sets the byte counter: minimal bytes moved per iteration (each input read once, output written once).
inline void set_bytes(benchmark::State& s, double bytes) {
  s.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// An OpenMP copy of `bytes` total traffic (bytes/2 read, bytes/2 written), ordinary stores.
inline void copy_baseline(benchmark::State& s, double bytes) {
  const fuse::index_t n = static_cast<fuse::index_t>(bytes / 2 / sizeof(float));
  fuse::tensor<float, 1> a(n), b(n);
  fill_random(a, 1);
  fill_random(b, 2);
  float* __restrict__ pa = a.data();
  float* __restrict__ pb = b.data();
  for (auto _ : s) {
#pragma omp parallel for simd schedule(static)
    for (fuse::index_t i = 0; i < n; ++i) pb[i] = pa[i];
    benchmark::ClobberMemory();
  }
  set_bytes(s, 2.0 * double(n) * sizeof(float));
}

// Collects GB/s per "workload/variant" and prints the ratio table after the run.
class ratio_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      auto it = r.counters.find("GB/s");
      if (it == r.counters.end()) continue;
      std::string name = r.benchmark_name();
      name = name.substr(0, name.find("/min_time"));
      name = name.substr(0, name.find("/real_time"));
      if (auto p = name.find("_median"); p != std::string::npos) name = name.substr(0, p);
      gbs_[name] = it->second.value;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::map<std::string, std::map<std::string, double>> by_workload;
    for (auto& [name, v] : gbs_) {
      auto slash = name.find('/');
      by_workload[name.substr(0, slash)][name.substr(slash + 1)] = v;
    }
    std::printf("\n%-14s %-10s %9s %8s %8s %8s\n", "workload", "variant", "GB/s", "x copy", "x eager", "x hand");
    for (auto& [w, vars] : by_workload) {
      auto ref = [&](const char* k) { auto it = vars.find(k); return it == vars.end() ? 0.0 : it->second; };
      for (auto& [v, g] : vars) {
        auto ratio = [&](double r) { return r > 0 ? g / r : 0.0; };
        std::printf("%-14s %-10s %9.2f %8.2f %8.2f %8.2f\n", w.c_str(), v.c_str(), g / 1e9, ratio(ref("copy")),
                    ratio(ref("eager")), ratio(ref("hand")));
      }
    }
  }

 private:
  std::map<std::string, double> gbs_;
};

}  // namespace bench

#define FUSE_BENCH_MAIN()                                   \
  int main(int argc, char** argv) {                         \
    benchmark::Initialize(&argc, argv);                     \
    bench::ratio_reporter reporter;                         \
    benchmark::RunSpecifiedBenchmarks(&reporter);           \
    benchmark::Shutdown();                                  \
    return 0;                                               \
  }
