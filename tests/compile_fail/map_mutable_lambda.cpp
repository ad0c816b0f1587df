// A mutable lambda in map: kernels call the callable as const, from several threads at once.
// expect-error: error: .*fuse::map: the callable must be callable as const
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 1> x(4);
  int calls = 0;
  auto e = fuse::map([calls](float v) mutable { ++calls; return v; }, x);
  (void)e;
}
