// Every reduction over axis<k>, axes<...> and all axes against a double reference; empty extents;
// eager vs fused (the accuracy of long float sums, NaN and infinities in rows:
// test_row_vectorised.cpp).
#include "reduce_support.hpp"

using namespace rt;

// (Rows of 32-256 elements take reduce_small_block, row_reduce.hpp: 32 is its shortest, 47 and 255
// end in a tail, 256 is its longest, 257 the next longer.)
TEST_CASE("reductions over the last axis match a double reference (odd sizes, threads)") {
  for (auto [m, n] : {std::pair<index_t, index_t>{1, 1}, {3, 17}, {129, 1}, {5, 32}, {6, 47}, {4, 255}, {3, 256}, {3, 257},
                      {7, 1023}, {301, 517}, {2, 100003}}) {
    auto x = random<float, 2>({m, n}, unsigned(m * 31 + n), 0.5, 2.0);
    auto s = fuse::eval(fuse::sum(x, fuse::axis<-1>));
    auto mx = fuse::eval(fuse::max(x, fuse::axis<1>));
    auto mn = fuse::eval(fuse::min(x, fuse::axis<-1>));
    auto me = fuse::eval(fuse::mean(x, fuse::axis<-1>));
    auto va = fuse::eval(fuse::var(x, fuse::axis<-1>));
    auto lse = fuse::eval(fuse::logsumexp(x, fuse::axis<-1>));
    REQUIRE(s.shape() == fuse::shape_t<2>{m, 1});
    for (index_t r = 0; r < m; ++r) {
      std::vector<double> row(x.data() + r * n, x.data() + (r + 1) * n);
      CHECK(close(s(r, 0), ref_sum(row), 1e-6));
      CHECK(mx(r, 0) == float(ref_max(row)));
      double mn_ref = row[0];
      for (double v : row) mn_ref = std::min(mn_ref, v);
      CHECK(mn(r, 0) == float(mn_ref));
      CHECK(close(me(r, 0), ref_mean(row), 1e-6));
      CHECK(close(va(r, 0), ref_var(row), 1e-4, 1e-6));
      const double row_max = ref_max(row);  // once: inside the loop it made this test O(n^2), 41 s
      double l = 0;
      for (double v : row) l += std::exp(v - row_max);
      CHECK(close(lse(r, 0), row_max + std::log(l), 1e-6));
    }
  }
}

TEST_CASE("prod, integer and bool reductions keep NumPy's types") {
  auto x = random<float, 2>({4, 9}, 3, 0.8, 1.2);
  auto p = fuse::eval(fuse::prod(x, fuse::axis<-1>));
  for (index_t r = 0; r < 4; ++r) {
    double ref = 1;
    for (index_t j = 0; j < 9; ++j) ref *= x(r, j);
    CHECK(close(p(r, 0), ref, 1e-6));
  }
  fuse::tensor<int, 1> ints(1000);
  for (index_t i = 0; i < 1000; ++i) ints(i) = int(i % 17) - 8 + int(i);
  static_assert(std::is_same_v<decltype(fuse::sum(ints))::value_type, fuse::index_t>);
  static_assert(std::is_same_v<decltype(fuse::mean(ints))::value_type, double>);
  index_t ref = 0;
  for (index_t i = 0; i < 1000; ++i) ref += ints(i);
  CHECK(fuse::eval(fuse::sum(ints)) == ref);
  CHECK(fuse::eval(fuse::mean(ints)) == Approx(double(ref) / 1000));
  fuse::tensor<bool, 1> mask(777);
  index_t trues = 0;
  for (index_t i = 0; i < 777; ++i) trues += (mask(i) = (i * 7) % 5 < 2);
  static_assert(std::is_same_v<decltype(fuse::sum(mask))::value_type, fuse::index_t>);
  CHECK(fuse::eval(fuse::sum(mask)) == trues);
  CHECK(fuse::eval(fuse::sum(ints > 100)) == fuse::eval(fuse::sum(fuse::cast<int>(ints > 100))));
}

TEST_CASE("non-trailing axes, several axes, negative axes, all axes") {
  auto x = random<double, 4>({3, 5, 4, 6}, 7);
  auto bn = fuse::eval(fuse::mean(x, fuse::axes<0, 2, 3>));  // batch-norm statistics per channel
  REQUIRE(bn.shape() == fuse::shape_t<4>{1, 5, 1, 1});
  auto cs = fuse::eval(fuse::sum(x, fuse::axis<0>));
  auto mid = fuse::eval(fuse::max(x, fuse::axes<-3, -2>));
  for (index_t c = 0; c < 5; ++c) {
    double s = 0;
    for (index_t n = 0; n < 3; ++n)
      for (index_t h = 0; h < 4; ++h)
        for (index_t w = 0; w < 6; ++w) s += x(n, c, h, w);
    CHECK(bn(0, c, 0, 0) == Approx(s / 72).epsilon(1e-12));
  }
  for (index_t c = 0; c < 5; ++c)
    for (index_t h = 0; h < 4; ++h)
      for (index_t w = 0; w < 6; ++w)
        CHECK(cs(0, c, h, w) == Approx(x(0, c, h, w) + x(1, c, h, w) + x(2, c, h, w)).epsilon(1e-12));
  for (index_t n = 0; n < 3; ++n)
    for (index_t w = 0; w < 6; ++w) {
      double m = -1e300;
      for (index_t c = 0; c < 5; ++c)
        for (index_t h = 0; h < 4; ++h) m = std::max(m, x(n, c, h, w));
      CHECK(mid(n, 0, 0, w) == m);
    }
  double all = 0;
  for (index_t i = 0; i < x.size(); ++i) all += x.data()[i];
  static_assert(decltype(fuse::sum(x))::rank == 0);
  CHECK(fuse::eval(fuse::sum(x)) == Approx(all).epsilon(1e-12));
  // Transposed (strided) input: the reduced axis is not contiguous.
  auto t = random<float, 2>({37, 53}, 8);
  auto ts = fuse::eval(fuse::sum(fuse::transpose(t), fuse::axis<-1>));
  for (index_t j = 0; j < 53; ++j) {
    double s = 0;
    for (index_t i = 0; i < 37; ++i) s += t(i, j);
    CHECK(close(ts(j, 0), s, 1e-6, 1e-6));
  }
}

TEST_CASE("layer_norm and rms_norm name themselves in shape errors (thrown as the expression is built)") {
  auto x = random<float, 2>({3, 4}, 10);
  auto g = random<float, 1>({5}, 11);
  CHECK_THROWS_WITH(fuse::layer_norm(x, g, g),
                    Catch::Matchers::StartsWith("fuse::layer_norm: ") && Catch::Matchers::Contains("[3, 4] and [5]"));
  CHECK_THROWS_WITH(fuse::rms_norm(x, g),
                    Catch::Matchers::StartsWith("fuse::rms_norm: ") && Catch::Matchers::Contains("[3, 4] and [5]"));
  CHECK_THROWS_AS(fuse::rms_norm(x, g), fuse::shape_error);
}

TEST_CASE("empty extents: identities, NaN for mean and var, an error for max") {
  fuse::tensor<float, 2> e(4, 0);
  auto s = fuse::eval(fuse::sum(e, fuse::axis<-1>));
  auto p = fuse::eval(fuse::prod(e, fuse::axis<-1>));
  auto m = fuse::eval(fuse::mean(e, fuse::axis<-1>));
  auto l = fuse::eval(fuse::logsumexp(e, fuse::axis<-1>));
  for (index_t r = 0; r < 4; ++r) {
    CHECK(s(r, 0) == 0.f);
    CHECK(p(r, 0) == 1.f);
    CHECK(std::isnan(m(r, 0)));
    CHECK(l(r, 0) == -std::numeric_limits<float>::infinity());
  }
  CHECK(fuse::eval(fuse::sum(e)) == 0.f);
  CHECK(std::isnan(fuse::eval(fuse::var(e))));
  fuse::tensor<float, 2> out(4, 1);
  out = 7.f;
  CHECK_THROWS_AS(fuse::assign(out, fuse::max(e, fuse::axis<-1>)), fuse::shape_error);
  CHECK(out(0, 0) == 7.f);
  fuse::tensor<float, 2> none(0, 5);
  auto empty_rows = fuse::eval(fuse::max(none, fuse::axis<-1>));  // nothing to reduce, nothing to return
  CHECK(empty_rows.size() == 0);
  // An empty result reads nothing: softmax of rows of length 0 is empty, although the max inside
  // would have no identity (PyTorch gives the empty result too), fused and eager.
  auto soft = fuse::eval(fuse::softmax(e, fuse::axis<-1>));
  CHECK(soft.shape() == fuse::shape_t<2>{4, 0});
  fuse::tensor<float, 2> soft_eager(4, 0);
  fuse::assign(fuse::eager(fuse::cpu{}), soft_eager, fuse::layer_norm(e, 1.f, 0.f));
  CHECK(soft_eager.size() == 0);
}

TEST_CASE("eager and fused give the same reductions") {
  auto x = random<float, 2>({33, 70}, 12);
  auto f = fuse::eval(fuse::var(x, fuse::axis<-1>) + fuse::sum(x * x, fuse::axis<-1>));
  auto e = fuse::eval(fuse::eager(fuse::cpu{}), fuse::var(x, fuse::axis<-1>) + fuse::sum(x * x, fuse::axis<-1>));
  for (index_t r = 0; r < 33; ++r) CHECK(f(r, 0) == Approx(e(r, 0)).epsilon(1e-6));
}

TEST_CASE("eager runs var and logsumexp as one node each, with the reference's values") {
  // Eager materialises the operand (here x * 2 + y) and runs var / logsumexp as one kernel over it.
  auto x = random<float, 2>({37, 70}, 31);
  auto y = random<float, 2>({37, 70}, 32);
  fuse::tensor<double, 2> xy(37, 70);
  for (index_t i = 0; i < xy.size(); ++i) xy.data()[i] = double(x.data()[i]) * 2 + double(y.data()[i]);
  const fuse::eager ex(fuse::cpu{});
  auto rows_var = fuse::eval(ex, fuse::var(x * 2.f + y, fuse::axis<-1>));
  auto rows_lse = fuse::eval(ex, fuse::logsumexp(x * 2.f + y, fuse::axis<-1>));
  auto cols_var = fuse::eval(ex, fuse::var(x * 2.f + y, fuse::axis<0>));
  for (index_t r = 0; r < 37; ++r) {
    const std::vector<double> row(xy.data() + r * 70, xy.data() + (r + 1) * 70);
    double s = 0;
    for (double v : row) s += std::exp(v - ref_max(row));
    CHECK(close(rows_var(r, 0), ref_var(row), 1e-5));
    CHECK(close(rows_lse(r, 0), ref_max(row) + std::log(s), 1e-6, 1e-6));
  }
  for (index_t c = 0; c < 70; ++c) {
    std::vector<double> col;
    for (index_t r = 0; r < 37; ++r) col.push_back(xy(r, c));
    CHECK(close(cols_var(0, c), ref_var(col), 1e-5));
  }
  const std::vector<double> all(xy.data(), xy.data() + xy.size());
  double s = 0;
  for (double v : all) s += std::exp(v - ref_max(all));
  CHECK(close(double(fuse::eval(ex, fuse::var(x * 2.f + y))), ref_var(all), 1e-5));
  CHECK(close(double(fuse::eval(ex, fuse::logsumexp(x * 2.f + y))), ref_max(all) + std::log(s), 1e-6));
  // Rank 0: var of a value is 0, logsumexp of a value the value.
  CHECK(double(fuse::eval(ex, fuse::var(fuse::sum(x)))) == 0.0);
  CHECK(close(double(fuse::eval(ex, fuse::logsumexp(fuse::max(x)))), ref_max(std::vector<double>(x.data(), x.data() + x.size())), 1e-7));
  // Integers: logsumexp computes in double.
  fuse::tensor<std::int32_t, 2> k(3, 5);
  for (index_t i = 0; i < k.size(); ++i) k.data()[i] = std::int32_t(i % 7) - 3;
  auto lk = fuse::eval(ex, fuse::logsumexp(k, fuse::axis<-1>));
  static_assert(std::is_same_v<decltype(lk)::value_type, double>);
  for (index_t r = 0; r < 3; ++r) {
    double m = -1e300, t = 0;
    for (index_t c = 0; c < 5; ++c) m = std::max(m, double(k(r, c)));
    for (index_t c = 0; c < 5; ++c) t += std::exp(double(k(r, c)) - m);
    CHECK(close(lk(r, 0), m + std::log(t), 1e-12));
  }
}

TEST_CASE("a reduction directly under a reduction over other axes is its own kernel") {
  // Found by the differential test: var(var(x, axis<0>), axis<-1>) once ran the inner var's
  // reduction over axis 0 as a phase of the outer row kernel (over axis 1): wrong values.
  auto x = random<double, 2>({13, 8}, 9);
  auto inner = fuse::var(x, fuse::axis<0>);
  auto e = fuse::var(inner, fuse::axis<-1>);
  // The inner var (over a leading axis no reduction joins another as a phase: plan/fusion.hpp; a
  // column pair, its mean with it), then the outer; the outer holds the inner var twice and the
  // second reads the first's result (five kernels when each was computed again). Over 8 columns
  // (under 16) the pair runs as two kernels, and the plan says so.
  static_assert(fuse::kernels_v<decltype(e)> == 2);
  const auto p = fuse::plan(e);
  CHECK(p.kernels == 3);
  CHECK(p.lines[1].what.find("its mean a kernel of its own") != std::string::npos);
  std::vector<double> cols;
  for (index_t j = 0; j < 8; ++j) {
    std::vector<double> col;
    for (index_t i = 0; i < 13; ++i) col.push_back(x(i, j));
    cols.push_back(ref_var(col));
  }
  CHECK(close(fuse::eval(e)(0, 0), ref_var(cols), 1e-12));
  CHECK(close(fuse::eval(fuse::max(fuse::sum(x, fuse::axis<0>), fuse::axis<-1>))(0, 0), [&] {
    double m = -1e300;
    for (index_t j = 0; j < 8; ++j) {
      double s = 0;
      for (index_t i = 0; i < 13; ++i) s += x(i, j);
      m = std::max(m, s);
    }
    return m;
  }(), 1e-12));
}

TEST_CASE("a reduction over an operand of extent 1 along a wider row axis: its own kernel, NumPy's values") {
  // Run-time shapes can break a row group: here each reduction's operand has extent 1 along the
  // last axis while the group (the destination) has 7. assign_fused (core/assign.hpp) then runs
  // every inner reduction as a kernel of its own; the values must not change.
  auto x = random<float, 2>({5, 7}, 21);
  auto b = random<float, 2>({5, 1}, 22);
  fuse::tensor<float, 2> y(5, 7), s(5, 7), z(5, 7);
  y = x - fuse::max(b, fuse::axis<-1>);               // the max of one element is the element
  s = fuse::softmax(b, fuse::axis<-1>);               // one element per row: 1, broadcast to 7
  z = x * fuse::sum(b, fuse::axis<-1>) + fuse::mean(x, fuse::axis<-1>);  // one split, one fitting
  for (index_t r = 0; r < 5; ++r) {
    const double mean = ref_mean(std::vector<double>(x.data() + r * 7, x.data() + (r + 1) * 7));
    for (index_t j = 0; j < 7; ++j) {
      CHECK(y(r, j) == x(r, j) - b(r, 0));
      CHECK(s(r, j) == 1.0f);
      const double xb = double(x(r, j)) * b(r, 0);
      INFO("row " << r << " col " << j << ": x*b " << xb << ", mean " << mean << ", got " << z(r, j));
      CHECK(close(z(r, j), xb + mean, 0, 1e-6 * (std::abs(xb) + std::abs(mean))));  // terms' rounding
    }
  }
}

TEST_CASE("max and min of bool masks (any / all) over rows, columns and everything, 1-3 threads") {
  // The per-thread partials of a split row are bools here; as std::vector<bool> they would not
  // compile (nor be safe to write from several threads).
  auto x = random<float, 2>({37, 101}, 31);
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    fuse::tensor<bool, 2> any_row(37, 1), all_row(37, 1), any_col(1, 101);
    fuse::assign(exec, any_row, fuse::max(x > 2.9f, fuse::axis<-1>));
    fuse::assign(exec, all_row, fuse::min(x > -2.9f, fuse::axis<-1>));
    fuse::assign(exec, any_col, fuse::max(x > 2.5f, fuse::axis<0>));
    bool any_all = false, all_all = true;
    for (index_t i = 0; i < 37; ++i) {
      bool a = false, b = true;
      for (index_t j = 0; j < 101; ++j) a = a || x(i, j) > 2.9f, b = b && x(i, j) > -2.9f;
      CHECK(any_row(i, 0) == a);
      CHECK(all_row(i, 0) == b);
      any_all = any_all || a;
      all_all = all_all && b;
    }
    for (index_t j = 0; j < 101; ++j) {
      bool a = false;
      for (index_t i = 0; i < 37; ++i) a = a || x(i, j) > 2.5f;
      CHECK(any_col(0, j) == a);
    }
    fuse::tensor<bool, 0> any, all;
    fuse::assign(exec, any, fuse::max(x > 2.9f));
    fuse::assign(exec, all, fuse::min(x > -2.9f));
    CHECK(fuse::eval(any) == any_all);
    CHECK(fuse::eval(all) == all_all);
    CHECK(fuse::eval(exec, fuse::max(x > 3.5f)) == false);  // no element passes: the identity
  }
}

TEST_CASE("reductions of a rank-0 expression give its value (NumPy: np.sum(np.float64(v)) is v)") {
  auto x = random<float, 2>({13, 29}, 32);
  double total = 0;
  for (index_t i = 0; i < x.size(); ++i) total += x.data()[i];
  fuse::tensor<double, 0> t0;  // a rank-0 tensor holds one element
  t0 = 2.5;
  CHECK(fuse::eval(fuse::sum(t0)) == 2.5);
  CHECK(fuse::eval(fuse::mean(t0)) == 2.5);
  CHECK(fuse::eval(fuse::max(t0)) == 2.5);
  CHECK(fuse::eval(fuse::min(t0)) == 2.5);
  CHECK(fuse::eval(fuse::prod(t0)) == 2.5);
  CHECK(fuse::eval(fuse::var(t0)) == 0.0);
  CHECK(fuse::eval(fuse::logsumexp(t0)) == Approx(2.5).epsilon(1e-15));
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    CHECK(close(fuse::eval(exec, fuse::sum(fuse::sum(x))), total, 1e-6));
    CHECK(close(fuse::eval(exec, fuse::max(fuse::sum(x))), total, 1e-6));
    CHECK(fuse::eval(exec, fuse::var(fuse::sum(x))) == 0.0f);
    fuse::tensor<float, 2> y(13, 29);
    fuse::assign(exec, y, x - fuse::sum(fuse::sum(x)));
    for (index_t i = 0; i < 13; ++i)
      for (index_t j = 0; j < 29; ++j) CHECK(close(y(i, j), double(x(i, j)) - total, 1e-6, 1e-5));
  }
  fuse::tensor<bool, 0> b;
  b = true;
  static_assert(std::is_same_v<decltype(fuse::sum(b))::value_type, fuse::index_t>);
  CHECK(fuse::eval(fuse::sum(b)) == 1);
  // The same through eager (the rank lift is no pass of its own), and a full reduction lifted to
  // rank 1, one row kernel.
  const fuse::eager ex(fuse::cpu{});
  CHECK(fuse::eval(ex, fuse::sum(t0)) == 2.5);
  CHECK(fuse::eval(ex, fuse::var(t0)) == 0.0);
  CHECK(close(fuse::eval(ex, fuse::sum(fuse::sum(x))), total, 1e-6));
  CHECK(close(fuse::eval(ex, fuse::max(fuse::sum(x) * 2.f)), 2 * total, 1e-6));
  for (auto lifted : {fuse::eval(fuse::unsqueeze<0>(fuse::sum(x))), fuse::eval(ex, fuse::unsqueeze<0>(fuse::sum(x))),
                      fuse::eval(fuse::cpu{.threads = 1}, fuse::unsqueeze<0>(fuse::sum(x)))}) {
    REQUIRE(lifted.shape() == fuse::shape_t<1>{1});
    CHECK(close(lifted(0), total, 1e-6));
  }
  auto big = random<float, 2>({3, 70001}, 33);  // rows split across threads
  double big_total = 0;
  for (index_t i = 0; i < big.size(); ++i) big_total += big.data()[i];
  fuse::tensor<float, 2> y2(4, 1);  // broadcast into a larger destination
  y2 = fuse::unsqueeze<0>(fuse::sum(big));
  for (index_t i = 0; i < 4; ++i) CHECK(close(y2(i, 0), big_total, 1e-6, 1e-3));
}

TEST_CASE("a reduction stretched into a larger destination fills all of it (NumPy assignment)") {
  // A root reduction writes one value per row; where the destination stretches e's extent-1 (or
  // missing) axes, e is evaluated at its own shape and then broadcast.
  auto z = random<float, 2>({6, 11}, 33);
  auto w = random<float, 2>({6, 1}, 34);
  double total = 0, zmax = -1e30;
  for (index_t i = 0; i < z.size(); ++i) total += z.data()[i], zmax = std::max(zmax, double(z.data()[i]));
  for (int eager : {0, 1}) {
    auto run = [&](auto& y, const auto& e) {
      y = -7.f;
      if (eager) fuse::assign(fuse::eager(fuse::cpu{}), y, e);
      else fuse::assign(y, e);
    };
    fuse::tensor<float, 2> y(3, 4);
    run(y, fuse::sum(z));
    for (index_t i = 0; i < 12; ++i) CHECK(close(y.data()[i], total, 1e-6));
    run(y, fuse::sum(z, fuse::axes<0, 1>));
    for (index_t i = 0; i < 12; ++i) CHECK(close(y.data()[i], total, 1e-6));
    fuse::tensor<float, 1> y1(5);
    run(y1, fuse::max(z));
    for (index_t i = 0; i < 5; ++i) CHECK(y1(i) == float(zmax));
    fuse::tensor<float, 2> y2(6, 4);
    run(y2, fuse::sum(w, fuse::axis<1>));
    for (index_t i = 0; i < 6; ++i)
      for (index_t j = 0; j < 4; ++j) CHECK(y2(i, j) == w(i, 0));
    fuse::tensor<float, 2> y3(6, 4);
    run(y3, fuse::logsumexp(z, fuse::axis<1>));
    for (index_t i = 0; i < 6; ++i) {
      double s = 0;
      for (index_t j = 0; j < 11; ++j) s += std::exp(double(z(i, j)));
      for (index_t j = 0; j < 4; ++j) CHECK(close(y3(i, j), std::log(s), 1e-6));
    }
    fuse::tensor<float, 1> cols(11);  // [1, 11] into [11]: a dropped leading 1, written directly
    run(cols, fuse::sum(z, fuse::axis<0>));
    for (index_t j = 0; j < 11; ++j) {
      double s = 0;
      for (index_t i = 0; i < 6; ++i) s += z(i, j);
      CHECK(close(cols(j), s, 1e-6, 1e-6));
    }
  }
}

TEST_CASE("squeeze of a reduced axis gives NumPy's keepdims=False result, fused and eager") {
  const index_t m = 37, n = 70;
  auto x = random<float, 2>({m, n}, 51);
  auto b = random<float, 1>({m}, 52);
  const auto rows = per_row(x.data(), m, n, ref_sum);
  const auto maxes = per_row(x.data(), m, n, ref_max);
  std::vector<double> col_mean(n, 0.0);
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) col_mean[std::size_t(j)] += double(x(i, j)) / double(m);
  const fuse::eager ex(fuse::cpu{});

  // The row maxima as a vector [m]: one kernel (the reduction, written without the axis).
  auto mx = fuse::squeeze<-1>(fuse::max(x, fuse::axis<-1>));
  static_assert(decltype(mx)::rank == 1);
  static_assert(fuse::kernels_v<decltype(mx)> == 1);
  CHECK(mx.shape() == fuse::shape_t<1>{m});
  for (auto got : {fuse::eval(mx), fuse::eval(fuse::cpu{.threads = 1}, mx), fuse::eval(ex, mx)})
    for (index_t i = 0; i < m; ++i) CHECK(got(i) == float(maxes[std::size_t(i)]));

  // Inside an expression of the reduced rank: the reduction first, then the elementwise kernel.
  auto e = fuse::exp(fuse::squeeze<1>(fuse::sum(x, fuse::axis<1>)) * 0.1f) + b;
  static_assert(fuse::kernels_v<decltype(e)> == 2);
  const auto p = fuse::plan(e);
  INFO(p);
  REQUIRE(p.kernels == 2);
  CHECK(p.lines[0].what.starts_with("row kernel, 1 phase [sum]"));
  CHECK(p.lines[1].bytes_read == 2 * m * 4);  // the sums and b
  CHECK(fuse::plan(ex, e).kernels == 4);       // sum, *, exp, +
  CHECK(fuse::eager_kernels_v<decltype(e)> == 4);
  for (auto got : {fuse::eval(e), fuse::eval(ex, e)})
    for (index_t i = 0; i < m; ++i) CHECK(close(got(i), std::exp(rows[std::size_t(i)] * 0.1) + b(i), 1e-5));

  // A column mean [n] broadcast back over the rows (NumPy: x - x.mean(axis=0)).
  auto centred = fuse::eval(x - fuse::squeeze<0>(fuse::mean(x, fuse::axis<0>)));
  auto centred_eager = fuse::eval(ex, x - fuse::squeeze<0>(fuse::mean(x, fuse::axis<0>)));
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      CHECK(close(centred(i, j), double(x(i, j)) - col_mean[std::size_t(j)], 1e-5, 1e-6));
      CHECK(close(centred_eager(i, j), double(x(i, j)) - col_mean[std::size_t(j)], 1e-5, 1e-6));
    }

  // Putting the axis back gives the reduction again, which joins the row kernel.
  auto back = x - fuse::unsqueeze<-1>(fuse::squeeze<-1>(fuse::max(x, fuse::axis<-1>)));
  static_assert(fuse::kernels_v<decltype(back)> == 1);
  auto shifted = fuse::eval(back);
  for (index_t i = 0; i < m; ++i) CHECK(shifted(i, 5) == float(double(x(i, 5)) - maxes[std::size_t(i)]));

  // var and logsumexp as vectors: one kernel each (logsumexp's root, over reductions of the axis,
  // is computed with it), one eager node each.
  auto lse = fuse::squeeze<1>(fuse::logsumexp(x, fuse::axis<1>));
  auto var = fuse::squeeze<-1>(fuse::var(x, fuse::axis<-1>));
  static_assert(fuse::kernels_v<decltype(lse)> == 1 && fuse::kernels_v<decltype(var)> == 1);
  static_assert(fuse::eager_kernels_v<decltype(lse)> == 1 && fuse::eager_kernels_v<decltype(var)> == 1);
  CHECK(fuse::plan(lse).kernels == 1);
  CHECK(fuse::plan(ex, var).kernels == 1);
  const auto vars = per_row(x.data(), m, n, ref_var);
  for (auto got : {fuse::eval(lse), fuse::eval(ex, lse)})
    for (index_t i = 0; i < m; ++i) {
      const std::vector<double> row(x.data() + i * n, x.data() + (i + 1) * n);
      double t = 0;
      for (double w : row) t += std::exp(w - maxes[std::size_t(i)]);
      CHECK(close(got(i), maxes[std::size_t(i)] + std::log(t), 1e-6, 1e-6));
    }
  for (auto got : {fuse::eval(var), fuse::eval(ex, var)})
    for (index_t i = 0; i < m; ++i) CHECK(close(got(i), vars[std::size_t(i)], 1e-5));

  // Rank 0, and a value.
  auto v = random<double, 1>({n}, 53);
  double vs = 0;
  for (index_t j = 0; j < n; ++j) vs += v(j);
  auto s0 = fuse::squeeze<0>(fuse::sum(v, fuse::axis<0>));
  static_assert(decltype(s0)::rank == 0);
  CHECK(close(double(fuse::eval(s0)), vs, 1e-12));
  CHECK(close(double(fuse::eval(ex, s0)), vs, 1e-12));
}

TEST_CASE("squeeze of reduced axes: several axes, nested squeezes, destinations, aliasing, errors") {
  const index_t a = 3, m = 5, n = 9;
  auto x = random<float, 3>({a, m, n}, 54);
  auto at3 = [&](index_t i, index_t j, index_t k) { return double(x(i, j, k)); };
  std::vector<double> s02(std::size_t(m), 0.0);  // sum over axes 0 and 2
  for (index_t i = 0; i < a; ++i)
    for (index_t j = 0; j < m; ++j)
      for (index_t k = 0; k < n; ++k) s02[std::size_t(j)] += at3(i, j, k);
  // Both reduced axes dropped, in either order: [m].
  auto r = fuse::sum(x, fuse::axes<0, 2>);
  auto one = fuse::eval(fuse::squeeze<1>(fuse::squeeze<0>(r)));  // [1, m, 1] -> [m, 1] -> [m]
  auto two = fuse::eval(fuse::squeeze<0>(fuse::squeeze<2>(r)));  // [1, m, 1] -> [1, m] -> [m]
  auto half = fuse::eval(fuse::squeeze<0>(r));                   // [m, 1]
  REQUIRE(one.shape() == fuse::shape_t<1>{m});
  REQUIRE(two.shape() == fuse::shape_t<1>{m});
  REQUIRE(half.shape() == fuse::shape_t<2>{m, 1});
  for (index_t j = 0; j < m; ++j) {
    CHECK(close(one(j), s02[std::size_t(j)], 1e-5, 1e-5));
    CHECK(close(two(j), s02[std::size_t(j)], 1e-5, 1e-5));
    CHECK(close(half(j, 0), s02[std::size_t(j)], 1e-5, 1e-5));
  }
  // An axis inserted before the dropped one, then dropped again.
  auto moved = fuse::eval(fuse::squeeze<0>(fuse::unsqueeze<0>(fuse::squeeze<2>(fuse::max(x, fuse::axis<2>)))));
  REQUIRE(moved.shape() == (fuse::shape_t<2>{a, m}));
  for (index_t i = 0; i < a; ++i)
    for (index_t j = 0; j < m; ++j) {
      double mx = -1e300;
      for (index_t k = 0; k < n; ++k) mx = std::max(mx, at3(i, j, k));
      CHECK(moved(i, j) == float(mx));
    }

  // A destination of higher rank takes the vector in every row (NumPy assignment).
  auto y = random<float, 2>({4, m}, 55);
  y = fuse::squeeze<1>(fuse::squeeze<0>(r));
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < m; ++j) CHECK(close(y(i, j), s02[std::size_t(j)], 1e-5, 1e-5));

  // In place: column 0 of a square matrix takes its row sums (read before written).
  auto sq = random<float, 2>({n, n}, 56);
  const auto sums = per_row(sq.data(), n, n, ref_sum);
  auto col0 = fuse::squeeze<1>(fuse::slice<1>(sq, 0, 1));
  col0 = fuse::squeeze<1>(fuse::sum(sq, fuse::axis<1>));
  for (index_t i = 0; i < n; ++i) CHECK(close(sq(i, 0), sums[std::size_t(i)], 1e-5, 1e-5));

  // Empty rows: an empty vector; mismatched shapes: shape_error before anything is written.
  fuse::tensor<float, 2> none(0, 4);
  CHECK(fuse::eval(fuse::squeeze<1>(fuse::sum(none, fuse::axis<1>))).shape() == fuse::shape_t<1>{0});
  auto c = random<float, 1>({m + 1}, 57);
  fuse::tensor<float, 1> out(m);
  fuse::assign(out, 7.f);
  CHECK_THROWS_AS(out = fuse::squeeze<1>(fuse::squeeze<0>(r)) + c, fuse::shape_error);
  for (index_t j = 0; j < m; ++j) CHECK(out(j) == 7.f);
}

namespace {
// Per-output references of a reduction over the axes in mask M of a host tensor x: each element
// goes to the output whose coordinates are its own with the reduced ones set to 0.
template <std::uint32_t M, class T, std::size_t R>
struct leading_ref {
  std::vector<double> sum, max, min, prod;
  index_t count = 1;
  explicit leading_ref(const fuse::tensor<T, R>& x) {
    const auto s = x.shape();
    fuse::shape_t<R> out_stride{};
    index_t out_size = 1;
    for (std::size_t d = R; d-- > 0;) {
      out_stride[d] = (M >> d) & 1u ? 0 : out_size;
      if ((M >> d) & 1u) count *= s[d];
      else out_size *= s[d];
    }
    sum.assign(std::size_t(out_size), 0.0), prod.assign(std::size_t(out_size), 1.0);
    max.assign(std::size_t(out_size), -INFINITY), min.assign(std::size_t(out_size), INFINITY);
    fuse::shape_t<R> idx{};
    for (index_t i = 0; i < x.size(); ++i) {
      index_t o = 0;
      for (std::size_t d = 0; d < R; ++d) o += idx[d] * out_stride[d];
      const double v = double(x.data()[i]);
      sum[std::size_t(o)] += v, prod[std::size_t(o)] *= v;
      max[std::size_t(o)] = (v > max[std::size_t(o)] || std::isnan(v)) ? v : max[std::size_t(o)];
      min[std::size_t(o)] = (v < min[std::size_t(o)] || std::isnan(v)) ? v : min[std::size_t(o)];
      for (std::size_t d = R; d-- > 0;) {
        if (++idx[d] < s[d]) break;
        idx[d] = 0;
      }
    }
  }
};

// Every op of a reduction over mask M (given as `axes`) against the reference, on `exec`; x's values
// positive (sums without cancellation, as the other tests here).
template <std::uint32_t M, class T, std::size_t R, class Axes>
void check_leading(const fuse::cpu& exec, const fuse::tensor<T, R>& x, Axes axes) {
  const leading_ref<M, T, R> ref(x);
  auto sum = fuse::eval(exec, fuse::sum(x, axes));
  auto mean = fuse::eval(exec, fuse::mean(x, axes));
  auto max = fuse::eval(exec, fuse::max(x, axes));
  auto min = fuse::eval(exec, fuse::min(x, axes));
  auto prod = fuse::eval(exec, fuse::prod(x, axes));
  for (std::size_t k = 0; k < ref.sum.size(); ++k) {
    CAPTURE(k);
    REQUIRE(close(sum.data()[k], ref.sum[k], 1e-6, 1e-6));
    REQUIRE(close(mean.data()[k], ref.sum[k] / double(ref.count), 1e-6, 1e-6));
    REQUIRE(close(max.data()[k], ref.max[k], 0));
    REQUIRE(close(min.data()[k], ref.min[k], 0));
    REQUIRE(close(prod.data()[k], ref.prod[k], 1e-4));  // up to 300 float products
  }
}
}  // namespace

TEST_CASE("reductions over leading axes, read in memory order: every op, ranks 2-4, threads, NaN") {
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    check_leading<0b1>(exec, random<float, 2>({37, 100}, 21, 0.5, 2.0), fuse::axis<0>);
    check_leading<0b10>(exec, random<float, 3>({3, 300, 17}, 22, 0.5, 2.0), fuse::axis<1>);
    check_leading<0b11>(exec, random<float, 3>({5, 7, 1031}, 23, 0.5, 2.0), fuse::axes<0, 1>);
    check_leading<0b101>(exec, random<float, 4>({4, 3, 5, 64}, 24, 0.5, 2.0), fuse::axes<0, 2>);
    // NaN in one column (in the middle of a 16-row group): that column's max, min and sum are NaN.
    auto x = random<float, 2>({53, 40}, 26, 0.5, 2.0);
    x(20, 7) = NAN;
    check_leading<0b1>(exec, x, fuse::axis<0>);
    // Fewer tiles than threads and many rows (enough elements for 3 threads): the rows split
    // across threads (over one reduced axis, and over two), the parts' results combined after;
    // NaN in the last part. (Values near 1: prod over 5000 rows stays in float's range.)
    auto tall = random<float, 2>({5000, 20}, 31, 0.9, 1.1);
    tall(4990, 3) = NAN;
    check_leading<0b1>(exec, tall, fuse::axis<0>);
    check_leading<0b11>(exec, random<float, 3>({5, 1000, 24}, 32, 0.9, 1.1), fuse::axes<0, 1>);
    // Two kept combinations (axis 1, between the reduced ones) and 3003 rows in uneven parts.
    check_leading<0b101>(exec, random<float, 4>({3, 2, 1001, 20}, 33, 0.9, 1.1), fuse::axes<0, 2>);
  }
}

TEST_CASE("reductions over leading axes: many rows and columns, accuracy", "[large]") {
  // 1024 columns and more: several tiles per thread; 300 rows: flushes at 16 and 256 rows.
  for (int threads : {1, 2})
    check_leading<0b1>(fuse::cpu{.threads = threads}, random<float, 2>({300, 2500}, 25, 0.5, 2.0), fuse::axis<-2>);
  // 2^16 equal float terms per column: the 16-row groups keep each accumulator's chain short.
  fuse::tensor<float, 2> c(65536, 16);
  for (index_t i = 0; i < c.size(); ++i) c.data()[i] = 0.52497673f;
  const auto cs = fuse::eval(fuse::sum(c, fuse::axis<0>));
  for (index_t j = 0; j < 16; ++j) CHECK(close(cs(0, j), 65536.0 * double(0.52497673f), 1e-6));
}

TEST_CASE("reductions over leading axes: integer types, destinations, stride-0 leaves, aliasing") {

  // int8 sums into int64 (NumPy), bool sums count.
  fuse::tensor<std::int8_t, 2> i8(300, 20);
  for (index_t i = 0; i < i8.size(); ++i) i8.data()[i] = std::int8_t((i * 37) % 201 - 100);
  const auto is = fuse::eval(fuse::sum(i8, fuse::axis<0>));
  static_assert(std::is_same_v<decltype(is)::value_type, std::int64_t>);
  const auto bs = fuse::eval(fuse::sum(i8 > 0, fuse::axis<0>));
  for (index_t j = 0; j < 20; ++j) {
    std::int64_t s = 0, pos = 0;
    for (index_t r = 0; r < 300; ++r) s += i8(r, j), pos += i8(r, j) > 0;
    CHECK(is(0, j) == s);
    CHECK(bs(0, j) == pos);
  }

  auto x = random<float, 2>({70, 33}, 27, 0.5, 2.0);
  const leading_ref<0b1, float, 2> ref(x);
  // A destination without the leading extent 1 (NumPy assignment), and a strided one.
  fuse::tensor<float, 1> y(33);
  y = fuse::sum(x, fuse::axis<0>);
  std::vector<float> buf(66, -7.f);
  auto every_other = fuse::view(buf.data(), fuse::shape_t<2>{1, 33}, fuse::shape_t<2>{0, 2});
  every_other = fuse::sum(x, fuse::axis<0>);
  for (index_t j = 0; j < 33; ++j) {
    CHECK(close(y(j), ref.sum[std::size_t(j)], 1e-6, 1e-6));
    CHECK(close(buf[std::size_t(2 * j)], ref.sum[std::size_t(j)], 1e-6, 1e-6));
    CHECK(buf[std::size_t(2 * j + 1)] == -7.f);
  }
  // A leaf of stride 0 along the kept axis (per-row weights), read through a row of copies.
  auto w = random<float, 2>({70, 1}, 28);
  const auto ws = fuse::eval(fuse::sum(x * w, fuse::axis<0>));
  for (index_t j = 0; j < 33; ++j) {
    double s = 0;
    for (index_t r = 0; r < 70; ++r) s += double(x(r, j)) * w(r, 0);
    CHECK(close(ws(0, j), s, 1e-6, 1e-6));
  }
  // The same over more columns than a tile: each tile copies only its own columns.
  auto wide = random<float, 2>({20, 2100}, 29, 0.5, 2.0);
  auto w20 = random<float, 2>({20, 1}, 30, 0.5, 2.0);
  const auto wide_sum = fuse::eval(fuse::cpu{.threads = 2}, fuse::sum(wide * w20, fuse::axis<0>));
  for (index_t j = 0; j < 2100; j += 7) {
    double s = 0;
    for (index_t r = 0; r < 20; ++r) s += double(wide(r, j)) * w20(r, 0);
    CHECK(close(wide_sum(0, j), s, 1e-6, 1e-6));
  }
  // The destination is the operand's first row: the fresh-tensor result (the row kernel's rules).
  auto top = fuse::slice<0>(x, 0, 1);
  top = fuse::sum(x, fuse::axis<0>);
  for (index_t j = 0; j < 33; ++j) CHECK(close(x(0, j), ref.sum[std::size_t(j)], 1e-6, 1e-6));
}

TEST_CASE("reductions over leading axes with reductions inside: var, logsumexp, hand-written variance") {
  // Over leading axes no reduction joins another as a phase (plan/fusion.hpp): as one row kernel,
  // its rows were strided columns (21-60x a hand loop). var is a column pair, its mean and
  // variance one kernel by columns in memory order (core/column_pair.hpp); so are logsumexp's max
  // and sum, then its one value per column.
  static_assert(fuse::kernels_v<decltype(fuse::var(std::declval<fuse::tensor<float, 2>&>(), fuse::axis<0>))> == 1);
  static_assert(fuse::kernels_v<decltype(fuse::var(std::declval<fuse::tensor<float, 4>&>(), fuse::axes<0, 1, 2>))> == 1);
  static_assert(fuse::kernels_v<decltype(fuse::var(std::declval<fuse::tensor<float, 2>&>(), fuse::axis<-1>))> == 1);
  // Rows that include the last axis (NCHW statistics: runs of H * W) keep their phases.
  static_assert(fuse::kernels_v<decltype(fuse::var(std::declval<fuse::tensor<float, 4>&>(), fuse::axes<0, 2, 3>))> == 1);
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    for (auto [m, n] : {std::pair<index_t, index_t>{37, 100}, {300, 17}, {5, 2100}}) {
      CAPTURE(m, n);
      auto x = random<float, 2>({m, n}, unsigned(40 + m), 99.0, 103.0);  // mean ~1e2: a one-pass variance would cancel
      x(m / 2, n / 3) = NAN;
      fuse::tensor<float, 2> v(1, n), l(1, n), h(1, n);
      fuse::assign(exec, v, fuse::var(x, fuse::axis<0>));
      fuse::assign(exec, l, fuse::logsumexp(x, fuse::axis<0>));
      fuse::assign(exec, h, fuse::mean(fuse::square(x - fuse::mean(x, fuse::axis<0>)), fuse::axis<0>));
      CHECK(fuse::plan(exec, fuse::logsumexp(x, fuse::axis<0>)).kernels == fuse::kernels_v<decltype(fuse::logsumexp(x, fuse::axis<0>))>);
      for (index_t j = 0; j < n; ++j) {
        std::vector<double> col;
        for (index_t i = 0; i < m; ++i) col.push_back(x(i, j));
        const double rv = ref_var(col);
        double mx = -INFINITY, se = 0;
        for (double c : col) mx = std::max(mx, c);
        for (double c : col) se += std::exp(c - mx);
        const double rl = j == n / 3 ? NAN : mx + std::log(se);
        if (std::isnan(rv)) {
          CHECK(std::isnan(v(0, j)));
          CHECK(std::isnan(h(0, j)));
          CHECK(std::isnan(l(0, j)));
          continue;
        }
        CHECK(close(v(0, j), rv, 1e-4, 1e-6));
        CHECK(close(h(0, j), rv, 1e-4, 1e-6));
        CHECK(close(l(0, j), rl, 1e-6));
      }
    }
    // Batch-norm statistics of NHWC [3, 5, 7, 24] over N, H, W; the destination [C] (leading 1s
    // dropped) and in place over the operand's first elements (the fresh-tensor result).
    auto a = random<float, 4>({3, 5, 7, 24}, 48, -1.0, 3.0);
    fuse::tensor<float, 1> bn(24);
    fuse::assign(exec, bn, fuse::var(a, fuse::axes<0, 1, 2>));
    for (index_t c = 0; c < 24; ++c) {
      std::vector<double> vals;
      for (index_t i = 0; i < 3; ++i)
        for (index_t j = 0; j < 5; ++j)
          for (index_t k = 0; k < 7; ++k) vals.push_back(a(i, j, k, c));
      CHECK(close(bn(c), ref_var(vals), 1e-4, 1e-6));
    }
    auto y = random<float, 2>({40, 33}, 49);
    std::vector<double> want;
    for (index_t j = 0; j < 33; ++j) {
      std::vector<double> col;
      for (index_t i = 0; i < 40; ++i) col.push_back(y(i, j));
      want.push_back(ref_var(col));
    }
    auto first_row = fuse::slice<0>(y, 0, 1);
    first_row = fuse::var(y, fuse::axis<0>);
    for (index_t j = 0; j < 33; ++j) CHECK(close(y(0, j), want[std::size_t(j)], 1e-4, 1e-6));
  }
}

// A reduction over leading axes is a kernel of its own; written twice (batch-norm statistics by
// hand hold mean(x) at the top and inside var), it is computed once and read back
// (core/computed_reductions.hpp). A counting map on x tells how often x was read.
TEST_CASE("a reduction over leading axes written twice is computed once: batch norm, column standardisation") {
  using x4 = fuse::tensor<float, 4>&;
  using x2 = fuse::tensor<float, 2>&;
  auto bn_of = [](const auto& x) {
    return (x - fuse::mean(x, fuse::axes<0, 1, 2>)) * fuse::rsqrt(fuse::var(x, fuse::axes<0, 1, 2>) + 1e-5f);
  };
  auto standardise = [](const auto& x) { return (x - fuse::mean(x, fuse::axis<0>)) / fuse::sqrt(fuse::var(x, fuse::axis<0>)); };
  // The mean and the variance about it (a column pair), then the normalisation (four when the
  // mean ran twice, three before the pair).
  static_assert(fuse::kernels_v<decltype(bn_of(std::declval<x4>()))> == 2);
  static_assert(fuse::kernels_v<decltype(standardise(std::declval<x2>()))> == 2);
  // logsumexp: its max and sum a column pair of the softmax kind, then its one value per column.
  static_assert(fuse::kernels_v<decltype(fuse::logsumexp(std::declval<x2>(), fuse::axis<0>))> == 2);
  std::atomic<long> calls{0};
  const auto counted = counting_identity(calls);
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    // NHWC [3, 5, 7, 24] with a mean of ~1e2 (a one-pass variance would cancel).
    auto a = random<float, 4>({3, 5, 7, 24}, 61, 99.0, 103.0);
    fuse::tensor<float, 4> y(3, 5, 7, 24);
    calls = 0;
    const auto e = bn_of(fuse::map(counted, a));
    fuse::assign(exec, y, e);
    CHECK(calls == 2 * a.size());
    CHECK(fuse::plan(exec, e).kernels == 2);
    for (index_t c = 0; c < 24; ++c) {
      std::vector<double> vals;
      for (index_t i = 0; i < 3; ++i)
        for (index_t j = 0; j < 5; ++j)
          for (index_t k = 0; k < 7; ++k) vals.push_back(a(i, j, k, c));
      double mean = 0;
      for (double v : vals) mean += v / double(vals.size());
      const double scale = 1 / std::sqrt(ref_var(vals) + 1e-5);
      for (index_t i = 0; i < 3; ++i)
        for (index_t j = 0; j < 5; ++j)
          for (index_t k = 0; k < 7; ++k) CHECK(close(y(i, j, k, c), (a(i, j, k, c) - mean) * scale, 1e-3, 1e-4));
    }
    // Columns of [m, n], odd sizes, a NaN in one column; strided (a transposed view) too.
    for (auto [m, n] : {std::pair<index_t, index_t>{37, 100}, {300, 17}}) {
      CAPTURE(m, n);
      auto x = random<float, 2>({m, n}, unsigned(70 + m), -2.0, 3.0);
      x(m / 2, n / 3) = NAN;
      auto xt = random<float, 2>({n, m}, unsigned(80 + m), -2.0, 3.0);
      fuse::tensor<float, 2> z(m, n), zt(m, n), l(1, n);
      calls = 0;
      fuse::assign(exec, z, standardise(fuse::map(counted, x)));
      CHECK(calls == 2 * x.size());
      fuse::assign(exec, zt, standardise(fuse::transpose(xt)));
      fuse::assign(exec, l, fuse::logsumexp(x, fuse::axis<0>));
      CHECK(fuse::plan(exec, fuse::logsumexp(x, fuse::axis<0>)).kernels == 2);
      for (index_t j = 0; j < n; ++j) {
        std::vector<double> col, colt;
        for (index_t i = 0; i < m; ++i) col.push_back(x(i, j)), colt.push_back(xt(j, i));
        double mean = 0, meant = 0, mx = -INFINITY, se = 0;
        for (index_t i = 0; i < m; ++i) mean += col[std::size_t(i)] / double(m), meant += colt[std::size_t(i)] / double(m);
        for (double c : col) mx = std::max(mx, c);
        for (double c : col) se += std::exp(c - mx);
        const double sd = std::sqrt(ref_var(col)), sdt = std::sqrt(ref_var(colt));
        for (index_t i = 0; i < m; ++i) CHECK(close(zt(i, j), (colt[std::size_t(i)] - meant) / sdt, 1e-3, 1e-4));
        if (j == n / 3) {
          CHECK(std::isnan(l(0, j)));
          for (index_t i = 0; i < m; ++i) CHECK(std::isnan(z(i, j)));
          continue;
        }
        CHECK(close(l(0, j), mx + std::log(se), 1e-6));
        for (index_t i = 0; i < m; ++i) CHECK(close(z(i, j), (col[std::size_t(i)] - mean) / sd, 1e-3, 1e-4));
      }
    }
  }
  // A reduction without its reduced axis (NumPy's x.sum(-1)) under a softmax, which reads its
  // operand four times: attention's scores q k^T written as a contraction are computed once
  // (five kernels, four of them the contraction, when each occurrence was computed).
  {
    auto q = random<float, 2>({13, 6}, 92, -1.0, 1.0), k = random<float, 2>({11, 6}, 93, -1.0, 1.0);
    calls = 0;
    const auto qc = fuse::map(counted, q);
    const auto p = fuse::softmax(fuse::squeeze<2>(fuse::sum(fuse::unsqueeze<1>(qc) * fuse::unsqueeze<0>(k), fuse::axis<-1>)), fuse::axis<-1>);
    static_assert(fuse::kernels_v<decltype(p)> == 2);
    CHECK(fuse::plan(p).kernels == 2);
    const auto got = fuse::eval(p);
    CHECK(calls == 13 * 11 * 6);
    for (index_t i = 0; i < 13; ++i) {
      std::vector<double> s(11);
      double top = -INFINITY, total = 0;
      for (index_t j = 0; j < 11; ++j) {
        for (index_t d = 0; d < 6; ++d) s[std::size_t(j)] += double(q(i, d)) * k(j, d);
        top = std::max(top, s[std::size_t(j)]);
      }
      for (double& v : s) total += (v = std::exp(v - top));
      for (index_t j = 0; j < 11; ++j) CHECK(close(got(i, j), s[std::size_t(j)] / total, 1e-5, 1e-7));
    }
  }
  // Two reductions of one form over different data are both computed; the plan lists one kernel
  // more than kernels_v (which takes one form for the same data) and says why.
  auto p = random<float, 2>({33, 9}, 90, -2.0, 3.0), q = random<float, 2>({33, 9}, 91, -2.0, 3.0);
  const auto two = (p - fuse::mean(p, fuse::axis<0>)) + fuse::mean(q, fuse::axis<0>);
  static_assert(fuse::kernels_v<decltype(two)> == 2);
  const auto plan = fuse::plan(two);
  CHECK(plan.kernels == 3);
  CHECK(plan.lines[1].what.find("over other data") != std::string::npos);
  const auto r = fuse::eval(two);
  for (index_t j = 0; j < 9; ++j) {
    double mp = 0, mq = 0;
    for (index_t i = 0; i < 33; ++i) mp += double(p(i, j)) / 33, mq += double(q(i, j)) / 33;
    for (index_t i = 0; i < 33; ++i) CHECK(close(r(i, j), p(i, j) - mp + mq, 1e-5, 1e-5));
  }
}

// An elementwise node over reductions of its rows and constants alone is a value per row; under a
// reduction over other axes (the mean of a per-row loss) it is one row kernel of its own, written
// once per row, and the outer reduction reads it (plan/fusion.hpp, is_row_value). It was a kernel
// per reduction, logsumexp's max twice.
TEST_CASE("a value per row under a reduction over other axes is one row kernel: mean cross-entropy") {
  using x2 = fuse::tensor<float, 2>&;
  auto lse_mean = [](const auto& x) { return fuse::mean(fuse::logsumexp(x, fuse::axis<-1>)); };
  static_assert(fuse::kernels_v<decltype(lse_mean(std::declval<x2>()))> == 2);
  // Not a value per row (x outside the reductions): the max, then the sum over everything.
  static_assert(fuse::kernels_v<decltype(fuse::sum(std::declval<x2>() - fuse::max(std::declval<x2>(), fuse::axis<-1>)))> == 2);
  std::atomic<long> calls{0};
  const auto counted = counting_identity(calls);
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    for (auto [n, c] : {std::pair<index_t, index_t>{37, 101}, {300, 7}, {5, 1}}) {
      CAPTURE(n, c);
      auto lg = random<float, 2>({n, c}, unsigned(100 + n), -4.0, 4.0);
      fuse::tensor<std::int32_t, 1> label(n);
      for (index_t i = 0; i < n; ++i) label(i) = std::int32_t((i * 7) % c);
      const std::array<index_t, 2> s{n, c};
      const auto z = fuse::map(counted, lg);
      const auto loss = fuse::logsumexp(z, fuse::axis<-1>) - fuse::sum(fuse::where(fuse::iota<1>(s) == fuse::reshape(label, n, 1), z, 0.f), fuse::axis<-1>);
      const auto mean_loss = fuse::mean(loss);
      static_assert(fuse::kernels_v<decltype(loss)> == 1);
      static_assert(fuse::kernels_v<decltype(mean_loss)> == 2);
      CHECK(fuse::plan(exec, mean_loss).kernels == 2);
      calls = 0;
      const float got = fuse::eval(exec, mean_loss);
      CHECK(calls == 3 * lg.size());  // three phases over the logits: max, sum of exp, the label's
      const float lse = fuse::eval(exec, lse_mean(lg));
      double want = 0, want_lse = 0;
      for (index_t i = 0; i < n; ++i) {
        double mx = -INFINITY, se = 0;
        for (index_t j = 0; j < c; ++j) mx = std::max(mx, double(lg(i, j)));
        for (index_t j = 0; j < c; ++j) se += std::exp(double(lg(i, j)) - mx);
        want += (mx + std::log(se) - lg(i, label(i))) / double(n);
        want_lse += (mx + std::log(se)) / double(n);
      }
      CHECK(close(got, want, 1e-5, 1e-6));
      CHECK(close(lse, want_lse, 1e-5, 1e-6));
      // A NaN logit makes its row's loss, and so the mean, NaN.
      lg(n / 2, c - 1) = NAN;
      CHECK(std::isnan(fuse::eval(exec, mean_loss)));
    }
  }
}

TEST_CASE("reductions over rows shorter than a vector: every op, ranks 1-3, threads, empty rows, aliasing") {
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    check_leading<0b10>(exec, random<float, 2>({1001, 3}, 31, 0.5, 2.0), fuse::axis<-1>);
    check_leading<0b100>(exec, random<float, 3>({7, 5, 15}, 32, 0.5, 2.0), fuse::axis<2>);
    check_leading<0b1>(exec, random<float, 1>({9}, 33, 0.5, 2.0), fuse::axis<0>);
    check_leading<0b10>(exec, random<float, 2>({77, 1}, 34, 0.5, 2.0), fuse::axis<1>);
    auto x = random<float, 2>({40, 5}, 35, 0.5, 2.0);
    x(17, 2) = NAN;
    check_leading<0b10>(exec, x, fuse::axis<1>);
  }
  // Rows of length 0: sum 0, mean NaN (max raises: the empty-extents test above).
  fuse::tensor<float, 2> none(6, 0);
  const auto s0 = fuse::eval(fuse::sum(none, fuse::axis<-1>));
  const auto m0 = fuse::eval(fuse::mean(none, fuse::axis<-1>));
  for (index_t r = 0; r < 6; ++r) CHECK((s0(r, 0) == 0.f && std::isnan(m0(r, 0))));
  // A per-row weight of stride 0 along the row, a strided destination, int16 into int64.
  auto x = random<float, 2>({50, 3}, 36, 0.5, 2.0);
  auto w = random<float, 2>({50, 1}, 37, 0.5, 2.0);
  std::vector<float> buf(100, -7.f);
  auto out = fuse::view(buf.data(), fuse::shape_t<2>{50, 1}, fuse::shape_t<2>{2, 0});
  out = fuse::sum(x * w, fuse::axis<-1>);
  fuse::tensor<std::int16_t, 2> i16(50, 3);
  for (index_t i = 0; i < i16.size(); ++i) i16.data()[i] = std::int16_t(i * 997 % 60001 - 30000);
  const auto is = fuse::eval(fuse::sum(i16, fuse::axis<-1>));
  for (index_t r = 0; r < 50; ++r) {
    const double want = (double(x(r, 0)) + x(r, 1) + x(r, 2)) * w(r, 0);
    CHECK(close(buf[std::size_t(2 * r)], want, 1e-6));
    CHECK(buf[std::size_t(2 * r + 1)] == -7.f);
    CHECK(is(r, 0) == std::int64_t(i16(r, 0)) + i16(r, 1) + i16(r, 2));
  }
  // The destination is the operand's first column: the fresh-tensor result (the row kernel's rules).
  const auto x0 = fuse::eval(x * 1.f);
  auto first = fuse::slice<1>(x, 0, 1);
  first = fuse::sum(x, fuse::axis<-1>);
  for (index_t r = 0; r < 50; ++r) CHECK(close(x(r, 0), double(x0(r, 0)) + x0(r, 1) + x0(r, 2), 1e-6));
}
