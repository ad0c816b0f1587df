// Masked rows (cpu/row_mask.hpp): a phase whose operand is where(index cmp bound, a, b), with b (or
// a) constant along the row, reduces only the interval the mask keeps and combines the masked
// value once where it is idempotent (0 for a sum, anything for a max), else the whole row; rows of
// more than 256 elements (shorter ones, here too, are reduced whole: still checked). Every
// comparison with the index on either side, bounds inside, at and outside the row, NaN bounds,
// the kept side true or false, conjunctions (a sliding window, causal and padding), against double
// references on 1 and 3 threads; softmax with a causal or padding mask; sub-rows; strided rows;
// one row split across threads.
#include "reduce_support.hpp"

#include <functional>

using namespace rt;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
const float nan_f = std::numeric_limits<float>::quiet_NaN();

// Row bounds for rows of n: below, at and past both ends, and random inside.
template <class T>
fuse::tensor<T, 2> bounds(index_t m, index_t n, unsigned seed) {
  fuse::tensor<T, 2> b(m, 1);
  std::mt19937 gen(seed);
  const T fixed[] = {T(-3), T(0), T(1), T(n - 1), T(n), T(n + 2)};
  for (index_t r = 0; r < m; ++r)
    b(r, 0) = r < 6 ? fixed[r] : static_cast<T>(std::uniform_int_distribution<long>(0, n > 0 ? n - 1 : 0)(gen));
  return b;
}

// The comparisons, as the reference evaluates them (index j, bound v).
using compare_fn = std::function<bool(double, double)>;

// For rows r of x [m, n]: kept(j) = cmp(j, b[r]) (or cmp(b[r], j) when flip), then reduce in double.
template <class B, class Red>
std::vector<double> masked_ref(const fuse::tensor<float, 2>& x, const fuse::tensor<B, 2>& b, compare_fn cmp, bool flip,
                               double masked, Red red) {
  const index_t m = x.extent(0), n = x.extent(1);
  std::vector<double> out(m);
  for (index_t r = 0; r < m; ++r) {
    std::vector<double> row(n);
    for (index_t j = 0; j < n; ++j) {
      const bool c = flip ? cmp(double(b(r, 0)), double(j)) : cmp(double(j), double(b(r, 0)));
      row[j] = c ? double(x(r, j)) : masked;
    }
    out[r] = red(row);
  }
  return out;
}

template <class E>
void check_rows(const E& e, const std::vector<double>& ref, double rel) {
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    fuse::tensor<float, 2> y(index_t(ref.size()), 1);
    fuse::assign(fuse::cpu{threads}, y, e);
    for (index_t r = 0; r < index_t(ref.size()); ++r) {
      CAPTURE(r, ref[r], y(r, 0));
      CHECK(close(y(r, 0), ref[r], rel, 1e-5));
    }
  }
}

// sum(where(cond, x, 0)) and max(where(cond, x, -inf)) for one comparison with the index first
// and second (cmp(i, b) and cmp(b, i)).
#define FUSE_CHECK_COMPARE(OP, REF)                                                                                  \
  {                                                                                                                   \
    INFO("comparison " #OP);                                                                                          \
    const compare_fn cmp = [](double a, double c) { return a REF c; };                                                \
    check_rows(fuse::sum(fuse::where(i OP b, x, 0.f), fuse::axis<-1>), masked_ref(x, b, cmp, false, 0, ref_sum), 1e-5); \
    check_rows(fuse::sum(fuse::where(b OP i, x, 0.f), fuse::axis<-1>), masked_ref(x, b, cmp, true, 0, ref_sum), 1e-5);  \
    check_rows(fuse::max(fuse::where(i OP b, x, -inf), fuse::axis<-1>), masked_ref(x, b, cmp, false, -INFINITY, ref_max), 0); \
  }

}  // namespace

TEST_CASE("a masked reduction reduces the kept interval: each comparison, the index on either side, against the reference") {
  for (index_t n : {index_t(1), index_t(7), index_t(64), index_t(257), index_t(400), index_t(1000), index_t(5003)}) {
    CAPTURE(n);
    const auto x = random<float, 2>({23, n}, 3, -4, 4);
    const auto b = bounds<int>(23, n, 5);
    const auto i = fuse::iota<1>(x.shape());
    FUSE_CHECK_COMPARE(<, <)
    FUSE_CHECK_COMPARE(<=, <=)
    FUSE_CHECK_COMPARE(>, >)
    FUSE_CHECK_COMPARE(>=, >=)
    FUSE_CHECK_COMPARE(==, ==)
    // The complement of an equality is two intervals: reduced whole, still right.
    FUSE_CHECK_COMPARE(!=, !=)
  }
}
#undef FUSE_CHECK_COMPARE

TEST_CASE("a masked reduction: the kept side false, float and NaN bounds, a masked value that is not idempotent") {
  const index_t n = 517;
  auto x = random<float, 2>({23, n}, 7, -4, 4);
  x(9, 3) = nan_f;  // kept or masked, row by row and form by form: the reference decides
  const auto i = fuse::iota<1>(x.shape());
  const auto b = bounds<int>(23, n, 9);
  const compare_fn lt = [](double a, double c) { return a < c; };
  const compare_fn ge = [](double a, double c) { return a >= c; };
  const compare_fn ne = [](double a, double c) { return a != c; };
  const compare_fn eq = [](double a, double c) { return a == c; };
  // where(i < b, 0, x): kept where i >= b.
  check_rows(fuse::sum(fuse::where(i < b, 0.f, x), fuse::axis<-1>), masked_ref(x, b, ge, false, 0, ref_sum), 1e-5);
  // where(i != b, 0, x): kept where i == b (one element, or none).
  check_rows(fuse::sum(fuse::where(i != b, 0.f, x), fuse::axis<-1>), masked_ref(x, b, eq, false, 0, ref_sum), 1e-5);
  // where(i == b, 0, x): kept where i != b, not an interval: the whole row.
  check_rows(fuse::sum(fuse::where(i == b, 0.f, x), fuse::axis<-1>), masked_ref(x, b, ne, false, 0, ref_sum), 1e-5);
  // A masked value of 1 is not idempotent under a sum: the whole row, 1 per masked element.
  check_rows(fuse::sum(fuse::where(i < b, x, 1.f), fuse::axis<-1>), masked_ref(x, b, lt, false, 1, ref_sum), 1e-5);
  // mean divides by the whole row.
  check_rows(fuse::mean(fuse::where(i < b, x, 0.f), fuse::axis<-1>), masked_ref(x, b, lt, false, 0, ref_mean), 1e-5);
  // Float bounds, between indices, and NaN (no element compares true with it).
  auto bf = bounds<float>(23, n, 11);
  bf(6, 0) = 2.5f, bf(7, 0) = nan_f, bf(8, 0) = -inf, bf(9, 0) = inf, bf(10, 0) = 100.75f;
  check_rows(fuse::sum(fuse::where(i < bf, x, 0.f), fuse::axis<-1>), masked_ref(x, bf, lt, false, 0, ref_sum), 1e-5);
  check_rows(fuse::max(fuse::where(i >= bf, x, -inf), fuse::axis<-1>), masked_ref(x, bf, ge, false, -INFINITY, ref_max), 0);
  check_rows(fuse::sum(fuse::where(bf != i, 0.f, x), fuse::axis<-1>), masked_ref(x, bf, eq, true, 0, ref_sum), 1e-5);
  // An offset bound (a causal mask shifted by 3) and a row constant on both sides.
  const auto q = fuse::iota<0>(x.shape());
  fuse::tensor<float, 2> y(23, 1);
  fuse::assign(y, fuse::sum(fuse::where(i <= q + 3, x, 0.f), fuse::axis<-1>));
  for (index_t r = 0; r < 23; ++r) {
    double s = 0;
    for (index_t j = 0; j <= std::min(r + 3, n - 1); ++j) s += x(r, j);
    CHECK(close(y(r, 0), s, 1e-5, 1e-5));
  }
}

TEST_CASE("a conjunction of index conditions keeps the intersection: a sliding window, causal and padding together") {
  const index_t m = 41, n = 700;
  const auto x = random<float, 2>({m, n}, 37, -4, 4);
  const auto s = x.shape();
  const auto k = fuse::iota<1>(s);
  const auto q = fuse::iota<0>(s) * 17;  // query r sits at key 17 r
  fuse::tensor<int, 2> len(m, 1);
  for (index_t r = 0; r < m; ++r) len(r, 0) = int((r * 101) % (n + 40)) - 20;
  fuse::tensor<float, 2> y(m, 1), z(m, n), w(m, 1);
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    const fuse::cpu exec{threads};
    // A window of 64 keys ending at the query; causal and padding; a window with a label excluded
    // (a not_equal inside a conjunction: not an interval, the whole row).
    fuse::assign(exec, y, fuse::sum(fuse::where((k <= q) && (k > q - 64), x, 0.f), fuse::axis<-1>));
    fuse::assign(exec, z, fuse::softmax(fuse::where((k <= q) && (k < len), x, -inf), fuse::axis<-1>));
    fuse::assign(exec, w, fuse::max(fuse::where((k < len) && (k != q) && (k >= 3), x, -inf), fuse::axis<-1>));
    for (index_t r = 0; r < m; ++r) {
      CAPTURE(r);
      const index_t qr = 17 * r, lr = len(r, 0);
      double sw = 0, mx = -INFINITY, mw = -INFINITY, se = 0;
      for (index_t j = 0; j < n; ++j) {
        if (j <= qr && j > qr - 64) sw += x(r, j);
        if (j <= qr && j < lr) mx = std::max(mx, double(x(r, j)));
        if (j < lr && j != qr && j >= 3) mw = std::max(mw, double(x(r, j)));
      }
      for (index_t j = 0; j < n; ++j)
        if (j <= qr && j < lr) se += std::exp(double(x(r, j)) - mx);
      CHECK(close(y(r, 0), sw, 1e-5, 1e-5));
      CHECK(close(w(r, 0), mw, 0));
      for (index_t j = 0; j < n; ++j) {
        CAPTURE(j);
        CHECK(close(z(r, j), (j <= qr && j < lr) ? std::exp(double(x(r, j)) - mx) / se : (mx == -INFINITY ? NAN : 0.0), 1e-5, 1e-7));
      }
    }
  }
}

// Found by a review: the kept loop once replaced the where by its kept branch, which skipped the
// where's conversion (an int branch under a double where reached cast and map as int), and took
// -0 as idempotent under a product (-0 * -0 == -0 as values, but it is +0).
TEST_CASE("a masked reduction: the kept branch converts as the where does; a masked -0 under a product") {
  const index_t m = 7, n = 300;
  fuse::tensor<std::int32_t, 2> xi(m, n);
  for (index_t i = 0; i < xi.size(); ++i) xi.data()[i] = std::int32_t(i % 5 == 0 ? 300 : 3);
  const auto s = xi.shape();
  const auto k = fuse::iota<1>(s);
  const auto q = fuse::iota<0>(s) * 31;
  // Each operand evaluated elementwise (no row kernel), then reduced in double: the reference.
  auto check = [&](const auto& operand, const auto& reduced, auto reduce) {
    const auto each = fuse::eval(operand);
    fuse::tensor<double, 2> got(m, 1);
    fuse::assign(got, reduced);
    for (index_t r = 0; r < m; ++r) {
      std::vector<double> row(n);
      for (index_t j = 0; j < n; ++j) row[j] = double(each(r, j));
      CAPTURE(r);
      CHECK(got(r, 0) == reduce(row));
      CHECK(std::signbit(got(r, 0)) == std::signbit(reduce(row)));
    }
  };
  const auto saturated = fuse::cast<std::int8_t>(fuse::where(k <= q, xi, 0.5));
  check(saturated, fuse::cast<double>(fuse::sum(saturated, fuse::axis<-1>)), ref_sum);
  const auto halved = fuse::map([](auto v) { return v / 2; }, fuse::where(k <= q, xi, 0.0));
  check(halved, fuse::sum(halved, fuse::axis<-1>), ref_sum);
  const auto signed_zeros = fuse::where(k <= q, fuse::full(s, 1.0f), -0.0f);
  auto ref_prod = [](const std::vector<double>& v) {
    double p = 1;
    for (double x : v) p *= x;
    return p;
  };
  check(signed_zeros, fuse::prod(signed_zeros, fuse::axis<-1>), ref_prod);
}

TEST_CASE("a masked reduction reads only the kept elements") {
  std::atomic<long> calls{0};
  const index_t m = 64, n = 1000;
  const auto x = random<float, 2>({m, n}, 13);
  const auto s = x.shape();
  fuse::tensor<float, 2> y(m, 1);
  fuse::assign(fuse::cpu{1}, y, fuse::sum(fuse::where(fuse::iota<1>(s) <= fuse::iota<0>(s), fuse::map(counting_identity(calls), x), 0.f), fuse::axis<-1>));
  // Row r keeps r + 1 elements, and its masked value is evaluated once.
  long kept = 0;
  for (index_t r = 0; r < m; ++r) {
    double ref = 0;
    for (index_t j = 0; j <= r; ++j) ref += x(r, j);
    CHECK(close(y(r, 0), ref, 1e-5, 1e-6));
    kept += r + 1;
  }
  CHECK(calls.load() == kept + m);
}

TEST_CASE("softmax under a causal or padding mask: masked elements exactly 0, rows masked whole NaN") {
  for (index_t n : {index_t(5), index_t(64), index_t(300), index_t(1024), index_t(5000)}) {
    CAPTURE(n);
    const index_t m = 19;
    auto x = random<float, 2>({m, n}, 17, -6, 6);
    x(2, n - 1) = nan_f;  // masked by the causal mask (row 2 keeps 3 elements) unless n <= 3
    x(4, 0) = inf;        // kept: its row is NaN, as NumPy (inf - inf)
    const auto s = x.shape();
    auto len = bounds<int>(m, n, 19);  // row 0 keeps nothing: NaN; rows 1 and 2 keep 0 and 1
    for (int threads : {1, 2}) {
      CAPTURE(threads);
      fuse::tensor<float, 2> causal(m, n), padded(m, n), flipped(m, n);
      fuse::assign(fuse::cpu{threads}, causal, fuse::softmax(fuse::where(fuse::iota<1>(s) <= fuse::iota<0>(s), x, -inf), fuse::axis<-1>));
      fuse::assign(fuse::cpu{threads}, padded, fuse::softmax(fuse::where(fuse::iota<1>(s) < len, x, -inf), fuse::axis<-1>));
      fuse::assign(fuse::cpu{threads}, flipped, fuse::log_softmax(fuse::where(fuse::iota<0>(s) < fuse::iota<1>(s), -inf, x), fuse::axis<-1>));
      for (index_t r = 0; r < m; ++r) {
        auto reference = [&](index_t keep, bool log) {
          std::vector<double> row(n);
          double mx = -INFINITY;
          for (index_t j = 0; j < n; ++j) {
            row[j] = j < keep ? double(x(r, j)) : -INFINITY;
            mx = (row[j] > mx || std::isnan(row[j])) ? row[j] : mx;
          }
          double sum = 0;
          for (double v : row) sum += std::exp(v - mx);
          for (double& v : row) v = log ? v - mx - std::log(sum) : std::exp(v - mx) / sum;
          return row;
        };
        const auto rc = reference(std::min(r + 1, n), false);
        const auto rp = reference(std::clamp<index_t>(len(r, 0), 0, n), false);
        const auto rf = reference(std::min(r + 1, n), true);
        for (index_t j = 0; j < n; ++j) {
          CAPTURE(r, j);
          CHECK(close(causal(r, j), rc[j], 1e-5, 1e-7));
          CHECK(close(padded(r, j), rp[j], 1e-5, 1e-7));
          CHECK(close(flipped(r, j), rf[j], 1e-5, 1e-5));
          if (j > r && !std::isnan(rc[j])) CHECK(causal(r, j) == 0.f);
        }
      }
    }
  }
}

TEST_CASE("masked rows over several axes, strided rows, and one row split across threads") {
  // Sub-rows: sum over axes 1 and 2 of where(k < len[m, 1, 1], x, 0).
  const index_t m = 9, c = 3, n = 277;
  const auto x3 = random<float, 3>({m, c, n}, 23);
  fuse::tensor<int, 3> len(m, 1, 1);
  for (index_t r = 0; r < m; ++r) len(r, 0, 0) = int((r * 13) % (n + 3)) - 1;
  fuse::tensor<float, 3> y3(m, 1, 1);
  fuse::assign(fuse::cpu{2}, y3, fuse::sum(fuse::where(fuse::iota<2>(x3.shape()) < len, x3, 0.f), fuse::axes<1, 2>));
  for (index_t r = 0; r < m; ++r) {
    double s = 0;
    for (index_t k = 0; k < c; ++k)
      for (index_t j = 0; j < std::min<index_t>(std::max(len(r, 0, 0), 0), n); ++j) s += x3(r, k, j);
    CHECK(close(y3(r, 0, 0), s, 1e-5, 1e-5));
  }
  // Strided rows: a transposed view.
  const auto xt = random<float, 2>({301, 37}, 29);
  const auto x = fuse::transpose(xt);  // [37, 301], rows of stride 37
  const auto s = x.shape();
  fuse::tensor<float, 2> y(37, 301);
  fuse::assign(fuse::cpu{2}, y, fuse::softmax(fuse::where(fuse::iota<1>(s) <= fuse::iota<0>(s) * 5, x, -inf), fuse::axis<-1>));
  for (index_t r = 0; r < 37; ++r) {
    const index_t keep = std::min<index_t>(5 * r + 1, 301);
    double mx = -INFINITY, sum = 0;
    for (index_t j = 0; j < keep; ++j) mx = std::max(mx, double(xt(j, r)));
    for (index_t j = 0; j < keep; ++j) sum += std::exp(double(xt(j, r)) - mx);
    for (index_t j = 0; j < 301; ++j) {
      CAPTURE(r, j);
      CHECK(close(y(r, j), j < keep ? std::exp(double(xt(j, r)) - mx) / sum : 0.0, 1e-5, 1e-7));
    }
  }
  // One row, split across two threads (fewer rows than threads), the mask's edge in either half.
  const index_t long_n = 100003;
  const auto xl = random<float, 2>({1, long_n}, 31);
  for (index_t edge : {index_t(10), index_t(77777)}) {
    CAPTURE(edge);
    fuse::tensor<float, 2> yl(1, long_n);
    fuse::assign(fuse::cpu{2}, yl, fuse::softmax(fuse::where(fuse::iota<1>(xl.shape()) < edge, xl, -inf), fuse::axis<-1>));
    double mx = -INFINITY, sum = 0;
    for (index_t j = 0; j < edge; ++j) mx = std::max(mx, double(xl(0, j)));
    for (index_t j = 0; j < edge; ++j) sum += std::exp(double(xl(0, j)) - mx);
    for (index_t j = 0; j < long_n; j += 97) {
      CAPTURE(j);
      CHECK(close(yl(0, j), j < edge ? std::exp(double(xl(0, j)) - mx) / sum : 0.0, 1e-5, 1e-9));
    }
  }
}
