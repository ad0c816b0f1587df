// Tensors and plain views: construction, shape queries, element access, value semantics,
// alignment, fuse::view over pointers / extents / strides / std::vector / std::span.
#include "support.hpp"

#include <span>

using namespace fuse_test;

TEST_CASE("tensor: construction from extents and from a shape", "[core][tensor]") {
  for (auto [m, n] : {std::pair<index_t, index_t>{1, 1}, {3, 17}, {17, 3}, {64, 33}, {1, 1023}}) {
    CAPTURE(m, n);
    fuse::tensor<float, 2> a(m, n);
    fuse::tensor<float, 2> b({m, n});
    for (auto* t : {&a, &b}) {
      CHECK(t->shape() == shape<2>{m, n});
      CHECK(t->extent(0) == m);
      CHECK(t->extent(1) == n);
      CHECK(t->size() == m * n);
      REQUIRE(t->data() != nullptr);
      CHECK(reinterpret_cast<std::uintptr_t>(t->data()) % 64 == 0);
      auto v = t->view();
      CHECK(v.data() == t->data());
      CHECK(v.shape() == t->shape());
      CHECK(v.strides() == shape<2>{n, 1});
    }
    CHECK(a.data() != b.data());
  }
  // Extents given as other integer types; rank 1, 3 and 4.
  fuse::tensor<double, 1> r1(std::int32_t{5});
  CHECK(r1.shape() == shape<1>{5});
  fuse::tensor<int, 3> r3(2u, 3, std::int64_t{4});
  CHECK(r3.shape() == shape<3>{2, 3, 4});
  CHECK(r3.size() == 24);
  fuse::tensor<std::int8_t, 4> r4({2, 1, 3, 5});
  CHECK(r4.size() == 30);
  CHECK(reinterpret_cast<std::uintptr_t>(r4.data()) % 64 == 0);
  // Default-constructed: empty for rank > 0; the one element a rank-0 shape says for rank 0.
  fuse::tensor<float, 2> empty;
  CHECK(empty.size() == 0);
  fuse::tensor<double, 0> scalar;
  CHECK(scalar.size() == 1);
  REQUIRE(scalar.data() != nullptr);
  scalar = 3.5;
  CHECK(fuse::eval(scalar) == 3.5);
  scalar = fuse::sum(fuse::tensor<double, 1>(std::int64_t{0})) + 1.0;
  CHECK(fuse::eval(scalar) == 1.0);
  static_assert(fuse::expression<fuse::tensor<float, 2>>);
  static_assert(fuse::tensor<float, 3>::rank == 3);
  static_assert(std::is_same_v<fuse::tensor<int, 3>::value_type, int>);
}

TEST_CASE("tensor: 64-byte alignment for every element type and size", "[core][tensor]") {
  for (index_t n : {1, 2, 3, 15, 17, 63, 65, 1023, 4097}) {
    CAPTURE(n);
    fuse::tensor<float, 1> f(n);
    fuse::tensor<double, 1> d(n);
    fuse::tensor<std::int8_t, 1> c(n);
    fuse::tensor<bool, 2> b(n, 3);
    CHECK(reinterpret_cast<std::uintptr_t>(f.data()) % 64 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(d.data()) % 64 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(c.data()) % 64 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % 64 == 0);
  }
}

TEST_CASE("tensor: element access is row-major over data()", "[core][tensor]") {
  auto x = random_tensor<float, 3>({3, 5, 7}, 11);
  for_each_index<3>({3, 5, 7}, [&](const shape<3>& i) {
    const index_t off = (i[0] * 5 + i[1]) * 7 + i[2];
    REQUIRE(&x(i[0], i[1], i[2]) == x.data() + off);
  });
  // Writes through operator() land in data(); the const overload reads the same element.
  x(2, 4, 6) = 42.5f;
  x(0, 0, 0) = -1.25f;
  CHECK(x.data()[3 * 5 * 7 - 1] == 42.5f);
  CHECK(x.data()[0] == -1.25f);
  const auto& cx = x;
  CHECK(cx(2, 4, 6) == 42.5f);
  static_assert(std::is_same_v<decltype(cx(0, 0, 0)), const float&>);
  // Index types other than index_t.
  CHECK(x(std::int8_t{1}, 2u, std::int64_t{3}) == x.data()[(1 * 5 + 2) * 7 + 3]);
}

TEST_CASE("tensor: a byte count beyond size_t is std::bad_alloc, not a null buffer", "[core][tensor][errors]") {
  // 2^62 floats are 2^64 bytes: the count wrapped to 0, allocate(0) gave nullptr, and the first
  // write crashed (found by a probe, 2026-12-03).
  CHECK_THROWS_AS((fuse::tensor<float, 1>(index_t(1) << 62)), std::bad_alloc);
  CHECK_THROWS_AS((fuse::tensor<double, 2>(index_t(1) << 31, index_t(1) << 31)), std::bad_alloc);
  // An eager temporary of the same size: thrown before the destination is written.
  float one = 1.f;
  const index_t big = index_t(1) << 31;
  auto huge = fuse::view(&one, shape<2>{big, big}, shape<2>{0, 0});
  fuse::tensor<float, 0> d;
  d() = 42.f;
  CHECK_THROWS_AS(fuse::assign(fuse::eager(fuse::cpu{}), d, fuse::sum(huge * 2.f)), std::bad_alloc);
  CHECK(d() == 42.f);
  // An empty tensor is still fine, whatever its other extents.
  fuse::tensor<float, 2> empty(0, index_t(1) << 62);
  CHECK(empty.size() == 0);
}

TEST_CASE("tensor: copy and move are value semantics", "[core][tensor]") {
  auto a = random_tensor<float, 2>({7, 9}, 12);
  const std::vector<float> orig(a.data(), a.data() + a.size());

  fuse::tensor<float, 2> b = a;  // copy: new storage, same contents
  REQUIRE(b.shape() == a.shape());
  CHECK(b.data() != a.data());
  CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % 64 == 0);
  check_same(b, a);
  b(3, 4) = 100.f;  // independent
  CHECK(a(3, 4) == orig[3 * 9 + 4]);

  // Copy assignment of a same-type tensor replaces shape and contents (it may resize).
  fuse::tensor<float, 2> c(2, 2);
  c = a;
  CHECK(c.shape() == shape<2>{7, 9});
  CHECK(c.data() != a.data());
  check_same(c, a);

  // The same shape: copied into the existing storage, so an expression (or a view) that holds the
  // tensor stays valid (it read freed memory when every copy allocated).
  auto held = c * 2.f;
  const float* storage = c.data();
  auto b2 = random_tensor<float, 2>({7, 9}, 13);
  c = b2;
  CHECK(c.data() == storage);
  check_all(fuse::eval(held), [&](const shape<2>& i) { return 2.0 * at(b2, i); });
  c = a;

  // Self-assignment keeps the contents.
  auto& cref = c;
  c = cref;
  check_same(c, a);

  // Move: the storage is transferred.
  const float* p = a.data();
  fuse::tensor<float, 2> d = std::move(a);
  CHECK(d.data() == p);
  CHECK(d.shape() == shape<2>{7, 9});
  for (index_t i = 0; i < d.size(); ++i) REQUIRE(d.data()[i] == orig[static_cast<std::size_t>(i)]);
  fuse::tensor<float, 2> e(1, 1);
  e = std::move(d);
  CHECK(e.data() == p);
  CHECK(e.shape() == shape<2>{7, 9});

  // A moved-from tensor is empty, as a moved-from std::vector: usable, not a dangling shape.
  CHECK(a.shape() == shape<2>{0, 0});
  CHECK(d.size() == 0);
  a = 0.f;  // nothing to write
  CHECK(fuse::eval(d + 1.f).size() == 0);
  fuse::tensor<float, 2> f = d;
  CHECK(f.size() == 0);
  // The spec's "an rvalue tensor is moved into the expression", with the same tensor the
  // destination: a shape error, before anything is written (it used to dereference null).
  CHECK_THROWS_AS(e = std::move(e) * 2.f, fuse::shape_error);
  // Rank 0 keeps its one element.
  fuse::tensor<double, 0> s0;
  s0() = 2.5;
  fuse::tensor<double, 0> s1 = std::move(s0);
  CHECK(s1() == 2.5);
  s0() = 1.0;  // still one element
  s1 = std::move(s0);
  CHECK(s1() == 1.0);
  s0() = 3.0;
  CHECK(s0() == 3.0);
}

TEST_CASE("view(ptr, e0, e1, ...): contiguous row-major view of host memory", "[core][view]") {
  std::vector<double> buf(4 * 6 * 5);
  fill_random(buf.data(), index_t(buf.size()), 13);
  auto v = fuse::view(buf.data(), 4, 6, index_t{5});
  static_assert(decltype(v)::rank == 3);
  static_assert(std::is_same_v<decltype(v)::value_type, double>);
  CHECK(v.data() == buf.data());
  CHECK(v.shape() == shape<3>{4, 6, 5});
  CHECK(v.extent(1) == 6);
  CHECK(v.size() == 120);
  CHECK(v.strides() == shape<3>{30, 5, 1});
  for_each_index(v.shape(), [&](const shape<3>& i) { REQUIRE(v(i[0], i[1], i[2]) == buf[std::size_t((i[0] * 6 + i[1]) * 5 + i[2])]); });
  v(1, 2, 3) = 9.5;
  CHECK(buf[(1 * 6 + 2) * 5 + 3] == 9.5);

  // A view evaluates like the tensor it reads.
  auto t = fuse::eval(v * 2.0 + 1.0);
  check_all(t, [&](const shape<3>& i) { return at(v, i) * 2.0 + 1.0; });
}

TEST_CASE("view(ptr, extents<dyn, 16>{m}): mixed static and dynamic extents", "[core][view]") {
  const index_t m = 7;
  std::vector<float> buf(std::size_t(m * 16));
  fill_random(buf.data(), m * 16, 14);
  auto v = fuse::view(buf.data(), fuse::extents<fuse::dyn, 16>{m});
  static_assert(decltype(v)::static_shape[1] == 16);
  static_assert(decltype(v)::static_shape[0] == fuse::dyn);
  CHECK(v.shape() == shape<2>{m, 16});
  CHECK(v.strides() == shape<2>{16, 1});
  CHECK(v(3, 11) == buf[3 * 16 + 11]);

  // Fully static extents, and broadcasting against a dynamic tensor and a static row.
  std::vector<float> row(16);
  fill_random(row.data(), 16, 15);
  auto r = fuse::view(row.data(), fuse::extents<16>{});
  static_assert(decltype(r)::static_shape[0] == 16);
  auto t = random_tensor<float, 2>({m, 16}, 16);
  auto y = fuse::eval(v * r - t);
  check_all(y, [&](const shape<2>& i) { return double(buf[std::size_t(i[0] * 16 + i[1])]) * row[std::size_t(i[1])] - at(t, i); });

  // A static extent of 1 broadcasts.
  float one[3] = {1.5f, -2.f, 3.25f};
  auto col = fuse::view(one, fuse::extents<3, 1>{});
  auto z = fuse::eval(col + r);
  CHECK(z.shape() == shape<2>{3, 16});
  check_all(z, [&](const shape<2>& i) { return double(one[i[0]]) + row[std::size_t(i[1])]; });

  // Writing through a static-extent view.
  v = t + 1.f;
  check_all(v, [&](const shape<2>& i) { return at(t, i) + 1.0; });
}

TEST_CASE("view(ptr, shape, strides): arbitrary strides, stride 0 reads broadcast", "[core][view]") {
  const index_t m = 9, n = 13;
  std::vector<float> buf(std::size_t(4 * m * n));  // room for the row stride 4n below
  fill_random(buf.data(), index_t(buf.size()), 17);

  SECTION("every other row and column") {
    auto v = fuse::view(buf.data() + 1, shape<2>{m, n}, shape<2>{2 * 2 * n, 2});
    CHECK(v.strides() == shape<2>{4 * n, 2});
    auto t = fuse::eval(v + 0.5f);
    check_all(t, [&](const shape<2>& i) { return double(buf[std::size_t(1 + i[0] * 4 * n + i[1] * 2)]) + 0.5; });
  }
  SECTION("stride 0: a row repeated m times (read only)") {
    auto row = fuse::view(buf.data(), shape<2>{m, n}, shape<2>{0, 1});
    auto x = random_tensor<float, 2>({m, n}, 18);
    auto t = fuse::eval(x * row);
    check_all(t, [&](const shape<2>& i) { return at(x, i) * double(buf[std::size_t(i[1])]); });
    // Both axes stride 0: one value everywhere.
    auto one = fuse::view(buf.data() + 5, shape<3>{2, m, n}, shape<3>{0, 0, 0});
    auto u = fuse::eval(one - x);
    CHECK(u.shape() == shape<3>{2, m, n});
    check_all(u, [&](const shape<3>& i) { return double(buf[5]) - at(x, shape<2>{i[1], i[2]}); });
  }
  SECTION("negative strides read and write in reverse") {
    auto rev = fuse::view(buf.data() + (m * n - 1), shape<2>{m, n}, shape<2>{-n, -1});
    auto t = fuse::eval(rev * 3.f);
    check_all(t, [&](const shape<2>& i) { return 3.0 * buf[std::size_t(m * n - 1 - i[0] * n - i[1])]; });
    // Writing through a reversed view (into a different buffer).
    std::vector<float> out(std::size_t(m * n), -1.f);
    auto orev = fuse::view(out.data() + (m * n - 1), shape<2>{m, n}, shape<2>{-n, -1});
    auto x = random_tensor<float, 2>({m, n}, 19);
    orev = x + 1.f;
    for_each_index<2>({m, n}, [&](const shape<2>& i) { REQUIRE(out[std::size_t(m * n - 1 - i[0] * n - i[1])] == x(i[0], i[1]) + 1.f); });
  }
}

TEST_CASE("view(std::vector) and view(std::span) are rank-1 views", "[core][view]") {
  std::vector<int> v(37);
  fill_random(v.data(), 37, 20);
  auto a = fuse::view(v);
  static_assert(decltype(a)::rank == 1);
  CHECK(a.data() == v.data());
  CHECK(a.shape() == shape<1>{37});

  const std::vector<int>& cv = v;
  auto ca = fuse::view(cv);
  static_assert(std::is_same_v<decltype(ca)::element_type, const int>);
  CHECK(ca.data() == v.data());

  std::span<int> s(v.data() + 3, 30);
  auto b = fuse::view(s);
  CHECK(b.data() == v.data() + 3);
  CHECK(b.shape() == shape<1>{30});
  std::span<const int, 5> fixed(v.data() + 1, 5);
  auto c = fuse::view(fixed);
  CHECK(c.shape() == shape<1>{5});

  auto t = fuse::eval(b * 3 - 1);
  check_all(t, [&](const shape<1>& i) { return 3.0 * v[std::size_t(3 + i[0])] - 1; });

  // A vector view is writable.
  std::vector<int> out(30, 0);
  fuse::view(out) = b + 2;
  for (std::size_t i = 0; i < 30; ++i) REQUIRE(out[i] == v[i + 3] + 2);
}

TEST_CASE("views over bool memory", "[core][view]") {
  bool mask[12];
  {
    std::mt19937_64 g(21);
    for (auto& b : mask) b = random_value<bool>(g);
  }
  auto m = fuse::view(mask, 3, 4);
  static_assert(std::is_same_v<decltype(m)::value_type, bool>);
  auto x = random_tensor<float, 2>({3, 4}, 22);
  auto y = fuse::eval(fuse::where(m, x, -x));
  check_all(y, [&](const shape<2>& i) { return mask[i[0] * 4 + i[1]] ? at(x, i) : -at(x, i); });
  fuse::tensor<bool, 2> nb(3, 4);
  nb = !m;
  check_all(nb, [&](const shape<2>& i) { return !mask[i[0] * 4 + i[1]]; });
}

// The eager executor's temporaries (core/pool.hpp): a freed block serves a later request of up to a
// quarter less, and the idle blocks kept are bounded (FUSE_POOL_CACHE_BYTES, 1 GiB): before, every
// size seen stayed allocated (1.6 GB after eager runs over 200 sizes of 8 MB; a probe, 2026-12-02).
TEST_CASE("the temporary pool reuses larger blocks and bounds what it keeps", "[core][pool]") {
  using pool = fuse::detail::buffer_pool<fuse::detail::host_allocator>;
  pool p;  // a pool of its own: the shared one holds what earlier tests left
  const std::size_t mb = std::size_t(1) << 20;
  const auto a = p.acquire(8 * mb + 3);
  p.release(a);
  const auto b = p.acquire(7 * mb);  // within a quarter: the same block
  CHECK(b.p == a.p);
  CHECK(b.bytes == 8 * mb + 3);
  const auto c = p.acquire(2 * mb);  // a smaller request does not take it
  p.release(b);
  const auto d = p.acquire(2 * mb);
  CHECK(d.p != b.p);
  p.release(c);
  p.release(d);
  // Blocks of 300 MiB (never touched: address space only). Four idle exceed the bound; the oldest
  // goes back to the allocator.
  std::vector<pool::block> big;
  for (int k = 0; k < 4; ++k) big.push_back(p.acquire(300 * mb + std::size_t(k) * 80 * mb));  // none reuses another
  for (const auto& blk : big) p.release(blk);
  CHECK(p.idle_bytes() <= FUSE_POOL_CACHE_BYTES);
  const auto newest = p.acquire(540 * mb);  // the newest idle block stays
  CHECK(newest.p == big[3].p);
  p.release(newest);
  // A block larger than the bound is never kept.
  const std::size_t kept = p.idle_bytes();
  p.release(p.acquire(FUSE_POOL_CACHE_BYTES + 64));
  CHECK(p.idle_bytes() == kept);
  // Eager runs over many sizes keep the shared pool within the bound.
  auto& shared = pool::instance();
  for (fuse::index_t n = 300000; n < 300000 + 16 * 997; n += 997) {
    fuse::tensor<float, 1> x(n), y(n);
    for (fuse::index_t i = 0; i < n; ++i) x.data()[i] = float(i % 7) - 3.f;
    fuse::assign(fuse::eager(fuse::cpu{}), y, fuse::exp(x) * 2.f + x);
    CHECK(y(n - 1) == Approx(std::exp(x(n - 1)) * 2.f + x(n - 1)));
  }
  CHECK(shared.idle_bytes() <= FUSE_POOL_CACHE_BYTES);
}
