// A reduction over an axis the expression does not have.
// expect-error: error: .*fuse::reduce: axis out of range for this rank
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(3, 4);
  auto s = fuse::sum(x, fuse::axis<2>);
  (void)s;
}
