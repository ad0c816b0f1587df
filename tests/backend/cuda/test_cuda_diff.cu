// Differential test on CUDA: the first 8 trees of the CPU test's family 0 (tests/diff), evaluated
// by the CUDA executor, fused and eager, from device copies of the same strided leaves, against the
// double-precision reference. Runs only where a GPU exists (see test_cuda_elementwise.cu's main).
#include "diff/runner.hpp"

// How many of the family's trees (each ~35 s of nvcc): scripts/test.sh builds 4 where no GPU can
// run them (a compile check, CI time), gpu-check.sh all 8.
#ifndef FUSE_CUDA_DIFF_TREES
#define FUSE_CUDA_DIFF_TREES 8
#endif
static_assert(FUSE_CUDA_DIFF_TREES >= 1 && FUSE_CUDA_DIFF_TREES <= 8, "FUSE_CUDA_DIFF_TREES: 1 to 8 trees");

TEST_CASE("cuda differential: fused, eager and reference agree", "[cuda][diff]") {
  fuse_diff::run_family<FUSE_DIFF_FAMILY_BASE + 0, FUSE_CUDA_DIFF_TREES, true>(600);
}
