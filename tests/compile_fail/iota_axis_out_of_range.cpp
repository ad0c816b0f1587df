// iota<-3> over a rank-2 shape.
// expect-error: error: .*fuse::axis: axis out of range for this rank
#include <fuse/fuse.hpp>

int main() {
  auto i = fuse::iota<-3>(fuse::shape_t<2>{3, 4});
  (void)i;
}
