#!/usr/bin/env bash
# Installs what fuse's build, tests and benchmarks need on Debian, skipping what is present.
set -euo pipefail
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
command -v clang++ >/dev/null || need+=(clang)
[ -f /usr/include/catch2/catch.hpp ] || need+=(catch2)
[ -f /usr/include/benchmark/benchmark.h ] || need+=(libbenchmark-dev)
[ -d /usr/include/eigen3 ] || need+=(libeigen3-dev)
# clang's AddressSanitizer / UBSan runtime (scripts/test.sh sanitize).
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.asan-x86_64.a" >/dev/null || need+=(libclang-rt-dev)
# LLVM's linker: the test binaries link in a tenth of GNU ld's time with it (tests/CMakeLists.txt).
command -v ld.lld >/dev/null || need+=(lld)
[ -f /usr/lib/llvm-14/lib/libomp.so ] || [ -f /usr/lib/x86_64-linux-gnu/libomp.so ] || need+=(libomp-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
