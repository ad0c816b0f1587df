// axes<> with no axis (NumPy's axis=() would return x itself; here it is a mistake to report).
// expect-error: error: .*fuse::reduce: axes<> names no axis
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(2, 3);
  auto s = fuse::sum(x, fuse::axes<>);
  (void)s;
}
