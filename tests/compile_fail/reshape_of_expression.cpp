// reshape, like the other views, is index arithmetic over memory; an expression has none until it
// is evaluated. The overload gives back a view of the new rank, so that the use below (rank 1) adds
// no second error after this one.
// expect-error: error: .*fuse::reshape: an expression .* has no memory to view; evaluate it first
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(3, 4);
  auto r = fuse::eval(fuse::reshape(x * 2.f, 12));
  return int(r(5));
}
