#!/usr/bin/env bash
# Quick start 2: builds and runs the whole test suite (CPU tests, compile-fail tests, and the CUDA
# tests compiled with nvcc when it is present; they run only where a GPU exists).
#   scripts/test.sh            g++ Release (+ nvcc compile of the CUDA tests)
#   scripts/test.sh clang      clang++ Release, CPU only
#   scripts/test.sh sanitize   clang++ -O0 with AddressSanitizer + UndefinedBehaviorSanitizer, CPU only
#   scripts/test.sh sanitize-ci   the same, part of it (.ci/run): the rest compiled -fsyntax-only
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
jobs=$(nproc)
config="${1:-default}"
case "$config" in
  default)
    dir=build/test
    # One differential family (1700 cases; the sanitizer configuration runs another). Each family
    # is a 5-6 min translation unit at -O3 and CI must stay well under 30 min; all three build with
    # -DFUSE_DIFF_FAMILY_LIST="0;1;2" or in scripts/diff-soak.sh.
    args=(-DCMAKE_BUILD_TYPE=Release -DFUSE_DIFF_FAMILY_LIST=0)
    # Where no GPU can run the CUDA tests they are only compiled, unoptimised, and the CUDA
    # differential test builds 4 of its 8 trees (~140 s of nvcc less; scripts/gpu-check.sh builds
    # all 8, optimised).
    if nvidia-smi -L > /dev/null 2>&1; then
      args+=(-DFUSE_CUDA_DIFF_TREES=8)
    else
      echo "test.sh: no GPU found (nvidia-smi): CUDA tests are compiled only (unoptimised), the CUDA differential test with 4 of its 8 trees"
      args+=(-DFUSE_CUDA_DIFF_TREES=4 -DFUSE_CUDA_TESTS_COMPILE_ONLY=ON)
    fi ;;
  clang)
    dir=build/clang
    args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DFUSE_ENABLE_CUDA=OFF -DFUSE_BUILD_EXAMPLES=OFF) ;;
  sanitize|sanitize-ci)
    dir=build/$config
    # clang: its ASan builds of these template-heavy TUs are faster than g++'s. -O0: it builds in
    # about a third of -O1's time and ASan checks every load and store; the omp simd loops then run
    # scalar (their vector forms are tested by the default configuration; docs/testing.md).
    # Instrumented code is slow to build and run: one differential family (1700 cases), family 1
    # so that CI covers two (the default runs family 0), and without the 2^32-element indexing
    # test (it runs in the default configuration). The per-op numerics tests (results of each
    # function against the double reference, through the kernels the other tests run) are only
    # compiled, -fsyntax-only: clang checks them, the default configuration runs them.
    # No debug information (-g1 cost 12% of the compile; reports still name the functions, and a
    # finding is reproduced with -g where it is debugged), and UBSan without its vptr and function
    # checks (10%): they check polymorphic types and calls through function pointers cast to
    # another type, of which fuse has none (docs/testing.md). The installed-package test runs in the
    # default configuration only (it does not depend on the compiler). ASan's checks as calls, not
    # inline code, and no code for stack use-after-return (clang 14's runtime leaves its detection
    # off, ASAN_OPTIONS detect_stack_use_after_return=0): 6-12% less compile time, the same checks
    # (docs/testing.md). The -mllvm option is unused where nothing is compiled (links, the
    # precompiled header): -Wno-unused-command-line-argument keeps those steps quiet.
    syntax_only="ops/test_arith.cpp;ops/test_math.cpp;math/test_scalar_math.cpp"
    args=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DFUSE_ENABLE_CUDA=OFF -DFUSE_BUILD_EXAMPLES=OFF
          -DFUSE_TEST_PACKAGE=OFF -DFUSE_DIFF_FAMILY_LIST=1 "-DFUSE_TEST_FILTER=~[large]"
          "-DCMAKE_CXX_FLAGS_DEBUG=-O0"
          "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-sanitize=vptr,function -fno-sanitize-recover=all -fno-omit-frame-pointer -fsanitize-address-use-after-return=never -mllvm -asan-instrumentation-with-call-threshold=0 -Wno-unused-command-line-argument")
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
    # sanitize-ci (what .ci/run runs; `sanitize` is the whole of it, run before a submission): CI
    # must stay well under 30 min on 2 cores, and the instrumented build of every file took 12 min
    # of CI's 34-36 on the slow machines. Instrumented, it builds and runs the differential test
    # (random trees through every kernel, 5000 cases instead of 1700: gapped, negative, permuted
    # and misaligned layouts, rows blocked by 40 elements, transposes in tiles of 8 bytes; in 5000
    # cases it ran 11443 batches of short rows, 2800 row tiles, 2732 strided copies, 9256 transpose
    # tiles) and the files whose cases it does not reach: copies, aliasing and views (core/),
    # masked intervals, the fallback. The rest is compiled -fsyntax-only: clang still instantiates
    # all of it and reports every warning (docs/testing.md).
    if [ "$config" = sanitize-ci ]; then
      export FUSE_DIFF_CASES=5000
      syntax_only+=";ops/test_map.cpp;reduce/test_layers.cpp;reduce/test_reductions.cpp;reduce/test_online.cpp"
      syntax_only+=";reduce/test_row_vectorised.cpp"
      syntax_only+=";core/test_broadcast.cpp;core/test_generators.cpp"
      syntax_only+=";plan/test_plan_numbers.cpp;plan/test_kernels.cpp"
      syntax_only+=";core/test_transpose_tiles.cpp;reduce/test_strided_rows.cpp;reduce/test_batch.cpp"
    fi
    args+=("-DFUSE_TEST_SYNTAX_ONLY=$syntax_only") ;;
  *) echo "unknown configuration: $config" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja -DFUSE_BUILD_BENCHMARKS=OFF "${args[@]}"
cmake --build "$dir" -j "$jobs"
ctest --test-dir "$dir" --output-on-failure -j "$jobs"
