// A view of a temporary tensor shares it read-only: writing into it would change nothing a user
// can see.
// expect-error: error: .*fuse::assign: the destination is read-only
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(3, 4);
  auto t = fuse::transpose(fuse::eval(x * 2.f));
  t = 1.f;
}
