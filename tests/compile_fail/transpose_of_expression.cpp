// The views (transpose, permute, slice, reshape) are index arithmetic over memory; an expression
// has none until it is evaluated, and the error says how: transpose(fuse::eval(e)).
// expect-error: error: .*fuse::transpose: an expression .* has no memory to view; evaluate it first
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(3, 4);
  auto t = fuse::transpose(fuse::sum(x, fuse::axis<-1>));
}
