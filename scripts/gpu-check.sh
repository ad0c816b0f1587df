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

# Two builds of everything: the defaults, and "chunk16" with FUSE_ROW_CHUNK_BYTES=16 (the register
# row kernel reading and writing 16-byte chunks; opt-in until timed, see row_registers.hpp).
variants=("" chunk16)
variant_flags() { [ "$1" = chunk16 ] && echo -DFUSE_ROW_CHUNK_BYTES=16 || true; }
suffix() { [ -n "$1" ] && echo "_$1" || true; }

build() {
  local start pids=() failed=0 src obj v extra
  start=$(date +%s)
  for v in "${variants[@]}"; do
    extra=$(variant_flags "$v")
    for src in tests/backend/cuda/*.cu; do
      obj="$bin/$(basename "$src" .cu)$(suffix "$v").o"
      nvcc "${flags[@]}" $extra -c -o "$obj" "$src" &
      pids+=($!)
    done
    nvcc "${flags[@]}" $extra -o "$bin/bench$(suffix "$v")" bench/bench_cuda.cu &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  [ "$failed" = 0 ] || { echo "gpu-check: build failed" >&2; exit 1; }
  for v in "${variants[@]}"; do
    local objs=()
    for src in tests/backend/cuda/*.cu; do objs+=("$bin/$(basename "$src" .cu)$(suffix "$v").o"); done
    nvcc -arch=sm_90 -o "$bin/tests$(suffix "$v")" "${objs[@]}" || { echo "gpu-check: link failed" >&2; exit 1; }
    rm -f "${objs[@]}"
  done
  echo "built in $(( $(date +%s) - start )) s"
}

case "$mode" in
  --dry-run) build; echo "dry run: compiled only (binaries in $bin/)"; exit 0 ;;
  --prebuilt) "$bin/tests" --help >/dev/null 2>&1 || { echo "prebuilt binaries don't start here: building"; build; } ;;
  *) build ;;
esac

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt" || true
status=0
# The timeouts turn a hang (a missing barrier, a deadlocked block) into a failure with output.
for v in "${variants[@]}"; do
  sx=$(suffix "$v")
  tests=FAIL bench=FAIL
  if timeout 120 "$bin/tests$sx" --durations yes >"$out/tests$sx.txt" 2>&1; then tests=pass; fi
  tail -4 "$out/tests$sx.txt"
  if timeout 120 "$bin/bench$sx" >"$out/bench$sx.txt" 2>&1; then bench=pass; fi
  cat "$out/bench$sx.txt"
  echo "gpu-check${v:+ ($v)}: tests $tests, bench $bench"
  [ "$tests" = pass ] && [ "$bench" = pass ] || status=1
done
exit $status
