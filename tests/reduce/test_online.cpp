// Online pairs (cpu/row_online.hpp): rows longer than 16 KiB take softmax's max and
// sum(exp(x - max)), or layer norm's mean and variance, in one pass, block by block. Here: strided
// and misaligned operands, which pair a kernel finds, rows of several axes, column pairs. The long
// rows' values (a running max that rises in every block, blocks of -inf, NaN and +inf late, data
// of mean 1e3 and 1e4, rows split across threads) are tested in test_row_vectorised.cpp, built
// optimised so that they run the vector code. All against double references.
#include "reduce_support.hpp"

using namespace rt;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("online softmax through strided and misaligned views and a misaligned destination") {
  const index_t m = 5, n = 9000;
  auto base = random<float, 2>({m, 2 * n + 1}, 12, -6, 6);
  for (index_t r = 0; r < m; ++r)
    for (index_t i = 0; i < 2 * n + 1; ++i) base(r, i) += 0.001f * float(i);  // the max rises along the row
  // Every other element (strided: the three-pass kernel) and a window starting one float in.
  auto strided = fuse::slice<1>(base, 0, 2 * n, 2);
  auto window = fuse::slice<1>(base, 1, n + 1);
  std::vector<float> storage(std::size_t(m * n) + 1, -1.f);
  auto y = fuse::view(storage.data() + 1, m, n);
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    if (which == 0) fuse::assign(y, fuse::softmax(strided, fuse::axis<-1>));
    else fuse::assign(y, fuse::softmax(window, fuse::axis<-1>));
    CHECK(storage[0] == -1.f);
    for (index_t r = 0; r < m; ++r) {
      std::vector<double> row(static_cast<std::size_t>(n));
      for (index_t j = 0; j < n; ++j) row[std::size_t(j)] = which == 0 ? base(r, 2 * j) : base(r, j + 1);
      const double mx = ref_max(row);
      double s = 0;
      for (double v : row) s += std::exp(v - mx);
      for (index_t j = 0; j < n; ++j) REQUIRE(close(y(r, j), std::exp(row[std::size_t(j)] - mx) / s, 2e-5, 1e-30));
    }
  }
}

namespace {
template <class E>
fuse::detail::online_pair_t pair_of(const E& e) {
  const fuse::shape_t<2> shape{4, 8000};
  using Phases = decltype(fuse::detail::collect_phases<2, 0>(e, shape));
  return fuse::detail::online_pair<Phases>();
}
}  // namespace

// The pair search once used nested generic lambdas, and g++ 12 then found no pair in the second
// and later kernels with the same number of phases in one translation unit.
TEST_CASE("every kernel of one translation unit finds its online pair") {
  fuse::tensor<float, 2> x(4, 8000);
  fuse::tensor<float, 1> g(8000), b(8000);
  using fuse::detail::online_kind;
  const auto ln = pair_of(fuse::layer_norm(x, g, b));
  const auto var = pair_of(fuse::var(x, fuse::axis<-1>));
  const auto sm = pair_of(fuse::softmax(x, fuse::axis<-1>));
  const auto lsm = pair_of(fuse::log_softmax(x, fuse::axis<-1>));
  CHECK((ln.kind == online_kind::variance && ln.max_phase == 0 && ln.read_phase == 1 && ln.sum_phase == 2));
  CHECK((var.kind == online_kind::variance && var.max_phase == 0 && var.read_phase == 0 && var.sum_phase == 1));
  CHECK((sm.kind == online_kind::softmax && sm.max_phase == 0 && sm.read_phase == 1 && sm.sum_phase == 2));
  CHECK((lsm.kind == online_kind::softmax && lsm.max_phase == 0 && lsm.read_phase == 1 && lsm.sum_phase == 2));
  CHECK(!pair_of(fuse::rms_norm(x, g)).found());
  const auto lse = pair_of(fuse::logsumexp(x, fuse::axis<-1>));
  CHECK((lse.kind == online_kind::softmax && lse.max_phase == 0 && lse.read_phase == 1 && lse.sum_phase == 2));
}

TEST_CASE("online pairs whose operand reads another phase, and a row buffer that is not the pair's") {
  // softmax(x * mean(y)): the sum's operand reads a repeat of mean(y) numbered after the max, so
  // the repeat must be copied before the pair runs (the split path ran the pair before any phase).
  // gelu(x) * sum(gelu(x)) + log_softmax(x): the row buffer holds gelu(x), which the pair's pass
  // must not overwrite with its exponentials. Fused against eager (one kernel per node).
  auto check = [](const auto& exec, index_t m, index_t n, unsigned seed) {
    auto x = random<float, 2>({m, n}, seed, -3, 3);
    auto y = random<float, 2>({m, n}, seed + 1, 0.5, 1.5);
    auto g = random<float, 1>({n}, seed + 2, 0.5, 1.5);
    auto z = x * fuse::mean(y, fuse::axis<-1>);
    auto compare = [&](const auto& e) {
      fuse::tensor<float, 2> fused(e.shape()), eager(e.shape());
      fuse::assign(exec, fused, e);
      fuse::assign(fuse::eager(exec), eager, e);
      // Relative, and absolute at 1e-6 of the largest value (layer norm's (x - mean) cancels).
      double scale = 0;
      for (index_t i = 0; i < eager.size(); ++i) scale = std::max(scale, double(std::abs(eager.data()[i])));
      for (index_t i = 0; i < fused.size(); ++i)
        REQUIRE(close(fused.data()[i], eager.data()[i], 1e-4, 1e-6 * scale));
    };
    compare(fuse::softmax(z, fuse::axis<-1>));
    compare(fuse::layer_norm(z, g, 0.25f));
    compare(fuse::logsumexp(z, fuse::axis<-1>));
    compare(fuse::gelu(x) * fuse::sum(fuse::gelu(x), fuse::axis<-1>) + fuse::log_softmax(x, fuse::axis<-1>));
  };
  check(fuse::cpu{.threads = 1}, 3, 5000, 71);   // online rows
  check(fuse::cpu{.threads = 2}, 4, 5000, 72);   // online rows, two threads
  check(fuse::cpu{.threads = 2}, 1, 70001, 73);  // one row split across two threads
}

// Rows of several axes longer than 16 KiB: batch-norm statistics over N, H and W of NCHW data are
// rows of N sub-rows of H * W. The pair does not run online there (two passes per row measured
// faster, docs/design.md §4); these rows check the two-pass path at the sizes where it would, and
// the same tests held with a sub-row-by-sub-row online pair. Channels with mean 1e3, with a trend
// across N (the sub-rows' means differ), with a NaN or an inf in the last sub-row; a softmax over
// axes 0 and 2 with a sub-row of -inf and a row of -inf (NaN, as NumPy). 1, 2 and 3 threads; one
// channel on two threads (fewer rows than threads: split rows).
TEST_CASE("rows of several axes over 16 KiB: batch-norm statistics and a softmax over two axes") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const fuse::shape_t<4> shapes[] = {{3, 5, 37, 41}, {2, 4, 70, 70}, {5, 1, 60, 61}, {2, 5, 5, 7}};
  for (const auto& s : shapes) {
    const index_t n = s[0], c = s[1], hw = s[2] * s[3];
    CAPTURE(n, c, hw);
    auto x = random<float, 4>(s, 31, -2, 2);
    for (index_t b = 0; b < n; ++b)
      for (index_t i = 0; i < hw; ++i) {
        float* at = x.data() + (b * c) * hw + i;  // channel 0
        at[0] += 1000.f;
        if (c > 1) at[hw] += 3.f * float(b);  // channel 1: a trend across N
      }
    if (c > 2) x.data()[((n - 1) * c + 2) * hw + hw - 3] = nan;  // channel 2: NaN in the last sub-row
    if (c > 3) x.data()[((n - 1) * c + 3) * hw + 5] = inf;       // channel 3: inf
    std::vector<double> mu(static_cast<std::size_t>(c)), var(static_cast<std::size_t>(c));
    for (index_t ch = 0; ch < c; ++ch) {
      std::vector<double> row;
      for (index_t b = 0; b < n; ++b) row.insert(row.end(), x.data() + (b * c + ch) * hw, x.data() + (b * c + ch + 1) * hw);
      mu[std::size_t(ch)] = ref_mean(row);
      var[std::size_t(ch)] = ref_var(row);
    }
    for (int threads : {1, 2, 3}) {
      CAPTURE(threads);
      const fuse::cpu exec{threads};
      fuse::tensor<float, 4> v(1, c, 1, 1), y(s);
      fuse::assign(exec, v, fuse::var(x, fuse::axes<0, 2, 3>));
      fuse::assign(exec, y, (x - fuse::mean(x, fuse::axes<0, 2, 3>)) * fuse::rsqrt(fuse::var(x, fuse::axes<0, 2, 3>) + 1e-5f));
      for (index_t ch = 0; ch < c; ++ch) {
        CAPTURE(ch);
        REQUIRE(close(v.data()[ch], var[std::size_t(ch)], 1e-5, 1e-9));
        const double inv = 1 / std::sqrt(var[std::size_t(ch)] + 1e-5);
        for (index_t b = 0; b < n; ++b)
          for (index_t i = 0; i < hw; i += 7) {
            const index_t at = (b * c + ch) * hw + i;
            REQUIRE(close(y.data()[at], (x.data()[at] - mu[std::size_t(ch)]) * inv, 2e-4, 2e-4));
          }
      }
    }
  }
  // softmax over axes 0 and 2 of [a, m, k], written out: rows of a sub-rows of k.
  const index_t a = 3, m = 4, k = 2000;
  auto x = random<float, 3>({a, m, k}, 32, -4, 4);
  for (index_t j = 0; j < k; ++j) {
    x(0, 1, j) = -inf;                                 // row 1: a first sub-row of -inf
    for (index_t i = 0; i < a; ++i) x(i, 2, j) = -inf;  // row 2: all -inf, NaN
    x(2, 3, j) += 0.01f * float(j);                     // row 3: the largest values in the last sub-row
  }
  auto shifted = x - fuse::max(x, fuse::axes<0, 2>);
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    fuse::tensor<float, 3> y(a, m, k);
    fuse::assign(fuse::cpu{threads}, y, fuse::exp(shifted) / fuse::sum(fuse::exp(shifted), fuse::axes<0, 2>));
    for (index_t r = 0; r < m; ++r) {
      CAPTURE(r);
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (index_t i = 0; i < a; ++i)
        for (index_t j = 0; j < k; ++j) mx = std::max(mx, double(x(i, r, j)));
      for (index_t i = 0; i < a; ++i)
        for (index_t j = 0; j < k; ++j) sum += std::exp(double(x(i, r, j)) - mx);
      for (index_t i = 0; i < a; ++i)
        for (index_t j = 0; j < k; ++j) {
          const double ref = std::isinf(mx) ? std::numeric_limits<double>::quiet_NaN() : std::exp(double(x(i, r, j)) - mx) / sum;
          REQUIRE(close(y(i, r, j), ref, 2e-5, 1e-30));
        }
    }
  }
}

// Column pairs (core/column_pair.hpp, cpu/column_moments.hpp): a variance over leading axes and
// its mean in one pass, blocks of 16 rows read four at a time, the blocks joined in double.
// Reduced extents around 4 and 16 (the passes' and blocks' ends), columns around the 16-column
// minimum and the 1024-column tile, data of mean 1e3 and spread 1 (a one-pass sum of squares
// would cancel), NaN in a block's first row (its shift) and inf later, an empty reduced extent,
// kept axes before and between, a row of copies, a misaligned and a transposed (strided) operand.
namespace {

// Column j of x (any rank-2 layout) in double.
template <class X>
std::vector<double> column_of(const X& x, index_t j) {
  std::vector<double> col;
  for (index_t i = 0; i < x.extent(0); ++i) col.push_back(double(x(i, j)));
  return col;
}

// mean(x, axis<0>) + (var(x, axis<0>) > -1 ? 0 : 1): the pair's mean, and whether its variance is
// NaN, in one result (the pair runs first, the mean is read back from it).
template <class X>
auto mean_and_nan_flag(const X& x) {
  return fuse::mean(x, fuse::axis<0>) + fuse::where(fuse::var(x, fuse::axis<0>) > -1.f, 0.f, 1.f);
}

// [3, 2, 1001, 20], to be reduced over axes 0 and 2: on 3 threads its 3003 rows split in two
// uneven parts, 1501 and 1502 (on 2, each thread takes one kept combination whole); NaN, +inf and
// -inf in later parts.
fuse::tensor<float, 4> split_parts_operand(unsigned seed, double lo, double hi) {
  auto x4 = random<float, 4>({3, 2, 1001, 20}, seed, lo, hi);
  x4(2, 1, 900, 4) = NAN;
  x4(0, 0, 1000, 6) = inf;
  x4(2, 1, 1000, 8) = inf;
  x4(1, 1, 5, 8) = -inf;
  return x4;
}
// The values that split_parts_operand reduces for its kept indices (k, c).
std::vector<double> split_parts_values(const fuse::tensor<float, 4>& x4, index_t k, index_t c) {
  std::vector<double> vals;
  for (index_t a = 0; a < 3; ++a)
    for (index_t i = 0; i < 1001; ++i) vals.push_back(x4(a, k, i, c));
  return vals;
}

}  // namespace

TEST_CASE("column pairs: var over leading axes and its mean in one pass") {
  using x2 = fuse::tensor<float, 2>&;
  static_assert(fuse::kernels_v<decltype(fuse::var(std::declval<x2>(), fuse::axis<0>))> == 1);
  static_assert(fuse::kernels_v<decltype(fuse::mean(fuse::square(std::declval<x2>() - fuse::mean(std::declval<x2>(), fuse::axis<0>)),
                                                    fuse::axis<0>))> == 1);
  static_assert(fuse::kernels_v<decltype(mean_and_nan_flag(std::declval<x2>()))> == 2);
  std::atomic<long> calls{0};
  const auto counted = counting_identity(calls);
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    for (auto [m, n] : {std::pair<index_t, index_t>{1, 16}, {3, 17}, {4, 31}, {5, 40}, {15, 100}, {16, 33}, {17, 1025}, {33, 2100}, {300, 19}, {0, 20}}) {
      CAPTURE(m, n);
      auto x = random<float, 2>({m, n}, unsigned(7 * m + n), 999.0, 1001.0);
      if (m >= 2) {
        x(0, 5) = NAN;      // the first block's shift
        x(m - 1, 7) = inf;  // mean inf, variance NaN
      }
      if (m > 16) x(16, 9) = NAN;  // the second block's shift
      fuse::tensor<float, 2> v(1, n), h(1, n), f(1, n);
      calls = 0;
      fuse::assign(exec, v, fuse::var(fuse::map(counted, x), fuse::axis<0>));
      CHECK(calls == x.size());  // one pass
      CHECK(fuse::plan(exec, fuse::var(x, fuse::axis<0>)).kernels == 1);
      fuse::assign(exec, h, fuse::mean(fuse::square(x - fuse::mean(x, fuse::axis<0>)), fuse::axis<0>));
      calls = 0;
      fuse::assign(exec, f, mean_and_nan_flag(fuse::map(counted, x)));
      CHECK(calls == x.size());  // the mean is the pair's
      const auto p = fuse::plan(exec, mean_and_nan_flag(x));
      CHECK(p.kernels == 2);
      CHECK(p.lines[0].what.find("column kernel, 2 phases [mean, var]") != std::string::npos);
      for (index_t j = 0; j < n; ++j) {
        CAPTURE(j);
        const auto col = column_of(x, j);
        const double rv = ref_var(col), rm = ref_mean(col);
        CHECK(close(v(0, j), rv, 1e-5, 1e-6));
        CHECK(close(h(0, j), rv, 1e-5, 1e-6));
        CHECK(close(f(0, j), rm + (std::isnan(rv) ? 1 : 0), 1e-6));
      }
    }
    // Kept axes before and between: [3, 1900, 20] over axis 1, and over axes 0 and 1 (5700 rows,
    // enough elements for 3 threads: split across threads, each part's results joined after).
    auto x3 = random<float, 3>({3, 1900, 20}, 77, 95.0, 107.0);
    fuse::tensor<float, 3> v1(3, 1, 20), v01(1, 1, 20);
    CHECK(fuse::plan(exec, fuse::var(x3, fuse::axes<0, 1>)).kernels == 1);
    fuse::assign(exec, v1, fuse::var(x3, fuse::axis<1>));
    fuse::assign(exec, v01, fuse::var(x3, fuse::axes<0, 1>));
    for (index_t c = 0; c < 20; ++c) {
      std::vector<double> all;
      for (index_t a = 0; a < 3; ++a) {
        std::vector<double> col;
        for (index_t i = 0; i < 1900; ++i) col.push_back(x3(a, i, c)), all.push_back(x3(a, i, c));
        CHECK(close(v1(a, 0, c), ref_var(col), 1e-5, 1e-6));
      }
      CHECK(close(v01(0, 0, c), ref_var(all), 1e-5, 1e-6));
    }
    // A kept axis between reduced ones, split parts with NaN, inf and -inf.
    const auto x4 = split_parts_operand(82, 95.0, 107.0);
    fuse::tensor<float, 4> v4(1, 2, 1, 20);
    fuse::assign(exec, v4, fuse::var(x4, fuse::axes<0, 2>));
    CHECK(fuse::plan(exec, fuse::var(x4, fuse::axes<0, 2>)).kernels == 1);
    for (index_t k = 0; k < 2; ++k)
      for (index_t c = 0; c < 20; ++c) {
        CAPTURE(k, c);
        CHECK(close(v4(0, k, 0, c), ref_var(split_parts_values(x4, k, c)), 1e-5, 1e-6));
      }
    // A row of copies (s [m, 1], stride 0 along the row), a misaligned view (from column 1), and a
    // double operand: one kernel each.
    auto x = random<float, 2>({45, 70}, 78, -2.0, 2.0);
    auto s = random<float, 2>({45, 1}, 79, 0.5, 2.0);
    auto xd = random<double, 2>({21, 18}, 80, 1e6, 1e6 + 1);
    const auto shifted = fuse::slice<1>(x, 1, 70);
    fuse::tensor<float, 2> vs(1, 70), vm(1, 69);
    fuse::tensor<double, 2> vd(1, 18);
    fuse::assign(exec, vs, fuse::var(x * s, fuse::axis<0>));
    fuse::assign(exec, vm, fuse::var(shifted, fuse::axis<0>));
    fuse::assign(exec, vd, fuse::var(xd, fuse::axis<0>));
    CHECK(fuse::plan(exec, fuse::var(x * s, fuse::axis<0>)).kernels == 1);
    CHECK(fuse::plan(exec, fuse::var(shifted, fuse::axis<0>)).kernels == 1);
    for (index_t j = 0; j < 70; ++j) {
      std::vector<double> col, scaled;
      for (index_t i = 0; i < 45; ++i) col.push_back(x(i, j)), scaled.push_back(double(x(i, j)) * double(s(i, 0)));
      CHECK(close(vs(0, j), ref_var(scaled), 1e-5, 1e-7));
      if (j > 0) CHECK(close(vm(0, j - 1), ref_var(col), 1e-5, 1e-7));
    }
    for (index_t j = 0; j < 18; ++j) CHECK(close(vd(0, j), ref_var(column_of(xd, j)), 1e-9));
    // Doubles near the top of their range: the first block joins nothing (no 0 * inf = NaN).
    fuse::tensor<double, 2> big(40, 16), vb(1, 16);
    for (index_t i = 0; i < big.size(); ++i) big.data()[i] = 1e160;
    fuse::assign(exec, vb, fuse::var(big, fuse::axis<0>));
    for (index_t j = 0; j < 16; ++j) CHECK(vb(0, j) == 0.0);
    // Columns read with a stride (a transposed operand) or too few of them: the two kernels of
    // before, and the plan says why.
    auto xt = random<float, 2>({40, 45}, 81, -2.0, 2.0);
    fuse::tensor<float, 2> vt(1, 40), vn(1, 9);
    fuse::assign(exec, vt, fuse::var(fuse::transpose(xt), fuse::axis<0>));
    const auto narrow = fuse::slice<1>(x, 0, 9);
    fuse::assign(exec, vn, fuse::var(narrow, fuse::axis<0>));
    const auto pt = fuse::plan(exec, fuse::var(fuse::transpose(xt), fuse::axis<0>));
    CHECK(pt.kernels == 2);
    CHECK(pt.lines[1].what.find("its mean a kernel of its own") != std::string::npos);
    CHECK(fuse::plan(exec, fuse::var(narrow, fuse::axis<0>)).kernels == 2);
    for (index_t j = 0; j < 40; ++j) {
      std::vector<double> col;
      for (index_t i = 0; i < 45; ++i) col.push_back(xt(j, i));
      CHECK(close(vt(0, j), ref_var(col), 1e-5, 1e-7));
    }
    for (index_t j = 0; j < 9; ++j) CHECK(close(vn(0, j), ref_var(column_of(x, j)), 1e-5, 1e-7));
  }
  // A pair below another group's reduction: it runs first, and the mean(x) at the top reads its
  // mean (x read twice: the pair, then the top's own reading of nothing but small results).
  auto x = random<float, 2>({60, 24}, 83, -2.0, 2.0);
  const auto nested = fuse::mean(fuse::map(counted, x), fuse::axis<0>) + fuse::sum(fuse::var(fuse::map(counted, x), fuse::axis<0>), fuse::axis<0>);
  static_assert(fuse::kernels_v<decltype(nested)> == 3);  // the pair, the sum, the root
  CHECK(fuse::plan(nested).kernels == 3);
  calls = 0;
  const auto got = fuse::eval(nested);
  CHECK(calls == x.size());
  for (index_t j = 0; j < 24; ++j) {
    const auto col = column_of(x, j);
    CHECK(close(got(0, j), ref_mean(col) + ref_var(col), 1e-5, 1e-6));
  }
  // Pairs of one form over other data: kernels_v takes them for one, the plan lists both and says
  // why; a pair whose two means are of different data is two kernels, and the plan says why.
  auto y = random<float, 2>({60, 24}, 84, -2.0, 2.0);
  const auto two = fuse::var(x, fuse::axis<0>) + fuse::var(y, fuse::axis<0>);
  static_assert(fuse::kernels_v<decltype(two)> == 2);
  const auto pt = fuse::plan(two);
  CHECK(pt.kernels == 3);
  CHECK(pt.lines[1].what.find("over other data") != std::string::npos);
  const auto mixed = fuse::mean(fuse::square(x - fuse::mean(y, fuse::axis<0>)), fuse::axis<0>);
  static_assert(fuse::kernels_v<decltype(mixed)> == 1);
  const auto pm = fuse::plan(mixed);
  CHECK(pm.kernels == 2);
  CHECK(pm.lines[1].what.find("different data") != std::string::npos);
  const auto two_got = fuse::eval(two), mixed_got = fuse::eval(mixed);
  for (index_t j = 0; j < 24; ++j) {
    const auto cx = column_of(x, j), cy = column_of(y, j);
    double m = 0;
    for (double v : cx) m += (v - ref_mean(cy)) * (v - ref_mean(cy)) / 60;
    CHECK(close(two_got(0, j), ref_var(cx) + ref_var(cy), 1e-5, 1e-6));
    CHECK(close(mixed_got(0, j), m, 1e-5, 1e-6));
  }
}

// Column pairs of the softmax kind (cpu/column_softmax.hpp): each column's max and its sum of
// exp(x - max) in one pass, the running sum rescaled when the max rises. softmax and log_softmax
// over a leading axis are then two kernels (the pair, the normalisation), logsumexp two (the pair,
// its one value per column), the sum of exponentials alone one. Reduced extents around 4 and 16,
// logits of +-1e4, NaN, +inf, -inf among finite values, a column of -inf (the running max -inf
// for a while: its sum must stay 0, not NaN), uneven parts of rows split across threads, the
// max the pair leaves in the table read beside it (NaN kept), an empty reduced extent, a row of
// copies, different data, a double destination (the sum rounded to float first), fallbacks
// (strided, narrow) with their plan notes.
namespace {

// sum(exp(col - shift)) with logsumexp's shift (the max, or 0 where it is infinite) or softmax's.
double ref_exp_sum(const std::vector<double>& col, bool finite_shift) {
  const double m = ref_max(col);
  const double shift = finite_shift && std::isinf(m) ? 0.0 : m;
  double s = 0;
  for (double v : col) s += std::exp(v - shift);
  return s;
}
// max(x, axis<0>) beside the pair: read from the table the pair leaves (the sum only decides
// nothing: where(s > -1, 0, 0) is 0 whatever s is).
template <class X>
auto max_beside_pair(const X& x) {
  return fuse::max(x, fuse::axis<0>) + fuse::where(fuse::sum(fuse::exp(x - fuse::max(x, fuse::axis<0>)), fuse::axis<0>) > -1.f, 0.f, 0.f);
}
double ref_logsumexp(const std::vector<double>& col) {
  const double m = ref_max(col);
  const double shift = std::isinf(m) ? 0.0 : m;
  return shift + std::log(ref_exp_sum(col, true));
}

}  // namespace

TEST_CASE("column pairs: softmax and logsumexp over leading axes, max and sum in one pass") {
  using x2 = fuse::tensor<float, 2>&;
  static_assert(fuse::kernels_v<decltype(fuse::sum(fuse::exp(std::declval<x2>() - fuse::max(std::declval<x2>(), fuse::axis<0>)), fuse::axis<0>))> == 1);
  static_assert(fuse::kernels_v<decltype(fuse::softmax(std::declval<x2>(), fuse::axis<0>))> == 2);
  static_assert(fuse::kernels_v<decltype(fuse::log_softmax(std::declval<x2>(), fuse::axis<0>))> == 2);
  static_assert(fuse::kernels_v<decltype(fuse::logsumexp(std::declval<x2>(), fuse::axis<0>))> == 2);
  std::atomic<long> calls{0};
  const auto counted = counting_identity(calls);
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    for (auto [m, n] : {std::pair<index_t, index_t>{1, 16}, {3, 17}, {4, 31}, {5, 40}, {15, 100}, {16, 33}, {17, 1025}, {33, 2100}, {300, 19}}) {
      CAPTURE(m, n);
      const double spread = n == 33 ? 1e4 : 30;  // logits of +-1e4 once
      auto x = random<float, 2>({m, n}, unsigned(11 * m + n), -spread, spread);
      if (m >= 2) {
        x(m - 1, 5) = NAN;   // a NaN max
        x(0, 7) = inf;       // softmax NaN, logsumexp inf
        x(m / 2, 8) = -inf;  // exp 0 among finite values
        for (index_t i = 0; i < m; ++i) x(i, 9) = -inf;
        for (index_t i = 0; i + 1 < m; ++i) x(i, 10) = -inf;  // -inf until the last row
        x(0, 11) = NAN;  // first of a four-row pass (a max keeping only a second NaN would drop it)
      }
      fuse::tensor<float, 2> s(1, n), l(1, n), y(m, n), ly(m, n);
      calls = 0;
      // One kernel reads each block of rows twice (its max, then its exponentials, from cache):
      // the operand is evaluated twice, as by two kernels.
      fuse::assign(exec, s, fuse::sum(fuse::exp(fuse::map(counted, x) - fuse::max(fuse::map(counted, x), fuse::axis<0>)), fuse::axis<0>));
      CHECK(calls == 2 * x.size());
      calls = 0;
      fuse::assign(exec, l, fuse::logsumexp(fuse::map(counted, x), fuse::axis<0>));
      CHECK(calls == 2 * x.size());
      calls = 0;
      fuse::assign(exec, y, fuse::softmax(fuse::map(counted, x), fuse::axis<0>));
      CHECK(calls == 3 * x.size());  // the pair, the normalisation
      fuse::assign(exec, ly, fuse::log_softmax(x, fuse::axis<0>));
      fuse::tensor<float, 2> mb(1, n);
      fuse::tensor<double, 2> sd(1, n);
      calls = 0;
      fuse::assign(exec, mb, max_beside_pair(fuse::map(counted, x)));
      CHECK(calls == 2 * x.size());  // the pair alone reads x
      CHECK(fuse::plan(exec, max_beside_pair(x)).kernels == 2);
      fuse::assign(exec, sd, fuse::sum(fuse::exp(x - fuse::max(x, fuse::axis<0>)), fuse::axis<0>));
      const auto p = fuse::plan(exec, fuse::softmax(x, fuse::axis<0>));
      CHECK(p.kernels == 2);
      CHECK(p.lines[0].what.find("column kernel, 2 phases [max, sum]") != std::string::npos);
      CHECK(fuse::plan(exec, fuse::logsumexp(x, fuse::axis<0>)).kernels == 2);
      // The shift as each runs it: softmax's max, logsumexp's finite_or_zero(max) (0 for a column
      // of -inf).
      CHECK(p.lines[0].what.find("exp(sub(x0, max(x0)))") != std::string::npos);
      CHECK(fuse::plan(exec, fuse::logsumexp(x, fuse::axis<0>)).lines[0].what.find("exp(sub(x0, finite_or_zero(max(x0))))") != std::string::npos);
      for (index_t j = 0; j < n; ++j) {
        CAPTURE(j);
        const auto col = column_of(x, j);
        const double rs = ref_exp_sum(col, false);
        CHECK(close(s(0, j), rs, 1e-5));
        CHECK(close(l(0, j), ref_logsumexp(col), 1e-6, 1e-5));
        CHECK(close(mb(0, j), ref_max(col), 0));
        CHECK(close(sd(0, j), rs, 1e-5));
        if (!std::isnan(sd(0, j))) CHECK(sd(0, j) == double(float(sd(0, j))));  // a float sum
        const auto sm = softmax_ref(col);
        const double mx = ref_max(col);
        for (index_t i = 0; i < m; ++i) {
          CAPTURE(i);
          CHECK(close(y(i, j), sm[std::size_t(i)], 1e-5, 1e-7));
          CHECK(close(ly(i, j), (col[std::size_t(i)] - mx) - std::log(rs), 1e-5, 1e-5));
        }
      }
    }
    // A kept axis between reduced ones, split parts with NaN, +inf and -inf, and a column of -inf
    // but for the last part.
    auto x4 = split_parts_operand(85, -20.0, 20.0);
    for (index_t a = 0; a < 3; ++a)
      for (index_t i = 0; i < 1001; ++i)
        if (a < 2 || i < 990) x4(a, 0, i, 11) = -inf;
    fuse::tensor<float, 4> l4(1, 2, 1, 20);
    fuse::assign(exec, l4, fuse::logsumexp(x4, fuse::axes<0, 2>));
    CHECK(fuse::plan(exec, fuse::logsumexp(x4, fuse::axes<0, 2>)).kernels == 2);
    for (index_t k = 0; k < 2; ++k)
      for (index_t c = 0; c < 20; ++c) {
        CAPTURE(k, c);
        CHECK(close(l4(0, k, 0, c), ref_logsumexp(split_parts_values(x4, k, c)), 1e-6, 1e-5));
      }
    // A softmax written by hand over the same split parts, a column of -inf in kept combination 1
    // (NaN there).
    for (index_t a = 0; a < 3; ++a)
      for (index_t i = 0; i < 1001; ++i) x4(a, 1, i, 12) = -inf;
    fuse::tensor<float, 4> y4(3, 2, 1001, 20);
    constexpr auto both = fuse::axes<0, 2>;
    fuse::assign(exec, y4, fuse::exp(x4 - fuse::max(x4, both)) / fuse::sum(fuse::exp(x4 - fuse::max(x4, both)), both));
    for (index_t k = 0; k < 2; ++k)
      for (index_t c = 0; c < 20; ++c) {
        const auto ref = softmax_ref(split_parts_values(x4, k, c));
        bool ok = true;
        for (index_t a = 0; a < 3; ++a)
          for (index_t i = 0; i < 1001; ++i) ok = ok && close(y4(a, k, i, c), ref[std::size_t(a * 1001 + i)], 1e-5, 1e-8);
        CAPTURE(k, c);
        CHECK(ok);
      }
    // A misaligned view and a double operand: the pair; a transposed (strided) operand or too few
    // columns: three kernels as before, and the plan says why.
    auto x = random<float, 2>({45, 70}, 86, -5.0, 5.0);
    auto xdbl = random<double, 2>({21, 18}, 87, -50.0, 50.0);
    const auto shifted = fuse::slice<1>(x, 1, 70);
    const auto narrow = fuse::slice<1>(x, 0, 9);
    auto xt = random<float, 2>({40, 45}, 88, -5.0, 5.0);
    fuse::tensor<float, 2> lm(1, 69), ln(1, 9), lt(1, 40);
    fuse::tensor<double, 2> ld(1, 18);
    fuse::assign(exec, lm, fuse::logsumexp(shifted, fuse::axis<0>));
    fuse::assign(exec, ln, fuse::logsumexp(narrow, fuse::axis<0>));
    fuse::assign(exec, lt, fuse::logsumexp(fuse::transpose(xt), fuse::axis<0>));
    fuse::assign(exec, ld, fuse::logsumexp(xdbl, fuse::axis<0>));
    CHECK(fuse::plan(exec, fuse::logsumexp(shifted, fuse::axis<0>)).kernels == 2);
    CHECK(fuse::plan(exec, fuse::logsumexp(narrow, fuse::axis<0>)).kernels == 3);
    const auto pt = fuse::plan(exec, fuse::logsumexp(fuse::transpose(xt), fuse::axis<0>));
    CHECK(pt.kernels == 3);
    CHECK(pt.lines[1].what.find("its max a kernel of its own") != std::string::npos);
    for (index_t j = 0; j < 70; ++j) {
      if (j > 0) CHECK(close(lm(0, j - 1), ref_logsumexp(column_of(x, j)), 1e-6, 1e-6));
      if (j < 9) CHECK(close(ln(0, j), ref_logsumexp(column_of(x, j)), 1e-6, 1e-6));
    }
    for (index_t j = 0; j < 40; ++j) {
      std::vector<double> col;
      for (index_t i = 0; i < 45; ++i) col.push_back(xt(j, i));
      CHECK(close(lt(0, j), ref_logsumexp(col), 1e-6, 1e-6));
    }
    for (index_t j = 0; j < 18; ++j) CHECK(close(ld(0, j), ref_logsumexp(column_of(xdbl, j)), 1e-12, 1e-12));
    // An empty reduced extent: logsumexp of nothing is -inf. A row of copies (x * s, s [m, 1]):
    // the pair, its rows of copies filled again as each block is read twice.
    fuse::tensor<float, 2> empty(0, 20), le(1, 20), ls(1, 70);
    fuse::assign(exec, le, fuse::logsumexp(empty, fuse::axis<0>));
    for (index_t j = 0; j < 20; ++j) CHECK(le(0, j) == -inf);
    auto sc = random<float, 2>({45, 1}, 89, 0.5, 2.0);
    fuse::assign(exec, ls, fuse::logsumexp(x * sc, fuse::axis<0>));
    CHECK(fuse::plan(exec, fuse::logsumexp(x * sc, fuse::axis<0>)).kernels == 2);
    for (index_t j = 0; j < 70; ++j) {
      std::vector<double> col;
      for (index_t i = 0; i < 45; ++i) col.push_back(double(x(i, j)) * double(sc(i, 0)));
      CHECK(close(ls(0, j), ref_logsumexp(col), 1e-6, 1e-6));
    }
  }
  // The max of other data: two kernels, and the plan says why.
  auto x = random<float, 2>({60, 24}, 90, -3.0, 3.0), y = random<float, 2>({60, 24}, 91, -3.0, 3.0);
  const auto mixed = fuse::sum(fuse::exp(x - fuse::max(y, fuse::axis<0>)), fuse::axis<0>);
  static_assert(fuse::kernels_v<decltype(mixed)> == 1);
  const auto pm = fuse::plan(mixed);
  CHECK(pm.kernels == 2);
  CHECK(pm.lines[1].what.find("its max a kernel of its own: the two reduce different data") != std::string::npos);
  const auto got = fuse::eval(mixed);
  for (index_t j = 0; j < 24; ++j) {
    const double my = ref_max(column_of(y, j));
    double s = 0;
    for (double v : column_of(x, j)) s += std::exp(v - my);
    CHECK(close(got(0, j), s, 1e-5));
  }
}
