// unsqueeze<-4> of a rank-2 expression (valid: -3 .. 2).
// expect-error: error: .*fuse::axis: axis out of range for this rank
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(1, 4);
  auto s = fuse::unsqueeze<-4>(x + 1.f);
  (void)s;
}
