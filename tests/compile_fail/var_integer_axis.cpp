// A plain integer is not an axis: var(x, 1) is rejected at the call, as sum(x, 1) is (it failed
// deep inside the reduction).
// expect-error: error: no matching function for call to .*var
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<float, 2> x(2, 3);
  auto v = fuse::var(x, 1);
  (void)v;
}
