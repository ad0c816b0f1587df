#!/usr/bin/env bash
# Quick start 2: builds and runs the whole test suite (CPU tests, compile-fail tests, and the CUDA
# tests compiled with nvcc when it is present; they run only where a GPU exists).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
jobs=$(nproc)
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSE_BUILD_BENCHMARKS=OFF
cmake --build build/test -j "$jobs"
ctest --test-dir build/test --output-on-failure -j "$jobs"
