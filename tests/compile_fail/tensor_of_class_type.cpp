// A tensor of a class type (its storage would never be constructed).
// expect-error: error: .*fuse::tensor<T, Rank>: T must be an arithmetic type
#include <fuse/fuse.hpp>

#include <string>

int main() {
  fuse::tensor<std::string, 1> t(3);
  (void)t;
}
