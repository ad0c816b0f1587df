#!/usr/bin/env bash
# Quick start 1: builds and runs the flagship example (bias + GELU, fused vs eager, plans printed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSE_BUILD_TESTS=OFF -DFUSE_BUILD_BENCHMARKS=OFF -DFUSE_ENABLE_CUDA=OFF >/dev/null
cmake --build build/release --target fused_vs_eager
build/release/examples/fused_vs_eager
