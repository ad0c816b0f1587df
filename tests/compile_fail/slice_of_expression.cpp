// slice views memory; `x + 1.f` has none until it is evaluated.
// expect-error: error: .*fuse::slice: an expression .* has no memory to view; evaluate it first
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(3, 4);
  auto s = fuse::slice<0>(x + 1.f, 0, 2);
}
