// Short rows run in batches (backend/cpu/row_batch.hpp): each row of a batch has its own slots and
// row buffer. Row counts around the batch size and the thread split, rows on both sides of the
// batching limit, against double references: softmax (a buffered operand), layer norm (a repeated
// phase), rms norm, reduction roots, strided rows and rows over two axes.
#include "reduce_support.hpp"

using namespace rt;

namespace {

constexpr index_t batch_limit = fuse::detail::batch_max_row_elements;

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
