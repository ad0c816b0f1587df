// The mismatch is found where a static [2, 8] meets a node of static shape [2, 4] (a broadcast of
// [4] and [2, 1]) deeper in the tree.
// expect-error: static_shapes_do_not_broadcast<fuse::extents<2, 8>, fuse::extents<2, 4>
#include <fuse/fuse.hpp>

int main() {
  float a[16] = {}, b[4] = {}, c[2] = {};
  auto va = fuse::view(a, fuse::extents<2, 8>{});
  auto vb = fuse::view(b, fuse::extents<4>{});
  auto vc = fuse::view(c, fuse::extents<2, 1>{});
  auto e = va * (vb + vc);
  (void)e;
}
