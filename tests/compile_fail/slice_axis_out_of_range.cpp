// slice<2> of a rank-2 tensor.
// expect-error: error: .*fuse::axis: axis out of range for this rank
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(3, 4);
  auto s = fuse::slice<2>(x, 0, 1);
  (void)s;
}
