#!/usr/bin/env bash
# Builds the CPU benchmarks (Release) and runs them the way docs/performance.md records them:
# 2 threads, 10 repetitions of every benchmark in random order (Google Benchmark's
# --benchmark_enable_random_interleaving), medians. On these shared 2-vCPU machines the memory
# speed drifts by up to 1.5x within a minute; interleaving puts a copy, a fused and an eager
# repetition side by side, so the ratios taken in one run compare like with like (the copy
# baseline of softmax [64, 262144] moved 28.9 -> 43.9 GB/s between two plain runs, while the
# ratios of two interleaved runs agreed within 0.03).
#   scripts/bench.sh                  both benchmarks
#   scripts/bench.sh reduce           bench_reduce only (or: elementwise, layouts)
#   scripts/bench.sh reduce --benchmark_filter='^softmax/'   extra flags go to the benchmark
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
[ $# -gt 0 ] && shift
case "$which" in
  all) targets=(elementwise reduce) ;;
  elementwise | reduce | layouts) targets=("$which") ;;
  *) echo "unknown benchmark: $which (all, elementwise, reduce, layouts)" >&2; exit 2 ;;
esac
scripts/install-deps.sh
cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSE_BUILD_TESTS=OFF -DFUSE_BUILD_EXAMPLES=OFF \
  -DFUSE_ENABLE_CUDA=OFF >/dev/null
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
for t in "${targets[@]}"; do
  cmake --build build/bench --target "bench_$t"
  echo "=== bench_$t, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), OMP_NUM_THREADS=$OMP_NUM_THREADS"
  "build/bench/bench/bench_$t" --benchmark_repetitions=10 --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true "$@"
done
