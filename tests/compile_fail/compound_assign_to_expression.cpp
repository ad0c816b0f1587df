// x += e needs a tensor or a view on the left, as x = e does.
// expect-error: error: .*fuse::operator\+=: the destination must be a tensor or a view
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 1> x(4), y(4);
  (x + y) += y;
}
