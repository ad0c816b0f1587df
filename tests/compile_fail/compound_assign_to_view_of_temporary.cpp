// A view of a temporary tensor is read-only for x += e as for x = e.
// expect-error: error: .*fuse::operator\*=: the destination is read-only
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(3, 4);
  fuse::transpose(fuse::eval(x + 1.f)) *= 2.f;
}
