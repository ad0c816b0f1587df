// The fusion plan's kernel counts (spec section 5): any elementwise / broadcast tree, with views,
// generators (full, iota, take) and user maps, is one fused kernel (checked at compile time and in
// the run-time plan); the eager plan runs one kernel per interior node (operators and functions;
// scalars, views and generators are none).
#include "ops/ops_support.hpp"

namespace {
using fuse::index_t;
using fuse::shape_t;

// kernels_v == 1 at compile time, and the run-time plans (default, explicit executor) agree.
#define CHECK_ONE_KERNEL(...)                                                                       \
  do {                                                                                              \
    auto e_ = (__VA_ARGS__);                                                                        \
    static_assert(fuse::kernels_v<decltype(e_)> == 1, "one fused kernel: " #__VA_ARGS__);           \
    INFO(#__VA_ARGS__);                                                                             \
    CHECK(fuse::kernels_v<decltype(e_)> == 1);                                                      \
    CHECK(fuse::plan(e_).kernels == 1);                                                             \
    CHECK(fuse::plan(fuse::cpu{.threads = 1}, e_).kernels == 1);                                    \
  } while (0)

// The eager plan: `nodes` kernels, at compile time (eager_kernels_v) and at run time.
#define CHECK_EAGER_KERNELS(nodes, ...)                                                             \
  do {                                                                                              \
    auto e_ = (__VA_ARGS__);                                                                        \
    static_assert(fuse::eager_kernels_v<decltype(e_)> == (nodes), "eager kernels: " #__VA_ARGS__);  \
    INFO(#__VA_ARGS__);                                                                             \
    CHECK(fuse::plan(fuse::eager(fuse::cpu{}), e_).kernels == std::size_t(nodes));                  \
  } while (0)

struct operands {
  index_t m = 6, n = 10;
  fuse::tensor<float, 2> x{6, 10}, y{6, 10}, sq{10, 10};
  fuse::tensor<float, 1> bias{10};
  fuse::tensor<double, 2> d{6, 10};
  fuse::tensor<std::int32_t, 2> k{6, 10};
  fuse::tensor<float, 2> table{100, 10};
  fuse::tensor<std::int32_t, 1> idx{6};
  fuse::tensor<std::int64_t, 2> idx2{2, 3};
  std::vector<float> row_mem = std::vector<float>(10, 1.f);
  operands() {
    for (auto* t : {&x, &y, &sq, &table}) ops_test::fill_random(*t, -2, 2);
    ops_test::fill_random(bias, -2, 2);
    ops_test::fill_random(d, -2, 2);
    ops_test::fill_random(k, -5, 5);
    for (index_t i = 0; i < 6; ++i) idx(i) = std::int32_t((i * 37) % 100);
    for (index_t i = 0; i < 6; ++i) idx2.data()[i] = (i * 53) % 100;
  }
  shape_t<2> s() const { return {m, n}; }
  // A (m, n) read-only view of one row: stride 0 along axis 0.
  auto row_view() const { return fuse::view(row_mem.data(), shape_t<2>{m, n}, shape_t<2>{0, 1}); }
};

}  // namespace

TEST_CASE("kernels_v is 1 for elementwise and broadcast trees", "[plan][kernels]") {
  operands o;
  auto& x = o.x;
  auto& y = o.y;
  auto& bias = o.bias;
  CHECK_ONE_KERNEL(x + y);
  CHECK_ONE_KERNEL(-x);
  CHECK_ONE_KERNEL(x * 2.f + 1.f);
  CHECK_ONE_KERNEL(fuse::gelu(x + bias));
  CHECK_ONE_KERNEL(fuse::gelu_erf(x * y + bias) - fuse::silu(x));
  CHECK_ONE_KERNEL(fuse::where(x > 0, x, 0.1f * x));
  CHECK_ONE_KERNEL(fuse::clamp(fuse::exp(x) / (1.f + fuse::sigmoid(y)), -1.f, fuse::abs(bias)));
  CHECK_ONE_KERNEL(((x < y) && !(x == 0.5f)) || (y >= bias));
  CHECK_ONE_KERNEL(fuse::pow(fuse::softplus(x), fuse::square(y)) + fuse::rsqrt(fuse::sqrt(fuse::abs(x) + 1)));
  CHECK_ONE_KERNEL(fuse::min(fuse::max(x, y), bias) * fuse::log(fuse::log1p(fuse::abs(x)) + 1) +
                   fuse::expm1(fuse::sin(x) * fuse::cos(y)) + fuse::tanh(fuse::erf(x)) + fuse::relu(y));
  CHECK_ONE_KERNEL(fuse::cast<double>(x) * o.d + fuse::cast<float>(o.k));
  CHECK_ONE_KERNEL(o.k + 2);
  CHECK_ONE_KERNEL(fuse::exp(o.k));
  // A deep chain: 24 nodes (named steps, held by value), one kernel; the eager plan runs 24.
  auto c1 = (((x + 1) * 2) - 3) / 4;
  auto c2 = (((c1 + y) * y) - 1) + 2;
  auto c3 = (((c2 * 3) - 4) + 5) * 6;
  auto c4 = (((c3 - 7) + 8) * 9) - 1;
  auto c5 = (((c4 + 2) * 3) - 4) + 5;
  auto c6 = (((c5 * 6) - 7) + 8) * 9;
  CHECK_ONE_KERNEL(c6);
  CHECK_EAGER_KERNELS(24, c6);
}

TEST_CASE("kernels_v is 1 with views, full, iota, take and map in the tree", "[plan][kernels]") {
  operands o;
  auto& x = o.x;
  auto& y = o.y;
  auto& sq = o.sq;
  const auto s = o.s();
  CHECK_ONE_KERNEL(sq + fuse::transpose(sq));
  CHECK_ONE_KERNEL(fuse::exp(fuse::permute<1, 0>(sq)) * fuse::transpose(sq));
  CHECK_ONE_KERNEL(fuse::slice<1>(x, 1, -1) * fuse::slice<1>(y, 0, 8));
  CHECK_ONE_KERNEL(fuse::slice<0>(x, 0, 6, 2) + 1.f);
  CHECK_ONE_KERNEL(fuse::reshape(x, 3, 20) * 2.f + fuse::reshape(y, fuse::dyn, 20));
  CHECK_ONE_KERNEL(fuse::squeeze<0>(fuse::unsqueeze<0>(x + y)) * x);
  CHECK_ONE_KERNEL(fuse::unsqueeze<1>(o.bias) * fuse::transpose(x));
  CHECK_ONE_KERNEL(x + o.row_view());
  CHECK_ONE_KERNEL(fuse::view(x.data(), o.m, o.n) * fuse::view(y.data(), fuse::extents<fuse::dyn, 10>{o.m}));
  CHECK_ONE_KERNEL(fuse::full(s, 2.f) * x);
  CHECK_ONE_KERNEL(fuse::full(s, 2.f));
  CHECK_ONE_KERNEL(fuse::iota<0>(s));
  CHECK_ONE_KERNEL(fuse::where(fuse::iota<1>(s) <= fuse::iota<0>(s), x, -1e9f));
  CHECK_ONE_KERNEL(fuse::take(o.table, o.idx));
  CHECK_ONE_KERNEL(fuse::take(o.table, o.idx) * 2.f + o.bias);
  CHECK_ONE_KERNEL(fuse::gelu(fuse::take(o.table, o.idx2)) + o.bias);
  CHECK_ONE_KERNEL(fuse::map([](float a, float b) { return a * b + 1.f; }, x, y));
  CHECK_ONE_KERNEL(fuse::exp(fuse::map([](float a) { return -a; }, x)) + fuse::map([](float a, float b, float c) { return a + b + c; }, x, y, o.bias));
  CHECK_ONE_KERNEL(fuse::map([](float a, index_t i) { return a * float(i); }, fuse::transpose(sq), fuse::iota<1>(shape_t<2>{10, 10})));
  CHECK_ONE_KERNEL(x);                // a lone leaf: one copy
  CHECK_ONE_KERNEL(fuse::transpose(sq));
}

TEST_CASE("the run-time plan agrees with kernels_v", "[plan][kernels]") {
  // Sizes that are large, odd, or one: the plan is decided by the type, not the shapes.
  for (index_t n : ops_test::odd_sizes) {
    fuse::tensor<float, 1> a(n), b(n);
    auto e = fuse::gelu(a * b + 1.f);
    CHECK(fuse::plan(e).kernels == fuse::kernels_v<decltype(e)>);
    CHECK(fuse::plan(fuse::eager(fuse::cpu{}), e).kernels == fuse::eager_kernels_v<decltype(e)>);
  }
}

TEST_CASE("the eager plan has one kernel per interior node", "[plan][eager]") {
  operands o;
  auto& x = o.x;
  auto& y = o.y;
  auto& bias = o.bias;
  const auto s = o.s();
  CHECK_EAGER_KERNELS(1, x + y);
  CHECK_EAGER_KERNELS(1, -x);
  CHECK_EAGER_KERNELS(2, x * 2.f + 1.f);               // scalars are not nodes
  CHECK_EAGER_KERNELS(2, fuse::gelu(x + bias));
  CHECK_EAGER_KERNELS(3, fuse::where(x > 0, x, 0.1f * x));
  CHECK_EAGER_KERNELS(4, ((x + y) * bias - x) / y);
  CHECK_EAGER_KERNELS(2, !(x > y));
  CHECK_EAGER_KERNELS(1, fuse::clamp(x, -1.f, 1.f));
  CHECK_EAGER_KERNELS(2, fuse::clamp(x, fuse::min(bias, 0.f), 1.f));
  CHECK_EAGER_KERNELS(5, fuse::sigmoid(fuse::exp(x) + fuse::log(fuse::abs(y))));
  CHECK_EAGER_KERNELS(2, fuse::cast<double>(x) * o.d);
  // Views are index arithmetic: no kernel of their own.
  CHECK_EAGER_KERNELS(2, fuse::exp(fuse::transpose(o.sq)) + o.sq);
  CHECK_EAGER_KERNELS(2, fuse::exp(fuse::slice<0>(x, 0, 3)) * fuse::reshape(fuse::slice<0>(y, 3, 6), 3, 10));
  CHECK_EAGER_KERNELS(1, x + o.row_view());
  CHECK_EAGER_KERNELS(2, fuse::squeeze<0>(fuse::unsqueeze<0>(x + y)) * x);
  // Generators: no kernel of their own.
  CHECK_EAGER_KERNELS(1, fuse::full(s, 2.f) * x);
  CHECK_EAGER_KERNELS(2, fuse::where(fuse::iota<1>(s) <= fuse::iota<0>(s), x, -1e9f));
  CHECK_EAGER_KERNELS(1, fuse::take(o.table, o.idx) * 2.f);
  CHECK_EAGER_KERNELS(2, fuse::take(o.table, o.idx) * 2.f + o.bias);
  // A user map is one node, however much its lambda does.
  CHECK_EAGER_KERNELS(1, fuse::map([](float a, float b) { return std::exp(a) * b + 1.f; }, x, y));
  CHECK_EAGER_KERNELS(3, fuse::exp(fuse::map([](float a) { return -a; }, x)) + y);
}

TEST_CASE("the eager plan counts var and logsumexp as one node each", "[plan][eager][reduce]") {
  // Spec section 5: each section-3 reduction is one node, though var and logsumexp are written
  // with the nodes users have (and fuse like them); a hand-written variance is the nodes it has.
  operands o;
  auto& x = o.x;
  auto& y = o.y;
  CHECK_EAGER_KERNELS(1, fuse::var(x, fuse::axis<-1>));
  CHECK_EAGER_KERNELS(1, fuse::var(x, fuse::axis<0>));
  CHECK_EAGER_KERNELS(1, fuse::var(x));
  CHECK_EAGER_KERNELS(1, fuse::logsumexp(x, fuse::axis<-1>));
  CHECK_EAGER_KERNELS(1, fuse::logsumexp(x));
  CHECK_EAGER_KERNELS(2, fuse::var(x + y, fuse::axis<0>));       // the operand, then var
  CHECK_EAGER_KERNELS(1, fuse::logsumexp(o.k, fuse::axis<-1>));  // its conversion to double is part of it
  CHECK_EAGER_KERNELS(2, fuse::logsumexp(fuse::cast<double>(o.k), fuse::axis<-1>));  // a user's cast is a node
  // A reduction of a rank-0 expression reads it as rank 1 (index arithmetic, no node).
  CHECK_EAGER_KERNELS(2, fuse::sum(fuse::sum(x)));
  CHECK_EAGER_KERNELS(1, fuse::unsqueeze<0>(fuse::sum(x)));
  CHECK_ONE_KERNEL(fuse::unsqueeze<0>(fuse::sum(x)));
  CHECK_ONE_KERNEL(fuse::unsqueeze<0>(fuse::logsumexp(x)));
  CHECK_EAGER_KERNELS(2, fuse::var(fuse::sum(x)));                // rank 0
  CHECK_EAGER_KERNELS(4, fuse::logsumexp(x * y, fuse::axis<-1>) + fuse::var(x, fuse::axis<-1>));
  CHECK_EAGER_KERNELS(4, fuse::mean(fuse::square(x - fuse::mean(x, fuse::axis<-1>)), fuse::axis<-1>));
  // The fused plans are unchanged: one row kernel each.
  CHECK_ONE_KERNEL(fuse::var(x, fuse::axis<-1>));
  CHECK_ONE_KERNEL(fuse::logsumexp(x * y, fuse::axis<-1>) + fuse::var(x, fuse::axis<-1>));
}

TEST_CASE("a named subexpression used five times: one fused kernel; eager counts it once or per use", "[plan][eager][gelu]") {
  operands o;
  auto z = o.x + o.bias;
  auto hand = 0.5f * z * (1.f + fuse::tanh(0.7978845608f * (z + 0.044715f * z * z * z)));
  static_assert(fuse::kernels_v<decltype(hand)> == 1);
  CHECK(fuse::plan(hand).kernels == 1);
  // Nodes other than z: 0.5 * z, (.) * (.), 1 + tanh, tanh, c * (.), z + (.), 0.044715 * z, * z, * z.
  const std::size_t others = 9, uses = 5;
  const std::size_t eager = fuse::plan(fuse::eager(fuse::cpu{}), hand).kernels;
  INFO("eager kernels: " << eager);
  CHECK((eager == others + 1 || eager == others + uses));
  CHECK(fuse::eager_kernels_v<decltype(hand)> == eager);
}
