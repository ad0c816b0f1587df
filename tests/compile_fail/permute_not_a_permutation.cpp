// permute<0, 0, 2>: an axis list that is not a permutation.
// expect-error: error: .*fuse::permute: the axes must be a permutation of 0\.\.rank-1
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 3> x(2, 3, 4);
  auto p = fuse::permute<0, 0, 2>(x);
  (void)p;
}
