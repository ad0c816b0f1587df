// The row kernels' cases whose results depend on how their loops are vectorised: NaN, infinities
// and extreme values through the max / min / sum reductions (a vector reduction keeps one partial
// result a lane and combines them in another order than a scalar loop; the fast paths over NaN-free
// blocks), float accuracy of sums whose addition order the lanes set, the online pairs' rescaled
// running sums over long rows, and rows assigned in place (an `omp simd` loop promises the compiler
// independent iterations). Built optimised (-O1, tests/CMakeLists.txt) so that these run through the
// vector code, while the other unit tests build at -O0 (CI time; docs/testing.md). All against
// double references.
#include "reduce_support.hpp"

using namespace rt;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

// softmax of row r of x [m, n] in double.
std::vector<double> softmax_row(const fuse::tensor<float, 2>& x, index_t r) {
  const index_t n = x.extent(1);
  std::vector<double> row(x.data() + r * n, x.data() + (r + 1) * n);
  const double mx = ref_max(row);
  double s = 0;
  for (double v : row) s += std::exp(v - mx);
  for (double& v : row) v = std::exp(v - mx) / s;
  return row;
}

// logsumexp of row r of x in double: -inf for a row of -inf, +inf with a +inf element, NaN with a NaN.
double logsumexp_row(const fuse::tensor<float, 2>& x, index_t r) {
  const index_t n = x.extent(1);
  const std::vector<double> row(x.data() + r * n, x.data() + (r + 1) * n);
  const double mx = ref_max(row);
  if (std::isinf(mx) || std::isnan(mx)) return mx;
  double s = 0;
  for (double v : row) s += std::exp(v - mx);
  return mx + std::log(s);
}

// Rows of 3 blocks (4096 floats) and a SIMD tail: noise plus a trend, so that the running max
// rises block after block (or is set by the first block), -inf over the first 1.5 blocks, NaN or
// +inf in the last block, every element -inf.
fuse::tensor<float, 2> patterned_rows(index_t n) {
  auto x = random<float, 2>({7, n}, 11, -4, 4);
  for (index_t i = 0; i < n; ++i) {
    x(0, i) += 0.002f * float(i);  // rising: each block's max above the last
    x(1, i) -= 0.002f * float(i);  // falling: the first block holds the max
    if (i < 6000) x(2, i) = -inf;  // leading -inf blocks, finite after
    x(6, i) = -inf;                // all -inf: NaN, as NumPy
  }
  x(3, n - 5) = std::numeric_limits<float>::quiet_NaN();  // NaN late: a NaN row
  x(4, n - 3000) = inf;                                   // +inf late: a NaN row (inf - inf)
  x(5, n - 1) = 60.f;                                     // one large logit at the very end
  return x;
}

}  // namespace

TEST_CASE("softmax of +-1e4 logits, of all -inf rows (NaN), logsumexp of -inf (-inf)") {
  fuse::tensor<float, 2> x(3, 4);
  const float vals[] = {1e4f, -1e4f, 0.f, 1e4f, -1e4f, -1e4f, -1e4f + 1, -1e4f, -inf, -inf, -inf, -inf};
  std::copy(vals, vals + 12, x.data());
  auto y = fuse::eval(fuse::softmax(x, fuse::axis<-1>));
  CHECK(y(0, 0) == Approx(0.5f));
  CHECK(y(0, 1) == 0.f);
  CHECK(y(1, 2) == Approx(std::exp(1.0) / (3 + std::exp(1.0))));
  for (index_t j = 0; j < 4; ++j) CHECK(std::isnan(y(2, j)));
  auto l = fuse::eval(fuse::logsumexp(x, fuse::axis<-1>));
  CHECK(l(0, 0) == Approx(1e4f + std::log(2.f)));
  CHECK(l(2, 0) == -inf);
}

// Float sums over rows of very short runs (reduce_runs): no float lane takes more than 15
// additions before it moves into the double total. Counted by elements instead, runs of 2 gave
// two lanes 128 additions each: 1.3e-6 relative on 65536 equal terms (a review's probe).
TEST_CASE("float sums over rows of runs of 2-8 elements stay accurate") {
  for (index_t k : {2, 3, 4, 8}) {
    for (float v : {0.1f, 0.3f, 0.9f, 1.7f}) {
      CAPTURE(k, v);
      const index_t n = 65536 / k;
      auto z = fuse::eval(fuse::full<float>(fuse::shape_t<3>{n, 2, k}, v));
      const double want = double(v) * double(n * k);
      for (int threads : {1, 2}) {
        const auto r = fuse::eval(fuse::cpu{.threads = threads}, fuse::sum(z, fuse::axes<0, 2>));
        for (index_t c = 0; c < 2; ++c) REQUIRE(close(r(0, c, 0), want, 4e-7));
      }
    }
  }
}

// A softmax over axes 0 and 2 of [a, m, k], rows of a short runs of k (their lanes carried from run
// to run): a NaN in one run, -inf in all of another row (NaN, as NumPy), a row whose largest values
// are in its last run; against double loops.
TEST_CASE("softmax over rows of short runs: NaN, -inf rows, the maximum in the last run") {
  const auto nan = std::numeric_limits<float>::quiet_NaN();
  for (index_t k : {1, 5, 37, 200}) {
    CAPTURE(k);
    const index_t a = 23, m = 4;
    auto x = random<float, 3>({a, m, k}, 80 + unsigned(k), -4, 4);
    x(11, 1, k - 1) = nan;                                                // row 1: NaN in a middle run's tail
    for (index_t i = 0; i < a; ++i)
      for (index_t j = 0; j < k; ++j) x(i, 2, j) = -inf;                  // row 2: all -inf
    for (index_t j = 0; j < k; ++j) x(a - 1, 3, j) += 9.f;                // row 3: its maximum in the last run
    auto shifted = x - fuse::max(x, fuse::axes<0, 2>);
    const auto e = fuse::exp(shifted) / fuse::sum(fuse::exp(shifted), fuse::axes<0, 2>);
    static_assert(fuse::kernels_v<decltype(e)> == 1);
    for (int threads : {1, 2}) {
      CAPTURE(threads);
      const auto y = fuse::eval(fuse::cpu{.threads = threads}, e);
      const auto d = fuse::eval(fuse::cpu{.threads = threads}, shifted);  // the max alone: NaN must reach it
      for (index_t r = 0; r < m; ++r) {
        CAPTURE(r);
        std::vector<double> row;
        for (index_t i = 0; i < a; ++i)
          for (index_t j = 0; j < k; ++j) row.push_back(x(i, r, j));
        const double mx = ref_max(row);
        double sum = 0;
        for (double v : row) sum += std::exp(v - mx);
        for (index_t i = 0; i < a; ++i)
          for (index_t j = 0; j < k; ++j) {
            const double ref = std::isnan(mx) || std::isinf(mx) ? std::numeric_limits<double>::quiet_NaN() : std::exp(double(x(i, r, j)) - mx) / sum;
            REQUIRE(close(y(i, r, j), ref, 2e-5, 1e-30));
            REQUIRE(close(d(i, r, j), double(x(i, r, j)) - mx, 1e-6, 1e-6));
          }
      }
    }
  }
}

TEST_CASE("in place: x = x - max(x, axis<-1>) and x = softmax(x)") {
  auto x = random<float, 2>({40, 300}, 31);
  auto copy = x;
  x = x - fuse::max(x, fuse::axis<-1>);
  for (index_t r = 0; r < 40; ++r) {
    std::vector<double> row(copy.data() + r * 300, copy.data() + (r + 1) * 300);
    for (index_t j = 0; j < 300; ++j) REQUIRE(x(r, j) == float(copy(r, j) - float(ref_max(row))));
  }
  auto y = copy;
  y = fuse::softmax(y, fuse::axis<-1>);
  auto fresh = fuse::eval(fuse::softmax(copy, fuse::axis<-1>));
  for (index_t i = 0; i < y.size(); ++i) REQUIRE(y.data()[i] == fresh.data()[i]);
}


// [large]: 33 s instrumented, so the sanitizer configuration leaves it to the default one (full
// sums across threads run instrumented in the tests of smaller sizes).
TEST_CASE("a float sum of 2^25 terms is accurate to 1e-6 relative to sum |x|", "[large]") {
  const index_t n = index_t(1) << 25;
  fuse::tensor<float, 1> x(n);
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> d(0.f, 1.f);
  double ref = 0, abs_sum = 0;
  float* const p = x.data();  // (not x(i): the sanitizer build is unoptimised, and 2^25 calls add up)
  for (index_t i = 0; i < n; ++i) {
    p[i] = d(gen);
    ref += double(p[i]) * p[i];
    abs_sum += double(p[i]) * p[i];
  }
  for (int threads : {1, 2}) {
    const float s = fuse::eval(fuse::cpu{threads}, fuse::sum(x * x));
    CHECK(std::abs(double(s) - ref) / abs_sum < 1e-6);
  }
  // Equal terms round alike in every addition, so the error of one accumulator grows linearly: with
  // 128 additions per float lane it reached 1.9e-6 at c = 0.52497673 (a probe, 2026-12-02).
  for (const float c : {0.52497673f, 0.1f, 0.947303295f}) {
    for (index_t i = 0; i < n; ++i) p[i] = c;
    const double exact = double(c) * double(n);
    for (int threads : {1, 2}) {
      INFO("c = " << c << ", threads = " << threads);
      CHECK(std::abs(double(fuse::eval(fuse::cpu{threads}, fuse::sum(x))) - exact) / exact < 1e-6);
      CHECK(std::abs(double(fuse::eval(fuse::cpu{threads}, fuse::sum(fuse::full(x.shape(), c)))) - exact) / exact < 1e-6);
    }
  }
}

TEST_CASE("variance is stable and never negative (mean 1e3), layer norm of such data") {
  auto x = random<float, 2>({64, 1000}, 9, 1000.0, 1001.0);
  auto v = fuse::eval(fuse::var(x, fuse::axis<-1>));
  for (index_t r = 0; r < 64; ++r) {
    std::vector<double> row(x.data() + r * 1000, x.data() + (r + 1) * 1000);
    CHECK(v(r, 0) >= 0.f);
    CHECK(close(v(r, 0), ref_var(row), 1e-4));
  }
}

TEST_CASE("NaN propagates through max, min and sum from any position") {
  for (index_t n : {index_t(1), index_t(37), index_t(100), index_t(255)}) {
    for (index_t pos : {index_t(0), n / 2, n - 1}) {
      auto x = random<float, 2>({2, n}, 10);
      x(1, pos) = std::numeric_limits<float>::quiet_NaN();
      auto mx = fuse::eval(fuse::max(x, fuse::axis<-1>));
      auto mn = fuse::eval(fuse::min(x, fuse::axis<-1>));
      auto s = fuse::eval(fuse::sum(x, fuse::axis<-1>));
      CHECK(std::isnan(mx(1, 0)));
      CHECK(std::isnan(mn(1, 0)));
      CHECK(std::isnan(s(1, 0)));
      CHECK(!std::isnan(mx(0, 0)));
    }
  }
}

// max and min run a NaN-free fast path over blocks and repeat a block exactly when it holds a NaN
// (or infinities of both signs, whose side sum is NaN): infinities must come out as values, and
// a NaN beside them must still win. Rows of 9001 span three blocks.
TEST_CASE("max and min of rows holding infinities, from any position") {
  for (index_t n : {index_t(1), index_t(64), index_t(100), index_t(9001)}) {
    for (index_t pos : {index_t(0), n / 2, n - 1}) {
      auto x = random<float, 2>({3, n}, 12);
      x(0, pos) = inf;
      x(1, pos) = -inf;
      for (index_t j = 0; j < n; ++j) x(2, j) = -inf;
      auto mx = fuse::eval(fuse::max(x, fuse::axis<-1>));
      auto mn = fuse::eval(fuse::min(x, fuse::axis<-1>));
      auto row = [&](index_t r) { return std::vector<double>(x.data() + r * n, x.data() + (r + 1) * n); };
      CHECK(mx(0, 0) == inf);
      CHECK(mn(1, 0) == -inf);
      CHECK(mx(2, 0) == -inf);
      CHECK(mn(2, 0) == -inf);
      // Values near FLT_MAX: the fast path's side sum overflows, the block is redone exactly.
      fuse::tensor<float, 2> big(1, n);
      for (index_t j = 0; j < n; ++j) big(0, j) = std::numeric_limits<float>::max() * (j == pos ? 1.f : 0.75f);
      CHECK(fuse::eval(fuse::max(big, fuse::axis<-1>))(0, 0) == std::numeric_limits<float>::max());
      CHECK(fuse::eval(fuse::min(big, fuse::axis<-1>))(0, 0) == (n == 1 ? std::numeric_limits<float>::max() : std::numeric_limits<float>::max() * 0.75f));
      CHECK(mx(1, 0) == float(n == 1 ? -inf : ref_max(row(1))));
      CHECK(-mn(0, 0) == float(n == 1 ? -inf : ref_max([&] {
                                  auto v = row(0);
                                  for (double& e : v) e = -e;
                                  return v;
                                }())));
      if (n == 1) continue;
      // Infinities of both signs, then a NaN in the same row (a causal mask over NaN logits).
      x(0, pos == 0 ? n - 1 : 0) = -inf;
      CHECK(fuse::eval(fuse::max(x, fuse::axis<-1>))(0, 0) == inf);
      x(1, pos == n / 3 ? n - 1 : n / 3) = std::numeric_limits<float>::quiet_NaN();
      CHECK(std::isnan(fuse::eval(fuse::max(x, fuse::axis<-1>))(1, 0)));
      CHECK(std::isnan(fuse::eval(fuse::min(x, fuse::axis<-1>))(1, 0)));
    }
  }
}


TEST_CASE("online softmax and logsumexp over long rows: rising, falling, -inf, NaN and +inf, against the reference") {
  for (index_t n : {index_t(4097), index_t(3 * 4096 + 17), index_t(70001)}) {
    CAPTURE(n);
    const auto x = patterned_rows(n);
    auto y = fuse::eval(fuse::softmax(x, fuse::axis<-1>));
    auto ly = fuse::eval(fuse::log_softmax(x, fuse::axis<-1>));
    auto hand = fuse::eval(fuse::exp(x - fuse::max(x, fuse::axis<-1>)) / fuse::sum(fuse::exp(x - fuse::max(x, fuse::axis<-1>)), fuse::axis<-1>));
    auto lse = fuse::eval(fuse::logsumexp(x, fuse::axis<-1>));
    for (index_t r = 0; r < x.extent(0); ++r) {
      CAPTURE(r);
      const auto ref = softmax_row(x, r);
      REQUIRE(close(lse(r, 0), logsumexp_row(x, r), 1e-6, 1e-6));
      for (index_t j = 0; j < n; ++j) {
        REQUIRE(close(y(r, j), ref[j], 2e-5, 1e-30));
        REQUIRE(close(hand(r, j), ref[j], 2e-5, 1e-30));
        const double lref = std::log(ref[j]);
        if (std::isinf(lref)) REQUIRE(ly(r, j) == float(lref));
        else REQUIRE(close(ly(r, j), lref, 2e-5, 2e-5));
      }
    }
  }
}

TEST_CASE("online mean and variance over long rows: layer norm, var and the hand-written form, mean 1e3, NaN and inf") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (index_t n : {index_t(4097), index_t(3 * 4096 + 17), index_t(70001)}) {
    CAPTURE(n);
    auto x = random<float, 2>({5, n}, 13, -2, 2);
    for (index_t i = 0; i < n; ++i) {
      x(0, i) += 1000.f;              // mean 1e3: cancellation if squares were summed about 0
      x(1, i) += 0.001f * float(i);   // a trend: the blocks' means differ
    }
    x(3, n - 7) = nan;  // NaN late: a NaN row
    x(4, n / 2) = inf;  // inf: NaN (inf - inf)
    auto gamma = random<float, 1>({n}, 14, 0.5, 1.5);
    auto beta = random<float, 1>({n}, 15, -1, 1);
    auto y = fuse::eval(fuse::layer_norm(x, gamma, beta));
    auto v = fuse::eval(fuse::var(x, fuse::axis<-1>));
    auto centred = x - fuse::mean(x, fuse::axis<-1>);
    auto hand = fuse::eval(centred / fuse::sqrt(fuse::mean(fuse::square(centred), fuse::axis<-1>) + 1e-5f));
    for (index_t r = 0; r < x.extent(0); ++r) {
      CAPTURE(r);
      const std::vector<double> row(x.data() + r * n, x.data() + (r + 1) * n);
      const double mu = ref_mean(row), var = ref_var(row);
      REQUIRE(close(v(r, 0), var, 1e-5, 1e-9));
      const double inv = 1 / std::sqrt(var + 1e-5);
      for (index_t j = 0; j < n; ++j) {
        const double z = (row[std::size_t(j)] - mu) * inv;
        REQUIRE(close(y(r, j), z * gamma(j) + beta(j), 2e-4, 2e-4));
        REQUIRE(close(hand(r, j), z, 2e-4, 2e-4));
      }
    }
  }
}

// Chan's update is first-order in the blocks' means' error: block sums in float lanes gave var a
// relative error of 4.8e-5 on 8192 elements of mean 1e4 (a probe, 2026-12-03); two-pass gave 6.5e-7.
TEST_CASE("online variance of a long row with mean 1e4 is as accurate as two-pass") {
  for (index_t n : {index_t(5000), index_t(8192), index_t(65536)}) {
    CAPTURE(n);
    auto x = random<float, 1>({n}, 21, -1, 1);
    for (index_t i = 0; i < n; ++i) x(i) += 1e4f;
    const std::vector<double> row(x.data(), x.data() + n);
    const double var = ref_var(row);
    CHECK(close(fuse::eval(fuse::var(x)), var, 1e-6, 0));
    CHECK(close(fuse::eval(fuse::cpu{.threads = 1}, fuse::var(x)), var, 1e-6, 0));
    auto rows = fuse::eval(fuse::var(fuse::reshape(x, 1, n), fuse::axis<-1>));
    CHECK(close(rows(0, 0), var, 1e-6, 0));
  }
}

// One long row on two threads (fewer rows than threads: the row is split, cpu/row_kernel.hpp's
// run_split_online_pair): each thread's range runs the pair online and the parts are combined -
// the running maxima and rescaled sums, or Chan's update of the ranges' means and squares.
TEST_CASE("online pairs over a row split across threads: softmax, logsumexp, layer norm, var of a whole vector") {
  const fuse::cpu two{2};
  const index_t n = 70001;  // two threads' worth (threads_for), blocks of 4096 and a tail per range
  const auto rows = patterned_rows(n);
  for (index_t r = 0; r < rows.extent(0); ++r) {
    CAPTURE(r);
    fuse::tensor<float, 2> x(1, n);
    std::copy(rows.data() + r * n, rows.data() + (r + 1) * n, x.data());
    fuse::tensor<float, 2> y(1, n), ly(1, n);
    fuse::assign(two, y, fuse::softmax(x, fuse::axis<-1>));
    fuse::assign(two, ly, fuse::log_softmax(x, fuse::axis<-1>));
    fuse::tensor<float, 0> lse{fuse::shape_t<0>{}};
    fuse::assign(two, lse, fuse::logsumexp(x));  // every axis: one row of n
    REQUIRE(close(lse(), logsumexp_row(x, 0), 1e-6, 1e-6));
    const auto ref = softmax_row(x, 0);
    for (index_t j = 0; j < n; ++j) {
      REQUIRE(close(y(0, j), ref[j], 2e-5, 1e-30));
      const double lref = std::log(ref[j]);
      if (std::isinf(lref)) REQUIRE(ly(0, j) == float(lref));
      else REQUIRE(close(ly(0, j), lref, 2e-5, 2e-5));
    }
  }
  // Mean 1e3 and a trend: the two ranges' means differ, so the combination's correction counts.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int kind = 0; kind < 3; ++kind) {
    CAPTURE(kind);
    auto x = random<float, 2>({1, n}, 16, -2, 2);
    for (index_t i = 0; i < n; ++i) x(0, i) += 1000.f + 0.01f * float(i);
    if (kind == 1) x(0, n - 3) = nan;
    if (kind == 2) x(0, n / 3) = inf;
    auto gamma = random<float, 1>({n}, 17, 0.5, 1.5);
    auto beta = random<float, 1>({n}, 18, -1, 1);
    fuse::tensor<float, 2> y(1, n);
    fuse::assign(two, y, fuse::layer_norm(x, gamma, beta));
    fuse::tensor<float, 0> v{fuse::shape_t<0>{}};
    fuse::assign(two, v, fuse::var(x));  // every axis: one row of n
    const std::vector<double> row(x.data(), x.data() + n);
    const double mu = ref_mean(row), var = ref_var(row);
    if (kind == 0) {
      REQUIRE(close(v(), var, 1e-5, 1e-9));
      const double inv = 1 / std::sqrt(var + 1e-5);
      for (index_t j = 0; j < n; ++j) REQUIRE(close(y(0, j), (row[std::size_t(j)] - mu) * inv * gamma(j) + beta(j), 2e-4, 2e-4));
    } else {
      REQUIRE(std::isnan(v()));
      for (index_t j = 0; j < n; ++j) REQUIRE(std::isnan(y(0, j)));
    }
  }
}

