#!/usr/bin/env bash
# One call on a GPU machine: build the CUDA tests and benchmarks for sm_90, run them, print a short
# table (GB/s, fraction of measured device copy bandwidth, pass/fail). Under 5 minutes.
#   scripts/gpu-check.sh             build (one nvcc per source file, in parallel) and run
#   scripts/gpu-check.sh --dry-run   build only (for machines without a GPU); keeps build-gpu/
#   scripts/gpu-check.sh --prebuilt  run the binaries a dry run left in build-gpu/ (built on
#                                    another machine to save device time); builds if they don't start
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
mode="${1:-}"
out="${OUT:-build-gpu/out}"
bin=build-gpu
mkdir -p "$out" "$bin"
flags=(-std=c++20 --extended-lambda --expt-relaxed-constexpr -O3 -arch=sm_90 -Iinclude -Itests -Xcompiler=-fno-math-errno)
# Catch2 comes from Debian's package; a machine without it gets a copy carried in build-gpu/catch2-include.
if [ -f /usr/include/catch2/catch.hpp ]; then
  mkdir -p "$bin/catch2-include" && cp -r /usr/include/catch2 "$bin/catch2-include/"
fi
flags+=(-I"$bin/catch2-include")

build() {
  local start pids=() failed=0 src obj objs=()
  start=$(date +%s)
  for src in tests/backend/cuda/*.cu; do
    obj="$bin/$(basename "$src" .cu).o"
    objs+=("$obj")
    nvcc "${flags[@]}" -c -o "$obj" "$src" &
    pids+=($!)
  done
  nvcc "${flags[@]}" -o "$bin/bench" bench/bench_cuda.cu &
  pids+=($!)
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  [ "$failed" = 0 ] && nvcc -arch=sm_90 -o "$bin/tests" "${objs[@]}" || { echo "gpu-check: build failed" >&2; exit 1; }
  rm -f "${objs[@]}"
  echo "built in $(( $(date +%s) - start )) s"
}

case "$mode" in
  --dry-run) build; echo "dry run: compiled only (binaries in $bin/)"; exit 0 ;;
  --prebuilt) "$bin/tests" --help >/dev/null 2>&1 || { echo "prebuilt binaries don't start here: building"; build; } ;;
  *) build ;;
esac

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt" || true
tests=FAIL bench=FAIL
# The timeouts turn a hang (a missing barrier, a deadlocked block) into a failure with output.
if timeout 150 "$bin/tests" --durations yes >"$out/tests.txt" 2>&1; then tests=pass; fi
tail -4 "$out/tests.txt"
if timeout 150 "$bin/bench" >"$out/bench.txt" 2>&1; then bench=pass; fi
cat "$out/bench.txt"
echo "gpu-check: tests $tests, bench $bench"
[ "$tests" = pass ] && [ "$bench" = pass ]
