#!/usr/bin/env bash
# Local soak of the differential test (tests/diff): other tree families than CI's (tree shapes are
# compile-time, so each family base is a separate build) and many cases per family.
#   scripts/diff-soak.sh [family_base] [cases_per_family] [seed]
# A failure prints its case seed; replay it with FUSE_DIFF_REPLAY=<seed> on the same build.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:-$(( (RANDOM % 1000) * 3 + 3 ))}"
cases="${2:-200000}"
seed="${3:-$RANDOM}"
dir="build/soak-$base"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSE_BUILD_BENCHMARKS=OFF -DFUSE_BUILD_EXAMPLES=OFF \
  -DFUSE_ENABLE_CUDA=OFF "-DCMAKE_CXX_FLAGS=-DFUSE_DIFF_FAMILY_BASE=$base" > /dev/null
cmake --build "$dir" --target fuse_diff_tests -j "$(nproc)"
echo "soak: families $base..$((base + 2)), $cases cases each, seed $seed"
FUSE_DIFF_CASES="$cases" FUSE_DIFF_SEED="$seed" "$dir/tests/fuse_diff_tests"
