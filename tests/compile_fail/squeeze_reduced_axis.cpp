// squeeze of an axis that a reduction reduces: the result would drop an axis of the reduction alone.
// expect-error: error: .*fuse::squeeze: cannot drop an axis that a reduction reduces
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(2, 3);
  auto s = fuse::squeeze<-1>(fuse::max(x, fuse::axis<-1>));
  (void)s;
}
