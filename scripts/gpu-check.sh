#!/usr/bin/env bash
# One call on a GPU machine: build the CUDA tests and benchmarks for sm_90, run them, print a short
# table (GB/s, fraction of measured device copy bandwidth, pass/fail). Under 5 minutes.
#   scripts/gpu-check.sh             build (one nvcc per source file, in parallel) and run
#   scripts/gpu-check.sh --dry-run   build only (for machines without a GPU); keeps build-gpu/
#   scripts/gpu-check.sh --prebuilt  run the binaries a dry run left in build-gpu/ (built on
#                                    another machine to save device time), or in the archive
#                                    build-gpu/prebuilt.tar.xz it also leaves (stripped, ~30 MB: carry
#                                    that one); builds if they don't start
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

# Builds: the defaults; "chunk16" with FUSE_ROW_CHUNK_BYTES=16 (the register row kernel reading and
# writing 16-byte chunks; opt-in until timed, see row_registers.hpp); and two of the benchmark
# alone, to time against the default in the same run: "slot_tests" (FUSE_ROW_SLOT_TESTS=1, the
# register kernel with a test per slot, as timed on the H200 until 2026-11-30) and "blocks3"
# (FUSE_ROW_REGISTER_MIN_BLOCKS=3: 80 registers, some spills, more resident warps); and
# "unroll2" (FUSE_ELEMENTWISE_UNROLL=2: elementwise threads take 32 bytes of a row at a time); and
# "tested" (FUSE_ROW_EXACT_REGISTERS=0: every register kernel tests each occurrence of the source's
# type at run time, as before 2026-12-07, against the default's kernels without loads).
variants=("" chunk16 slot_tests blocks3 unroll2 tested)
variant_flags() {
  case "$1" in
    chunk16) echo -DFUSE_ROW_CHUNK_BYTES=16 ;;
    slot_tests) echo -DFUSE_ROW_SLOT_TESTS=1 ;;
    blocks3) echo -DFUSE_ROW_REGISTER_MIN_BLOCKS=3 ;;
    unroll2) echo -DFUSE_ELEMENTWISE_UNROLL=2 ;;
    tested) echo -DFUSE_ROW_EXACT_REGISTERS=0 ;;
  esac
}
has_tests() { [ -z "$1" ] || [ "$1" = chunk16 ]; }
suffix() { [ -n "$1" ] && echo "_$1" || true; }

build() {
  local start pids=() failed=0 src obj v extra
  start=$(date +%s)
  for v in "${variants[@]}"; do
    extra=$(variant_flags "$v")
    if has_tests "$v"; then
      for src in tests/backend/cuda/*.cu; do
        obj="$bin/$(basename "$src" .cu)$(suffix "$v").o"
        nvcc "${flags[@]}" $extra -c -o "$obj" "$src" &
        pids+=($!)
      done
    fi
    nvcc "${flags[@]}" $extra -o "$bin/bench$(suffix "$v")" bench/bench_cuda.cu &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  [ "$failed" = 0 ] || { echo "gpu-check: build failed" >&2; exit 1; }
  for v in "${variants[@]}"; do
    has_tests "$v" || continue
    local objs=()
    for src in tests/backend/cuda/*.cu; do objs+=("$bin/$(basename "$src" .cu)$(suffix "$v").o"); done
    nvcc -arch=sm_90 -o "$bin/tests$(suffix "$v")" "${objs[@]}" || { echo "gpu-check: link failed" >&2; exit 1; }
    rm -f "${objs[@]}"
  done
  echo "built in $(( $(date +%s) - start )) s"
  # What --prebuilt needs, stripped and compressed: the binaries are ~110 MB, over what a device
  # call carries (64 MiB).
  local files=()
  for v in "${variants[@]}"; do
    files+=("bench$(suffix "$v")")
    has_tests "$v" && files+=("tests$(suffix "$v")")
  done
  (cd "$bin" && strip "${files[@]}" && tar -cJf prebuilt.tar.xz "${files[@]}")
  echo "archive: $bin/prebuilt.tar.xz ($(du -h "$bin/prebuilt.tar.xz" | cut -f1))"
}

case "$mode" in
  --dry-run) build; echo "dry run: compiled only (binaries in $bin/)"; exit 0 ;;
  --prebuilt)
    [ ! -f "$bin/prebuilt.tar.xz" ] || tar -xJf "$bin/prebuilt.tar.xz" -C "$bin"
    "$bin/tests" --help >/dev/null 2>&1 || { echo "prebuilt binaries don't start here: building"; build; } ;;
  *) build ;;
esac

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt" || true
status=0
# The timeouts turn a hang (a missing barrier, a deadlocked block) into a failure with output.
for v in "${variants[@]}"; do
  sx=$(suffix "$v")
  tests=FAIL bench=FAIL
  if ! has_tests "$v"; then
    tests=none
  elif timeout 120 "$bin/tests$sx" --durations yes >"$out/tests$sx.txt" 2>&1; then
    tests=pass
  fi
  [ "$tests" = none ] || tail -4 "$out/tests$sx.txt"
  if timeout 120 "$bin/bench$sx" >"$out/bench$sx.txt" 2>&1; then bench=pass; fi
  cat "$out/bench$sx.txt"
  echo "gpu-check${v:+ ($v)}: tests $tests, bench $bench"
  [ "$tests" != FAIL ] && [ "$bench" = pass ] || status=1
done
exit $status
