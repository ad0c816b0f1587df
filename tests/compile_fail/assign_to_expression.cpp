// An expression is not a destination: only tensors and views can be written.
// expect-error: error: .*fuse::assign: the destination must be a tensor or a view
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 1> x(4), y(4);
  fuse::assign(x + y, x);
}
