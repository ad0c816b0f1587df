// Unary minus of a bool expression: NumPy raises TypeError; -true would be true modulo 2.
// expect-error: error: .*fuse::operator-: negating a bool expression is not supported
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 1> x(4);
  auto e = -(x > 0.f);
  (void)e;
}
