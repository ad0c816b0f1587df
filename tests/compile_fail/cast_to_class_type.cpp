// cast<U> to a type a tensor cannot hold (tensor storage is raw memory of numbers).
// expect-error: error: .*fuse::cast<U>: U must be an arithmetic type
#include <fuse/fuse.hpp>

#include <string>

int main() {
  fuse::tensor<float, 1> x(4);
  auto e = fuse::cast<std::string>(x);
  (void)e;
}
