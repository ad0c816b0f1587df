// Row kernels over rows strided in memory (backend/cpu/strided_rows.hpp): operands transposed,
// every other element, reversed, padded or misaligned, written into destinations in those layouts;
// per-row leaves on rows longer than the rows of copies take; full reductions with a per-row leaf
// split across threads; integer, double and 12-byte number-class rows; in place. Against double
// references, odd sizes, 1-3 threads; nothing outside a destination written.
#include "support.hpp"
#include "reduce/reduce_support.hpp"

using namespace fuse_test;
using fuse::index_t;

namespace {

constexpr layout written_layouts[] = {layout::contiguous, layout::transposed, layout::step2, layout::reversed};

// x's row r as doubles.
std::vector<double> row_of(const fuse::tensor<float, 2>& x, index_t r) {
  const index_t n = x.shape()[1];
  return std::vector<double>(x.data() + r * n, x.data() + (r + 1) * n);
}

// Each layer over x (read through `in`) into a destination in layout `l`, checked row by row.
template <class In>
void check_layers(const In& in, const fuse::tensor<float, 2>& x, const fuse::tensor<float, 1>& gamma,
                  const fuse::tensor<float, 1>& beta, layout l, int threads) {
  const index_t m = x.shape()[0], n = x.shape()[1];
  const fuse::cpu exec{threads};
  buffer<float, 2> out({m, n}, l, sentinel<float>());
  for (int layer = 0; layer < 3; ++layer) {
    out.fill_sentinel();
    if (layer == 0) fuse::assign(exec, out.view(), fuse::softmax(in, fuse::axis<-1>));
    if (layer == 1) fuse::assign(exec, out.view(), fuse::layer_norm(in, gamma, beta, 1e-5f));
    if (layer == 2) fuse::assign(exec, out.view(), fuse::rms_norm(in, gamma, 1e-5f));
    CHECK(out.touched_outside() == 0);
    const auto y = out.cview();
    for (index_t r = 0; r < m; ++r) {
      const std::vector<double> row = row_of(x, r);
      const double mean = rt::ref_mean(row), var = rt::ref_var(row);
      double sq = 0;
      for (double v : row) sq += v * v;
      const std::vector<double> soft = rt::softmax_ref(row);
      for (index_t j = 0; j < n; ++j) {
        const double ref = layer == 0   ? soft[std::size_t(j)]
                           : layer == 1 ? (row[std::size_t(j)] - mean) / std::sqrt(var + 1e-5) * gamma(j) + beta(j)
                                        : row[std::size_t(j)] / std::sqrt(sq / double(n) + 1e-5) * gamma(j);
        if (!rt::close(y(r, j), ref, 2e-5, 2e-6)) {
          FAIL_CHECK("layer " << layer << " [" << m << ", " << n << "] into " << name(l) << ", " << threads
                              << " threads: (" << r << ", " << j << ") " << y(r, j) << " vs " << ref);
          return;
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("softmax, layer norm and rms norm over strided rows, into strided destinations", "[strided]") {
  const std::pair<index_t, index_t> shapes[] = {{5, 37}, {33, 8}, {3, 1000}, {1, 257}, {70, 2}};
  for (auto [m, n] : shapes) {
    const auto x = rt::random<float, 2>({m, n}, unsigned(7 * m + n));
    const auto gamma = rt::random<float, 1>({n}, 3, 0.5, 1.5), beta = rt::random<float, 1>({n}, 4);
    for (layout il : all_layouts) {
      buffer<float, 2> in({m, n}, il, sentinel<float>());
      fuse::assign(in.view(), x);
      for (layout ol : written_layouts)
        for (int threads = 1; threads <= 3; ++threads) check_layers(in.cview(), x, gamma, beta, ol, threads);
    }
  }
}

TEST_CASE("reduction roots over strided rows: var and logsumexp into strided columns", "[strided]") {
  for (auto [m, n] : {std::pair<index_t, index_t>{9, 45}, {40, 3}, {2, 600}}) {
    const auto x = rt::random<float, 2>({m, n}, unsigned(m + 5 * n));
    for (layout il : {layout::transposed, layout::step2, layout::reversed}) {
      buffer<float, 2> in({m, n}, il, sentinel<float>());
      fuse::assign(in.view(), x);
      for (layout ol : {layout::contiguous, layout::transposed, layout::step2})
        for (int threads = 1; threads <= 3; ++threads) {
          buffer<float, 2> v({m, 1}, ol, sentinel<float>()), lse({m, 1}, ol, sentinel<float>());
          fuse::assign(fuse::cpu{threads}, v.view(), fuse::var(in.cview(), fuse::axis<-1>));
          fuse::assign(fuse::cpu{threads}, lse.view(), fuse::logsumexp(in.cview(), fuse::axis<-1>));
          CHECK(v.touched_outside() == 0);
          CHECK(lse.touched_outside() == 0);
          for (index_t r = 0; r < m; ++r) {
            const std::vector<double> row = row_of(x, r);
            const double mx = rt::ref_max(row);
            double s = 0;
            for (double e : row) s += std::exp(e - mx);
            CHECK(rt::close(v.cview()(r, 0), rt::ref_var(row), 2e-5, 1e-6));
            CHECK(rt::close(lse.cview()(r, 0), mx + std::log(s), 2e-6, 1e-6));
          }
        }
    }
  }
}

TEST_CASE("per-row leaves on rows longer than rows of copies, and full reductions split across threads", "[strided]") {
  // Rows of 65539 floats (over splat_max_row): t[m, 1] read through whole rows of copies; rows of
  // 2^20 + 5 (over copies_max_row): split across threads, each part in windows of copies.
  for (auto [m, n] : {std::pair<index_t, index_t>{3, (index_t(1) << 16) + 3}, {2, (index_t(1) << 20) + 5}}) {
    const auto x = rt::random<float, 2>({m, n}, 11);
    const auto t = rt::random<float, 2>({m, 1}, 12, 0.5, 2);
    for (int threads = 1; threads <= 3; ++threads) {
      fuse::tensor<float, 2> y(m, n);
      fuse::assign(fuse::cpu{threads}, y, fuse::softmax(x * t, fuse::axis<-1>));
      for (index_t r = 0; r < m; ++r) {
        std::vector<double> row = row_of(x, r);
        for (double& v : row) v *= t(r, 0);
        const std::vector<double> soft = rt::softmax_ref(row);
        index_t bad = 0;
        for (index_t j = 0; j < n; ++j) bad += !rt::close(y(r, j), soft[std::size_t(j)], 2e-5, 1e-9);
        CHECK(bad == 0);
      }
    }
  }
  // One row over both axes (fewer rows than threads): s[k, 1] and mean(z, axis<-1>) stay put
  // along the row's last axis, read through each thread's rows of copies.
  const index_t k = 301, w = 77;
  const auto z = rt::random<float, 2>({k, w}, 13);
  const auto s = rt::random<float, 2>({k, 1}, 14);
  double ref_scaled = 0, ref_centred = 0;
  for (index_t r = 0; r < k; ++r) {
    const std::vector<double> row(z.data() + r * w, z.data() + (r + 1) * w);
    const double mean = rt::ref_mean(row);
    for (double v : row) ref_scaled += v * s(r, 0), ref_centred += (v - mean) * (v - mean);
  }
  for (int threads = 1; threads <= 3; ++threads) {
    const fuse::cpu exec{threads};
    CHECK(rt::close(fuse::eval(exec, fuse::sum(z * s)), ref_scaled, 1e-5, 1e-4));
    CHECK(rt::close(fuse::eval(exec, fuse::sum(fuse::square(z - fuse::mean(z, fuse::axis<-1>)))), ref_centred, 1e-5, 1e-4));
    CHECK(rt::close(fuse::eval(exec, fuse::sum(fuse::transpose(z) * fuse::transpose(s))), ref_scaled, 1e-5, 1e-4));
  }
}

TEST_CASE("a transposed leaf broadcast over a batch is copied once, a transpose of few columns by pieces", "[strided]") {
  // softmax(x + transpose(a)) over [B, S, S]: a's copy keeps S x S (stride 0 along the batch).
  const index_t B = 3, S = 45;
  const auto x = rt::random<float, 3>({B, S, S}, 31);
  const auto a = rt::random<float, 2>({S, S}, 32);
  // A [70000, 3] operand read transposed: rows of 70000 (over splat_max_row) copied in pieces.
  const auto narrow = rt::random<float, 2>({70000, 3}, 33);
  for (int threads = 1; threads <= 3; ++threads) {
    fuse::tensor<float, 3> y(B, S, S);
    fuse::assign(fuse::cpu{threads}, y, fuse::softmax(x + fuse::transpose(a), fuse::axis<-1>));
    index_t bad = 0;
    for (index_t b = 0; b < B; ++b)
      for (index_t r = 0; r < S; ++r) {
        std::vector<double> row;
        for (index_t j = 0; j < S; ++j) row.push_back(double(x(b, r, j)) + a(j, r));
        const std::vector<double> soft = rt::softmax_ref(row);
        for (index_t j = 0; j < S; ++j) bad += !rt::close(y(b, r, j), soft[std::size_t(j)], 2e-5, 1e-9);
      }
    CHECK(bad == 0);
    fuse::tensor<float, 2> z(3, 70000);
    fuse::assign(fuse::cpu{threads}, z, fuse::layer_norm(fuse::transpose(narrow), 1.f, 0.f, 1e-5));
    bad = 0;
    for (index_t r = 0; r < 3; ++r) {
      std::vector<double> row;
      for (index_t j = 0; j < 70000; ++j) row.push_back(narrow(j, r));
      const double mean = rt::ref_mean(row), sd = std::sqrt(rt::ref_var(row) + 1e-5);
      for (index_t j = 0; j < 70000; ++j) bad += !rt::close(z(r, j), (row[std::size_t(j)] - mean) / sd, 1e-4, 1e-5);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("strided rows of 1, 2 and 8-byte elements, and in place", "[strided]") {
  const index_t m = 19, n = 23;
  // int8 sums and maxima over transposed rows (exact), double softmax over every other element.
  fuse::tensor<std::int8_t, 2> b(n, m);
  for (index_t i = 0; i < b.size(); ++i) b.data()[i] = std::int8_t((i * 37) % 101 - 50);
  fuse::tensor<std::int64_t, 2> total(m, 1);
  fuse::tensor<std::int16_t, 2> top(m, 1);
  for (int threads = 1; threads <= 2; ++threads) {
    fuse::assign(fuse::cpu{threads}, total, fuse::sum(fuse::cast<std::int64_t>(fuse::transpose(b)), fuse::axis<-1>));
    fuse::assign(fuse::cpu{threads}, top, fuse::cast<std::int16_t>(fuse::max(fuse::transpose(b), fuse::axis<-1>)) * std::int16_t(3));
    for (index_t r = 0; r < m; ++r) {
      std::int64_t s = 0;
      int mx = -128;
      for (index_t j = 0; j < n; ++j) s += b(j, r), mx = std::max<int>(mx, b(j, r));
      CHECK(total(r, 0) == s);
      CHECK(top(r, 0) == 3 * mx);
    }
  }
  const auto wide = rt::random<double, 2>({m, 2 * n}, 21);
  fuse::tensor<double, 2> y(m, n);
  fuse::assign(fuse::cpu{2}, y, fuse::softmax(fuse::slice<1>(wide, 0, 2 * n, 2), fuse::axis<-1>));
  for (index_t r = 0; r < m; ++r) {
    std::vector<double> row;
    for (index_t j = 0; j < n; ++j) row.push_back(wide(r, 2 * j));
    const std::vector<double> soft = rt::softmax_ref(row);
    for (index_t j = 0; j < n; ++j) CHECK(rt::close(y(r, j), soft[std::size_t(j)], 1e-13, 0));
  }
  // In place over a transposed view: the result of a fresh tensor.
  auto x = rt::random<float, 2>({n, m}, 22);
  const auto before = fuse::eval(x);
  auto xt = fuse::transpose(x);
  fuse::assign(fuse::cpu{2}, xt, fuse::softmax(xt, fuse::axis<-1>));
  for (index_t r = 0; r < m; ++r) {
    std::vector<double> row;
    for (index_t j = 0; j < n; ++j) row.push_back(before(j, r));
    const std::vector<double> soft = rt::softmax_ref(row);
    for (index_t j = 0; j < n; ++j) CHECK(rt::close(x(j, r), soft[std::size_t(j)], 2e-6, 1e-9));
  }
}

namespace {
// A 12-byte number class (fuse takes any trivially copyable class convertible to float): its
// strided rows are copied by copy_strided's element-by-element path, not one of its 1, 2, 4 or
// 8-byte loops. The padding holds a marker that a copy of the wrong size would move into v.
struct float_with_tag {
  float v;
  float tag[2];
  float_with_tag() = default;
  float_with_tag(float x) : v(x), tag{-1e30f, -1e30f} {}
  operator float() const { return v; }
};
}  // namespace

TEST_CASE("strided rows of a 12-byte number class", "[strided]") {
  static_assert(sizeof(float_with_tag) == 12);
  const index_t m = 13, n = 29;
  const auto src = rt::random<float, 2>({n, m}, 23);
  fuse::tensor<float_with_tag, 2> x(n, m);
  for (index_t i = 0; i < x.size(); ++i) x.data()[i] = float_with_tag(src.data()[i]);
  fuse::tensor<float, 2> y(m, n);
  for (int threads = 1; threads <= 2; ++threads) {
    fuse::assign(fuse::cpu{threads}, y, fuse::softmax(fuse::transpose(x), fuse::axis<-1>));
    for (index_t r = 0; r < m; ++r) {
      std::vector<double> row;
      for (index_t j = 0; j < n; ++j) row.push_back(src(j, r));
      const std::vector<double> soft = rt::softmax_ref(row);
      for (index_t j = 0; j < n; ++j) CHECK(rt::close(y(r, j), soft[std::size_t(j)], 2e-6, 1e-9));
    }
  }
}

// Row kernels into a transposed destination of over 16 MiB: the contiguous temporary's copy out
// streams a tile column at a time (4- and 8-byte words as floats and doubles), into an aligned and
// a misaligned y.
TEST_CASE("softmax and layer norm into a transposed destination of over 16 MiB", "[strided][large]") {
  const index_t m = 4099, n = 1024;  // 16.8 MB of floats out
  const auto x = rt::random<float, 2>({m, n}, 24);
  for (layout l : {layout::contiguous, layout::misaligned}) {
    INFO("floats into a transposed " << name(l) << " y");
    buffer<float, 2> y({n, m}, l, sentinel<float>());
    auto yt = fuse::transpose(y.view());
    fuse::assign(fuse::cpu{2}, yt, fuse::softmax(x, fuse::axis<-1>));
    CHECK(y.touched_outside() == 0);
    const auto v = y.cview();
    index_t bad = 0;
    for (index_t r = 0; r < m; ++r) {
      const std::vector<double> soft = rt::softmax_ref(row_of(x, r));
      for (index_t j = 0; j < n; ++j) bad += !rt::close(v(j, r), soft[std::size_t(j)], 2e-5, 2e-6);
    }
    CHECK(bad == 0);
  }
  const index_t md = 2053;  // 16.8 MB of doubles out
  const auto xd = rt::random<double, 2>({md, n}, 25);
  const auto gamma = rt::random<double, 1>({n}, 26), beta = rt::random<double, 1>({n}, 27);
  fuse::tensor<double, 2> yd(n, md);
  auto ydt = fuse::transpose(yd);
  fuse::assign(fuse::cpu{2}, ydt, fuse::layer_norm(xd, gamma, beta, 1e-5));
  index_t bad = 0;
  for (index_t r = 0; r < md; ++r) {
    const std::vector<double> row(xd.data() + r * n, xd.data() + (r + 1) * n);
    const double mean = rt::ref_mean(row), sd = std::sqrt(rt::ref_var(row) + 1e-5);
    for (index_t j = 0; j < n; ++j)
      bad += !rt::close(yd(j, r), (row[std::size_t(j)] - mean) / sd * gamma(j) + beta(j), 1e-12, 1e-13);
  }
  CHECK(bad == 0);
}
