// The view of a const tensor is a view of const data.
// expect-error: error: .*fuse::assign: the destination is read-only
#include <fuse/fuse.hpp>

int main() {
  const fuse::tensor<float, 2> x(2, 3);
  fuse::tensor<float, 2> y(2, 3);
  fuse::assign(fuse::transpose(fuse::transpose(x)), y * 2.f);
}
