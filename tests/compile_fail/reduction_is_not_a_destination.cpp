// A reduction (like any expression) is not a destination: `=` on it is a compile error that says
// so, not the compiler's "no match for operator=".
// expect-error: error: .*fuse::assign: the destination must be a tensor or a view
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(3, 4), b(1, 4);
  fuse::sum(x, fuse::axis<0>) = b;
}
