// tests/diff/test_diff_2.cpp - differential test, tree family 2 (one family per translation unit,
// so that the families build in parallel).
#include "diff/runner.hpp"

TEST_CASE("differential: fused, eager and reference agree (family 2)", "[diff][family2]") {
  fuse_diff::run_family<FUSE_DIFF_FAMILY_BASE + 2, 24>();
}
