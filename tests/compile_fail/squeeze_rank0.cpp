// squeeze of a rank-0 tensor: one error, then nothing more (clang 14 used to run out of memory
// instantiating a view of rank 2^64 - 1).
// expect-error: error: .*fuse::squeeze: a rank-0 expression has no axis to remove
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 0> t;
  auto e = fuse::squeeze<0>(t);
  (void)e;
}
