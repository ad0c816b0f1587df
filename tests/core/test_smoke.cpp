#include <catch2/catch.hpp>
#include <fuse/fuse.hpp>

TEST_CASE("smoke: bias + gelu fused equals eager") {
  fuse::tensor<float, 2> x(3, 5);
  fuse::tensor<float, 1> b(5);
  for (int i = 0; i < 15; ++i) x.data()[i] = float(i) * 0.1f - 0.7f;
  for (int i = 0; i < 5; ++i) b(i) = float(i);
  auto y = fuse::eval(fuse::gelu(x + b));
  auto z = fuse::eval(fuse::eager(fuse::cpu{}), fuse::gelu(x + b));
  for (int i = 0; i < 15; ++i) CHECK(y.data()[i] == Approx(z.data()[i]));
}
