// The same axis named twice in axes<...>.
// expect-error: error: .*fuse::reduce: an axis is named twice
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 3> x(2, 3, 4);
  auto s = fuse::sum(x, fuse::axes<1, -2>);
  (void)s;
}
