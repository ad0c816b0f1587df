// CUDA elementwise tests: compiled by nvcc in CI (no GPU there); run where a GPU exists, against
// the CPU executor and a double-precision reference. Exit code 77 (skipped) without a GPU.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <fuse/fuse.hpp>

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed, float lo = -3.f, float hi = 3.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

template <class T, std::size_t R>
fuse::device_tensor<T, R> to_device(const fuse::tensor<T, R>& h) {
  fuse::device_tensor<T, R> d(h.shape());
  fuse::copy(d, h);
  return d;
}

template <class T, std::size_t R>
fuse::tensor<T, R> to_host(const fuse::device_tensor<T, R>& d) {
  fuse::tensor<T, R> h(d.shape());
  fuse::copy(h, d);
  return h;
}

template <std::size_t R>
fuse::tensor<float, R> random_tensor(fuse::shape_t<R> s, unsigned seed) {
  fuse::tensor<float, R> t(s);
  auto v = random_floats(static_cast<std::size_t>(t.size()), seed);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

}  // namespace

TEST_CASE("cuda: bias + gelu matches the CPU on odd shapes (vector and scalar paths)") {
  for (auto [m, n] : {std::pair<long, long>{1, 1}, {3, 17}, {301, 517}, {64, 4096}, {1000, 1024}}) {
    auto x = random_tensor<2>({m, n}, 1);
    auto b = random_tensor<1>({n}, 2);
    auto dx = to_device(x);
    auto db = to_device(b);
    fuse::device_tensor<float, 2> dy(m, n);
    fuse::assign(dy, fuse::gelu(dx + db));
    auto y = to_host(dy);
    for (long i = 0; i < m; ++i)
      for (long j = 0; j < n; ++j) {
        const double z = double(x(i, j)) + double(b(j));
        const double ref = 0.5 * z * (1 + std::tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
        REQUIRE(y(i, j) == Approx(ref).epsilon(1e-5).margin(1e-6));
      }
  }
}

// The device sigmoid divides without CUDA's range check (the denominator is in [1, 2]): its whole
// range, subnormal results (x below -87) and the special values, against double.
TEST_CASE("cuda: sigmoid and silu over the whole float range") {
  std::vector<float> v = {0.f, -0.f, 1e-30f, -1e-30f, 1e-40f, 15.9f, -15.9f, 87.f, -87.f, -88.7f, -95.f, -103.f,
                          -104.f, -110.f, 88.8f, 200.f, -200.f, 3.4e38f, -3.4e38f, INFINITY, -INFINITY, NAN};
  const auto more = random_floats(4093, 5, -110.f, 110.f);
  v.insert(v.end(), more.begin(), more.end());
  const long n = long(v.size());
  fuse::tensor<float, 1> x(n);
  std::copy(v.begin(), v.end(), x.data());
  auto dx = to_device(x);
  fuse::device_tensor<float, 1> ds(n), dsilu(n);
  fuse::assign(ds, fuse::sigmoid(dx));
  fuse::assign(dsilu, fuse::silu(dx));
  auto s = to_host(ds);
  auto si = to_host(dsilu);
  for (long i = 0; i < n; ++i) {
    const double xi = x(i);
    if (std::isnan(xi)) {
      REQUIRE(std::isnan(s(i)));
      REQUIRE(std::isnan(si(i)));
      continue;
    }
    const double ref = 1.0 / (1.0 + std::exp(-xi));
    INFO("x = " << xi);
    REQUIRE(s(i) == Approx(ref).epsilon(1e-6).margin(1e-44));
    // silu scales sigmoid's subnormal rounding (relative 1e-4 at x = -95) by x: a margin below FLT_MIN.
    if (std::isfinite(xi)) REQUIRE(si(i) == Approx(xi * ref).epsilon(1e-6).margin(1e-38));
  }
}

TEST_CASE("cuda: strided, transposed and misaligned views") {
  const long m = 129, n = 67;
  auto x = random_tensor<2>({m, n}, 3);
  auto dx = to_device(x);
  fuse::device_tensor<float, 2> dt(n, m);
  fuse::assign(dt, fuse::transpose(dx) * 2.f + 1.f);
  auto t = to_host(dt);
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < m; ++j) REQUIRE(t(i, j) == 2.f * x(j, i) + 1.f);

  // Misaligned by one element: the 16-byte path must not be taken.
  fuse::device_tensor<float, 1> buf(1001);
  fuse::copy(buf, random_tensor<1>({1001}, 4));
  auto src = fuse::device_view(buf.data() + 1, 1000);
  fuse::device_tensor<float, 1> out(1001);
  auto dst = fuse::device_view(out.data() + 1, 1000);
  fuse::assign(dst, fuse::relu(src) - src);
  auto h = to_host(buf), o = to_host(out);
  for (long i = 0; i < 1000; ++i) REQUIRE(o(i + 1) == std::max(h(i + 1), 0.f) - h(i + 1));
}

TEST_CASE("cuda: eager gives the same result as fused, and plans count kernels") {
  auto a = random_tensor<1>({100003}, 5), w = random_tensor<1>({100003}, 6);
  auto da = to_device(a), dw = to_device(w);
  fuse::device_tensor<float, 1> f(100003), e(100003);
  auto expr = fuse::max(1.5f * da + -0.5f * dw, 0.f);
  fuse::assign(fuse::cuda{}, f, expr);
  fuse::assign(fuse::eager(fuse::cuda{}), e, expr);
  auto hf = to_host(f), he = to_host(e);
  for (long i = 0; i < 100003; ++i) REQUIRE(hf(i) == Approx(he(i)).margin(1e-6));
  CHECK(fuse::plan(fuse::cuda{}, expr).kernels == 1);
  CHECK(fuse::plan(fuse::eager(fuse::cuda{}), expr).kernels == 4);
}

TEST_CASE("cuda: half and bfloat16 are computed in fp32 and stored in their type") {
  const long n = 4099;
  auto x = random_tensor<1>({n}, 7);
  fuse::tensor<__half, 1> hx(n);
  fuse::tensor<__nv_bfloat16, 1> bx(n);
  for (long i = 0; i < n; ++i) hx(i) = __float2half(x(i)), bx(i) = __float2bfloat16(x(i));
  auto dhx = to_device(hx);
  auto dbx = to_device(bx);
  fuse::device_tensor<__half, 1> dhy(n);
  fuse::device_tensor<__nv_bfloat16, 1> dby(n);
  fuse::assign(dhy, fuse::silu(dhx) * 2.f);
  fuse::assign(dby, fuse::silu(dbx) * 2.f);
  auto hy = to_host(dhy);
  auto by = to_host(dby);
  for (long i = 0; i < n; ++i) {
    const double xi = __half2float(hx(i)), xb = __bfloat162float(bx(i));
    REQUIRE(__half2float(hy(i)) == Approx(2 * xi / (1 + std::exp(-xi))).epsilon(2e-3).margin(2e-3));
    REQUIRE(__bfloat162float(by(i)) == Approx(2 * xb / (1 + std::exp(-xb))).epsilon(1e-2).margin(1e-2));
  }
}

TEST_CASE("cuda: user device lambdas, masks, gather, rank-0 eval") {
  const long v = 50, d = 33, s = 19;
  auto table = random_tensor<2>({v, d}, 8);
  fuse::tensor<int, 1> idx(s);
  for (long i = 0; i < s; ++i) idx(i) = int((i * 7) % v);
  auto dtab = to_device(table);
  auto didx = to_device(idx);
  auto emb = fuse::eval(fuse::cuda{}, fuse::map([] __host__ __device__(float a) { return a * a; }, fuse::take(dtab, didx)));
  auto h = to_host(emb);
  for (long i = 0; i < s; ++i)
    for (long j = 0; j < d; ++j) REQUIRE(h(i, j) == table(idx(i), j) * table(idx(i), j));

  fuse::device_tensor<float, 2> mask(s, s);
  fuse::assign(mask, fuse::where(fuse::iota<1>(mask.shape()) <= fuse::iota<0>(mask.shape()), 1.f, 0.f));
  auto hm = to_host(mask);
  for (long i = 0; i < s; ++i)
    for (long j = 0; j < s; ++j) REQUIRE(hm(i, j) == (j <= i ? 1.f : 0.f));

  idx(3) = int(v);  // out of range: rejected before anything is written
  auto bad = to_device(idx);
  REQUIRE_THROWS_AS(fuse::eval(fuse::cuda{}, fuse::take(dtab, bad)), fuse::index_error);
}

TEST_CASE("cuda: empty tensors launch nothing; failures raise fuse::cuda_error") {
  fuse::device_tensor<float, 2> e(0, 5), f(0, 5);
  fuse::assign(e, fuse::exp(f));
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE_THROWS_AS((fuse::device_tensor<float, 1>(fuse::index_t(1) << 50)), fuse::cuda_error);
  // The failed allocation is not reported again by the next launch (its status is consumed).
  fuse::tensor<float, 1> h(7);
  for (fuse::index_t i = 0; i < 7; ++i) h(i) = 0.25f * float(i) - 0.5f;
  fuse::device_tensor<float, 1> d(7);
  fuse::copy(d, h);
  REQUIRE_NOTHROW(fuse::assign(d, fuse::exp(d)));
  fuse::tensor<float, 1> back(7);
  fuse::copy(back, d);
  for (fuse::index_t i = 0; i < 7; ++i) REQUIRE(back(i) == Approx(std::exp(0.25 * double(i) - 0.5)).epsilon(1e-6));
}

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: CUDA tests skipped\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
