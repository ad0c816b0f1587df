#!/usr/bin/env bash
# One call on a GPU machine: build the CUDA tests and benchmarks for sm_90, run them, print a short
# table (GB/s, fraction of measured device copy bandwidth, pass/fail). Under 5 minutes.
#   scripts/gpu-check.sh            build and run
#   scripts/gpu-check.sh --dry-run  build only (for machines without a GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
out="${OUT:-build/gpu-check}"
mkdir -p "$out"
flags=(-std=c++20 --extended-lambda --expt-relaxed-constexpr -O3 -arch=sm_90 -Iinclude -Xcompiler=-fno-math-errno)
# Catch2 comes from Debian's package; a machine without it gets a copy carried in build/catch2-include
# (prepare with: mkdir -p build/catch2-include && cp -r /usr/include/catch2 build/catch2-include/).
catch_inc=()
[ -f /usr/include/catch2/catch.hpp ] || catch_inc=(-Ibuild/catch2-include)
start=$(date +%s)
nvcc "${flags[@]}" "${catch_inc[@]}" -Itests -o build-gpu-tests tests/backend/cuda/*.cu &
tests_pid=$!
nvcc "${flags[@]}" -o build-gpu-bench bench/bench_cuda.cu &
bench_pid=$!
built=0
wait "$tests_pid" || built=1
wait "$bench_pid" || built=1
[ "$built" = 0 ] || { echo "gpu-check: build failed" >&2; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
if [ "${1:-}" = "--dry-run" ]; then rm -f build-gpu-tests build-gpu-bench; echo "dry run: compiled only"; exit 0; fi
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv,noheader | tee "$out/gpu.txt"
status=0
./build-gpu-tests 2>&1 | tee "$out/tests.txt" | tail -5 || status=1
./build-gpu-bench 2>&1 | tee "$out/bench.txt" || status=1
rm -f build-gpu-tests build-gpu-bench
echo "gpu-check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
