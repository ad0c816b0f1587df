// tests/diff/test_diff_1.cpp - differential test, tree family 1 (one family per translation unit,
// so that the families build in parallel).
#include "diff/runner.hpp"

TEST_CASE("differential: fused, eager and reference agree (family 1)", "[diff][family1]") {
  fuse_diff::run_family<FUSE_DIFF_FAMILY_BASE + 1, 24>();
}
