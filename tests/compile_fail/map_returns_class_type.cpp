// A map callable that returns something other than a number.
// expect-error: error: .*fuse::map: the callable must return an arithmetic value
#include <fuse/fuse.hpp>

#include <vector>

int main() {
  fuse::tensor<float, 1> x(4);
  auto e = fuse::map([](float v) { return std::vector<float>(2, v); }, x);
  (void)e;
}
