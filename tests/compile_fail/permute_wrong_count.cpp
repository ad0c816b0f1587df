// permute<1, 0> of a rank-3 tensor: one axis per dimension is needed.
// expect-error: error: .*fuse::permute: give one axis per dimension
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 3> x(2, 3, 4);
  auto p = fuse::permute<1, 0>(x);
  (void)p;
}
