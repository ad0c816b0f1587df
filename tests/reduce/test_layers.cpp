// Reduction-broadcast layers: softmax, log_softmax, layer_norm, rms_norm and the same written by
// hand - one kernel each - against double references (their extreme inputs and in-place rows:
// test_row_vectorised.cpp).
#include <limits>
#include <tuple>

#include "reduce_support.hpp"

using namespace rt;

TEST_CASE("softmax and log_softmax match the reference, fused and eager, every row split") {
  for (auto [m, n] : {std::pair<index_t, index_t>{1, 1}, {5, 3}, {257, 33}, {16, 4099}, {1, 70001}, {3, 40000}}) {
    auto x = random<float, 2>({m, n}, unsigned(m + n), -5, 5);
    auto y = fuse::eval(fuse::softmax(x, fuse::axis<-1>));
    auto ly = fuse::eval(fuse::log_softmax(x, fuse::axis<-1>));
    auto ye = fuse::eval(fuse::eager(fuse::cpu{}), fuse::softmax(x, fuse::axis<-1>));
    for (index_t r = 0; r < m; ++r) {
      auto ref = softmax_ref(std::vector<double>(x.data() + r * n, x.data() + (r + 1) * n));
      for (index_t j = 0; j < n; ++j) {
        REQUIRE(close(y(r, j), ref[j], 2e-5, 1e-12));
        REQUIRE(close(ly(r, j), std::log(ref[j]), 2e-5, 2e-5));
        REQUIRE(close(ye(r, j), ref[j], 2e-5, 1e-12));
      }
    }
  }
}

// A causal mask from iota: the query index iota<0> has stride 0 along the row and reads no
// memory, so the row kernel keeps its contiguous variant (affine_eval). Rows short (batches),
// medium (the exp kept in a row buffer) and over 16 KiB (max and sum in one pass), 1-3 threads,
// with an offset (the first row fully masked but its first element), against double loops; and
// iota<0> as a value in the epilogue and in elementwise kernels.
TEST_CASE("causal-masked softmax and iota of another axis in row and elementwise kernels") {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    for (auto [m, n] : {std::pair<index_t, index_t>{19, 7}, {9, 300}, {40, 1029}, {3, 5003}}) {
      CAPTURE(m, n);
      auto x = random<float, 2>({m, n}, unsigned(200 + m), -4, 4);
      const std::array<index_t, 2> s{m, n};
      const index_t shift = n - m;  // query i sees keys 0..i + shift
      fuse::tensor<float, 2> p(m, n), q(m, n), z(m, n);
      fuse::assign(exec, p, fuse::softmax(fuse::where(fuse::iota<1>(s) <= fuse::iota<0>(s) + shift, x, ninf), fuse::axis<-1>));
      // The query index as a value: each row scaled by its row number plus one, after the softmax.
      fuse::assign(exec, q, fuse::softmax(x, fuse::axis<-1>) * fuse::cast<float>(fuse::iota<0>(s) + 1));
      fuse::assign(exec, z, x * fuse::cast<float>(fuse::iota<0>(s)) - fuse::cast<float>(fuse::iota<1>(s)));
      for (index_t i = 0; i < m; ++i) {
        const index_t seen = std::min(n, std::max<index_t>(i + shift + 1, 0));
        std::vector<double> row(x.data() + i * n, x.data() + i * n + seen);
        const auto want = seen > 0 ? softmax_ref(row) : std::vector<double>{};
        const auto full = softmax_ref(std::vector<double>(x.data() + i * n, x.data() + (i + 1) * n));
        for (index_t j = 0; j < n; ++j) {
          if (seen == 0) REQUIRE(std::isnan(p(i, j)));
          else REQUIRE(close(p(i, j), j < seen ? want[std::size_t(j)] : 0.0, 2e-5, 1e-12));
          REQUIRE(close(q(i, j), full[std::size_t(j)] * double(i + 1), 2e-5, 1e-12));
          REQUIRE(close(z(i, j), double(x(i, j)) * double(i) - double(j), 1e-6, 1e-4));  // (x i rounds in float)
        }
      }
    }
  }
}

// Leaves that stay put along the rows ([m, 1]: a per-row scale, a padding length, a label) are read
// through rows of copies (backend/cpu/row_copies.hpp), shared by the phases of a row. Rows short
// (batches), medium (row buffer), over 16 KiB (the online pair, with -inf blocks from the mask),
// over splat_max_row and fewer than the threads (split rows: each thread's part); two leaves of
// different sizes in one kernel; a fully masked row (NaN); 1-3 threads; against double loops.
TEST_CASE("row kernels over leaves constant along the row: per-row scale, padding mask, label") {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    for (auto [m, n] : {std::pair<index_t, index_t>{19, 7}, {9, 300}, {40, 1029}, {5, 5003}, {2, 70001}, {1, 2000}}) {
      CAPTURE(m, n);
      auto x = random<float, 2>({m, n}, unsigned(300 + m), -4, 4);
      auto s = random<float, 2>({m, 1}, unsigned(301 + m), 0.25, 2);
      fuse::tensor<std::int32_t, 2> len(m, 1);
      fuse::tensor<std::int64_t, 2> label(m, 1);
      for (index_t i = 0; i < m; ++i) len(i, 0) = std::int32_t(i == 1 ? 0 : (i * 37 + n / 2) % (n + 1)), label(i, 0) = (i * 13 + 5) % n;
      const std::array<index_t, 2> sh{m, n};
      fuse::tensor<float, 2> p(m, n), q(m, n), ln(m, n), ce(m, 1), r(m, 1);
      fuse::assign(exec, p, fuse::softmax(x * s, fuse::axis<-1>));
      fuse::assign(exec, q, fuse::softmax(fuse::where(fuse::iota<1>(sh) < len, x * s, ninf), fuse::axis<-1>));
      fuse::assign(exec, ce, fuse::logsumexp(x * s, fuse::axis<-1>) - fuse::sum(fuse::where(fuse::iota<1>(sh) == label, x * s, 0.f), fuse::axis<-1>));
      fuse::assign(exec, ln, fuse::layer_norm(x * s, 1.f, 0.f) * s + s);
      fuse::assign(exec, r, fuse::sum(x * s, fuse::axis<-1>));
      for (index_t i = 0; i < m; ++i) {
        const double si = s(i, 0);
        std::vector<double> row;
        for (index_t j = 0; j < n; ++j) row.push_back(double(x(i, j)) * si);
        const auto want = softmax_ref(row);
        const index_t seen = len(i, 0);
        const auto masked = seen > 0 ? softmax_ref(std::vector<double>(row.begin(), row.begin() + seen)) : std::vector<double>{};
        const double mean = ref_mean(row), sd = std::sqrt(ref_var(row) + 1e-5);
        const double mx = ref_max(row);
        double se = 0;
        for (double v : row) se += std::exp(v - mx);
        const double lse = mx + std::log(se);
        REQUIRE(close(ce(i, 0), lse - row[std::size_t(label(i, 0))], 1e-5, 1e-5));
        REQUIRE(close(r(i, 0), ref_sum(row), 1e-5, 1e-4));
        for (index_t j = 0; j < n; ++j) {
          REQUIRE(close(p(i, j), want[std::size_t(j)], 2e-5, 1e-12));
          if (seen == 0) REQUIRE(std::isnan(q(i, j)));
          else REQUIRE(close(q(i, j), j < seen ? masked[std::size_t(j)] : 0.0, 2e-5, 1e-12));
          REQUIRE(close(ln(i, j), (row[std::size_t(j)] - mean) / sd * si + si, 1e-4, 1e-5));
        }
      }
    }
  }
}

// Rows of two axes whose sub-rows read different elements of a leaf that stays put along the last
// axis (x[b, h, w] * s[b, h, 1], softmax over h and w), and in place through a column of the
// output itself (x = softmax(x * x[:, 0:1]): the fresh-tensor result).
TEST_CASE("row copies: sub-rows of one row read different elements; in place through a column") {
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    const index_t b = 6, h = 5, w = 37;
    auto x = random<float, 3>({b, h, w}, 41, -3, 3);
    auto s = random<float, 3>({b, h, 1}, 42, 0.5, 1.5);
    auto y = x * s;
    fuse::tensor<float, 3> out(b, h, w);
    fuse::assign(exec, out, fuse::exp(y - fuse::max(y, fuse::axes<1, 2>)) / fuse::sum(fuse::exp(y - fuse::max(y, fuse::axes<1, 2>)), fuse::axes<1, 2>));
    for (index_t i = 0; i < b; ++i) {
      std::vector<double> row;
      for (index_t k = 0; k < h; ++k)
        for (index_t j = 0; j < w; ++j) row.push_back(double(x(i, k, j)) * double(s(i, k, 0)));
      const auto want = softmax_ref(row);
      for (index_t k = 0; k < h; ++k)
        for (index_t j = 0; j < w; ++j) REQUIRE(close(out(i, k, j), want[std::size_t(k * w + j)], 2e-5, 1e-12));
    }
    auto z = random<float, 2>({33, 300}, 43, -2, 2);
    const auto z0 = fuse::eval(z * 1.f);
    fuse::assign(exec, z, fuse::softmax(z * fuse::slice<1>(z, 0, 1), fuse::axis<-1>));
    for (index_t i = 0; i < 33; ++i) {
      std::vector<double> row;
      for (index_t j = 0; j < 300; ++j) row.push_back(double(z0(i, j)) * double(z0(i, 0)));
      const auto want = softmax_ref(row);
      for (index_t j = 0; j < 300; ++j) REQUIRE(close(z(i, j), want[std::size_t(j)], 2e-5, 1e-12));
    }
  }
}

// An embedding lookup under a row kernel (GPT-2's first layer norm over take(table, ids) + pos):
// take's index stays put along a table row and its unit loop reads the row found at seek, so the
// CPU runs such rows contiguous (cpu_reading in row_kernel.hpp). Rows short (batches), medium, long
// (the online pair: a softmax over rows of 5003) and longer than any row of copies (70001: take
// needs none), a transposed table (strided rows that no copy serves: the row kernel declines and
// the run-time fallback computes the group, strided_rows.hpp), 1-3 threads, against double loops.
TEST_CASE("row kernels over an embedding lookup: layer norm and softmax of take(table, ids) + pos") {
  for (int threads : {1, 2, 3}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    for (auto [v, d, n] : {std::tuple<index_t, index_t, index_t>{11, 7, 9}, {50, 300, 13}, {23, 5003, 4}, {5, 70001, 3}}) {
      CAPTURE(v, d, n);
      auto table = random<float, 2>({v, d}, unsigned(500 + d), -2, 2);
      auto pos = random<float, 2>({n, d}, unsigned(501 + d), -1, 1);
      auto gamma = random<float, 1>({d}, unsigned(502 + d), 0.5, 1.5);
      fuse::tensor<std::int64_t, 1> ids(n);
      for (index_t i = 0; i < n; ++i) ids(i) = (i * 7 + 3) % v;
      const auto tt = fuse::eval(fuse::transpose(table) * 1.f);  // [d, v]: rows of the table strided below
      fuse::tensor<float, 2> ln(n, d), sm(n, d), lt(n, d);
      fuse::assign(exec, ln, fuse::layer_norm(fuse::take(table, ids) + pos, gamma, 0.5f));
      fuse::assign(exec, sm, fuse::softmax(fuse::take(table, ids) * 2.f, fuse::axis<-1>));
      fuse::assign(exec, lt, fuse::layer_norm(fuse::take(fuse::transpose(tt), ids) + pos, gamma, 0.5f));
      for (index_t i = 0; i < n; ++i) {
        std::vector<double> row, twice;
        for (index_t j = 0; j < d; ++j) row.push_back(double(table(ids(i), j)) + double(pos(i, j))), twice.push_back(2.0 * table(ids(i), j));
        const double mean = ref_mean(row), sd = std::sqrt(ref_var(row) + 1e-5);
        const auto want = softmax_ref(twice);
        for (index_t j = 0; j < d; ++j) {
          const double l = (row[std::size_t(j)] - mean) / sd * double(gamma(j)) + 0.5;
          REQUIRE(close(ln(i, j), l, 1e-4, 1e-5));
          REQUIRE(close(lt(i, j), l, 1e-4, 1e-5));
          REQUIRE(close(sm(i, j), want[std::size_t(j)], 2e-5, 1e-12));
        }
      }
    }
  }
}

// An output of at least 16 MiB is written with streaming stores (the row kernel's epilogue, as the
// elementwise kernel): into a destination that starts off a 64-byte line and has odd rows. Rows
// of 1027 run one at a time, rows of 37 and 13 in batches (row_batch.hpp, write_plain_row; rows
// of 13, under a streamed chunk, with ordinary stores).
TEST_CASE("softmax into a large misaligned destination (streaming stores)") {
  const index_t n = GENERATE(index_t(1027), index_t(37), index_t(13));
  const index_t m = 17200000 / (4 * n) + 1;  // about 17.2 MB of floats
  auto x = random<float, 2>({m, n}, 21, -6, 6);
  std::vector<float> storage(std::size_t(m * n) + 1, -1.f);
  auto y = fuse::view(storage.data() + 1, m, n);
  fuse::assign(y, fuse::softmax(x, fuse::axis<-1>));
  CHECK(storage[0] == -1.f);
  for (index_t r : {index_t(0), index_t(1), m / 2, m - 1}) {
    auto ref = softmax_ref(std::vector<double>(x.data() + r * n, x.data() + (r + 1) * n));
    for (index_t j = 0; j < n; ++j) REQUIRE(close(y(r, j), ref[j], 2e-5, 1e-12));
  }
  double total = 0;  // every row sums to 1: no line left unwritten
  for (index_t r = 0; r < m; ++r) {
    double s = 0;
    for (index_t j = 0; j < n; ++j) s += y(r, j);
    total += std::abs(s - 1);
  }
  CHECK(total / double(m) < 1e-5);
}

TEST_CASE("layer_norm and rms_norm, library and hand-written, one kernel each") {
  const index_t m = 67, n = 515;
  auto x = random<float, 2>({m, n}, 21, 990, 1010);  // mean ~1e3: cancellation-prone
  auto g = random<float, 1>({n}, 22, 0.5, 1.5);
  auto b = random<float, 1>({n}, 23, -1, 1);
  auto ln = fuse::eval(fuse::layer_norm(x, g, b, 1e-5));
  auto mu = fuse::mean(x, fuse::axis<-1>);
  auto hand = (x - mu) / fuse::sqrt(fuse::mean(fuse::square(x - mu), fuse::axis<-1>) + 1e-5f) * g + b;
  static_assert(fuse::kernels_v<decltype(hand)> == 1);
  auto lh = fuse::eval(hand);
  auto rn = fuse::eval(fuse::rms_norm(x, g, 1e-6));
  auto rms_hand = x / fuse::sqrt(fuse::mean(x * x, fuse::axis<-1>) + 1e-6f) * g;
  static_assert(fuse::kernels_v<decltype(rms_hand)> == 1);
  auto rh = fuse::eval(rms_hand);
  for (index_t r = 0; r < m; ++r) {
    std::vector<double> row(x.data() + r * n, x.data() + (r + 1) * n);
    const double mean = ref_mean(row), rstd = 1 / std::sqrt(ref_var(row) + 1e-5);
    double sq = 0;
    for (double v : row) sq += v * v;
    const double rr = 1 / std::sqrt(sq / double(n) + 1e-6);
    for (index_t j = 0; j < n; ++j) {
      const double ref = (x(r, j) - mean) * rstd * g(j) + b(j);
      REQUIRE(close(ln(r, j), ref, 2e-3, 2e-3));
      REQUIRE(close(lh(r, j), ref, 2e-3, 2e-3));
      REQUIRE(close(rn(r, j), x(r, j) * rr * g(j), 1e-5));
      REQUIRE(close(rh(r, j), x(r, j) * rr * g(j), 1e-5));
    }
  }
}

TEST_CASE("kernels_v: 1 for the layers and hand-written forms, 2 for a broadcast column mean") {
  fuse::tensor<float, 2> x(8, 16);
  fuse::tensor<float, 1> g(16), b(16);
  static_assert(fuse::kernels_v<decltype(fuse::softmax(x, fuse::axis<-1>))> == 1);
  static_assert(fuse::kernels_v<decltype(fuse::log_softmax(x, fuse::axis<1>))> == 1);
  static_assert(fuse::kernels_v<decltype(fuse::layer_norm(x, g, b))> == 1);
  static_assert(fuse::kernels_v<decltype(fuse::rms_norm(x, g))> == 1);
  auto z = fuse::exp(x - fuse::max(x, fuse::axis<-1>));
  static_assert(fuse::kernels_v<decltype(z / fuse::sum(z, fuse::axis<-1>))> == 1);
  static_assert(fuse::kernels_v<decltype(fuse::sum(x * x))> == 1);
  static_assert(fuse::kernels_v<decltype(fuse::sum(fuse::exp(x) * 2.f, fuse::axis<0>))> == 1);
  static_assert(fuse::kernels_v<decltype(x - fuse::mean(x, fuse::axis<0>))> == 2);
  CHECK(fuse::plan(x - fuse::mean(x, fuse::axis<0>)).kernels == 2);
  CHECK(fuse::plan(fuse::softmax(x, fuse::axis<-1>)).kernels == 1);
  // A reduction over an extent other than the group's row is split at run time, and said so.
  x = fuse::cast<float>(fuse::iota<1>(x.shape()) - fuse::iota<0>(x.shape()) * 3);
  auto col = random<float, 2>({8, 1}, 43);
  auto e = x - fuse::sum(col, fuse::axis<-1>);
  auto p = fuse::plan(e);
  CHECK(p.kernels == 2);
  auto y = fuse::eval(e);
  for (index_t i = 0; i < 8; ++i)
    for (index_t j = 0; j < 16; ++j) CHECK(y(i, j) == x(i, j) - col(i, 0));
}

// A training batch norm over NCHW, relu((x - mean) * rsqrt(var + eps) * g + b) with the statistics
// over N, H, W, in double per channel.
template <class X, class G>
std::vector<double> batch_norm_ref(const X& x, const G& g, const G& b) {
  const auto s = x.shape();
  const index_t n = s[0], c = s[1], h = s[2], w = s[3];
  std::vector<double> out(static_cast<std::size_t>(n * c * h * w));
  for (index_t k = 0; k < c; ++k) {
    std::vector<double> v;
    for (index_t i = 0; i < n; ++i)
      for (index_t y = 0; y < h; ++y)
        for (index_t z = 0; z < w; ++z) v.push_back(x(i, k, y, z));
    const double m = v.empty() ? 0 : ref_mean(v), inv = v.empty() ? 0 : 1 / std::sqrt(ref_var(v) + 1e-5);
    for (index_t i = 0; i < n; ++i)
      for (index_t y = 0; y < h; ++y)
        for (index_t z = 0; z < w; ++z)
          out[static_cast<std::size_t>(((i * c + k) * h + y) * w + z)] =
              std::max(0.0, (double(x(i, k, y, z)) - m) * inv * double(g(k, 0, 0)) + double(b(k, 0, 0)));
  }
  return out;
}

// Its statistics reduce axes that include the last, so the normalisation joins them: one row kernel,
// each channel's row made of N runs of H * W (plan/fusion.hpp; three kernels before 2026-12-05).
// Odd shapes, planes of one element, many short runs, rows past a reduction block, a misaligned
// view whose runs are cut to W, a strided destination, in place, 1-3 threads, fused and eager;
// an empty batch writes nothing. Data about 1e2, so that a one-pass variance would cancel.
TEST_CASE("a training batch norm over NCHW is one row kernel: rows of N runs of H * W") {
  auto bn = [](const auto& x, const auto& g, const auto& b) {
    return fuse::relu((x - fuse::mean(x, fuse::axes<0, 2, 3>)) * fuse::rsqrt(fuse::var(x, fuse::axes<0, 2, 3>) + 1e-5f) * g + b);
  };
  using x4 = fuse::tensor<float, 4>&;
  using g3 = fuse::tensor<float, 3>&;
  static_assert(fuse::kernels_v<decltype(bn(std::declval<x4>(), std::declval<g3>(), std::declval<g3>()))> == 1);
  // Over axes that leave the last out, the consumer still needs a kernel of its own.
  static_assert(fuse::kernels_v<decltype(std::declval<x4>() - fuse::mean(std::declval<x4>(), fuse::axes<0, 1, 2>))> == 2);
  unsigned seed = 60;
  for (const auto& s : {fuse::shape_t<4>{3, 5, 7, 9}, fuse::shape_t<4>{2, 4, 1, 1}, fuse::shape_t<4>{40, 3, 2, 2},
                        fuse::shape_t<4>{40, 3, 7, 9}, fuse::shape_t<4>{1, 3, 5, 5}, fuse::shape_t<4>{4, 2, 33, 31},
                        fuse::shape_t<4>{2, 3, 64, 70}}) {
    CAPTURE(s[0], s[1], s[2], s[3]);
    auto x = random<float, 4>(s, ++seed, 95, 105);
    auto g = random<float, 3>({s[1], 1, 1}, ++seed, 0.5, 1.5);
    auto b = random<float, 3>({s[1], 1, 1}, ++seed, -0.5, 0.5);
    const auto e = bn(x, g, b);
    const auto p = fuse::plan(e);
    INFO(p);
    REQUIRE(p.kernels == 1);
    CHECK(p.lines[0].what.starts_with("row kernel, 2 phases [mean, var]"));
    const auto want = batch_norm_ref(x, g, b);
    for (int threads : {1, 2, 3}) {
      CAPTURE(threads);
      const fuse::cpu exec{.threads = threads};
      for (const auto& y : {fuse::eval(exec, e), fuse::eval(fuse::eager(exec), e)})
        for (index_t i = 0; i < y.size(); ++i) REQUIRE(close(y.data()[i], want[std::size_t(i)], 1e-4, 1e-4));
    }
  }
  // A misaligned view (channels 1-5, columns 1-9 of 12): runs of 9, read through its strides; into
  // columns 2-10 of a wider destination, whose other columns stay as they were.
  auto big = random<float, 4>({3, 7, 6, 12}, 70, 95, 105);
  auto xv = fuse::slice<3>(fuse::slice<1>(big, 1, 6), 1, 10);
  auto g = random<float, 3>({5, 1, 1}, 71, 0.5, 1.5);
  auto b = random<float, 3>({5, 1, 1}, 72, -0.5, 0.5);
  const auto want = batch_norm_ref(xv, g, b);
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    fuse::tensor<float, 4> out(3, 5, 6, 12);
    fuse::assign(out, fuse::full<float>(out.shape(), 7.f));
    auto yv = fuse::slice<3>(out, 2, 11);
    fuse::assign(fuse::cpu{.threads = threads}, yv, bn(xv, g, b));
    for (index_t i = 0; i < 3; ++i)
      for (index_t k = 0; k < 5; ++k)
        for (index_t y = 0; y < 6; ++y)
          for (index_t z = 0; z < 12; ++z) {
            const double ref = z >= 2 && z < 11 ? want[std::size_t(((i * 5 + k) * 6 + y) * 9 + z - 2)] : 7.0;
            REQUIRE(close(out(i, k, y, z), ref, 1e-4, 1e-4));
          }
  }
  // In place: the result of a fresh tensor.
  auto x = random<float, 4>({3, 4, 5, 6}, 73, 95, 105);
  auto g4 = random<float, 3>({4, 1, 1}, 74, 0.5, 1.5);
  auto b4 = random<float, 3>({4, 1, 1}, 75, -0.5, 0.5);
  const auto before = batch_norm_ref(x, g4, b4);
  x = bn(x, g4, b4);
  for (index_t i = 0; i < x.size(); ++i) REQUIRE(close(x.data()[i], before[std::size_t(i)], 1e-4, 1e-4));
  // An empty batch: nothing to write, no error.
  fuse::tensor<float, 4> none(0, 4, 5, 6);
  CHECK(fuse::eval(bn(none, g4, b4)).size() == 0);
  // Doubles (16 lanes, runs up to 128 carried over, reduce_runs in row_reduce.hpp).
  auto xd = random<double, 4>({30, 2, 3, 7}, 76, 95, 105);
  auto gd = random<double, 3>({2, 1, 1}, 77, 0.5, 1.5);
  auto bd = random<double, 3>({2, 1, 1}, 78, -0.5, 0.5);
  const auto wantd = batch_norm_ref(xd, gd, bd);
  const auto yd = fuse::eval(fuse::relu((xd - fuse::mean(xd, fuse::axes<0, 2, 3>)) * fuse::rsqrt(fuse::var(xd, fuse::axes<0, 2, 3>) + 1e-5) * gd + bd));
  for (index_t i = 0; i < yd.size(); ++i) REQUIRE(close(yd.data()[i], wantd[std::size_t(i)], 1e-12, 1e-12));
}

TEST_CASE("a group broken at run time: each reduction a one-phase kernel, innermost first, in plan and values") {
  // The group's rows have 2 elements (x is [8, 2]) and the reductions' operand 5: assign_fused's
  // split_group<..., true> runs max(b), then exp(b - max) into a temporary and its sum, then the
  // elementwise root.
  auto x = random<float, 2>({8, 2}, 44);
  auto b = random<float, 2>({8, 5}, 45, -3, 3);
  auto e = x - fuse::sum(fuse::exp(b - fuse::max(b, fuse::axis<-1>)), fuse::axis<-1>);
  static_assert(fuse::kernels_v<decltype(e)> == 1);  // the types alone fuse it
  auto p = fuse::plan(e);
  INFO(p);
  REQUIRE(p.kernels == 4);
  CHECK(p.lines[0].what.starts_with("row kernel, 1 phase [max]: max(x1)"));
  CHECK(p.lines[1].what.starts_with("elementwise exp(sub(x1, t0))"));
  CHECK(p.lines[2].what.starts_with("row kernel, 1 phase [sum]: sum(t1)"));
  CHECK(p.lines[3].what.starts_with("elementwise sub(x0, t2) (split at run time"));
  CHECK(p.lines[1].bytes_read == 8 * 5 * 4 + 8 * 4);  // b, and max's result
  CHECK(p.lines[1].bytes_written == 8 * 5 * 4);
  CHECK(p.lines[2].bytes_read == 8 * 5 * 4);
  auto y = fuse::eval(e);
  for (index_t i = 0; i < 8; ++i) {
    const std::vector<double> row(b.data() + i * 5, b.data() + (i + 1) * 5);
    double s = 0;
    for (double v : row) s += std::exp(v - ref_max(row));
    for (index_t j = 0; j < 2; ++j) CHECK(close(y(i, j), double(x(i, j)) - s, 1e-6, 1e-6));
  }
}

TEST_CASE("an elementwise root of one value per row over longer rows is one row kernel (logsumexp)") {
  // x [8, 1] - sum(exp(b - max(b))) with b [8, 5]: the root has extent 1 along the row axis, so the
  // group runs over b's rows and writes the root once per row (widen_to_rows), as logsumexp does.
  auto x = random<float, 2>({8, 1}, 44);
  auto b = random<float, 2>({8, 5}, 45, -3, 3);
  auto e = x - fuse::sum(fuse::exp(b - fuse::max(b, fuse::axis<-1>)), fuse::axis<-1>);
  auto p = fuse::plan(e);
  INFO(p);
  REQUIRE(p.kernels == 1);
  CHECK(p.lines[0].what.starts_with("row kernel, 2 phases [max, sum]"));
  CHECK(p.lines[0].bytes_read == 8 * 5 * 4 + 8 * 4);  // b and x
  CHECK(p.lines[0].bytes_written == 8 * 4);
  for (int threads : {1, 2}) {
    fuse::tensor<float, 2> y(8, 1);
    fuse::assign(fuse::cpu{threads}, y, e);
    for (index_t i = 0; i < 8; ++i) {
      const std::vector<double> row(b.data() + i * 5, b.data() + (i + 1) * 5);
      double s = 0;
      for (double v : row) s += std::exp(v - ref_max(row));
      CHECK(close(y(i, 0), double(x(i, 0)) - s, 1e-6, 1e-6));
    }
  }
  // logsumexp over long rows: one kernel, one pass (the online pair), NumPy's values.
  auto z = random<float, 2>({3, 20000}, 46, -5, 5);
  auto lse = fuse::logsumexp(z, fuse::axis<-1>);
  REQUIRE(fuse::plan(lse).kernels == 1);
  auto l = fuse::eval(lse);
  for (index_t i = 0; i < 3; ++i) {
    const std::vector<double> row(z.data() + i * 20000, z.data() + (i + 1) * 20000);
    const double m = ref_max(row);
    double s = 0;
    for (double v : row) s += std::exp(v - m);
    CHECK(close(l(i, 0), m + std::log(s), 1e-6, 1e-6));
  }
  // Over every axis: a rank-0 root over full reductions runs as one row, the whole of z (it was
  // three kernels: the max, the max and the sum, the root). Also a root with a leaf of its own.
  auto all = fuse::logsumexp(z);
  static_assert(fuse::kernels_v<decltype(all)> == 1);
  REQUIRE(fuse::plan(all).kernels == 1);
  const std::vector<double> every(z.data(), z.data() + z.size());
  const double m = ref_max(every);
  double s = 0;
  for (double v : every) s += std::exp(v - m);
  for (int threads : {1, 2}) {
    CHECK(close(fuse::eval(fuse::cpu{threads}, all), m + std::log(s), 1e-6, 1e-6));
    fuse::tensor<float, 0> acc{fuse::shape_t<0>{}};
    acc() = 1.5f;
    fuse::assign(fuse::cpu{threads}, acc, 2.0f * fuse::sum(z) - acc);  // the destination inside the root
    CHECK(close(acc(), 2 * ref_sum(every) - 1.5, 1e-5, 1e-3));
  }
}

TEST_CASE("a group broken at run time, on two threads: one-row kernels split the row, strided operands") {
  // sum(a + sum(b)): a [70001], b [40000], so both fallback reductions have one result, their
  // reduced ranges split across the threads (backend/cpu/fallback_reduce.hpp), the outer one over
  // a + sum(b) written to a temporary first. Then x - max(bt) with x [70000, 2] and bt a transposed
  // [70000, 3]: the max kernel splits its results and the elementwise one its elements.
  auto a = random<float, 1>({70001}, 50);
  auto b = random<float, 1>({40000}, 51);
  auto full = fuse::sum(a + fuse::sum(b, fuse::axis<0>), fuse::axis<0>);
  const auto fp = fuse::plan(full);
  INFO(fp);
  REQUIRE(fp.kernels == 3);
  CHECK(fp.lines[1].what.starts_with("elementwise add(x0, t0)"));
  CHECK(fp.lines[2].what.starts_with("row kernel, 1 phase [sum]: sum(t1) (split at run time"));
  const double sb = ref_sum(std::vector<double>(b.data(), b.data() + 40000));
  double want = 0;
  for (index_t i = 0; i < 70001; ++i) want += double(a(i)) + sb;
  CHECK(close(fuse::eval(fuse::cpu{2}, full)(0), want, 1e-5, 1e-2));

  auto x = random<float, 2>({70000, 2}, 52);
  auto c = random<float, 2>({3, 70000}, 53);
  auto y = fuse::eval(fuse::cpu{2}, x - fuse::max(fuse::transpose(c), fuse::axis<-1>));
  REQUIRE(y.extent(0) == 70000);
  for (index_t i = 0; i < 70000; ++i) {
    const double m = std::max({double(c(0, i)), double(c(1, i)), double(c(2, i))});
    for (index_t j = 0; j < 2; ++j) REQUIRE(y(i, j) == float(double(x(i, j)) - m));
  }
}

TEST_CASE("a reduction that does not join the group leaves it whole, whatever its operand's extents") {
  // mean(c, axis<0>) is a kernel of its own; its operand's extent 1 along the row axis must not
  // read as a broken group (fits_group checks only the reductions that join).
  auto x = random<float, 2>({3, 7}, 46);
  auto c = random<float, 2>({3, 1}, 47);
  auto e = x - fuse::max(x, fuse::axis<-1>) + fuse::mean(c, fuse::axis<0>);
  auto p = fuse::plan(e);
  INFO(p);
  REQUIRE(p.kernels == 2);
  CHECK(p.lines[0].what.starts_with("row kernel, 1 phase [mean]"));
  CHECK(p.lines[1].what.starts_with("row kernel, 1 phase [max]"));
  CHECK(p.lines[1].what.find("split at run time") == std::string::npos);
  auto y = fuse::eval(e);
  const double mc = ref_mean({c(0, 0), c(1, 0), c(2, 0)});
  for (index_t i = 0; i < 3; ++i) {
    const double m = ref_max(std::vector<double>(x.data() + i * 7, x.data() + (i + 1) * 7));
    for (index_t j = 0; j < 7; ++j) CHECK(close(y(i, j), double(x(i, j)) - m + mc, 1e-6, 1e-6));
  }
}

TEST_CASE("a broken group's plan lists its kernels in the order they run: leaving reductions first") {
  // The executor computes the reductions that do not join the group (mean(c, axis<0>)) before
  // splitting the joining ones (sum(b)); the plan says the same, with the same t-numbers.
  auto x = random<float, 2>({4, 2}, 54);
  auto b = random<float, 2>({4, 5}, 55);
  auto c = random<float, 2>({3, 1}, 56);
  auto e = x - fuse::sum(b, fuse::axis<-1>) + fuse::mean(c, fuse::axis<0>);
  auto p = fuse::plan(e);
  INFO(p);
  REQUIRE(p.kernels == 3);
  CHECK(p.lines[0].what.starts_with("row kernel, 1 phase [mean]"));
  CHECK(p.lines[1].what.starts_with("row kernel, 1 phase [sum]"));
  // One naming table for the plan: c, named first (kernel 0), is x0; x is x1 and b x2.
  CHECK(p.lines[0].what.find("mean(x0)") != std::string::npos);
  CHECK(p.lines[1].what.find("sum(x2)") != std::string::npos);
  CHECK(p.lines[2].what.starts_with("elementwise add(sub(x1, t1), t0) (split at run time"));
  auto y = fuse::eval(e);
  const double mc = ref_mean({c(0, 0), c(1, 0), c(2, 0)});
  for (index_t i = 0; i < 4; ++i) {
    const double sb = ref_sum(std::vector<double>(b.data() + i * 5, b.data() + (i + 1) * 5));
    for (index_t j = 0; j < 2; ++j) CHECK(close(y(i, j), double(x(i, j)) - sb + mc, 1e-6, 1e-6));
  }
}

TEST_CASE("reduction-broadcast expressions assigned into a destination of higher rank, as NumPy") {
  // The row kernel runs over the group's axes; a destination with more axes takes e broadcast.
  auto x = random<float, 2>({8, 1}, 48);
  auto b = random<float, 2>({8, 5}, 49, -3, 3);
  fuse::tensor<float, 3> y(2, 8, 1), s(2, 8, 5), z(3, 8, 1);
  y = x - fuse::sum(b, fuse::axis<-1>);
  s = fuse::softmax(b, fuse::axis<-1>);
  z = fuse::sum(b, fuse::axis<-1>);  // a reduction root
  for (index_t i = 0; i < 8; ++i) {
    const std::vector<double> row(b.data() + i * 5, b.data() + (i + 1) * 5);
    double sum = 0;
    for (double v : row) sum += v;
    const auto soft = softmax_ref(row);
    for (index_t k = 0; k < 3; ++k) CHECK(close(z(k, i, 0), sum, 1e-6, 1e-6));
    for (index_t k = 0; k < 2; ++k) {
      CHECK(close(y(k, i, 0), double(x(i, 0)) - sum, 1e-6, 1e-6));
      for (index_t j = 0; j < 5; ++j) CHECK(close(s(k, i, j), soft[std::size_t(j)], 2e-5, 1e-12));
    }
  }
}

TEST_CASE("softmax over a non-trailing axis and over rows of length 1") {
  auto x = random<float, 3>({4, 7, 5}, 41);
  auto y = fuse::eval(fuse::softmax(x, fuse::axis<1>));
  for (index_t a = 0; a < 4; ++a)
    for (index_t c = 0; c < 5; ++c) {
      std::vector<double> col;
      for (index_t b = 0; b < 7; ++b) col.push_back(x(a, b, c));
      auto ref = softmax_ref(col);
      for (index_t b = 0; b < 7; ++b) REQUIRE(close(y(a, b, c), ref[b], 2e-5, 1e-12));
    }
  auto ones = fuse::eval(fuse::softmax(random<float, 2>({9, 1}, 42), fuse::axis<-1>));
  for (index_t i = 0; i < 9; ++i) CHECK(ones(i, 0) == 1.f);
}

TEST_CASE("composites own an rvalue tensor operand (no view of a moved-from temporary)") {
  // Each composite uses its operand several times; an rvalue tensor must be owned by the result
  // (AddressSanitizer reports the use-after-free this once was).
  auto x = random<float, 2>({6, 33}, 43);
  auto g = random<float, 1>({33}, 44);
  auto copy = [&] { return fuse::eval(x + 0.f); };
  auto same = [](const auto& a, const auto& b) {
    REQUIRE(a.shape() == b.shape());
    for (index_t i = 0; i < a.size(); ++i) REQUIRE(a.data()[i] == b.data()[i]);
  };
  same(fuse::eval(fuse::softmax(copy(), fuse::axis<-1>)), fuse::eval(fuse::softmax(x, fuse::axis<-1>)));
  same(fuse::eval(fuse::log_softmax(copy(), fuse::axis<0>)), fuse::eval(fuse::log_softmax(x, fuse::axis<0>)));
  same(fuse::eval(fuse::layer_norm(copy(), g, 0.5f, 1e-5)), fuse::eval(fuse::layer_norm(x, g, 0.5f, 1e-5)));
  same(fuse::eval(fuse::rms_norm(copy(), g, 1e-6)), fuse::eval(fuse::rms_norm(x, g, 1e-6)));
  same(fuse::eval(fuse::var(copy(), fuse::axis<-1>)), fuse::eval(fuse::var(x, fuse::axis<-1>)));
  same(fuse::eval(fuse::logsumexp(copy(), fuse::axis<-1>)), fuse::eval(fuse::logsumexp(x, fuse::axis<-1>)));
  CHECK(fuse::eval(fuse::var(copy())) == fuse::eval(fuse::var(x)));
}

TEST_CASE("repeated reductions and operands are shared only when they are the same values") {
  // The row kernel computes a reduction written twice once, and lets the epilogue reuse a phase's
  // expensive operand (softmax's exp(x - max)); both must match values, not just types.
  const index_t m = 7, n = 301;
  auto x = random<float, 2>({m, n}, 51);
  auto y = random<float, 2>({m, n}, 52);
  auto check = [&](const auto& got, auto&& want) {
    for (index_t r = 0; r < m; ++r)
      for (index_t j = 0; j < got.extent(1); ++j) REQUIRE(close(got(r, j), want(r, j), 2e-5, 1e-9));
  };
  // Per-row maxima and sums, computed once (a reference inside the element loop would be cubic).
  auto row_max = [&](const auto& t) {
    std::vector<double> mx(m, -1e300);
    for (index_t r = 0; r < m; ++r)
      for (index_t j = 0; j < n; ++j) mx[r] = std::max(mx[r], double(t(r, j)));
    return mx;
  };
  auto row_sum_exp = [&](const auto& t, const std::vector<double>& shift) {
    std::vector<double> s(m, 0.0);
    for (index_t r = 0; r < m; ++r)
      for (index_t k = 0; k < n; ++k) s[r] += std::exp(t(r, k) - shift[r]);
    return s;
  };
  const auto max_x = row_max(x), max_y = row_max(y);
  // Same types as softmax's numerator and sum, different tensors: nothing may be shared.
  auto mixed = fuse::eval(fuse::exp(x - fuse::max(x, fuse::axis<-1>)) / fuse::sum(fuse::exp(y - fuse::max(y, fuse::axis<-1>)), fuse::axis<-1>));
  const auto sum_y = row_sum_exp(y, max_y);
  check(mixed, [&](index_t r, index_t j) { return std::exp(x(r, j) - max_x[r]) / sum_y[r]; });
  // max(y) inside the sum of an x softmax: the two max phases differ.
  auto shifted = fuse::eval(fuse::exp(x - fuse::max(x, fuse::axis<-1>)) * fuse::sum(fuse::exp(x - fuse::max(y, fuse::axis<-1>)), fuse::axis<-1>));
  const auto sum_x_shifted = row_sum_exp(x, max_y);
  check(shifted, [&](index_t r, index_t j) { return std::exp(x(r, j) - max_x[r]) * sum_x_shifted[r]; });
  // The same values: softmax, contiguous rows (shared) and transposed rows (recomputed).
  auto soft = fuse::eval(fuse::softmax(x, fuse::axis<-1>));
  const auto sum_x = row_sum_exp(x, max_x);
  check(soft, [&](index_t r, index_t j) { return std::exp(x(r, j) - max_x[r]) / sum_x[r]; });
  auto xt = fuse::eval(fuse::transpose(x));  // [n, m]; its transpose is x with strided rows
  auto soft_t = fuse::eval(fuse::softmax(fuse::transpose(xt), fuse::axis<-1>));
  for (index_t r = 0; r < m; ++r)
    for (index_t j = 0; j < n; ++j) REQUIRE(close(soft_t(r, j), soft(r, j), 1e-6, 1e-12));
}

TEST_CASE("composites of a temporary tensor stay valid when the expression is copied and outlives it") {
  // fuse::eval(...) moved into softmax is shared by every copy of the expression; the copies
  // read the same buffer (the row kernel recognises its loads) and keep it alive.
  const index_t m = 5, n = 77;
  auto x = random<float, 2>({m, n}, 61);
  auto g = random<float, 1>({n}, 62);
  auto make = [&] {
    auto soft = fuse::softmax(fuse::eval(x * 2.f), fuse::axis<-1>);
    auto norm = fuse::layer_norm(fuse::eval(x + 1.f), g, 0.5f);
    auto lse = fuse::logsumexp(fuse::eval(x * 1.f), fuse::axis<-1>);
    auto v = fuse::var(fuse::eval(x - 3.f), fuse::axis<-1>);
    return (soft + 1.f) + norm + lse + v;  // copies of the four; the originals die on return
  };
  auto e = make();
  std::vector<float> junk(std::size_t(4 * m * n), 1e30f);  // likely to reuse freed memory
  static_assert(fuse::kernels_v<decltype(fuse::softmax(fuse::eval(x * 2.f), fuse::axis<-1>))> == 1);
  auto got = fuse::eval(e);
  auto want = fuse::eval(fuse::softmax(x * 2.f, fuse::axis<-1>) + 1.f + fuse::layer_norm(x + 1.f, g, 0.5f) +
                         fuse::logsumexp(x, fuse::axis<-1>) + fuse::var(x - 3.f, fuse::axis<-1>));
  for (index_t r = 0; r < m; ++r)
    for (index_t j = 0; j < n; ++j) REQUIRE(close(got(r, j), want(r, j), 1e-6, 1e-6));
  // The copy shares: the expression's plan reads each temporary's bytes once.
  auto soft = fuse::softmax(fuse::eval(x * 2.f), fuse::axis<-1>);
  auto copy = soft;
  CHECK(fuse::plan(copy).bytes_read == fuse::plan(fuse::softmax(x, fuse::axis<-1>)).bytes_read);
}

TEST_CASE("composites of integer tensors compute in double (NumPy), without wrapping or losing eps") {
  fuse::tensor<std::uint8_t, 2> u(2, 3);
  u(0, 0) = 1, u(0, 1) = 2, u(0, 2) = 3, u(1, 0) = 250, u(1, 1) = 0, u(1, 2) = 7;
  fuse::tensor<std::int8_t, 2> s(2, 2);
  s(0, 0) = -100, s(0, 1) = 100, s(1, 0) = 5, s(1, 1) = 5;
  fuse::tensor<int, 2> c(2, 4);  // a constant row and a zero row
  for (index_t j = 0; j < 4; ++j) c(0, j) = 7, c(1, j) = 0;
  static_assert(std::is_same_v<decltype(fuse::softmax(u))::value_type, double>);
  auto ref_softmax = [](std::vector<double> row) {
    const double m = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (double v : row) sum += std::exp(v - m);
    for (double& v : row) v = std::exp(v - m) / sum;
    return row;
  };
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    const auto su = fuse::eval(exec, fuse::softmax(u));
    const auto lu = fuse::eval(exec, fuse::log_softmax(u));
    const auto eu = fuse::eval(exec, fuse::logsumexp(u, fuse::axis<-1>));
    for (index_t r = 0; r < 2; ++r) {
      std::vector<double> row{double(u(r, 0)), double(u(r, 1)), double(u(r, 2))};
      const auto want = ref_softmax(row);
      double lse = 0;
      const double m = *std::max_element(row.begin(), row.end());
      for (double v : row) lse += std::exp(v - m);
      lse = m + std::log(lse);
      CHECK(close(eu(r, 0), lse, 1e-12));
      for (index_t j = 0; j < 3; ++j) {
        CHECK(close(su(r, j), want[j], 1e-12, 1e-300));
        CHECK(close(lu(r, j), row[j] - lse, 1e-12, 1e-12));
      }
    }
    const auto ss = fuse::eval(exec, fuse::softmax(s));
    CHECK(close(ss(0, 0), std::exp(-200.0) / (1 + std::exp(-200.0)), 1e-12, 1e-300));
    CHECK(close(ss(0, 1), 1 / (1 + std::exp(-200.0)), 1e-12));
    CHECK(ss(1, 0) == 0.5);
    const auto ln = fuse::eval(exec, fuse::layer_norm(c, 2.0, 0.5));  // a constant row: beta
    const auto rn = fuse::eval(exec, fuse::rms_norm(c, 2.0));         // a zero row: 0
    for (index_t j = 0; j < 4; ++j) {
      CHECK(ln(0, j) == 0.5);
      CHECK(ln(1, j) == 0.5);
      CHECK(close(rn(0, j), 7.0 / std::sqrt(49.0 + 1e-6) * 2.0, 1e-12));
      CHECK(rn(1, j) == 0.0);
    }
  }
}
