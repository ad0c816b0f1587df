// full and iota are expressions, not buffers: nothing can be written into them.
// expect-error: error: .*fuse::assign: the destination must be a tensor or a view
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 1> y(4);
  fuse::full(y.shape(), 1.f) = y;
}
