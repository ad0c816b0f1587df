// fuse::copy between a rank-1 and a rank-2 view.
// expect-error: error: .*fuse::copy: dst and src have different ranks
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 1> a(16);
  fuse::tensor<float, 2> b(2, 8);
  fuse::copy(a, b);
}
