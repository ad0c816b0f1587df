// Groups broken at run time (a joining reduction's extents differ from the group's): each reduction
// becomes a kernel of its own, its operand written to a temporary unless it is an array, and the
// arrays reduced by the fallback's small loop (backend/cpu/fallback_reduce.hpp). Against double
// references: several reduced axes, every operand layout, NaN and infinities, integers and bool,
// empty extents, results split across threads, a reduction root into a strided destination.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reduce_support.hpp"
#include "support.hpp"

using namespace rt;
using fuse_test::buffer;
using fuse_test::layout;

namespace {

// The double reference of op over b's axes 0 and 2, per index of axis 1.
template <class Op>
std::vector<double> over_axes_0_2(const fuse::tensor<float, 3>& b, Op op, double init) {
  std::vector<double> r(std::size_t(b.extent(1)), init);
  for (index_t i = 0; i < b.extent(0); ++i)
    for (index_t j = 0; j < b.extent(1); ++j)
      for (index_t k = 0; k < b.extent(2); ++k) r[std::size_t(j)] = op(r[std::size_t(j)], double(b(i, j, k)));
  return r;
}

double nan_max(double a, double b) { return (a > b || a != a) ? a : b; }
double nan_min(double a, double b) { return (a < b || a != a) ? a : b; }

}  // namespace

TEST_CASE("a broken group over two reduced axes, its operand in every layout, a nested reduction") {
  // x [2, 3, 2] against b [4, 3, 5]: the reductions over axes 0 and 2 join the group but reduce 20
  // elements to the group's 4. The max reads b as it is (any strides), the mean reads
  // exp(b - max) written to a temporary first.
  auto x = random<float, 3>({2, 3, 2}, 60);
  auto b = random<float, 3>({4, 3, 5}, 61, -4, 4);
  const auto mx = over_axes_0_2(b, nan_max, -INFINITY);
  const auto sm = over_axes_0_2(b, [](double a, double v) { return a + v; }, 0.0);
  std::vector<double> me(3, 0.0);
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 5; ++k) me[std::size_t(j)] += std::exp(double(b(i, j, k)) - mx[std::size_t(j)]) / 20;
  for (layout l : fuse_test::all_layouts) {
    INFO(fuse_test::name(l));
    buffer<float, 3> bb({4, 3, 5}, l, -7.f);
    auto bv = bb.view();
    fuse::assign(bv, b);
    auto e = x - fuse::mean(fuse::exp(bv - fuse::max(bv, fuse::axes<0, 2>)), fuse::axes<0, 2>) * fuse::sum(bv, fuse::axes<0, 2>);
    static_assert(fuse::kernels_v<decltype(e)> == 1);
    const auto p = fuse::plan(e);
    INFO(p);
    REQUIRE(p.kernels == 5);
    CHECK(p.lines[0].what.starts_with("row kernel, 1 phase [max]: max(x1)"));
    CHECK(p.lines[1].what.starts_with("elementwise exp(sub(x1, t0))"));
    CHECK(p.lines[2].what.starts_with("row kernel, 1 phase [mean]: mean(t1)"));
    CHECK(p.lines[3].what.starts_with("row kernel, 1 phase [sum]: sum(x1)"));
    CHECK(p.lines[4].what.find("(split at run time") != std::string::npos);
    CHECK(p.lines[2].bytes_read == 4 * 3 * 5 * 4);  // the temporary of exp(b - max)
    auto y = fuse::eval(e);
    for (index_t i = 0; i < 2; ++i)
      for (index_t j = 0; j < 3; ++j)
        for (index_t k = 0; k < 2; ++k)
          CHECK(close(y(i, j, k), double(x(i, j, k)) - me[std::size_t(j)] * sm[std::size_t(j)], 1e-5, 1e-5));
  }
}

TEST_CASE("a broken group's reductions propagate NaN, keep infinities, sum integers and bool exactly") {
  // x [6, 2] against rows of 9: NaN first in row 1 and last (a tail) in row 2, +inf in row 3, a
  // row of -inf in row 4.
  auto x = random<float, 2>({6, 2}, 62);
  auto b = random<float, 2>({6, 9}, 63);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  b(1, 0) = nan, b(2, 8) = nan, b(3, 4) = inf;
  for (index_t j = 0; j < 9; ++j) b(4, j) = -inf;
  auto ymax = fuse::eval(x - fuse::max(b, fuse::axis<-1>));
  auto ymin = fuse::eval(x + fuse::min(b, fuse::axis<-1>));
  auto ycount = fuse::eval(x - fuse::sum(b > 0.f, fuse::axis<-1>));  // bool written out, summed as index_t
  REQUIRE(fuse::plan(x - fuse::sum(b > 0.f, fuse::axis<-1>)).kernels == 3);
  for (index_t i = 0; i < 6; ++i) {
    double hi = -INFINITY, lo = INFINITY;
    index_t count = 0;
    for (index_t j = 0; j < 9; ++j) hi = nan_max(hi, b(i, j)), lo = nan_min(lo, b(i, j)), count += b(i, j) > 0.f;
    for (index_t k = 0; k < 2; ++k) {
      const float want_max = float(double(x(i, k)) - hi), want_min = float(double(x(i, k)) + lo);
      if (std::isnan(want_max)) CHECK(std::isnan(ymax(i, k)));
      else CHECK(ymax(i, k) == want_max);
      if (std::isnan(want_min)) CHECK(std::isnan(ymin(i, k)));
      else CHECK(ymin(i, k) == want_min);
      CHECK(ycount(i, k) == float(double(x(i, k)) - double(count)));
    }
  }
  CHECK(std::isnan(ymax(1, 0)));
  CHECK(std::isnan(ymin(2, 1)));
  CHECK(ymax(4, 0) == inf);

  // Rows of 600: two blocks of 256 (the vectorised lanes), then 88 elements in four chains; NaN
  // inside a block of row 1 and after the blocks in row 2, +inf in a block of row 3.
  auto xl = random<float, 2>({4, 2}, 70);
  auto bl = random<float, 2>({4, 600}, 71);
  bl(1, 300) = nan, bl(2, 599) = nan, bl(3, 17) = inf;
  auto ylmax = fuse::eval(xl - fuse::max(bl, fuse::axis<-1>));
  auto ylsum = fuse::eval(xl - fuse::sum(bl, fuse::axis<-1>));
  for (index_t i = 0; i < 4; ++i) {
    double hi = -INFINITY, sum = 0;
    for (index_t j = 0; j < 600; ++j) hi = nan_max(hi, bl(i, j)), sum += bl(i, j);
    for (index_t k = 0; k < 2; ++k) {
      const float want_max = float(double(xl(i, k)) - hi), want_sum = float(double(xl(i, k)) - sum);
      if (std::isnan(want_max)) CHECK(std::isnan(ylmax(i, k)));
      else CHECK(ylmax(i, k) == want_max);
      if (std::isnan(want_sum) || std::isinf(want_sum)) CHECK(((std::isnan(want_sum) && std::isnan(ylsum(i, k))) || ylsum(i, k) == want_sum));
      else CHECK(close(ylsum(i, k), want_sum, 1e-6, 1e-4));
    }
  }
  CHECK(std::isnan(ylmax(1, 0)));
  CHECK(std::isnan(ylmax(2, 0)));
  CHECK(ylmax(3, 0) == -inf);

  // Integers: exact sums and products of [-3, 3] in index_t.
  fuse::tensor<int, 2> xi({5, 2}), bi({5, 7});
  for (index_t i = 0; i < xi.size(); ++i) xi.data()[i] = int(i % 11) - 5;
  for (index_t i = 0; i < bi.size(); ++i) {
    const int v = int((i * 5 + 3) % 6) - 3;  // -3 .. 3 without 0
    bi.data()[i] = v >= 0 ? v + 1 : v;
  }
  auto yi = fuse::eval(xi - fuse::sum(bi, fuse::axis<-1>) + fuse::prod(bi, fuse::axis<-1>));
  for (index_t i = 0; i < 5; ++i) {
    long long s = 0, pr = 1;
    for (index_t j = 0; j < 7; ++j) s += bi(i, j), pr *= bi(i, j);
    for (index_t k = 0; k < 2; ++k) CHECK(yi(i, k) == xi(i, k) - s + pr);
  }
}

TEST_CASE("a broken group over an empty reduced extent: sum 0, mean NaN, max an error before writing") {
  auto x = random<float, 2>({4, 2}, 64);
  fuse::tensor<float, 2> b({4, 0});
  auto ys = fuse::eval(x - fuse::sum(b, fuse::axis<-1>));
  auto ym = fuse::eval(x - fuse::mean(b, fuse::axis<-1>));
  for (index_t i = 0; i < 4; ++i)
    for (index_t k = 0; k < 2; ++k) {
      CHECK(ys(i, k) == x(i, k));
      CHECK(std::isnan(ym(i, k)));
    }
  auto y = random<float, 2>({4, 2}, 65);
  const auto before = fuse::eval(y);
  CHECK_THROWS_AS(fuse::assign(y, x - fuse::max(b, fuse::axis<-1>)), fuse::shape_error);
  for (index_t i = 0; i < 8; ++i) CHECK(y.data()[i] == before.data()[i]);
}

TEST_CASE("a broken group on two threads: many results, and a reduction root into a strided destination") {
  // x [3001, 2] against rows of 37: 3001 results, split across the threads.
  auto x = random<float, 2>({3001, 2}, 66);
  auto b = random<float, 2>({3001, 37}, 67);
  auto y = fuse::eval(fuse::cpu{2}, x - fuse::sum(b, fuse::axis<-1>));
  for (index_t i = 0; i < 3001; ++i) {
    double s = 0;
    for (index_t j = 0; j < 37; ++j) s += b(i, j);
    for (index_t k = 0; k < 2; ++k) REQUIRE(close(y(i, k), double(x(i, k)) - s, 1e-5, 1e-5));
  }
  // One result, its 200000 elements split across the threads and the parts joined.
  auto x1 = random<float, 1>({5}, 68);
  auto b1 = random<float, 1>({200000}, 69);
  auto y1 = fuse::eval(fuse::cpu{2}, x1 - fuse::sum(b1));
  double s1 = 0;
  for (index_t j = 0; j < 200000; ++j) s1 += b1(j);
  for (index_t k = 0; k < 5; ++k) CHECK(close(y1(k), double(x1(k)) - s1, 1e-6, 1e-4));
  // One result over two reduced axes, 41 runs of 7001: thread 1's part starts in the middle of a
  // run (at element 3500 of run 20), in blocks and chains.
  auto x2 = random<float, 3>({2, 1, 2}, 72);
  auto b2 = random<float, 3>({41, 1, 7001}, 73);
  auto y2 = fuse::eval(fuse::cpu{2}, x2 - fuse::sum(b2, fuse::axes<0, 2>));
  double s2 = 0;
  for (index_t i = 0; i < 41; ++i)
    for (index_t k = 0; k < 7001; ++k) s2 += b2(i, 0, k);
  for (index_t i = 0; i < 2; ++i)
    for (index_t k = 0; k < 2; ++k) CHECK(close(y2(i, 0, k), double(x2(i, 0, k)) - s2, 1e-6, 1e-3));
  // max and min of bool, one result split across the threads: the parts are written side by side.
  fuse::tensor<float, 1> b3({200000});
  for (index_t j = 0; j < 200000; ++j) b3(j) = j == 5 ? 1.f : j == 150000 ? -2.f : -1.f;
  auto any = fuse::eval(fuse::cpu{2}, x1 - fuse::max(b3 > 0.f));
  auto all = fuse::eval(fuse::cpu{2}, x1 - fuse::min(b3 > -1.5f));
  for (index_t k = 0; k < 5; ++k) {
    CHECK(any(k) == x1(k) - 1.f);
    CHECK(all(k) == x1(k));
  }
  // A reduction root: sum(x - mean(b)) over rows of 2, the mean over rows of 37: the mean a kernel,
  // x - mean written to a temporary, its sum into a reversed destination.
  auto root = fuse::sum(x - fuse::mean(b, fuse::axis<-1>), fuse::axis<-1>);
  const auto p = fuse::plan(root);
  INFO(p);
  REQUIRE(p.kernels == 3);
  CHECK(p.lines[1].what.starts_with("elementwise sub(x0, t0)"));
  CHECK(p.lines[2].what.starts_with("row kernel, 1 phase [sum]: sum(t1) (split at run time"));
  for (layout l : {layout::contiguous, layout::reversed, layout::step2}) {
    INFO(fuse_test::name(l));
    buffer<float, 2> out({3001, 1}, l, -9.f);
    fuse::assign(fuse::cpu{2}, out.view(), root);
    CHECK(out.touched_outside() == 0);
    auto v = out.cview();
    for (index_t i = 0; i < 3001; ++i) {
      double m = 0;
      for (index_t j = 0; j < 37; ++j) m += double(b(i, j)) / 37;
      REQUIRE(close(v(i, 0), double(x(i, 0)) + double(x(i, 1)) - 2 * m, 1e-5, 1e-5));
    }
  }
  // The same root of shape [1, 3, 1] into a transposed [3, 1] (the leading 1 dropped): each result
  // at its destination stride.
  auto x4 = random<float, 3>({1, 3, 2}, 74);
  auto b4 = random<float, 3>({1, 3, 7}, 75);
  buffer<float, 2> out4({3, 1}, layout::transposed, -9.f);
  fuse::assign(out4.view(), fuse::sum(x4 - fuse::mean(b4, fuse::axis<-1>), fuse::axis<-1>));
  CHECK(out4.touched_outside() == 0);
  for (index_t j = 0; j < 3; ++j) {
    double m = 0;
    for (index_t k = 0; k < 7; ++k) m += double(b4(0, j, k)) / 7;
    CHECK(close(out4.cview()(j, 0), double(x4(0, j, 0)) + double(x4(0, j, 1)) - 2 * m, 1e-5, 1e-5));
  }
}

TEST_CASE("a broken group computes a reduction written twice once, and its plan lists it once") {
  // x [2, 3, 2] against b [4, 3, 5]: max(b) over axes 0 and 2 written twice, once inside the sum
  // of exponentials (softmax's pattern). The fallback's table of its own hands the second the
  // first's result: four kernels (five before 2026-12-06).
  auto x = random<float, 3>({2, 3, 2}, 90);
  auto b = random<float, 3>({4, 3, 5}, 91, -4, 4);
  const auto mx = over_axes_0_2(b, nan_max, -INFINITY);
  std::vector<double> se(3, 0.0);
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 5; ++k) se[std::size_t(j)] += std::exp(double(b(i, j, k)) - mx[std::size_t(j)]);
  for (layout l : {layout::contiguous, layout::reversed, layout::step2}) {
    INFO(fuse_test::name(l));
    buffer<float, 3> bb({4, 3, 5}, l, -7.f);
    auto bv = bb.view();
    fuse::assign(bv, b);
    auto e = x - fuse::max(bv, fuse::axes<0, 2>) + fuse::sum(fuse::exp(bv - fuse::max(bv, fuse::axes<0, 2>)), fuse::axes<0, 2>);
    const auto p = fuse::plan(e);
    INFO(p);
    REQUIRE(p.kernels == 4);
    CHECK(p.lines[0].what.starts_with("row kernel, 1 phase [max]: max(x1)"));
    CHECK(p.lines[1].what.starts_with("elementwise exp(sub(x1, t0))"));
    CHECK(p.lines[2].what.starts_with("row kernel, 1 phase [sum]: sum(t1)"));
    CHECK(p.lines[3].what.starts_with("elementwise add(sub(x0, t0), t2)"));
    for (int threads : {1, 2}) {
      auto y = fuse::eval(fuse::cpu{threads}, e);
      for (index_t i = 0; i < 2; ++i)
        for (index_t j = 0; j < 3; ++j)
          for (index_t k = 0; k < 2; ++k)
            REQUIRE(close(y(i, j, k), double(x(i, j, k)) - mx[std::size_t(j)] + se[std::size_t(j)], 1e-5, 1e-5));
    }
  }
}

TEST_CASE("a full reduction of other data inside a softmax does not set the group's rows") {
  // softmax(x + sum(w)) with w [3, 4]: the group took the first reduction met (pre-order), the
  // full sum, as its rows; the softmax's max and sum over the last axis then differed from the
  // group's extents at run time (five kernels). A reduction over some axes comes first now: the
  // sum is a kernel of its own, the softmax one row kernel reading it.
  auto x = random<float, 2>({5, 37}, 92);
  auto w = random<float, 2>({3, 4}, 93, -0.5, 0.5);
  auto e = fuse::softmax(x + fuse::sum(w, fuse::axes<0, 1>), fuse::axis<-1>);
  static_assert(fuse::kernels_v<decltype(e)> == 2);
  const auto p = fuse::plan(e);
  INFO(p);
  REQUIRE(p.kernels == 2);
  CHECK(p.lines[0].what.starts_with("row kernel, 1 phase [sum]: sum(x0)"));
  CHECK(p.lines[1].what.starts_with("row kernel, 2 phases [max, sum]:"));
  double s = 0;
  for (index_t i = 0; i < 12; ++i) s += w.data()[i];
  for (int threads : {1, 2}) {
    auto y = fuse::eval(fuse::cpu{threads}, e);
    for (index_t i = 0; i < 5; ++i) {
      std::vector<double> row(37);
      for (index_t j = 0; j < 37; ++j) row[std::size_t(j)] = double(x(i, j)) + s;
      const auto ref = softmax_ref(row);
      for (index_t j = 0; j < 37; ++j) REQUIRE(close(y(i, j), ref[std::size_t(j)], 1e-5, 1e-9));
    }
  }
  // With only full reductions their axes are the rows still: x - mean(x) over [5, 37] is one kernel.
  auto c = x - fuse::mean(x, fuse::axes<0, 1>);
  static_assert(fuse::kernels_v<decltype(c)> == 1);
  CHECK(fuse::plan(c).kernels == 1);
}
