// take() with floating-point indices.
// expect-error: error: .*fuse::take: indices must have an integer type
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> table(10, 4);
  fuse::tensor<float, 1> idx(3);
  auto g = fuse::take(table, idx);
  (void)g;
}
