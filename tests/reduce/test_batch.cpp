// Short rows run in batches (backend/cpu/row_batch.hpp): each row of a batch has its own slots and
// row buffer. Row counts around the batch size and the thread split, rows on both sides of the
// batching limit, against double references: softmax (a buffered operand), layer norm (a repeated
// phase), rms norm, reduction roots, strided rows and rows over two axes. Rows shorter than
// row_tile_max run as tiles of rows (backend/cpu/row_tiles.hpp): the last cases.
#include "reduce_support.hpp"

using namespace rt;

namespace {

constexpr index_t batch_limit = fuse::detail::batch_max_row_elements;
constexpr index_t tile_limit = fuse::detail::row_tile_max;  // rows shorter than this run as tiles

std::vector<double> row_of(const fuse::tensor<float, 2>& x, index_t r) {
  const index_t n = x.extent(1);
  return std::vector<double>(x.data() + r * n, x.data() + (r + 1) * n);
}

}  // namespace

TEST_CASE("batched short rows: softmax, layer norm and rms norm per row, any row count, 1 and 2 threads", "[batch]") {
  static_assert(batch_limit >= 64, "the sizes below expect rows of 64 to be batched");
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    // 1-31: rows shorter than the lanes (softmax's sum folds 8, 16 or 32 values pairwise)
    for (index_t n : {index_t(1), index_t(7), index_t(13), index_t(24), index_t(31), index_t(64), batch_limit, batch_limit + 1}) {
      for (index_t m : {1, 2, 3, 5, 8, 9, 13, 1027}) {
        if (m == 1027 && n != 64) continue;  // [1027, 64]: large enough to split across threads (513 + 514 rows)
        CAPTURE(threads, n, m);
        auto x = random<float, 2>({m, n}, unsigned(100 * m + n), -4, 4);
        auto g = random<float, 1>({n}, 7, 0.5, 1.5);
        auto b = random<float, 1>({n}, 8, -1, 1);
        fuse::tensor<float, 2> sm(m, n), ln(m, n), rn(m, n);
        fuse::assign(exec, sm, fuse::softmax(x, fuse::axis<-1>));
        fuse::assign(exec, ln, fuse::layer_norm(x, g, b, 1e-5));
        fuse::assign(exec, rn, fuse::rms_norm(x, g, 1e-6));
        for (index_t r = 0; r < m; ++r) {
          const auto row = row_of(x, r);
          const double mx = ref_max(row), mean = ref_mean(row), rstd = 1 / std::sqrt(ref_var(row) + 1e-5);
          double s = 0, sq = 0;
          for (double v : row) s += std::exp(v - mx), sq += v * v;
          const double rr = 1 / std::sqrt(sq / double(n) + 1e-6);
          for (index_t j = 0; j < n; ++j) {
            REQUIRE(close(sm(r, j), std::exp(row[j] - mx) / s, 2e-5, 1e-12));
            REQUIRE(close(ln(r, j), (row[j] - mean) * rstd * g(j) + b(j), 1e-4, 1e-4));
            REQUIRE(close(rn(r, j), row[j] * rr * g(j), 1e-5));
          }
        }
      }
    }
  }
}

TEST_CASE("batched short rows: reduction roots, strided rows, rows over two axes", "[batch]") {
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    for (index_t m : {1, 3, 6, 11}) {
      CAPTURE(threads, m);
      const index_t n = 37;
      auto x = random<float, 2>({m, n}, unsigned(m), -3, 3);
      // One value per row (a reduction root), two phases: var = mean(square(x - mean(x))).
      fuse::tensor<float, 2> v(m, 1), mx(m, 1);
      fuse::assign(exec, v, fuse::var(x, fuse::axis<-1>));
      fuse::assign(exec, mx, fuse::max(x, fuse::axis<-1>));
      // Strided rows: the rows of x's transpose are x's columns.
      auto xt = fuse::transpose(x);
      fuse::tensor<float, 2> ct(n, m);
      fuse::assign(exec, ct, xt - fuse::mean(xt, fuse::axis<-1>));
      // Rows over two axes: [m, 5, 7] normalised over the last two (contiguous: the two axes
      // merge into one), and the same read from a slice of [m, 5, 8], whose rows stay 5 sub-rows
      // of 7 (not a plain row: reduce_row and write_row's sub-row loops).
      auto z = random<float, 3>({m, 5, 7}, unsigned(m + 50), -2, 2);
      fuse::tensor<float, 3> zn(m, 5, 7), zw(m, 5, 8), zsn(m, 5, 7);
      fuse::assign(exec, zn, z - fuse::sum(z, fuse::axes<1, 2>) / 35.f);
      std::fill(zw.data(), zw.data() + zw.size(), 1e6f);  // column 7 stays out of every row
      auto zs7 = fuse::slice<2>(zw, 0, 7);
      fuse::assign(exec, zs7, z);
      fuse::assign(exec, zsn, zs7 - fuse::sum(zs7, fuse::axes<1, 2>) / 35.f);
      for (index_t r = 0; r < m; ++r) {
        const auto row = row_of(x, r);
        REQUIRE(close(v(r, 0), ref_var(row), 1e-5, 1e-7));
        REQUIRE(mx(r, 0) == float(ref_max(row)));
        double zs = 0;
        for (index_t k = 0; k < 35; ++k) zs += z.data()[r * 35 + k];
        for (index_t k = 0; k < 35; ++k) REQUIRE(close(zn.data()[r * 35 + k], z.data()[r * 35 + k] - zs / 35, 1e-5, 1e-5));
        for (index_t k = 0; k < 35; ++k) REQUIRE(close(zsn.data()[r * 35 + k], z.data()[r * 35 + k] - zs / 35, 1e-5, 1e-5));
      }
      for (index_t c = 0; c < n; ++c) {
        double s = 0;
        for (index_t r = 0; r < m; ++r) s += x(r, c);
        for (index_t r = 0; r < m; ++r) REQUIRE(close(ct(c, r), x(r, c) - s / double(m), 1e-5, 1e-5));
      }
    }
  }
}

// A [m, 1] operand (a per-row scale or temperature) stays put along the row and is read through
// rows of copies (row_copies.hpp). The batch's plain rows point only the phases and epilogue that
// read it: here the epilogue alone (softmax(x) * s), every phase (softmax(x * s), whose sum phase
// also fills the row buffer), and two such operands in different phases ((x - mean(x * s)) * t).
// And assigned through a column of its own destination (z = softmax(z * z[:, 0:1])): the overlap
// check sends that through a temporary, so the result must be the fresh tensor's.
TEST_CASE("batched short rows read [m, 1] operands through rows of copies", "[batch]") {
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    for (index_t n : {index_t(1), index_t(7), index_t(13), index_t(31), index_t(64), batch_limit}) {
      for (index_t m : {1, 3, 5, 9, 1027}) {
        if (m == 1027 && n != 64) continue;
        CAPTURE(threads, n, m);
        auto x = random<float, 2>({m, n}, unsigned(300 * m + n), -4, 4);
        auto s = random<float, 2>({m, 1}, unsigned(m + 1), 0.5, 2);
        auto t = random<float, 2>({m, 1}, unsigned(m + 2), -2, 2);
        fuse::tensor<float, 2> a(m, n), b(m, n), c(m, n);
        fuse::assign(exec, a, fuse::softmax(x, fuse::axis<-1>) * s);
        fuse::assign(exec, b, fuse::softmax(x * s, fuse::axis<-1>));
        fuse::assign(exec, c, (x - fuse::mean(x * s, fuse::axis<-1>)) * t);
        auto z = fuse::eval(x * 1.f);
        fuse::assign(exec, z, fuse::softmax(z * fuse::slice<1>(z, 0, 1), fuse::axis<-1>));
        for (index_t r = 0; r < m; ++r) {
          const auto row = row_of(x, r);
          std::vector<double> scaled(row), by_first(row);
          for (auto& v : scaled) v *= s(r, 0);
          for (auto& v : by_first) v *= row[0];
          const double mx = ref_max(row), mean_s = ref_mean(scaled);
          double sum = 0;
          for (double v : row) sum += std::exp(v - mx);
          const auto want_b = softmax_ref(scaled), want_z = softmax_ref(by_first);
          for (index_t j = 0; j < n; ++j) {
            REQUIRE(close(a(r, j), std::exp(row[j] - mx) / sum * s(r, 0), 2e-5, 1e-12));
            REQUIRE(close(b(r, j), want_b[std::size_t(j)], 2e-5, 1e-12));
            REQUIRE(close(c(r, j), (row[j] - mean_s) * t(r, 0), 1e-5, 1e-5));
            REQUIRE(close(z(r, j), want_z[std::size_t(j)], 2e-5, 1e-12));
          }
        }
      }
    }
  }
}

// Tiles of rows: each phase's operand over the whole tile, each row reduced across the tile's rows
// side by side, its value spread along the row, the epilogue over the whole tile. Rows on both
// sides of the tile limit, row counts around a tile (at least 32 rows) and the thread split;
// operands broadcast along the rows (g, b: a repeated row) and across them (t[m, 1]: each row's
// value spread), a reused operand (softmax's exp), a repeated phase (layer norm's mean), a cheap
// epilogue without one (x - max(x)).
TEST_CASE("short rows run as tiles: softmax, log_softmax, norms, per-row operands, 1 and 2 threads", "[batch][tiles]") {
  static_assert(tile_limit > 16 && tile_limit <= 64, "the sizes below expect rows of 2 to 16 to run as tiles");
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    for (index_t n : {index_t(2), index_t(3), index_t(5), index_t(8), index_t(15), tile_limit - 1, tile_limit}) {
      for (index_t m : {1, 31, 33, 64, 65, 1027}) {
        CAPTURE(threads, n, m);
        auto x = random<float, 2>({m, n}, unsigned(500 * m + n), -4, 4);
        auto t = random<float, 2>({m, 1}, unsigned(m + 3), 0.5, 2);
        auto g = random<float, 1>({n}, unsigned(n + 4), 0.5, 1.5);
        auto b = random<float, 1>({n}, unsigned(n + 5), -1, 1);
        fuse::tensor<float, 2> sm(m, n), ls(m, n), ln(m, n), rn(m, n), dm(m, n), ct(m, n);
        fuse::assign(exec, sm, fuse::softmax(x, fuse::axis<-1>));
        fuse::assign(exec, ls, fuse::log_softmax(x * t, fuse::axis<-1>));
        fuse::assign(exec, ln, fuse::layer_norm(x, g, b, 1e-5));
        fuse::assign(exec, rn, fuse::rms_norm(x * t, g, 1e-6));
        fuse::assign(exec, dm, x - fuse::max(x, fuse::axis<-1>));
        fuse::assign(exec, ct, (x - fuse::mean(x, fuse::axis<-1>)) * t + b);
        for (index_t r = 0; r < m; ++r) {
          const auto row = row_of(x, r);
          std::vector<double> scaled(row);
          for (auto& v : scaled) v *= t(r, 0);
          const double mx = ref_max(row), mean = ref_mean(row), rstd = 1 / std::sqrt(ref_var(row) + 1e-5);
          const double smx = ref_max(scaled);
          double s = 0, ss = 0, sq = 0;
          for (double v : row) s += std::exp(v - mx);
          for (double v : scaled) ss += std::exp(v - smx), sq += v * v;
          const double rr = 1 / std::sqrt(sq / double(n) + 1e-6);
          for (index_t j = 0; j < n; ++j) {
            const double v = row[std::size_t(j)], w = scaled[std::size_t(j)];
            REQUIRE(close(sm(r, j), std::exp(v - mx) / s, 2e-5, 1e-12));
            REQUIRE(close(ls(r, j), w - smx - std::log(ss), 1e-5, 1e-5));
            REQUIRE(close(ln(r, j), (v - mean) * rstd * g(j) + b(j), 1e-4, 1e-4));
            REQUIRE(close(rn(r, j), w * rr * g(j), 1e-5));
            REQUIRE(dm(r, j) == float(v - mx));
            REQUIRE(close(ct(r, j), (v - mean) * t(r, 0) + b(j), 1e-5, 1e-5));
          }
        }
      }
    }
  }
}

// A tile runs on from row to row only along the next-to-last axis: over [a, b, n] with an operand
// c[a, 1, n] (its row changes with the first index) every tile stops at the end of axis 1. NaN
// anywhere in a row makes its softmax NaN, an all -inf row is NaN, as NumPy; double and integer
// rows.
TEST_CASE("short rows as tiles: tiles stop at the end of an axis; NaN, infinities, double and int rows", "[batch][tiles]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    CAPTURE(threads);
    auto x = random<float, 3>({3, 37, 5}, 11, -3, 3);
    auto c = random<float, 3>({3, 1, 5}, 12, -3, 3);
    fuse::tensor<float, 3> y(3, 37, 5);
    fuse::assign(exec, y, fuse::softmax(x + c, fuse::axis<-1>));
    for (index_t a = 0; a < 3; ++a)
      for (index_t r = 0; r < 37; ++r) {
        std::vector<double> row;
        for (index_t j = 0; j < 5; ++j) row.push_back(double(x(a, r, j)) + double(c(a, 0, j)));
        const auto want = softmax_ref(row);
        for (index_t j = 0; j < 5; ++j) REQUIRE(close(y(a, r, j), want[std::size_t(j)], 2e-5, 1e-12));
      }

    // Rows of 8: NaN first, in the middle, last; all -inf; +inf (inf - inf: NaN); the rest finite.
    const index_t m = 70, n = 8;
    auto z = random<float, 2>({m, n}, 13, -3, 3);
    z(3, 0) = nan, z(10, 4) = nan, z(40, 7) = nan, z(69, 7) = nan;
    for (index_t j = 0; j < n; ++j) z(20, j) = -inf;
    z(50, 2) = inf;
    fuse::tensor<float, 2> sz(m, n), mz(m, n);
    fuse::assign(exec, sz, fuse::softmax(z, fuse::axis<-1>));
    fuse::assign(exec, mz, z - fuse::max(z, fuse::axis<-1>));
    for (index_t r = 0; r < m; ++r) {
      const auto row = row_of(z, r);
      const auto want = softmax_ref(row);
      const double mx = ref_max(row);
      const bool special = r == 3 || r == 10 || r == 20 || r == 40 || r == 50 || r == 69;
      for (index_t j = 0; j < n; ++j) {
        CAPTURE(r, j);
        REQUIRE(close(sz(r, j), want[std::size_t(j)], 2e-5, 1e-12));
        if (special) REQUIRE(std::isnan(sz(r, j)));
        const double d = row[std::size_t(j)] - mx;
        if (std::isnan(d)) REQUIRE(std::isnan(mz(r, j)));
        else REQUIRE(mz(r, j) == float(d));
      }
    }

    auto xd = random<double, 2>({100, 7}, 14, -5, 5);
    fuse::tensor<double, 2> sd(100, 7);
    fuse::assign(exec, sd, fuse::softmax(xd, fuse::axis<-1>));
    fuse::tensor<std::int32_t, 2> k(90, 6), kd(90, 6);
    for (index_t i = 0; i < k.size(); ++i) k.data()[i] = std::int32_t((i * 7919) % 201) - 100;
    fuse::assign(exec, kd, k * 3 - fuse::max(k, fuse::axis<-1>) + fuse::sum(k, fuse::axis<-1>));
    for (index_t r = 0; r < 100; ++r) {
      std::vector<double> row(xd.data() + r * 7, xd.data() + r * 7 + 7);
      const auto want = softmax_ref(row);
      for (index_t j = 0; j < 7; ++j) REQUIRE(close(sd(r, j), want[std::size_t(j)], 1e-13, 1e-300));
    }
    for (index_t r = 0; r < 90; ++r) {
      std::int32_t mx = k(r, 0), s = 0;
      for (index_t j = 0; j < 6; ++j) mx = std::max(mx, k(r, j)), s += k(r, j);
      for (index_t j = 0; j < 6; ++j) REQUIRE(kd(r, j) == k(r, j) * 3 - mx + s);
    }
  }
}

// One value per row (a reduction root, or an elementwise root of reductions) over rows that run
// as tiles: the epilogue at each row's first element, written with the destination's stride
// between rows (here also a column of a wider tensor, and [a, b, 1] over [a, b, n]).
TEST_CASE("short rows as tiles: one value per row, into strided destinations", "[batch][tiles]") {
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    for (index_t n : {index_t(2), index_t(5), index_t(8), index_t(16), tile_limit - 1}) {
      for (index_t m : {1, 33, 1027}) {
        CAPTURE(threads, n, m);
        auto x = random<float, 2>({m, n}, unsigned(700 * m + n), -4, 4);
        auto t = random<float, 2>({m, 1}, unsigned(m + 6), 0.5, 2);
        fuse::tensor<float, 2> v(m, 1), l(m, 1), d(m, 1), wide(m, 3);
        fuse::assign(exec, v, fuse::var(x, fuse::axis<-1>));
        fuse::assign(exec, l, fuse::logsumexp(x * t, fuse::axis<-1>));
        fuse::assign(exec, d, fuse::max(x, fuse::axis<-1>) - fuse::mean(x, fuse::axis<-1>));
        std::fill(wide.data(), wide.data() + wide.size(), 7.f);
        auto column = fuse::slice<1>(wide, 1, 2);
        fuse::assign(exec, column, fuse::sum(x, fuse::axis<-1>) * t + fuse::min(x, fuse::axis<-1>));
        for (index_t r = 0; r < m; ++r) {
          const auto row = row_of(x, r);
          std::vector<double> scaled(row);
          for (auto& s : scaled) s *= t(r, 0);
          const double smx = ref_max(scaled);
          double se = 0, mn = row[0];
          for (double s : scaled) se += std::exp(s - smx);
          for (double s : row) mn = std::min(mn, s);
          REQUIRE(close(v(r, 0), ref_var(row), 1e-5, 1e-6));
          REQUIRE(close(l(r, 0), smx + std::log(se), 1e-6, 1e-6));
          REQUIRE(close(d(r, 0), ref_max(row) - ref_mean(row), 1e-6, 1e-6));
          REQUIRE(close(wide(r, 1), ref_sum(row) * t(r, 0) + mn, 1e-5, 1e-5));
          REQUIRE(wide(r, 0) == 7.f);
          REQUIRE(wide(r, 2) == 7.f);
        }
      }
    }
    auto z = random<float, 3>({3, 37, 5}, 15, -3, 3);
    fuse::tensor<float, 3> zv(3, 37, 1);
    fuse::assign(exec, zv, fuse::var(z, fuse::axis<-1>));
    for (index_t a = 0; a < 3; ++a)
      for (index_t r = 0; r < 37; ++r) {
        std::vector<double> row;
        for (index_t j = 0; j < 5; ++j) row.push_back(z(a, r, j));
        REQUIRE(close(zv(a, r, 0), ref_var(row), 1e-5, 1e-6));
      }
  }
}
