// A view of const data can be read, not written.
// expect-error: error: .*fuse::assign: the destination is read-only
#include <fuse/fuse.hpp>

int main() {
  const float a[4] = {1, 2, 3, 4};
  float b[4] = {};
  auto ro = fuse::view(a, 4);
  ro = fuse::view(b, 4) + 1.f;
}
