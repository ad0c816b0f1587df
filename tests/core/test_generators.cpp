// Generators (full, iota, take) and the type rules of expressions (NumPy 2 promotion, bool).
#include "support.hpp"

#include <limits>

using namespace fuse_test;

TEST_CASE("full: a constant expression of the value's type", "[core][generators]") {
  auto f = fuse::full(shape<2>{3, 7}, 2.5f);
  static_assert(fuse::expression<decltype(f)>);
  static_assert(std::is_same_v<decltype(f)::value_type, float>);
  static_assert(decltype(f)::rank == 2);
  CHECK(f.shape() == shape<2>{3, 7});
  check_all(fuse::eval(f), [](const shape<2>&) { return 2.5; });
  auto i = fuse::full(shape<1>{5}, 3);
  static_assert(std::is_same_v<decltype(i)::value_type, int>);
  auto x = random_tensor<float, 2>({3, 7}, 401);
  // full is a strong operand: float + full<double> promotes to double (common_type).
  auto y = fuse::eval(x * fuse::full(shape<1>{7}, -1.5) + i.shape()[0]);
  static_assert(std::is_same_v<decltype(y)::value_type, double>);
  check_all(y, [&](const shape<2>& k) { return at(x, k) * -1.5 + 5.0; });
  // full broadcasts like any operand and has no memory of its own.
  auto z = fuse::eval(fuse::full(shape<3>{2, 1, 7}, 0.5f) - x);
  CHECK(z.shape() == shape<3>{2, 3, 7});
  check_all(z, [&](const shape<3>& k) { return 0.5 - at(x, shape<2>{k[1], k[2]}); });
  fuse::tensor<float, 2> w(3, 7);
  w = fuse::full(shape<2>{1, 7}, 9.f);
  check_all(w, [](const shape<2>&) { return 9.0; });
  CHECK(fuse::eval(fuse::full(shape<2>{0, 4}, 1.f)).size() == 0);
}

TEST_CASE("iota<k>: the index along axis k", "[core][generators]") {
  const shape<3> s{4, 5, 6};
  auto i0 = fuse::iota<0>(s);
  static_assert(std::is_same_v<decltype(i0)::value_type, fuse::index_t>);
  CHECK(i0.shape() == s);
  check_all(fuse::eval(i0), [](const shape<3>& i) { return double(i[0]); });
  check_all(fuse::eval(fuse::iota<1>(s)), [](const shape<3>& i) { return double(i[1]); });
  check_all(fuse::eval(fuse::iota<2>(s)), [](const shape<3>& i) { return double(i[2]); });
  check_all(fuse::eval(fuse::iota<-1>(s)), [](const shape<3>& i) { return double(i[2]); });
  check_all(fuse::eval(fuse::iota<-3>(s)), [](const shape<3>& i) { return double(i[0]); });
  // A flat index from iotas, over a thread-split size.
  const shape<2> big{301, 517};
  auto flat = fuse::eval(fuse::iota<0>(big) * 517 + fuse::iota<1>(big));
  check_all(flat, [](const shape<2>& i) { return double(i[0] * 517 + i[1]); });
  // Into a strided (transposed) destination.
  fuse::tensor<fuse::index_t, 2> t(6, 4);
  fuse::transpose(t) = fuse::iota<0>(shape<2>{4, 6}) * 10 + fuse::iota<1>(shape<2>{4, 6});
  check_all(t, [](const shape<2>& i) { return double(i[1] * 10 + i[0]); });
}

TEST_CASE("iota: a causal mask with where", "[core][generators]") {
  for (index_t n : {1, 5, 17, 200}) {
    CAPTURE(n);
    const shape<2> s{n, n};
    auto scores = random_tensor<float, 2>(s, 402);
    const float ninf = -std::numeric_limits<float>::infinity();
    auto masked = fuse::eval(fuse::where(fuse::iota<1>(s) <= fuse::iota<0>(s), scores, ninf));
    static_assert(std::is_same_v<decltype(masked)::value_type, float>);
    check_all(masked, [&](const shape<2>& i) { return i[1] <= i[0] ? at(scores, i) : -INFINITY; });
    // Batched: a [n, n] mask broadcast over [3, n, n] scores, via the eager executor too.
    auto batch = random_tensor<float, 3>({3, n, n}, 403);
    auto e = fuse::where(fuse::iota<1>(s) > fuse::iota<0>(s), 0.f, batch * 2.f);
    check_all(fuse::eval(e), [&](const shape<3>& i) { return i[2] > i[1] ? 0.0 : 2.0 * at(batch, i); });
    check_all(fuse::eval(fuse::eager(fuse::cpu{}), e), [&](const shape<3>& i) { return i[2] > i[1] ? 0.0 : 2.0 * at(batch, i); });
  }
}

namespace {
template <class I, std::size_t RI>
void check_take(const shape<RI>& is, index_t V, index_t D, std::uint64_t seed) {
  auto table = random_tensor<float, 2>({V, D}, seed);
  fuse::tensor<I, RI> idx(is);
  std::mt19937_64 g(seed + 1);
  for (index_t k = 0; k < idx.size(); ++k) idx.data()[k] = static_cast<I>(std::uniform_int_distribution<index_t>(0, V - 1)(g));
  auto e = fuse::take(table, idx);
  constexpr std::size_t RO = RI + 1;
  static_assert(decltype(e)::rank == RO);
  static_assert(std::is_same_v<typename decltype(e)::value_type, float>);
  shape<RO> want{};
  for (std::size_t d = 0; d < RI; ++d) want[d] = is[d];
  want[RI] = D;
  REQUIRE(e.shape() == want);
  auto ref = [&](const shape<RO>& o) {
    shape<RI> ii{};
    for (std::size_t d = 0; d < RI; ++d) ii[d] = o[d];
    return at(table, shape<2>{index_t(at(idx, ii)), o[RI]});
  };
  check_all(fuse::eval(e), ref);
  check_all(fuse::eval(fuse::cpu{.threads = 1}, e), ref);
  // Inside an expression (an embedding plus a position bias), fused and eager.
  auto bias = random_tensor<float, 1>({D}, seed + 2);
  auto ref2 = [&](const shape<RO>& o) { return ref(o) * 2.0 + at(bias, shape<1>{o[RI]}); };
  check_all(fuse::eval(fuse::take(table, idx) * 2.f + bias), ref2);
  check_all(fuse::eval(fuse::eager(fuse::cpu{}), fuse::take(table, idx) * 2.f + bias), ref2);
}
}  // namespace

TEST_CASE("take: embedding lookup with int32 and int64 indices of rank 1 and 2", "[core][generators][take]") {
  check_take<std::int32_t, 1>(shape<1>{9}, 50, 16, 404);
  check_take<std::int64_t, 1>(shape<1>{9}, 50, 16, 405);
  check_take<std::int32_t, 2>(shape<2>{3, 7}, 11, 33, 406);
  check_take<std::int64_t, 2>(shape<2>{3, 7}, 11, 33, 407);
  check_take<std::uint8_t, 1>(shape<1>{100}, 7, 3, 408);
  check_take<std::int16_t, 2>(shape<2>{4, 1}, 3, 1, 409);
  check_take<std::int32_t, 1>(shape<1>{1}, 1, 1, 410);
  check_take<std::int64_t, 2>(shape<2>{17, 64}, 1000, 40, 411);  // 43520 elements: threads
  check_take<std::int32_t, 1>(shape<1>{0}, 5, 8, 412);            // no rows
}

TEST_CASE("take: one table row per index at any row length, in broadcasts, reductions and strided outputs",
          "[core][generators][take]") {
  // Rows shorter than the row copies' 16 elements, odd ones, and longer than their 2^16: each runs
  // as a copy of one table row per index (take_eval::row_start), not a gather per element.
  for (index_t D : {2, 5, 17, 70001}) check_take<std::int32_t, 1>(shape<1>{7}, 13, D, 420 + std::uint64_t(D));
  check_take<std::int64_t, 2>(shape<2>{3, 0}, 5, 8, 421);  // no indices
  check_take<std::int32_t, 1>(shape<1>{4}, 6, 0, 422);     // rows of no elements

  auto table = random_tensor<float, 2>({10, 20}, 423);
  fuse::tensor<std::int32_t, 1> ids(5);
  const std::int32_t picks[] = {9, 0, 9, 3, 7};
  for (index_t k = 0; k < 5; ++k) ids(k) = picks[k];
  auto row = [&](index_t t, index_t k) { return at(table, shape<2>{index_t(picks[t]), k}); };
  auto g = fuse::take(table, ids);

  // Broadcast over a batch axis, into a strided destination (every other column of a wider tensor).
  auto x = random_tensor<float, 3>({3, 5, 20}, 424);
  auto ref = [&](const shape<3>& i) { return at(x, i) - row(i[1], i[2]); };
  check_all(fuse::eval(x - g), ref);
  auto wide = random_tensor<float, 3>({3, 5, 40}, 425);
  auto every_other = fuse::slice<2>(wide, 0, 40, 2);
  every_other = x - g;
  check_all(every_other, ref);

  // Reductions of the gathered rows: along them (one short-row pass, the row kernel) and across
  // them (the column path).
  check_all(fuse::eval(fuse::sum(g, fuse::axis<-1>)), [&](const shape<2>& i) {
    double s = 0;
    for (index_t k = 0; k < 20; ++k) s += row(i[0], k);
    return s;
  });
  auto narrow = random_tensor<float, 2>({10, 6}, 427);
  check_all(fuse::eval(fuse::sum(fuse::take(narrow, ids), fuse::axis<-1>)), [&](const shape<2>& i) {
    double s = 0;
    for (index_t k = 0; k < 6; ++k) s += at(narrow, shape<2>{index_t(picks[i[0]]), k});
    return s;
  });
  check_all(fuse::eval(fuse::softmax(g)), [&](const shape<2>& i) {
    double m = -INFINITY, s = 0;
    for (index_t k = 0; k < 20; ++k) m = std::max(m, row(i[0], k));
    for (index_t k = 0; k < 20; ++k) s += std::exp(row(i[0], k) - m);
    return std::exp(row(i[0], i[1]) - m) / s;
  });
  check_all(fuse::eval(fuse::sum(g, fuse::axis<0>)), [&](const shape<2>& i) {
    double s = 0;
    for (index_t t = 0; t < 5; ++t) s += row(t, i[1]);
    return s;
  });

  // Rows along the indices: a rank-1 table gathered by a [3, 5] index array, and the gathered rows
  // read down their columns (a transposed destination).
  auto t1 = random_tensor<float, 1>({10}, 426);
  fuse::tensor<std::int64_t, 2> ids2(3, 5);
  for (index_t k = 0; k < 15; ++k) ids2.data()[k] = (k * 7) % 10;
  check_all(fuse::eval(fuse::take(t1, ids2) * 3.f), [&](const shape<2>& i) {
    return 3.0 * at(t1, shape<1>{index_t((i[0] * 5 + i[1]) * 7 % 10)});
  });
  fuse::tensor<float, 2> yt(20, 5);
  fuse::transpose(yt) = g;
  check_all(yt, [&](const shape<2>& i) { return row(i[1], i[0]); });
}

TEST_CASE("take: rank-1 and rank-3 tables, strided tables and indices", "[core][generators][take]") {
  auto t1 = random_tensor<double, 1>({20}, 413);
  std::vector<std::int64_t> ids = {19, 0, 3, 3, 7, 18};
  auto g1 = fuse::eval(fuse::take(t1, fuse::view(ids)));
  CHECK(g1.shape() == shape<1>{6});
  check_all(g1, [&](const shape<1>& i) { return at(t1, shape<1>{ids[std::size_t(i[0])]}); });

  auto t3 = random_tensor<float, 3>({6, 3, 4}, 414);
  std::vector<int> id2 = {5, 0, 2, 2};
  auto g3 = fuse::eval(fuse::take(t3, fuse::view(id2.data(), 2, 2)));
  CHECK(g3.shape() == shape<4>{2, 2, 3, 4});
  check_all(g3, [&](const shape<4>& i) { return at(t3, shape<3>{id2[std::size_t(i[0] * 2 + i[1])], i[2], i[3]}); });

  // The rows of a transposed table (table = x^T, [8, 5]) and every other index.
  auto x = random_tensor<float, 2>({5, 8}, 415);
  std::vector<int> id3 = {7, 99, 1, 99, 4, 99};
  auto stepped = fuse::slice<0>(fuse::view(id3), 0, 6, 2);
  auto g = fuse::eval(fuse::take(fuse::transpose(x), stepped));
  CHECK(g.shape() == shape<2>{3, 5});
  check_all(g, [&](const shape<2>& i) { return at(x, shape<2>{i[1], id3[std::size_t(2 * i[0])]}); });

  // Writing the gathered rows into a slice of the table itself (overlap through an index).
  auto tab = random_tensor<float, 2>({6, 4}, 416);
  const auto tab0 = tab;
  std::vector<int> perm = {5, 4, 3, 2, 1, 0};
  tab = fuse::take(tab, fuse::view(perm));
  check_all(tab, [&](const shape<2>& i) { return at(tab0, shape<2>{5 - i[0], i[1]}); });
}

TEST_CASE("take: tensors moved in (temporaries) live as long as the expression", "[core][generators][take]") {
  auto table = random_tensor<float, 2>({30, 7}, 417);
  std::vector<std::int32_t> ids = {29, 0, 5, 5, 11};
  auto ids_tensor = [&] {
    fuse::tensor<std::int32_t, 1> t(index_t(ids.size()));
    for (std::size_t k = 0; k < ids.size(); ++k) t.data()[k] = ids[k];
    return t;
  };
  // Both operands temporaries; the expression returned from the scope that made them, then copied.
  auto make = [&] { return fuse::take(fuse::eval(table * 2.f), ids_tensor()) + 1.f; };
  const auto e = make();
  const auto copy = e;
  auto ref = [&](const shape<2>& i) { return 2.0 * at(table, shape<2>{ids[std::size_t(i[0])], i[1]}) + 1.0; };
  check_all(fuse::eval(copy), ref);
  check_all(fuse::eval(fuse::eager(fuse::cpu{}), e), ref);
  // unsqueeze rebuilds the node: the owners go with it.
  const auto u = [&] { return fuse::unsqueeze<1>(fuse::take(fuse::eval(table * 2.f), ids_tensor())); }();
  CHECK(u.shape() == shape<3>{5, 1, 7});
  check_all(fuse::eval(fuse::squeeze<1>(u) + 1.f), ref);
  // One temporary: the table, or the indices.
  check_all(fuse::eval(fuse::take(table, ids_tensor())), [&](const shape<2>& i) { return at(table, shape<2>{ids[std::size_t(i[0])], i[1]}); });
  auto t = fuse::eval(fuse::take(fuse::eval(table * 2.f), fuse::view(ids)));
  check_all(t, [&](const shape<2>& i) { return 2.0 * at(table, shape<2>{ids[std::size_t(i[0])], i[1]}); });
  // An index out of range in a moved-in tensor still throws before anything is written.
  ids[2] = 30;
  fuse::tensor<float, 2> y(5, 7);
  fuse::assign(y, fuse::full(y.shape(), 3.f));
  CHECK_THROWS_AS(y = fuse::take(table, ids_tensor()), fuse::index_error);
  check_all(y, [](const shape<2>&) { return 3.0; });
}

TEST_CASE("take: a destination inside the table gives the fresh-tensor result", "[core][generators][take][alias]") {
  const index_t V = 9, D = 5;
  SECTION("rows shifted down by one: table[1:] = take(table, [0, 1, ..., V-2])") {
    auto tab = random_tensor<float, 2>({V, D}, 430);
    const auto tab0 = tab;
    std::vector<int> idx(std::size_t(V - 1));
    for (std::size_t k = 0; k < idx.size(); ++k) idx[k] = int(k);
    fuse::slice<0>(tab, 1, V) = fuse::take(tab, fuse::view(idx));
    check_all(tab, [&](const shape<2>& i) { return at(tab0, shape<2>{i[0] == 0 ? 0 : i[0] - 1, i[1]}); });
  }
  SECTION("a single row written from other rows of its own table") {
    auto tab = random_tensor<float, 2>({V, D}, 431);
    const auto tab0 = tab;
    std::vector<std::int64_t> idx = {3};
    fuse::slice<0>(tab, 4, 5) = fuse::take(tab, fuse::view(idx)) * 2.f;
    check_all(tab, [&](const shape<2>& i) { return i[0] == 4 ? 2.0 * at(tab0, shape<2>{3, i[1]}) : at(tab0, i); });
  }
  SECTION("a table with a negative row stride (rows reversed) into its own first rows") {
    std::vector<float> buf(std::size_t(V * D));
    fill_random(buf.data(), V * D, 432);
    const auto buf0 = buf;
    auto table = fuse::view(buf.data() + (V - 1) * D, shape<2>{V, D}, shape<2>{-D, 1});  // row r = buf row V-1-r
    std::vector<int> idx = {V - 2, V - 1};  // buf rows 1 and 0
    fuse::view(buf.data(), 2, D) = fuse::take(table, fuse::view(idx));
    for_each_index<2>({V, D}, [&](const shape<2>& i) {
      const index_t src = i[0] == 0 ? 1 : i[0] == 1 ? 0 : i[0];
      REQUIRE(buf[std::size_t(i[0] * D + i[1])] == buf0[std::size_t(src * D + i[1])]);
    });
  }
}

TEST_CASE("take: an index out of range throws index_error before anything is written", "[core][generators][take][errors]") {
  auto table = random_tensor<float, 2>({10, 4}, 417);
  fuse::tensor<float, 2> y(5, 4);
  fill_value(y, sentinel<float>());
  static_assert(std::is_base_of_v<std::out_of_range, fuse::index_error>);
  for (std::int64_t badv : {std::int64_t{10}, std::int64_t{-1}, std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::min()}) {
    CAPTURE(badv);
    for (std::size_t pos : {std::size_t{0}, std::size_t{4}}) {
      std::vector<std::int64_t> idx = {1, 2, 3, 4, 5};
      idx[pos] = badv;
      CHECK_THROWS_AS(y = fuse::take(table, fuse::view(idx)), fuse::index_error);
      CHECK_THROWS_AS(fuse::assign(fuse::cpu{.threads = 1}, y, fuse::take(table, fuse::view(idx)) + 1.f), fuse::index_error);
      CHECK_THROWS_AS(fuse::assign(fuse::eager(fuse::cpu{}), y, fuse::exp(fuse::take(table, fuse::view(idx))) * 2.f), fuse::index_error);
      CHECK_THROWS_AS(fuse::eval(fuse::take(table, fuse::view(idx))), fuse::index_error);
    }
  }
  std::vector<std::int32_t> i32 = {0, 9, 10, 1, 1};
  CHECK_THROWS_AS(y = fuse::take(table, fuse::view(i32)), fuse::index_error);
  check_all(y, [](const shape<2>&) { return double(sentinel<float>()); });
  // Also when the result is empty (NumPy raises too): a table of empty rows, an empty broadcast.
  fuse::tensor<float, 2> no_columns(5, 0);
  std::vector<std::int32_t> past = {0, 4, 5};
  CHECK_THROWS_AS(fuse::eval(fuse::take(no_columns, fuse::view(past))), fuse::index_error);
  fuse::tensor<float, 3> nothing(0, 5, 4);
  CHECK_THROWS_AS(fuse::eval(fuse::take(table, fuse::view(i32)) * nothing), fuse::index_error);
  CHECK_THROWS_AS(fuse::assign(fuse::eager(fuse::cpu{}), nothing, fuse::take(table, fuse::view(i32)) + 1.f),
                  fuse::index_error);
  // The message names the index in its own type: 2^64 - 1 is not -1.
  std::vector<std::uint64_t> huge = {0, std::numeric_limits<std::uint64_t>::max()};
  try {
    fuse::eval(fuse::take(table, fuse::view(huge)));
    FAIL("no index_error");
  } catch (const fuse::index_error& err) {
    CHECK_THAT(err.what(), Catch::Matchers::Contains("18446744073709551615"));
  }
  // The boundary values are fine.
  std::vector<std::int32_t> okv = {0, 9, 9, 0, 5};
  y = fuse::take(table, fuse::view(okv));
  check_all(y, [&](const shape<2>& i) { return at(table, shape<2>{okv[std::size_t(i[0])], i[1]}); });
}

TEST_CASE("type promotion follows NumPy 2", "[core][promotion]") {
  auto f = random_tensor<float, 2>({3, 5}, 418);
  auto d = random_tensor<double, 2>({3, 5}, 419);
  auto i = random_tensor<int, 2>({3, 5}, 420);
  auto l = random_tensor<std::int64_t, 1>({5}, 421);
  auto c = random_tensor<std::int8_t, 1>({5}, 422);

  // A scalar of the same kind adopts the tensor's type.
  static_assert(std::is_same_v<decltype(f * 2.0)::value_type, float>);
  static_assert(std::is_same_v<decltype(2.0 * f)::value_type, float>);
  static_assert(std::is_same_v<decltype(f + 1)::value_type, float>);
  static_assert(std::is_same_v<decltype(i * 2)::value_type, int>);
  static_assert(std::is_same_v<decltype(c + 100)::value_type, std::int8_t>);
  static_assert(std::is_same_v<decltype(d * 2.f)::value_type, double>);
  // A floating scalar with an integer tensor gives double.
  static_assert(std::is_same_v<decltype(i * 2.0)::value_type, double>);
  static_assert(std::is_same_v<decltype(i * 2.f)::value_type, double>);
  static_assert(std::is_same_v<decltype(c - 0.5)::value_type, double>);
  // Two tensors combine by common_type.
  static_assert(std::is_same_v<decltype(i + f)::value_type, float>);
  static_assert(std::is_same_v<decltype(f + d)::value_type, double>);
  static_assert(std::is_same_v<decltype(i + l)::value_type, std::int64_t>);
  static_assert(std::is_same_v<decltype(f * i + 2.0)::value_type, float>);
  // Comparisons give bool; floating functions of integers give double.
  static_assert(std::is_same_v<decltype(f < 0.5)::value_type, bool>);
  static_assert(std::is_same_v<decltype(i == f)::value_type, bool>);
  static_assert(std::is_same_v<decltype(fuse::exp(i))::value_type, double>);
  static_assert(std::is_same_v<decltype(fuse::sqrt(l))::value_type, double>);
  static_assert(std::is_same_v<decltype(fuse::exp(f))::value_type, float>);
  static_assert(std::is_same_v<decltype(fuse::eval(i * 2.5)), fuse::tensor<double, 2>>);

  // The values agree with the promoted arithmetic.
  check_all(fuse::eval(i * 2.5), [&](const shape<2>& k) { return at(i, k) * 2.5; });
  check_all(fuse::eval(i * 0.1f), [&](const shape<2>& k) { return at(i, k) * double(0.1f); }, 1e-15);
  check_all(fuse::eval(i + f), [&](const shape<2>& k) { return double(float(at(i, k)) + float(at(f, k))); }, 0.0);
  check_all(fuse::eval(i < f), [&](const shape<2>& k) { return at(i, k) < at(f, k) ? 1.0 : 0.0; });
  check_all(fuse::eval(fuse::exp(i)), [&](const shape<2>& k) { return std::exp(at(i, k)); }, 1e-13);
  check_all(fuse::eval(f * 0.1), [&](const shape<2>& k) { return double(float(at(f, k) * double(0.1f))); }, 1e-6);
  // True division, as NumPy: int / int gives double.
  static_assert(std::is_same_v<decltype(i / 2)::value_type, double>);
  check_all(fuse::eval(i / 2), [&](const shape<2>& k) { return double(at(i, k)) / 2.0; });
  // An int8 tensor with an in-range int scalar stays int8 and wraps nothing here.
  check_all(fuse::eval(c + 3), [&](const shape<1>& k) { return at(c, k) + 3.0; });
}

TEST_CASE("bool tensors: comparisons, logic, where, arithmetic with integers", "[core][promotion][bool]") {
  auto x = random_tensor<float, 2>({4, 33}, 423);
  auto y = random_tensor<float, 1>({33}, 424);
  auto pos = fuse::eval(x > 0.f);
  static_assert(std::is_same_v<decltype(pos), fuse::tensor<bool, 2>>);
  check_all(pos, [&](const shape<2>& i) { return at(x, i) > 0.0; });
  fuse::tensor<bool, 2> both(4, 33);
  both = pos && (y < 0.f);
  check_all(both, [&](const shape<2>& i) { return at(x, i) > 0.0 && at(y, shape<1>{i[1]}) < 0.0; });
  auto either = fuse::eval(pos || !(x <= y));
  static_assert(std::is_same_v<decltype(either)::value_type, bool>);
  check_all(either, [&](const shape<2>& i) { return at(x, i) > 0.0 || at(x, i) > at(y, shape<1>{i[1]}); });
  check_all(fuse::eval(fuse::where(pos, x, 0.f)), [&](const shape<2>& i) { return at(x, i) > 0 ? at(x, i) : 0.0; });
  check_all(fuse::eval(pos == both), [&](const shape<2>& i) { return (at(pos, i) == at(both, i)) ? 1.0 : 0.0; });
  // bool with an integer scalar counts (NumPy: bool array + 1 is an integer array).
  auto cnt = fuse::eval(pos + 1);
  static_assert(std::is_integral_v<decltype(cnt)::value_type> && !std::is_same_v<decltype(cnt)::value_type, bool>);
  check_all(cnt, [&](const shape<2>& i) { return at(pos, i) + 1.0; });
  auto mixed = fuse::eval(fuse::cast<float>(pos) * x);
  static_assert(std::is_same_v<decltype(mixed)::value_type, float>);
  check_all(mixed, [&](const shape<2>& i) { return at(pos, i) * at(x, i); });
}
