// tests/diff/test_diff_0.cpp - differential test, tree family 0 (one family per translation unit,
// so that the families build in parallel).
#include "diff/runner.hpp"

TEST_CASE("differential: fused, eager and reference agree (family 0)", "[diff][family0]") {
  fuse_diff::run_family<FUSE_DIFF_FAMILY_BASE + 0, 24>();
}
