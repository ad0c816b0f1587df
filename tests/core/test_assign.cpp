// Assignment and evaluation: y = e, fuse::assign with and without an executor, scalars, NumPy
// assignment broadcasting, view = view, temporary destinations, eval, eager; aliasing between the
// destination and the expression; errors thrown before anything is written.
#include "support.hpp"

using namespace fuse_test;

// The message of the fuse::shape_error that f throws.
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const fuse::shape_error& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST_CASE("assign: y = e, assign(y, e), assign(exec, y, e) and eager agree", "[core][assign]") {
  const shape<2> s{37, 129};
  auto a = random_tensor<float, 2>(s, 301);
  auto b = random_tensor<float, 1>({129}, 302);
  auto ref = [&](const shape<2>& i) {
    const double u = at(a, i) * at(b, shape<1>{i[1]}) + 1.0;
    return u * u - at(a, i);
  };
  auto expr = [&] {
    auto u = a * b + 1.f;
    return u * u - a;
  };
  fuse::tensor<float, 2> y1(s), y2(s), y3(s), y4(s), y5(s);
  y1 = expr();
  fuse::assign(y2, expr());
  fuse::assign(fuse::cpu{.threads = 1}, y3, expr());
  fuse::assign(fuse::eager(fuse::cpu{}), y4, expr());
  fuse::assign(fuse::eager(fuse::cpu{.threads = 1}), y5.view(), expr());
  // u * u - a cancels: the error is relative to the operands (|a|, |b| <= 2), not to the result.
  for (auto* y : {&y1, &y2, &y3, &y4, &y5}) check_all(*y, ref, 1e-6, 1e-5);
  check_same(y1, y4, 1e-6, 1e-5);

  auto e1 = fuse::eval(expr());
  static_assert(std::is_same_v<decltype(e1), fuse::tensor<float, 2>>);
  check_all(e1, ref, 1e-6, 1e-5);
  auto e2 = fuse::eval(fuse::eager(fuse::cpu{}), expr());
  static_assert(std::is_same_v<decltype(e2), fuse::tensor<float, 2>>);
  check_all(e2, ref, 1e-6, 1e-5);
  auto e3 = fuse::eval(fuse::cpu{.threads = 1}, expr());
  check_all(e3, ref, 1e-6, 1e-5);
}

TEST_CASE("assign: assigning into a tensor keeps its storage", "[core][assign]") {
  auto x = random_tensor<double, 2>({5, 6}, 303);
  fuse::tensor<double, 2> y(5, 6);
  const double* p = y.data();
  y = x * 2.0;
  CHECK(y.data() == p);
  check_all(y, [&](const shape<2>& i) { return 2.0 * at(x, i); });
  y = x.view();  // a view is "any other expression": written, not rebound
  CHECK(y.data() == p);
  check_same(y, x);
  // A tensor of another type (float) is converted and written into the existing storage.
  auto f = random_tensor<float, 2>({5, 6}, 304);
  y = f;
  CHECK(y.data() == p);
  check_all(y, [&](const shape<2>& i) { return at(f, i); });
  // A tensor is never resized by an expression: a mismatching shape throws.
  fuse::tensor<double, 2> small(2, 3);
  CHECK_THROWS_AS(small = x + 1.0, fuse::shape_error);
  CHECK(small.shape() == shape<2>{2, 3});
}

TEST_CASE("assign: scalars assign everywhere", "[core][assign]") {
  fuse::tensor<float, 3> y(3, 4, 5);
  y = 0.f;
  check_all(y, [](const shape<3>&) { return 0.0; });
  y = 2.5f;
  check_all(y, [](const shape<3>&) { return 2.5; });
  fuse::assign(y, -1.25f);
  check_all(y, [](const shape<3>&) { return -1.25; });
  fuse::assign(fuse::cpu{.threads = 1}, y, 7);  // an int scalar into a float tensor
  check_all(y, [](const shape<3>&) { return 7.0; });
  fuse::tensor<int, 1> k(100003);
  k = 3;
  check_all(k, [](const shape<1>&) { return 3.0; });
  fuse::tensor<bool, 2> m(3, 3);
  m = true;
  check_all(m, [](const shape<2>&) { return 1.0; });
  // Through views of part of a tensor.
  fuse::slice<1>(y, 1, 3) = 9.f;
  check_all(y, [](const shape<3>& i) { return (i[1] == 1 || i[1] == 2) ? 9.0 : 7.0; });
}

TEST_CASE("assign: a lower-rank expression broadcasts into the destination", "[core][assign]") {
  auto b = random_tensor<float, 1>({6}, 305);
  auto c = random_tensor<float, 2>({4, 1}, 306);
  fuse::tensor<float, 3> y(3, 4, 6);
  y = b;
  check_all(y, [&](const shape<3>& i) { return at(b, shape<1>{i[2]}); });
  y = c * 2.f;
  check_all(y, [&](const shape<3>& i) { return 2.0 * at(c, shape<2>{i[1], 0}); });
  fuse::assign(y, c + b);
  check_all(y, [&](const shape<3>& i) { return at(c, shape<2>{i[1], 0}) + at(b, shape<1>{i[2]}); });
  // Extent-1 axes of the same rank stretch too.
  auto r = random_tensor<float, 3>({3, 1, 6}, 307);
  y = r;
  check_all(y, [&](const shape<3>& i) { return at(r, shape<3>{i[0], 0, i[2]}); });
  // A [1]-shaped expression fills everything.
  fuse::tensor<float, 1> one(1);
  *one.data() = 4.5f;
  fuse::assign(fuse::cpu{.threads = 1}, y, one);
  check_all(y, [](const shape<3>&) { return 4.5; });
}

TEST_CASE("assign: leading extent-1 axes beyond the destination's rank are dropped", "[core][assign]") {
  auto e3 = random_tensor<float, 3>({1, 4, 6}, 308);
  fuse::tensor<float, 2> y(4, 6);
  y = e3;
  check_all(y, [&](const shape<2>& i) { return at(e3, shape<3>{0, i[0], i[1]}); });
  auto e4 = random_tensor<float, 4>({1, 1, 1, 6}, 309);
  fuse::assign(y, e4 + 1.f);
  check_all(y, [&](const shape<2>& i) { return at(e4, shape<4>{0, 0, 0, i[1]}) + 1.0; });
  fuse::tensor<float, 1> v(6);
  v = e4 * 2.f;
  check_all(v, [&](const shape<1>& i) { return 2.0 * at(e4, shape<4>{0, 0, 0, i[0]}); });
  // A leading extent other than 1 cannot be dropped.
  auto bad = random_tensor<float, 3>({2, 4, 6}, 310);
  CHECK_THROWS_AS(y = bad, fuse::shape_error);
  // Nor can the destination's extent-1 axis absorb a larger one.
  // (row = y with y a tensor of the same type would be a value copy; a view is an expression.)
  fuse::tensor<float, 2> row(1, 6);
  CHECK_THROWS_AS(row = y.view(), fuse::shape_error);
  CHECK(row.shape() == shape<2>{1, 6});
  // A rank-0 destination takes a [1, 1] expression.
  fuse::tensor<float, 0> s{fuse::shape_t<0>{}};
  auto one = random_tensor<float, 2>({1, 1}, 311);
  s = one * 3.f;
  CHECK(*s.data() == Approx(3.0 * one.data()[0]));
}

TEST_CASE("assign: view = view writes elements and never rebinds", "[core][assign][view]") {
  std::vector<float> p(24), q(24);
  fill_random(p.data(), 24, 312);
  fill_random(q.data(), 24, 313);
  const auto q0 = q;
  auto vp = fuse::view(p.data(), 4, 6);
  auto vq = fuse::view(q.data(), 4, 6);
  static_assert(std::is_same_v<decltype(vp), decltype(vq)>);
  vp = vq;  // same type: copy assignment operator, must write
  CHECK(vp.data() == p.data());
  CHECK(p == q0);

  // A copy of a view aliases the same memory: assigning to the copy writes into p.
  fill_random(q.data(), 24, 314);
  auto alias = vp;
  alias = vq;
  CHECK(alias.data() == p.data());
  CHECK(p == q);

  // Strided views of the same type.
  auto sp = fuse::transpose(vp);
  auto sq = fuse::permute<0, 1>(fuse::view(q.data(), 6, 4));  // [6, 4], strides [4, 1]
  static_assert(std::is_same_v<decltype(sp), decltype(sq)>);
  sp = sq;  // p^T = q as [6, 4], i.e. p[i][j] = q[j*4 + i]
  for_each_index<2>({4, 6}, [&](const shape<2>& i) { REQUIRE(p[std::size_t(i[0] * 6 + i[1])] == q[std::size_t(i[1] * 4 + i[0])]); });
  CHECK(sp.data() == p.data());

  // Views of different element types convert.
  std::vector<double> d(24);
  fuse::view(d.data(), 4, 6) = vq;
  for (std::size_t k = 0; k < 24; ++k) REQUIRE(d[k] == double(q[k]));
}

TEST_CASE("assign: a temporary view is a valid destination", "[core][assign][view]") {
  auto x = random_tensor<float, 1>({1023}, 315);
  std::vector<float> out(1025, -3.f);
  fuse::assign(fuse::view(out.data() + 1, 1023), x * x);
  CHECK(out[0] == -3.f);
  CHECK(out[1024] == -3.f);
  for (std::size_t k = 0; k < 1023; ++k) REQUIRE(out[k + 1] == x.data()[k] * x.data()[k]);
  fuse::view(out.data(), 5, 205) = 1.f;
  for (std::size_t k = 0; k < 1025; ++k) REQUIRE(out[k] == 1.f);
  fuse::assign(fuse::cpu{.threads = 1}, fuse::view(out.data(), 1023), x - 1.f);
  for (std::size_t k = 0; k < 1023; ++k) REQUIRE(out[k] == x.data()[k] - 1.f);
}

TEST_CASE("assign: in-place updates", "[core][assign][alias]") {
  for (index_t n : {1, 17, 4097, 100003}) {
    CAPTURE(n);
    auto x = random_tensor<float, 1>({n}, 316);
    const auto x0 = x;
    x = x + 1.f;
    check_all(x, [&](const shape<1>& i) { return at(x0, i) + 1.0; });
    x = x * x - x0;
    check_all(x, [&](const shape<1>& i) { return (at(x0, i) + 1.0) * (at(x0, i) + 1.0) - at(x0, i); }, 1e-5);
    fuse::assign(fuse::eager(fuse::cpu{}), x, x0 * 2.f + x * 0.f);
    check_all(x, [&](const shape<1>& i) { return 2.0 * at(x0, i); });
  }
}

TEST_CASE("assign: a transpose of the destination gives the fresh-tensor result", "[core][assign][alias]") {
  for (index_t n : {1, 2, 7, 64, 190}) {  // 190^2 > 32768: threads
    CAPTURE(n);
    auto x = random_tensor<float, 2>({n, n}, 317);
    const auto fresh = fuse::eval(fuse::transpose(x));
    auto y = x;
    y = fuse::transpose(y);
    check_same(y, fresh);
    // Symmetrisation: y = y + y^T, and an overlap through a scalar-times-transpose.
    auto z = x;
    const auto want = fuse::eval(x + fuse::transpose(x));
    z = z + fuse::transpose(z);
    check_same(z, want);
    auto w = x;
    fuse::transpose(w) = w * 2.f;  // w^T = 2w, i.e. w = 2 x^T
    check_all(w, [&](const shape<2>& i) { return 2.0 * at(x, shape<2>{i[1], i[0]}); });
    auto e = x;
    fuse::assign(fuse::eager(fuse::cpu{}), e, fuse::transpose(e) - 1.f);
    check_all(e, [&](const shape<2>& i) { return at(x, shape<2>{i[1], i[0]}) - 1.0; });
  }
  // A rank-3 permutation in place.
  auto t = random_tensor<double, 3>({4, 4, 4}, 318);
  const auto want = fuse::eval(fuse::permute<2, 0, 1>(t));
  t = fuse::permute<2, 0, 1>(t);
  check_same(t, want);
}

TEST_CASE("assign: overlapping shifted slices give the fresh-tensor result", "[core][assign][alias]") {
  for (index_t n : {2, 3, 17, 1023, 100003}) {
    CAPTURE(n);
    auto v = random_tensor<float, 1>({n}, 319);
    const auto v0 = v;
    // v[1:] = v[:-1] * 2: every element reads its left neighbour's original value.
    fuse::slice<0>(v, 1, n) = fuse::slice<0>(v, 0, n - 1) * 2.f;
    check_all(v, [&](const shape<1>& i) { return i[0] == 0 ? at(v0, i) : 2.0 * at(v0, shape<1>{i[0] - 1}); });
    // v[:-1] = v[1:] + v[:-1]: the other direction.
    auto w = v0;
    fuse::slice<0>(w, 0, n - 1) = fuse::slice<0>(w, 1, n) + fuse::slice<0>(w, 0, n - 1);
    check_all(w, [&](const shape<1>& i) {
      return i[0] == n - 1 ? at(v0, i) : at(v0, shape<1>{i[0] + 1}) + at(v0, i);
    });
    // Reversal in place through a negative-stride view.
    auto r = v0;
    r = fuse::view(r.data() + (n - 1), shape<1>{n}, shape<1>{-1});
    check_all(r, [&](const shape<1>& i) { return at(v0, shape<1>{n - 1 - i[0]}); });
    // Every other element, shifted by one (step 2, interleaved).
    if (n >= 4) {
      auto s = v0;
      const index_t h = n / 2;
      fuse::slice<0>(s, 1, 2 * h, 2) = fuse::slice<0>(s, 0, 2 * h, 2) - fuse::slice<0>(s, 1, 2 * h, 2);
      check_all(s, [&](const shape<1>& i) {
        const index_t k = i[0];
        return (k % 2 == 1 && k < 2 * h) ? at(v0, shape<1>{k - 1}) - at(v0, i) : at(v0, i);
      });
    }
  }
  // Rows of a matrix shifted down by one, with a broadcast bias (2-D overlap).
  auto m = random_tensor<double, 2>({301, 517}, 320);
  const auto m0 = m;
  auto bias = random_tensor<double, 1>({517}, 321);
  fuse::slice<0>(m, 1, 301) = fuse::slice<0>(m, 0, 300) + bias;
  check_all(m, [&](const shape<2>& i) { return i[0] == 0 ? at(m0, i) : at(m0, shape<2>{i[0] - 1, i[1]}) + at(bias, shape<1>{i[1]}); });
}

TEST_CASE("errors: shapes that do not broadcast name both shapes, nothing written", "[core][errors]") {
  auto a = random_tensor<float, 2>({3, 4}, 322);
  auto b = random_tensor<float, 1>({5}, 323);
  fuse::tensor<float, 2> y(3, 4);
  fill_value(y, sentinel<float>());

  const std::string m1 = message_of([&] { y = a + b; });
  CAPTURE(m1);
  CHECK(m1.find("[3, 4]") != std::string::npos);
  CHECK(m1.find("[5]") != std::string::npos);
  check_all(y, [](const shape<2>&) { return double(sentinel<float>()); });

  // Deeper in the tree, and the other operand order.
  auto c = random_tensor<float, 3>({2, 1, 4}, 324);
  const std::string m2 = message_of([&] { fuse::assign(y, fuse::exp(b) * (c + a)); });
  CAPTURE(m2);
  CHECK(m2.find("[5]") != std::string::npos);
  CHECK(m2.find("[2, 3, 4]") != std::string::npos);
  const std::string m3 = message_of([&] { fuse::assign(fuse::cpu{.threads = 1}, y, b - a); });
  CAPTURE(m3);
  CHECK(m3.find("[5]") != std::string::npos);
  CHECK(m3.find("[3, 4]") != std::string::npos);

  // The expression is fine, the destination is not: both shapes are named, nothing is written.
  const std::string m4 = message_of([&] { y = b * 2.f; });
  CAPTURE(m4);
  CHECK(m4.find("[5]") != std::string::npos);
  CHECK(m4.find("[3, 4]") != std::string::npos);
  const std::string m5 = message_of([&] { fuse::assign(fuse::eager(fuse::cpu{}), y, fuse::exp(c) + 1.f); });
  CAPTURE(m5);
  CHECK(m5.find("[2, 1, 4]") != std::string::npos);
  CHECK(m5.find("[3, 4]") != std::string::npos);
  check_all(y, [](const shape<2>&) { return double(sentinel<float>()); });

  // Dynamic extents meeting a static one at run time.
  std::vector<float> buf(12);
  auto vs = fuse::view(buf.data(), fuse::extents<fuse::dyn, 4>{3});
  auto vd = fuse::view(b.data(), 5);
  const std::string m6 = message_of([&] { y = vs + vd; });
  CAPTURE(m6);
  CHECK(m6.find("[3, 4]") != std::string::npos);
  CHECK(m6.find("[5]") != std::string::npos);
  static_assert(std::is_base_of_v<std::invalid_argument, fuse::shape_error>);
  check_all(y, [](const shape<2>&) { return double(sentinel<float>()); });
}

TEST_CASE("errors: an output with stride 0 on an axis of extent > 1 is rejected, nothing written", "[core][errors]") {
  auto x = random_tensor<float, 2>({4, 6}, 325);
  std::vector<float> buf(64, sentinel<float>());
  auto bad = fuse::view(buf.data() + 8, shape<2>{4, 6}, shape<2>{0, 1});
  CHECK_THROWS_AS(bad = x * 2.f, fuse::shape_error);
  CHECK_THROWS_AS(fuse::assign(fuse::cpu{.threads = 1}, bad, 1.f), fuse::shape_error);
  CHECK_THROWS_AS(fuse::assign(fuse::eager(fuse::cpu{}), bad, fuse::exp(x) + 1.f), fuse::shape_error);
  auto bad2 = fuse::view(buf.data() + 8, shape<2>{4, 6}, shape<2>{6, 0});
  CHECK_THROWS_AS(bad2 = x, fuse::shape_error);
  auto bad3 = fuse::view(buf.data() + 8, shape<1>{2}, shape<1>{0});
  CHECK_THROWS_AS(bad3 = 0.f, fuse::shape_error);
  for (float f : buf) REQUIRE(f == sentinel<float>());

  // A stride of 0 on an axis of extent 1 is ignored: the write is fine.
  auto ok = fuse::view(buf.data() + 8, shape<3>{4, 1, 6}, shape<3>{6, 0, 1});
  ok = fuse::unsqueeze<1>(x);
  for (index_t k = 0; k < 24; ++k) REQUIRE(buf[std::size_t(8 + k)] == x.data()[k]);
  CHECK(buf[7] == sentinel<float>());
  CHECK(buf[32] == sentinel<float>());
}

TEST_CASE("errors: an output whose strides put two elements on one address is rejected", "[core][errors]") {
  // A sliding window: element (i, j) at i + j. Doubling it in place has no fresh-tensor meaning.
  std::vector<float> buf(16);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = float(i + 1);
  const auto before = buf;
  auto window = fuse::view(buf.data(), shape<2>{6, 3}, shape<2>{1, 1});
  CHECK_THROWS_AS(window = window * 2.f, fuse::shape_error);
  CHECK_THROWS_AS(fuse::assign(fuse::cpu{.threads = 1}, window, 0.f), fuse::shape_error);
  CHECK_THROWS_AS(fuse::assign(fuse::eager(fuse::cpu{}), window, fuse::exp(window) + 1.f), fuse::shape_error);
  auto rows = fuse::view(buf.data(), shape<2>{3, 4}, shape<2>{2, 1});  // rows of 4, two apart
  CHECK_THROWS_WITH(rows = 1.f, Catch::Matchers::Contains("[3, 4] with strides [2, 1]"));
  CHECK(buf == before);

  // Strides {2, 3} over [3, 3] fail the quick nesting test but meet nowhere: written as asked.
  auto x = random_tensor<float, 2>({3, 3}, 326);
  auto odd = fuse::view(buf.data(), shape<2>{3, 3}, shape<2>{2, 3});
  odd = x + 1.f;
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 3; ++j) CHECK(buf[std::size_t(2 * i + 3 * j)] == float(at(x, shape<2>{i, j})) + 1.f);
  // A span large against the elements: offsets sorted, not marked. Strides {1000, 3, 2} over
  // [2, 3, 4] meet ((0, 0, 3) and (0, 2, 0) at 6); over [2, 2, 3] they do not.
  std::vector<float> wide(1100, 0.f);
  auto meeting = fuse::view(wide.data(), shape<3>{2, 3, 4}, shape<3>{1000, 3, 2});
  CHECK_THROWS_AS(meeting = 1.f, fuse::shape_error);
  CHECK(std::count(wide.begin(), wide.end(), 0.f) == 1100);
  auto apart = fuse::view(wide.data(), shape<3>{2, 2, 3}, shape<3>{1000, 3, 2});
  apart = 2.f;
  CHECK(std::count(wide.begin(), wide.end(), 2.f) == 12);
  CHECK(wide[1000 + 3 + 4] == 2.f);
  // Negative strides and transposes of a tensor are still fine.
  fuse::tensor<float, 2> y(3, 3);
  fuse::transpose(y) = x;
  check_all(y, [&](const shape<2>& i) { return at(x, shape<2>{i[1], i[0]}); });
}

TEST_CASE("assign: a float expression into an integer destination saturates, NaN gives 0", "[core][assign][types]") {
  // 35 elements: the vector body and the scalar tail must agree (clang's vector loop saturated
  // and its tail wrapped when the conversion was a plain static_cast).
  const float values[] = {-1.f, 300.f, -300.f, 255.9f, 3e9f, -3e9f, 1e30f, -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 7.9f, -0.5f};
  auto expect_u8 = [](float v) -> int {
    if (v != v) return 0;
    return v <= 0.f ? 0 : v >= 255.f ? 255 : int(v);
  };
  auto expect_i32 = [](float v) -> std::int64_t {
    if (v != v) return 0;
    if (v <= -2147483648.f) return INT32_MIN;
    if (v >= 2147483648.f) return INT32_MAX;
    return std::int64_t(v);
  };
  for (float v : values) {
    fuse::tensor<float, 1> f(35);
    fuse::tensor<std::uint8_t, 1> q(35);
    fuse::tensor<std::int32_t, 1> k(35);
    for (index_t t = 1; t <= 3; t += 2) {
      fuse::assign(f, v);
      fuse::assign(fuse::cpu{.threads = int(t)}, q, f * 1.f);
      for (index_t i = 0; i < 35; ++i) REQUIRE(int(q(i)) == expect_u8(v));
      const auto c = fuse::eval(fuse::cpu{.threads = int(t)}, fuse::cast<std::uint8_t>(f));
      for (index_t i = 0; i < 35; ++i) REQUIRE(int(c(i)) == expect_u8(v));
      fuse::assign(fuse::eager(fuse::cpu{.threads = int(t)}), k, f + 0.f);
      for (index_t i = 0; i < 35; ++i) REQUIRE(k(i) == expect_i32(v));
    }
    q = v;  // a scalar too
    for (index_t i = 0; i < 35; ++i) REQUIRE(int(q(i)) == expect_u8(v));
  }
  // In range: truncation toward zero, as static_cast; double into int64.
  auto x = random_tensor<double, 1>({1025}, 327, 1e6);
  fuse::tensor<std::int64_t, 1> r(1025);
  r = x * 3.0;
  for (index_t i = 0; i < 1025; ++i) REQUIRE(r(i) == static_cast<std::int64_t>(x(i) * 3.0));
}

TEST_CASE("copy: host to host between layouts; its errors name fuse::copy, nothing written", "[core][copy]") {
  auto x = random_tensor<float, 2>({5, 7}, 401);
  // Into a transposed (strided) destination, from a strided source.
  fuse::tensor<float, 2> t(7, 5);
  fuse::copy(fuse::transpose(t), x);
  check_all(t, [&](const shape<2>& i) { return double(x(i[1], i[0])); }, 0.0, 0.0);
  fuse::tensor<float, 2> y(3, 7);
  fuse::copy(fuse::cpu{.threads = 1}, y, fuse::slice<0>(x, 1, 4));
  check_all(y, [&](const shape<2>& i) { return double(x(i[0] + 1, i[1])); }, 0.0, 0.0);

  std::vector<float> buf(64, sentinel<float>());
  auto wrong = fuse::view(buf.data(), 7, 5);
  const std::string m1 = message_of([&] { fuse::copy(wrong, x); });
  CAPTURE(m1);
  CHECK(m1.rfind("fuse::copy:", 0) == 0);
  CHECK(m1.find("[7, 5]") != std::string::npos);
  CHECK(m1.find("[5, 7]") != std::string::npos);
  auto stride0 = fuse::view(buf.data(), shape<2>{5, 7}, shape<2>{0, 1});
  const std::string m2 = message_of([&] { fuse::copy(stride0, x); });
  CAPTURE(m2);
  CHECK(m2.rfind("fuse::copy: the destination [5, 7] has stride 0 on axis 0", 0) == 0);
  const std::string m3 = message_of([&] { fuse::copy(fuse::cpu{}, stride0, x); });
  CAPTURE(m3);
  CHECK(m3.rfind("fuse::copy:", 0) == 0);
  for (float f : buf) REQUIRE(f == sentinel<float>());
}

TEST_CASE("an expression assigned to another rebinds it and never writes into its tensors", "[core][assign][value]") {
  // The nodes hold views, whose `=` writes elements (spec section 1); a node's own `=` is a value's
  // (NumPy: `e = b + 1` rebinds the name). The implicit member-wise `=` wrote b into a.
  auto a = random_tensor<float, 2>({3, 5}, 411);
  auto b = random_tensor<float, 2>({3, 5}, 412);
  const auto a0 = fuse::eval(a * 1.f), b0 = fuse::eval(b * 1.f);
  auto unchanged = [&] {
    check_same(a, a0);
    check_same(b, b0);
  };

  auto e = a + 1.f;
  e = b + 1.f;
  unchanged();
  check_all(fuse::eval(e), [&](const shape<2>& i) { return double(b(i[0], i[1])) + 1.0; });

  auto s = fuse::sum(a, fuse::axis<1>);
  s = fuse::sum(b, fuse::axis<1>);
  auto q = fuse::squeeze<0>(fuse::sum(a, fuse::axis<0>));
  q = fuse::squeeze<0>(fuse::sum(b, fuse::axis<0>));
  auto sm = fuse::softmax(a, fuse::axis<-1>);
  sm = fuse::softmax(b, fuse::axis<-1>);
  fuse::tensor<int, 1> rows(2);
  rows(0) = 2, rows(1) = 0;
  auto t = fuse::take(a, rows);
  t = fuse::take(b, rows);
  unchanged();
  CHECK(fuse::eval(s)(1, 0) == fuse::eval(fuse::sum(b, fuse::axis<1>))(1, 0));
  CHECK(fuse::eval(t)(0, 3) == b(2, 3));

  // A view of a temporary tensor rebinds too (its view's `=` would write into the freed buffer).
  auto ta = fuse::transpose(fuse::eval(a * 3.f));
  ta = fuse::transpose(fuse::eval(b * 3.f));
  CHECK(ta(4, 1) == 3.f * b(1, 4));

  auto e1 = a * 2.f, e2 = b * 2.f;
  std::swap(e1, e2);
  std::vector<decltype(e1)> list{a * 2.f, b * 2.f, a * 2.f};
  list.erase(list.begin());  // move-assigns the later nodes down
  unchanged();
  CHECK(fuse::eval(e1)(0, 0) == 2.f * b(0, 0));
  CHECK(fuse::eval(list[0])(0, 0) == 2.f * b(0, 0));
}

TEST_CASE("compound assignment: x += e, -=, *=, /= write x op e in place", "[core][assign]") {
  auto x = random_tensor<float, 2>({9, 33}, 421);
  auto b = random_tensor<float, 1>({33}, 422);
  const auto x0 = fuse::eval(x * 1.f);
  x += b;
  check_all(x, [&](const shape<2>& i) { return double(x0(i[0], i[1])) + b(i[1]); });
  x -= 2.f * b;
  x *= 3.f;
  check_all(x, [&](const shape<2>& i) { return 3.0 * (double(x0(i[0], i[1])) + b(i[1]) - 2.0 * b(i[1])); }, 1e-5);
  x /= fuse::exp(b);
  check_all(x, [&](const shape<2>& i) {
    return 3.0 * (double(x0(i[0], i[1])) - b(i[1])) / std::exp(double(b(i[1])));
  }, 1e-5);

  // Through a temporary view, and reading x transposed while writing it (the fresh-tensor result).
  fuse::tensor<double, 2> sq(5, 5);
  for (index_t k = 0; k < 25; ++k) sq.data()[k] = double(k % 7) + 0.5;
  const auto sq0 = fuse::eval(sq * 1.0);
  fuse::view(sq.data(), 5, 5) += fuse::transpose(sq);
  check_all(sq, [&](const shape<2>& i) { return sq0(i[0], i[1]) + sq0(i[1], i[0]); }, 0.0, 0.0);
  auto rows = fuse::slice<0>(sq, 1, 3);
  rows -= 1.0;
  CHECK(sq(1, 2) == sq0(1, 2) + sq0(2, 1) - 1.0);
  CHECK(sq(0, 2) == sq0(0, 2) + sq0(2, 0));

  // Into an integer tensor the result converts as assign converts (truncation toward zero).
  fuse::tensor<int, 1> n(3);
  n(0) = 3, n(1) = -3, n(2) = 10;
  n += 1.5;
  CHECK(n(0) == 4);
  CHECK(n(1) == -1);
  CHECK(n(2) == 11);
  // On a temporary view the result is the view, by value (a reference would dangle).
  std::vector<float> raw{1.f, 2.f, 3.f};
  auto after = (fuse::view(raw.data(), 3) += 1.f);
  static_assert(!std::is_reference_v<decltype(fuse::view(raw.data(), 3) += 1.f)>);
  CHECK(after(2) == 4.f);
  CHECK(raw[0] == 2.f);
  // Shape errors as assign's: nothing written.
  fuse::tensor<float, 1> wrong(4);
  const auto before = fuse::eval(x * 1.f);
  CHECK_THROWS_AS(x += wrong, fuse::shape_error);
  check_same(x, before);
}

// The axis merging lists each leaf's strides in a list of 16 in place (core/iteration.hpp), and
// grows it on the heap beyond: 24 leaves of three layouts, elementwise and in a row kernel.
TEST_CASE("assign: expressions of more leaves than the stride lists hold in place", "[core][assign]") {
  const shape<3> s{5, 7, 9};
  std::vector<fuse::tensor<float, 3>> full_leaves, wide;
  std::vector<fuse::tensor<float, 2>> rows;
  for (int k = 0; k < 8; ++k) {
    full_leaves.push_back(random_tensor<float, 3>(s, 900 + k));
    rows.push_back(random_tensor<float, 2>({7, 1}, 920 + k));  // broadcast along the rows
    wide.push_back(random_tensor<float, 3>({5, 7, 18}, 940 + k));  // read with stride 2
  }
  auto ref = [&](const shape<3>& i) {
    double r = 0;
    for (int k = 0; k < 8; ++k)
      r += at(full_leaves[k], i) + at(rows[k], shape<2>{i[1], 0}) + at(wide[k], shape<3>{i[0], i[1], 2 * i[2]});
    return r;
  };
  auto three = [&](auto k) {
    return full_leaves[k] + rows[k] + fuse::slice<2>(wide[k].view(), 0, 18, 2);
  };
  auto e = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return (three(K) + ...);
  }(std::make_index_sequence<8>{});
  static_assert(fuse::kernels_v<decltype(e)> == 1);
  fuse::tensor<float, 3> y(s);
  fuse::assign(fuse::cpu{.threads = 1}, y, e);
  check_all(y, ref, 1e-5, 1e-5);

  // The same sum normalised over its rows: the row kernel lists the phases' leaves too.
  fuse::tensor<float, 3> z(s);
  fuse::assign(fuse::cpu{.threads = 1}, z, e - fuse::mean(e, fuse::axis<-1>));
  static_assert(fuse::kernels_v<decltype(e - fuse::mean(e, fuse::axis<-1>))> == 1);
  check_all(z, [&](const shape<3>& i) {
    double m = 0;
    for (index_t j = 0; j < s[2]; ++j) m += ref({i[0], i[1], j});
    return ref(i) - m / double(s[2]);
  }, 1e-5, 1e-5);
}
