// A view of a temporary std::vector would dangle when the statement ends.
// expect-error: error: .*fuse::view: the std::vector is a temporary
#include <fuse/fuse.hpp>

#include <vector>

int main() {
  auto v = fuse::view(std::vector<float>(8, 1.f));
  (void)v;
}
