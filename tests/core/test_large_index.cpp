// 64-bit indexing: expressions of more than 2^32 elements, through stride-0 views with no memory
// behind them (one element is read 2^32 + 3 times), so that a 32-bit index or count would wrap.
#include "support.hpp"

using namespace fuse_test;

TEST_CASE("64-bit indexing: a stride-0 view of 2^32 + 3 elements", "[core][index][large]") {
  const index_t n = (index_t(1) << 32) + 3;
  const int one = 1;
  auto v = fuse::view(&one, shape<1>{n}, shape<1>{0});
  REQUIRE(v.size() == n);
  // Every element counted once: a 32-bit count would give 3.
  CHECK(fuse::eval(fuse::sum(fuse::cast<index_t>(v))) == n);
  // The largest index is 2^32 + 2: a 32-bit index would wrap to 2.
  CHECK(fuse::eval(fuse::max(fuse::iota<0>(v.shape()) + v)) == n);
  // Rows longer than 2^32, reduced per row (row kernel), with a broadcast value per row.
  const double half = 0.5;
  auto w = fuse::view(&half, shape<2>{2, n}, shape<2>{0, 0});
  const double scale[2] = {1.0, -2.0};
  auto col = fuse::view(scale, fuse::extents<2, 1>{});
  auto s = fuse::eval(fuse::sum(w * col, fuse::axis<-1>));
  CHECK(s(0, 0) == 0.5 * double(n));
  CHECK(s(1, 0) == -1.0 * double(n));
}
