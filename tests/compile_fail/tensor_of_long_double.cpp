// long double is not an element type: reductions carry per-row values in double and the math
// functions exist for float and double (sum rounded to double, exp did not compile).
// expect-error: error: .*fuse::tensor<T, Rank>: T must be an arithmetic type other than long double
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<long double, 1> x(4);
  (void)x;
}
