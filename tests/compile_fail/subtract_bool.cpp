// bool - bool: NumPy raises TypeError; the modulo-2 difference is xor, spelled !=.
// expect-error: error: .*fuse::operator-: bool - bool is not supported
#include <fuse/fuse.hpp>

int main() {
  fuse::tensor<bool, 1> b(4);
  auto e = b - (b && b);
  (void)e;
}
