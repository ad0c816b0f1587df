// std::complex is trivially copyable but no number fuse computes with (it does not convert to
// float, as __half does): rejected where the view is made, not deep inside a node.
// expect-error: error: .*fuse::view: the element type must be an arithmetic type
#include <complex>
#include <fuse/fuse.hpp>

int main() {
  std::complex<float> data[4] = {};
  auto v = fuse::view(data, 4);
  (void)v;
}
