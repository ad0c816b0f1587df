// Views derived from leaves (transpose, permute, slice, reshape) and squeeze/unsqueeze of views
// and of expressions. Every result is compared with indexing arithmetic done by hand.
#include "support.hpp"

using namespace fuse_test;

TEST_CASE("transpose reverses all axes, like numpy.transpose", "[core][views]") {
  auto x = random_tensor<float, 2>({5, 8}, 101);
  auto t = fuse::transpose(x);
  CHECK(t.shape() == shape<2>{8, 5});
  CHECK(t.data() == x.data());  // a view of the same memory
  check_all(t, [&](const shape<2>& i) { return at(x, shape<2>{i[1], i[0]}); });
  check_all(fuse::eval(t), [&](const shape<2>& i) { return at(x, shape<2>{i[1], i[0]}); });

  auto x3 = random_tensor<double, 3>({3, 4, 7}, 102);
  auto t3 = fuse::eval(fuse::transpose(x3) * 2.0);
  CHECK(t3.shape() == shape<3>{7, 4, 3});
  check_all(t3, [&](const shape<3>& i) { return 2.0 * at(x3, shape<3>{i[2], i[1], i[0]}); });

  // Transposing twice gives the original; transposing a view and writing through it.
  auto tt = fuse::transpose(fuse::transpose(x3.view()));
  CHECK(tt.shape() == x3.shape());
  CHECK(tt.strides() == x3.strides());
  fuse::tensor<float, 2> y(8, 5);
  fuse::transpose(y) = x + 1.f;  // y = x.T + 1
  check_all(y, [&](const shape<2>& i) { return at(x, shape<2>{i[1], i[0]}) + 1.0; });
  // Rank 1: transpose is the identity.
  auto r = random_tensor<int, 1>({9}, 103);
  check_same(fuse::eval(fuse::transpose(r)), r);
}

TEST_CASE("permute<...> reorders axes: result axis i is source axis P[i]", "[core][views]") {
  auto x = random_tensor<float, 3>({2, 3, 5}, 104);
  auto p = fuse::permute<1, 0, 2>(x);
  CHECK(p.shape() == shape<3>{3, 2, 5});
  check_all(fuse::eval(p), [&](const shape<3>& i) { return at(x, shape<3>{i[1], i[0], i[2]}); });
  auto q = fuse::permute<2, 0, 1>(x);
  CHECK(q.shape() == shape<3>{5, 2, 3});
  check_all(fuse::eval(q + 1.f), [&](const shape<3>& i) { return at(x, shape<3>{i[1], i[2], i[0]}) + 1.0; });
  auto id = fuse::permute<0, 1, 2>(x);
  CHECK(id.strides() == x.strides());

  auto x4 = random_tensor<int, 4>({2, 3, 4, 5}, 105);
  auto p4 = fuse::eval(fuse::permute<3, 1, 0, 2>(x4));
  CHECK(p4.shape() == shape<4>{5, 3, 2, 4});
  check_all(p4, [&](const shape<4>& i) { return at(x4, shape<4>{i[2], i[1], i[3], i[0]}); });

  // Permute of a strided view, and writing through a permuted view.
  auto sub = fuse::slice<2>(x, 1, 5, 2);  // [2, 3, 2]
  auto ps = fuse::eval(fuse::permute<2, 1, 0>(sub));
  check_all(ps, [&](const shape<3>& i) { return at(x, shape<3>{i[2], i[1], 1 + 2 * i[0]}); });
  fuse::tensor<float, 3> y(3, 5, 2);
  fuse::permute<2, 0, 1>(y) = x * 2.f;  // y[j, k, i] = 2 x[i, j, k]
  check_all(y, [&](const shape<3>& i) { return 2.0 * at(x, shape<3>{i[2], i[0], i[1]}); });
}

namespace {
// Python's slice(begin, end, step).indices(n) for step >= 1, written independently of fuse.
std::vector<index_t> python_slice(index_t n, index_t begin, index_t end, index_t step) {
  auto norm = [n](index_t i) {
    if (i < 0) i += n;
    return i < 0 ? 0 : (i > n ? n : i);
  };
  std::vector<index_t> out;
  for (index_t i = norm(begin); i < norm(end); i += step) out.push_back(i);
  return out;
}
}  // namespace

TEST_CASE("slice<k>(v, begin, end[, step]) follows Python slicing", "[core][views]") {
  const index_t m = 6, n = 11;
  auto x = random_tensor<float, 2>({m, n}, 106);
  struct sl {
    index_t b, e, s;
  };
  const sl cases[] = {{0, 11, 1},   {2, 7, 1},   {-3, 11, 1},   {-3, -1, 1},  {0, -1, 2},    {-100, 100, 1},
                      {1, 100, 3},  {5, 2, 1},   {11, 20, 1},   {-20, -15, 1}, {0, 0, 1},    {3, 4, 7},
                      {10, 11, 5},  {-1, 11, 1}, {0, 11, 4},    {1, 10, 10},  {0, 11, 11},  {-11, -10, 1}};
  for (const auto& c : cases) {
    CAPTURE(c.b, c.e, c.s);
    const auto cols = python_slice(n, c.b, c.e, c.s);
    auto v = fuse::slice<1>(x, c.b, c.e, c.s);
    REQUIRE(v.shape() == shape<2>{m, index_t(cols.size())});
    check_all(v, [&](const shape<2>& i) { return at(x, shape<2>{i[0], cols[std::size_t(i[1])]}); });
    // The same along axis 0 (rows), with the negative axis spelling, evaluated.
    const auto rows = python_slice(m, c.b, c.e, c.s);
    auto w = fuse::eval(fuse::slice<-2>(x.view(), c.b, c.e, c.s) + 1.f);
    REQUIRE(w.shape() == shape<2>{index_t(rows.size()), n});
    check_all(w, [&](const shape<2>& i) { return at(x, shape<2>{rows[std::size_t(i[0])], i[1]}) + 1.0; });
  }
  // Default step is 1.
  auto d = fuse::slice<0>(x, 1, 4);
  CHECK(d.shape() == shape<2>{3, n});
  CHECK(d.data() == x.data() + n);
}

TEST_CASE("slice: step < 1 throws shape_error", "[core][views][errors]") {
  auto x = random_tensor<float, 2>({4, 5}, 107);
  CHECK_THROWS_AS(fuse::slice<0>(x, 0, 4, 0), fuse::shape_error);
  CHECK_THROWS_AS(fuse::slice<1>(x, 4, 0, -1), fuse::shape_error);
  CHECK_THROWS_AS(fuse::slice<-1>(x.view(), 0, 5, -2), fuse::shape_error);
  CHECK_NOTHROW(fuse::slice<1>(x, 0, 5, 1));
  // A step beyond the range keeps one element, also near the top of index_t (b + step overflowed).
  for (index_t step : {index_t{6}, index_t{1} << 62, std::numeric_limits<index_t>::max() - 1,
                       std::numeric_limits<index_t>::max()}) {
    CAPTURE(step);
    auto s = fuse::slice<0>(x, 2, 4, step);
    REQUIRE(s.shape() == shape<2>{1, 5});
    check_all(fuse::eval(s * 1.f), [&](const shape<2>& i) { return at(x, shape<2>{2, i[1]}); });
    CHECK(fuse::slice<1>(x, 3, 3, step).shape() == shape<2>{4, 0});
  }
}

TEST_CASE("slice: composition, writes, and slices of strided views", "[core][views]") {
  auto x = random_tensor<double, 3>({4, 9, 10}, 108);
  // x[1:4, ::2, 7:1:-?]: composition of slices on several axes, then of a transposed view.
  auto a = fuse::slice<2>(fuse::slice<1>(fuse::slice<0>(x, 1, 4), 0, 9, 2), 2, -1, 3);
  REQUIRE(a.shape() == shape<3>{3, 5, 3});
  check_all(a, [&](const shape<3>& i) { return at(x, shape<3>{1 + i[0], 2 * i[1], 2 + 3 * i[2]}); });
  auto b = fuse::slice<0>(fuse::transpose(x), 3, 9, 2);  // transpose: [10, 9, 4]
  REQUIRE(b.shape() == shape<3>{3, 9, 4});
  check_all(b, [&](const shape<3>& i) { return at(x, shape<3>{i[2], i[1], 3 + 2 * i[0]}); });
  auto c = fuse::slice<1>(fuse::slice<1>(x, 1, 9, 2), 1, 4, 2);  // rows 3, 7
  REQUIRE(c.shape() == shape<3>{4, 2, 10});
  check_all(c, [&](const shape<3>& i) { return at(x, shape<3>{i[0], 3 + 4 * i[1], i[2]}); });

  // Writing into a slice touches exactly the selected elements.
  auto y = random_tensor<double, 3>({4, 9, 10}, 109);
  const auto y0 = y;
  fuse::slice<2>(fuse::slice<1>(y, 2, 8, 3), -4, 10) = -7.0;  // y[:, 2:8:3, 6:10] = -7
  check_all(y, [&](const shape<3>& i) {
    const bool sel = (i[1] == 2 || i[1] == 5) && i[2] >= 6;
    return sel ? -7.0 : at(y0, i);
  });
  // An empty slice writes nothing and does not crash.
  fuse::slice<0>(y, 3, 3) = 1.0;
  fuse::slice<2>(y, 20, 30) = 1.0;
  check_all(y, [&](const shape<3>& i) { return ((i[1] == 2 || i[1] == 5) && i[2] >= 6) ? -7.0 : at(y0, i); });
}

TEST_CASE("reshape: a view with new extents over contiguous memory", "[core][views]") {
  auto x = random_tensor<float, 2>({6, 20}, 110);
  auto r = fuse::reshape(x, 3, 40);
  CHECK(r.shape() == shape<2>{3, 40});
  CHECK(r.data() == x.data());
  check_all(r, [&](const shape<2>& i) { return double(x.data()[i[0] * 40 + i[1]]); });

  auto r3 = fuse::reshape(x, 2, fuse::dyn, 5);  // inferred 12
  CHECK(r3.shape() == shape<3>{2, 12, 5});
  auto r1 = fuse::reshape(x.view(), fuse::dyn);
  CHECK(r1.shape() == shape<1>{120});
  auto r4 = fuse::reshape(x, fuse::dyn, 1, 4, 1);
  CHECK(r4.shape() == shape<4>{30, 1, 4, 1});
  check_all(fuse::eval(r3 * 2.f), [&](const shape<3>& i) { return 2.0 * x.data()[(i[0] * 12 + i[1]) * 5 + i[2]]; });

  // Writes go to the source.
  auto src = random_tensor<float, 1>({120}, 111);
  fuse::reshape(x, 4, 30) = fuse::reshape(src, 4, 30) + 1.f;
  for (index_t k = 0; k < 120; ++k) REQUIRE(x.data()[k] == src.data()[k] + 1.f);

  // A slice of whole rows is contiguous; so is a view whose only odd strides are on extent-1 axes.
  auto rows = fuse::slice<0>(x, 2, 4);
  auto rr = fuse::reshape(rows, 5, 8);
  CHECK(rr.data() == x.data() + 40);
  check_all(rr, [&](const shape<2>& i) { return double(x.data()[40 + i[0] * 8 + i[1]]); });
  auto u = fuse::unsqueeze<1>(x.view());  // [6, 1, 20], stride 0 on the new axis
  auto ru = fuse::reshape(u, 120);
  check_all(ru, [&](const shape<1>& i) { return double(x.data()[i[0]]); });
  float one[7];
  fill_random(one, 7, 112);
  auto odd = fuse::view(one, shape<3>{1, 7, 1}, shape<3>{1000, 1, -5});
  check_all(fuse::reshape(odd, 7), [&](const shape<1>& i) { return double(one[i[0]]); });

  // Negative extents other than dyn are errors, even where their product matches (NumPy too).
  CHECK_THROWS_AS(fuse::reshape(x, -2, -60), fuse::shape_error);
  CHECK_THROWS_AS(fuse::reshape(x, fuse::dyn, -120), fuse::shape_error);
  CHECK_THROWS_WITH(fuse::reshape(x, 4, -30), Catch::Contains("negative extent"));
}

TEST_CASE("reshape: non-contiguous sources and wrong sizes throw shape_error", "[core][views][errors]") {
  auto x = random_tensor<float, 2>({6, 20}, 113);
  CHECK_THROWS_AS(fuse::reshape(fuse::transpose(x), 120), fuse::shape_error);
  CHECK_THROWS_AS(fuse::reshape(fuse::slice<1>(x, 0, 10), 60), fuse::shape_error);
  CHECK_THROWS_AS(fuse::reshape(fuse::slice<0>(x, 0, 6, 2), 60), fuse::shape_error);
  std::vector<float> buf(40);
  CHECK_THROWS_AS(fuse::reshape(fuse::view(buf.data(), shape<1>{20}, shape<1>{2}), 20), fuse::shape_error);
  CHECK_THROWS_AS(fuse::reshape(x, 7, 20), fuse::shape_error);
  CHECK_THROWS_AS(fuse::reshape(x, fuse::dyn, 7), fuse::shape_error);
  // The message names the shape as asked for, not with the truncated quotient 120 / 7 = 17.
  CHECK_THROWS_WITH(fuse::reshape(x, fuse::dyn, 7), Catch::Matchers::Contains("as [-1, 7] (fuse::dyn at axis 0)") &&
                                                        Catch::Matchers::Contains("120 elements are not a multiple of 7"));
  CHECK_THROWS_AS(fuse::reshape(x, fuse::dyn, fuse::dyn), fuse::shape_error);
  CHECK_THROWS_WITH(fuse::reshape(x, -2, -60), Catch::Matchers::Contains("[-2, -60]"));

  // Empty sources are contiguous whatever their strides (NumPy: x[:, 3:3].reshape(0)).
  auto none = fuse::reshape(fuse::slice<1>(x, 3, 3), 0);
  CHECK(none.shape() == shape<1>{0});
  CHECK(fuse::reshape(fuse::transpose(fuse::slice<0>(x, 2, 2)), 5, 0, 4).shape() == shape<3>{5, 0, 4});
  CHECK(fuse::reshape(fuse::slice<1>(x, 3, 3), fuse::dyn, 3).shape() == shape<2>{0, 3});
  // fuse::dyn beside an extent of 0 could be anything (NumPy raises too).
  CHECK_THROWS_AS(fuse::reshape(fuse::slice<1>(x, 3, 3), 0, fuse::dyn), fuse::shape_error);
}

TEST_CASE("view: a negative extent throws shape_error naming it", "[core][views][errors]") {
  std::vector<float> buf(8);
  CHECK_THROWS_WITH(fuse::view(buf.data(), 2, -2), Catch::Matchers::Contains("[2, -2]"));
  CHECK_THROWS_AS(fuse::view(buf.data(), shape<2>{-1, 4}, shape<2>{4, 1}), fuse::shape_error);
  CHECK_THROWS_AS(fuse::view(buf.data(), fuse::extents<fuse::dyn, 4>{-3}), fuse::shape_error);
  CHECK_THROWS_WITH((fuse::tensor<float, 1>(-1)), Catch::Matchers::Contains("[-1]"));
  CHECK(fuse::view(buf.data(), 2, 0).size() == 0);
}

TEST_CASE("squeeze/unsqueeze of views give writable views", "[core][views][squeeze]") {
  auto x = random_tensor<float, 2>({4, 7}, 114);
  auto u0 = fuse::unsqueeze<0>(x);
  CHECK(u0.shape() == shape<3>{1, 4, 7});
  auto u1 = fuse::unsqueeze<1>(x.view());
  CHECK(u1.shape() == shape<3>{4, 1, 7});
  auto u2 = fuse::unsqueeze<2>(x);
  CHECK(u2.shape() == shape<3>{4, 7, 1});
  auto um = fuse::unsqueeze<-1>(x);  // a new last axis
  CHECK(um.shape() == shape<3>{4, 7, 1});
  check_all(u1, [&](const shape<3>& i) { return at(x, shape<2>{i[0], i[2]}); });
  check_all(u2, [&](const shape<3>& i) { return at(x, shape<2>{i[0], i[1]}); });

  fuse::tensor<float, 3> y3(4, 1, 7);
  fill_random(y3.data(), y3.size(), 115);
  auto s = fuse::squeeze<1>(y3);
  CHECK(s.shape() == shape<2>{4, 7});
  check_all(s, [&](const shape<2>& i) { return at(y3, shape<3>{i[0], 0, i[1]}); });
  auto sm = fuse::squeeze<-2>(y3.view());
  CHECK(sm.shape() == shape<2>{4, 7});

  // Writes through squeezed and unsqueezed views.
  fuse::squeeze<1>(y3) = x * 3.f;
  check_all(y3, [&](const shape<3>& i) { return 3.0 * at(x, shape<2>{i[0], i[2]}); });
  fuse::tensor<float, 2> z(4, 7);
  fuse::unsqueeze<0>(z) = x - 1.f;
  check_all(z, [&](const shape<2>& i) { return at(x, i) - 1.0; });
  // Squeeze of a transposed slice (strided source).
  auto col = fuse::slice<1>(x, 3, 4);  // [4, 1]
  auto c = fuse::squeeze<1>(col);
  check_all(c, [&](const shape<1>& i) { return at(x, shape<2>{i[0], 3}); });
  // unsqueeze<1> of a rank-1 view makes a column that broadcasts across rows.
  auto b = random_tensor<float, 1>({4}, 116);
  auto w = fuse::eval(x + fuse::unsqueeze<1>(b));
  check_all(w, [&](const shape<2>& i) { return at(x, i) + at(b, shape<1>{i[0]}); });
}

TEST_CASE("squeeze of an extent other than 1 throws shape_error", "[core][views][squeeze][errors]") {
  auto x = random_tensor<float, 3>({4, 1, 7}, 117);
  CHECK_THROWS_AS(fuse::squeeze<0>(x), fuse::shape_error);
  CHECK_THROWS_AS(fuse::squeeze<2>(x.view()), fuse::shape_error);
  CHECK_THROWS_AS(fuse::squeeze<0>(x + 1.f), fuse::shape_error);
  CHECK_THROWS_AS(fuse::squeeze<-1>(fuse::exp(x)), fuse::shape_error);
  fuse::tensor<float, 1> e(0);
  CHECK_THROWS_AS(fuse::squeeze<0>(e), fuse::shape_error);  // extent 0 is not 1
  CHECK_NOTHROW(fuse::squeeze<1>(x * x));
}

TEST_CASE("squeeze/unsqueeze of expressions", "[core][views][squeeze]") {
  const index_t m = 5, n = 9;
  auto x = random_tensor<float, 2>({m, n}, 118);
  auto b = random_tensor<float, 1>({n}, 119);
  auto ref = [&](index_t i, index_t j) { return at(x, shape<2>{i, j}) + at(b, shape<1>{j}); };

  auto u0 = fuse::unsqueeze<0>(x + b);
  static_assert(decltype(u0)::rank == 3);
  CHECK(u0.shape() == shape<3>{1, m, n});
  check_all(fuse::eval(u0), [&](const shape<3>& i) { return ref(i[1], i[2]); });
  auto u1 = fuse::eval(fuse::unsqueeze<1>(x + b));
  CHECK(u1.shape() == shape<3>{m, 1, n});
  check_all(u1, [&](const shape<3>& i) { return ref(i[0], i[2]); });
  auto u2 = fuse::eval(fuse::unsqueeze<2>(x + b));  // the rank-1 operand gets the new axis too
  CHECK(u2.shape() == shape<3>{m, n, 1});
  check_all(u2, [&](const shape<3>& i) { return ref(i[0], i[1]); });
  auto um = fuse::eval(fuse::unsqueeze<-1>(x * 2.f + b));
  CHECK(um.shape() == shape<3>{m, n, 1});
  check_all(um, [&](const shape<3>& i) { return 2.0 * at(x, shape<2>{i[0], i[1]}) + at(b, shape<1>{i[1]}); });

  // Broadcasting against the unsqueezed expression: (x + b)[:, None, :] + z[m, 3, n].
  auto z = random_tensor<float, 3>({m, 3, n}, 120);
  auto w = fuse::eval(fuse::unsqueeze<1>(x + b) + z);
  CHECK(w.shape() == shape<3>{m, 3, n});
  check_all(w, [&](const shape<3>& i) { return ref(i[0], i[2]) + at(z, i); });

  // squeeze of a node whose extent-1 axis comes from broadcasting operands.
  auto c = random_tensor<float, 3>({m, 1, 1}, 121);
  auto r = random_tensor<float, 2>({1, n}, 122);  // rank 2: axis 1 of (c * r) is r's axis 0
  auto s = fuse::squeeze<1>(c * r);
  static_assert(decltype(s)::rank == 2);
  CHECK(s.shape() == shape<2>{m, n});
  check_all(fuse::eval(s), [&](const shape<2>& i) { return at(c, shape<3>{i[0], 0, 0}) * at(r, shape<2>{0, i[1]}); });
  auto s0 = fuse::eval(fuse::squeeze<0>(fuse::unsqueeze<0>(fuse::exp(x) - 1.f)));
  check_all(s0, [&](const shape<2>& i) { return std::exp(at(x, i)) - 1.0; }, 1e-5);

  // Scalars and generators inside the expression.
  auto g = fuse::eval(fuse::unsqueeze<0>(fuse::iota<1>(shape<2>{m, n}) * 1.5 + fuse::full(shape<1>{n}, 2)));
  CHECK(g.shape() == shape<3>{1, m, n});
  check_all(g, [&](const shape<3>& i) { return double(i[2]) * 1.5 + 2.0; });
  auto g2 = fuse::eval(fuse::unsqueeze<1>(fuse::iota<1>(shape<2>{m, n})));
  CHECK(g2.shape() == shape<3>{m, 1, n});
  check_all(g2, [&](const shape<3>& i) { return double(i[2]); });
  auto g3 = fuse::eval(fuse::squeeze<0>(fuse::iota<0>(shape<2>{1, n})));
  CHECK(g3.shape() == shape<1>{n});
  check_all(g3, [](const shape<1>&) { return 0.0; });
}

TEST_CASE("squeeze/unsqueeze of reductions and of temporary tensors", "[core][views][squeeze]") {
  const index_t m = 6, n = 13;
  auto x = random_tensor<float, 2>({m, n}, 123);
  std::vector<double> row_max(m, -1e300), row_sum(m, 0.0);
  double total = 0;
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      const double v = at(x, shape<2>{i, j});
      row_max[i] = std::max(row_max[i], v);
      row_sum[i] += std::exp(v);
      total += v;
    }

  // Into a reduction: the operand gets the axis, the reduced axes are renumbered.
  auto u = fuse::unsqueeze<0>(fuse::max(x, fuse::axis<-1>));  // [1, m, 1]
  static_assert(decltype(u)::rank == 3);
  CHECK(u.shape() == shape<3>{1, m, 1});
  check_all(fuse::eval(u), [&](const shape<3>& i) { return row_max[i[1]]; });
  auto u1 = fuse::eval(fuse::unsqueeze<1>(fuse::max(x, fuse::axis<-1>)));  // [m, 1, 1]
  check_all(u1, [&](const shape<3>& i) { return row_max[i[0]]; });
  auto soft = fuse::eval(fuse::unsqueeze<0>(fuse::softmax(x)));  // [1, m, n], still one kernel
  static_assert(fuse::kernels_v<decltype(fuse::unsqueeze<0>(fuse::softmax(x)))> == 1);
  check_all(soft, [&](const shape<3>& i) { return std::exp(at(x, shape<2>{i[1], i[2]}) - row_max[i[1]]) /
                                                  (row_sum[i[1]] * std::exp(-row_max[i[1]])); }, 1e-5);
  // squeeze of an axis the reduction does not reduce.
  auto x3 = fuse::eval(fuse::unsqueeze<0>(x));  // [1, m, n]
  auto s = fuse::squeeze<0>(fuse::max(x3, fuse::axis<-1>));  // [m, 1]
  CHECK(s.shape() == shape<2>{m, 1});
  check_all(fuse::eval(s), [&](const shape<2>& i) { return row_max[i[0]]; });
  // A reduction over everything gains its axis by broadcasting.
  auto t = fuse::unsqueeze<0>(fuse::sum(x));
  CHECK(t.shape() == shape<1>{1});
  CHECK(fuse::eval(t)(0) == Approx(total).epsilon(1e-6));

  // Temporary tensors (shared by the expression) squeeze and unsqueeze like views.
  auto e = fuse::unsqueeze<1>(fuse::eval(x * 2.f));  // [m, 1, n]
  auto f = fuse::squeeze<1>(e) + 1.f;
  auto got = fuse::eval(f);
  check_all(got, [&](const shape<2>& i) { return 2.0 * at(x, i) + 1.0; });
}

TEST_CASE("transpose, permute, slice and reshape of temporary tensors keep them alive", "[core][views]") {
  // NumPy's (x * 2).T: the temporary moves into shared ownership held by the view (it was "no
  // matching function" until 2026-12-03). Held past the statement, the view still reads it.
  auto x = random_tensor<float, 2>({5, 7}, 311);
  auto t = fuse::transpose(fuse::eval(x * 2.f));
  CHECK(t.shape() == shape<2>{7, 5});
  check_all(fuse::eval(t + 1.f), [&](const shape<2>& i) { return double(2.f * at(x, shape<2>{i[1], i[0]})) + 1.0; });
  // A view of that view shares the same buffer.
  auto s = fuse::slice<0>(t, 1, 7, 2);
  check_all(fuse::eval(s), [&](const shape<2>& i) { return double(2.f * at(x, shape<2>{i[1], 1 + 2 * i[0]})); });
  auto p = fuse::permute<1, 0>(fuse::eval(x - 1.f));
  check_all(fuse::eval(p), [&](const shape<2>& i) { return double(at(x, shape<2>{i[1], i[0]}) - 1.f); });
  auto r = fuse::reshape(fuse::eval(x * x), 7, fuse::dyn);
  CHECK(r.shape() == shape<2>{7, 5});
  check_all(fuse::eval(r), [&](const shape<2>& i) {
    const index_t k = i[0] * 5 + i[1];
    const float v = at(x, shape<2>{k / 7, k % 7});
    return double(v * v);
  });
  // Inside a reduction.
  const double total = fuse::eval(fuse::sum(fuse::slice<1>(fuse::eval(x + 0.f), 0, 7, 3)));
  double expect = 0;
  for (index_t i = 0; i < 5; ++i)
    for (index_t j = 0; j < 7; j += 3) expect += at(x, shape<2>{i, j});
  CHECK(total == Approx(expect).epsilon(1e-6));
}

TEST_CASE("views: shape and strides as braced lists", "[core][view]") {
  std::vector<float> buf(12);
  for (std::size_t k = 0; k < buf.size(); ++k) buf[k] = float(k) + 0.5f;
  auto braced = fuse::view(buf.data(), {3, 2}, {4, 2});  // every other element of rows of 4
  auto spelled = fuse::view(buf.data(), shape<2>{3, 2}, shape<2>{4, 2});
  static_assert(std::is_same_v<decltype(braced), decltype(spelled)>);
  CHECK(braced.shape() == shape<2>{3, 2});
  CHECK(braced.strides() == shape<2>{4, 2});
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 2; ++j) CHECK(braced(i, j) == buf[std::size_t(4 * i + 2 * j)]);
  // Errors as for the std::array form.
  CHECK_THROWS_AS(fuse::view(buf.data(), {3, -2}, {4, 2}), fuse::shape_error);
}
