// assign(y, e) with static extents on both sides that cannot match: [2, 16] into [2, 8].
// expect-error: static_shape_cannot_be_assigned_to<fuse::extents<2, 16>, fuse::extents<2, 8>
#include <fuse/fuse.hpp>

int main() {
  float a[32] = {}, b[16] = {};
  auto x = fuse::view(a, fuse::extents<2, 16>{});
  auto o = fuse::view(b, fuse::extents<2, 8>{});
  o = x * 2.f;
}
