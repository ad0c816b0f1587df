// squeeze<2> of a rank-2 tensor.
// expect-error: error: .*fuse::axis: axis out of range for this rank
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(1, 4);
  auto s = fuse::squeeze<2>(x);
  (void)s;
}
