// Two views with static extents that cannot broadcast: a compile error naming both shapes.
// expect-error: static_shapes_do_not_broadcast<fuse::extents<3, 4>, fuse::extents<5>
#include <fuse/fuse.hpp>

int main() {
  float a[12] = {}, b[5] = {};
  auto va = fuse::view(a, fuse::extents<3, 4>{});
  auto vb = fuse::view(b, fuse::extents<5>{});
  auto e = va + vb;
  (void)e;
}
