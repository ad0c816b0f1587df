// x /= e on an integer tensor: true division runs in double and would change int64 values above
// 2^53 on the way back; NumPy raises for it too.
// expect-error: error: .*fuse::operator/=: an integer x
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<long, 1> x(4);
  x /= 2;
}
