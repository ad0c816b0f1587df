// Built against an installed fuse: a row kernel and a full reduction, checked against plain loops.
#include <fuse/fuse.hpp>

#include <cmath>
#include <cstdio>

int main() {
  fuse::tensor<float, 2> x(5, 7);
  for (fuse::index_t i = 0; i < x.size(); ++i) x.data()[i] = float((i * 37) % 11) - 4.5f;
  const float total = fuse::eval(fuse::sum(fuse::softmax(x, fuse::axis<-1>)));
  double want = 0;
  for (fuse::index_t i = 0; i < x.size(); ++i) want += x.data()[i];
  const double s = fuse::eval(fuse::sum(fuse::cast<double>(x)));
  const bool ok = std::fabs(total - 5.0f) < 1e-5f && s == want;
  std::printf("%s: sum(softmax(x)) = %g (want 5), sum(x) = %g (want %g)\n", ok ? "ok" : "FAIL", total, s, want);
  return ok ? 0 : 1;
}
