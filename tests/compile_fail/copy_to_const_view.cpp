// fuse::copy into a view of const data: the first error is copy's own, not assign's.
// expect-error: error: .*fuse::copy: the destination is read-only \(a view of const data\)
#include <fuse/fuse.hpp>

int main() {
  const float a[4] = {1, 2, 3, 4};
  float b[4] = {};
  fuse::copy(fuse::view(a, 4), fuse::view(b, 4));
}
