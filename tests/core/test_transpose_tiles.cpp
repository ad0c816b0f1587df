// Elementwise kernels over transposed leaves or into transposed destinations, which run in tiles
// (backend/cpu/transpose_tiles.hpp): 2-D transposes of odd sizes around the tile's edges (bands
// of 512 bytes or a line of doubles, 64 or 128 columns), permutes of rank 3 and 4, transposed
// leaves beside contiguous ones, leaves of stride 0 and reversed or step-2 views, transposed
// destinations, every element size, split across 1-3 threads; nothing outside a destination
// written. Against values computed element by element from the sources (double references where
// the expression computes).
#include "support.hpp"

using namespace fuse_test;
using fuse::index_t;

namespace {

// Sizes around the tiles' edges (of the transposes [n, m]): rows under 128 (the strided loop), a
// band of 512 bytes (128 floats, 512 int8) or of 8 doubles, all of `across` where it spans up to
// 256 bytes, pieces of 64 columns (128 for doubles); big enough in the last ones for two and
// three threads (2^15 elements each).
constexpr std::pair<index_t, index_t> shapes[] = {{1, 5},     {5, 1},     {3, 200},   {200, 3},   {17, 129},
                                                  {128, 16},  {37, 53},   {130, 9},   {129, 130}, {257, 300},
                                                  {300, 257}, {403, 250}, {130, 600}};

template <class T>
T sentinel_of() {
  if constexpr (std::is_same_v<T, bool>) return true;
  else return static_cast<T>(77);
}

// y = transpose(x) for x [m, n] of T into a destination in layout `l`.
template <class T>
void check_transpose(index_t m, index_t n, layout l, int threads) {
  const auto x = random_tensor<T, 2>({m, n}, std::uint64_t(m * 1000 + n));
  buffer<T, 2> y({n, m}, l, sentinel_of<T>());
  fuse::assign(fuse::cpu{threads}, y.view(), fuse::transpose(x));
  CHECK(y.touched_outside() == 0);
  const auto v = y.cview();
  index_t wrong = 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < m; ++j) wrong += !(v(i, j) == x(j, i));
  INFO(sizeof(T) << "-byte elements, [" << m << ", " << n << "] into " << name(l) << ", " << threads << " threads");
  CHECK(wrong == 0);
}

// y = transpose(x) * 2, written plainly (y's rows) or through transpose(y) = x * 2 (the tiles'
// columns along y's rows).
void transpose_times_two(const fuse::tensor<float, 2>& x, buffer<float, 2>& y, bool through_transpose, int threads) {
  if (through_transpose) {
    auto yt = fuse::transpose(y.view());
    fuse::assign(fuse::cpu{threads}, yt, x * 2.f);
  } else {
    fuse::assign(fuse::cpu{threads}, y.view(), fuse::transpose(x) * 2.f);
  }
}

}  // namespace

// (Floats on 1-3 threads, the other types on a thread count that cycles: the sanitizer build
// runs this file too.)
TEST_CASE("transposes of every element size, into every layout, 1-3 threads", "[transpose]") {
  int k = 0;
  for (auto [m, n] : shapes)
    for (layout l : all_layouts) {
      for (int threads = 1; threads <= 3; ++threads) check_transpose<float>(m, n, l, threads);
      check_transpose<double>(m, n, l, 1 + k++ % 3);
      check_transpose<std::int16_t>(m, n, l, 1 + k++ % 3);
      check_transpose<std::int8_t>(m, n, l, 1 + k++ % 3);
      check_transpose<bool>(m, n, l, 1 + k++ % 3);
    }
}

TEST_CASE("transposed leaves computed with contiguous, broadcast and strided ones", "[transpose]") {
  for (auto [m, n] : shapes) {
    const auto x = random_tensor<float, 2>({m, n}, 11);
    const auto z = random_tensor<float, 2>({n, m}, 12);
    const auto col = random_tensor<float, 2>({n, 1}, 13);  // stride 0 along y's rows
    const auto row = random_tensor<float, 1>({m}, 14);
    const auto xd = random_tensor<double, 2>({m, n}, 15);
    for (layout il : {layout::contiguous, layout::step2, layout::reversed, layout::padded}) {
      buffer<float, 2> w({m, n}, il, 0.f);  // a second transposed leaf, in layout il
      fuse::assign(w.view(), random_tensor<float, 2>({m, n}, 16));
      const auto wv = w.cview();
      for (layout ol : {layout::contiguous, layout::transposed, layout::step2}) {
        const int threads = 1 + int(std::size_t(il) + std::size_t(ol) + std::size_t(m)) % 3;  // (cycling: CI time)
        INFO("[" << m << ", " << n << "], second leaf " << name(il) << ", into " << name(ol) << ", " << threads << " threads");
        buffer<float, 2> y({n, m}, ol, sentinel_of<float>());
        fuse::assign(fuse::cpu{threads}, y.view(),
                     fuse::transpose(x) * z + fuse::transpose(wv) * col - row + fuse::exp(fuse::transpose(xd)));
        CHECK(y.touched_outside() == 0);
        check_all(y.cview(), [&](const shape<2>& i) {
          const index_t r = i[0], c = i[1];
          return double(x(c, r)) * z(r, c) + double(wv(c, r)) * col(r, 0) - row(c) + std::exp(xd(c, r));
        });
      }
    }
  }
}

TEST_CASE("permutes of rank 3 and 4 (NCHW to NHWC and back), and a transposed destination", "[transpose]") {
  for (auto s : {shape<4>{2, 3, 5, 7}, shape<4>{1, 40, 9, 33}, shape<4>{3, 17, 2, 130}, shape<4>{2, 64, 12, 12},
                 shape<4>{2, 130, 3, 5}}) {
    const auto x = random_tensor<float, 4>(s, 21);  // NCHW
    const auto scale = random_tensor<float, 3>({s[1], 1, 1}, 22);
    for (int threads = 1; threads <= 3; ++threads) {
      INFO("NCHW " << to_string(s) << ", " << threads << " threads");
      fuse::tensor<float, 4> nhwc(s[0], s[2], s[3], s[1]);
      fuse::assign(fuse::cpu{threads}, nhwc, fuse::permute<0, 2, 3, 1>(x));
      check_all(nhwc, [&](const shape<4>& i) { return double(x(i[0], i[3], i[1], i[2])); }, 0.0, 0.0);
      // Back, with a per-channel scale read in NCHW: the destination's rows run along W.
      fuse::tensor<float, 4> back(s);
      fuse::assign(fuse::cpu{threads}, back, fuse::permute<0, 3, 1, 2>(nhwc) * scale);
      check_all(back, [&](const shape<4>& i) { return double(x(i[0], i[1], i[2], i[3])) * scale(i[1], 0, 0); });
      // Into a permuted destination: transpose(y) = x written through the tiles' buffer.
      fuse::tensor<float, 4> y(s[3], s[2], s[1], s[0]);
      fuse::assign(fuse::cpu{threads}, fuse::transpose(y), x + 1.f);
      check_all(y, [&](const shape<4>& i) { return double(x(i[3], i[2], i[1], i[0])) + 1.0; });
    }
  }
  // Rank 3: a batch of transposes, the batch axis outermost and innermost.
  const auto b = random_tensor<double, 3>({4, 70, 45}, 23);
  for (int threads = 1; threads <= 3; ++threads) {
    fuse::tensor<double, 3> t(4, 45, 70), u(45, 70, 4);
    fuse::assign(fuse::cpu{threads}, t, fuse::permute<0, 2, 1>(b) * 2.0);
    check_all(t, [&](const shape<3>& i) { return 2.0 * b(i[0], i[2], i[1]); });
    fuse::assign(fuse::cpu{threads}, u, fuse::permute<2, 1, 0>(b) - 1.0);
    check_all(u, [&](const shape<3>& i) { return b(i[2], i[1], i[0]) - 1.0; });
  }
}

TEST_CASE("a transpose in place goes through a temporary; take keeps its own loop", "[transpose]") {
  auto x = random_tensor<float, 2>({131, 131}, 31);
  const auto before = x;
  fuse::assign(fuse::cpu{2}, x, fuse::transpose(x) * 2.f);
  check_all(x, [&](const shape<2>& i) { return 2.0 * before(i[1], i[0]); });
  // take's indices transposed along the rows: the rows read the table through the index (no
  // tiles), the other leaf transposed.
  const auto table = random_tensor<float, 1>({50}, 32);
  fuse::tensor<std::int32_t, 2> idx(90, 70);
  for (index_t k = 0; k < idx.size(); ++k) idx.data()[k] = std::int32_t((k * 7) % 50);
  const auto w = random_tensor<float, 2>({90, 70}, 33);
  for (int threads = 1; threads <= 3; ++threads) {
    fuse::tensor<float, 2> y(70, 90);
    fuse::assign(fuse::cpu{threads}, y, fuse::take(table, fuse::transpose(idx)) + fuse::transpose(w));
    check_all(y, [&](const shape<2>& i) { return double(table(idx(i[1], i[0]))) + w(i[1], i[0]); });
  }
}

// Float transposes into y, plainly (y's rows) and through transpose(y) (the tiles' columns along
// y's rows), into an aligned, a misaligned and a padded y: what fuse_stream_tests (this file built
// with a 4 KiB streaming threshold; it runs the [stream] cases) writes with streaming stores.
TEST_CASE("float transposes into a plain and a transposed destination of every alignment", "[transpose][stream]") {
  int k = 0;
  for (auto [m, n] : {std::pair<index_t, index_t>{257, 300}, {403, 250}, {130, 600}}) {
    const auto x = random_tensor<float, 2>({m, n}, std::uint64_t(m + n));
    for (bool through_transpose : {false, true})
      for (layout l : {layout::contiguous, layout::misaligned, layout::padded}) {
        const int threads = 1 + k++ % 3;
        INFO("[" << m << ", " << n << "]" << (through_transpose ? " through transpose(y)" : "") << " into " << name(l)
                 << ", " << threads << " threads");
        buffer<float, 2> y({n, m}, l, sentinel_of<float>());
        transpose_times_two(x, y, through_transpose, threads);
        CHECK(y.touched_outside() == 0);
        check_all(y.cview(), [&](const shape<2>& i) { return 2.0 * x(i[1], i[0]); }, 0.0, 0.0);
      }
  }
}

// Row kernels into a transposed destination: computed into a contiguous temporary, copied out in
// the tiles (contiguous_rows::finish; streamed in fuse_stream_tests as 4- and 8-byte words).
// Floats and doubles, into an aligned, a misaligned and a padded y.
TEST_CASE("softmax and layer norm into a transposed destination", "[transpose][stream]") {
  const index_t m = 301, n = 257;
  const auto x = random_tensor<float, 2>({m, n}, 51);
  const auto xd = random_tensor<double, 2>({m, n}, 52);
  const auto gamma = random_tensor<double, 1>({n}, 53), beta = random_tensor<double, 1>({n}, 54);
  int k = 0;
  for (layout l : {layout::contiguous, layout::misaligned, layout::padded}) {
    const int threads = 1 + k++ % 3;
    INFO("into a transposed " << name(l) << " y, " << threads << " threads");
    buffer<float, 2> y({n, m}, l, sentinel_of<float>());
    auto yt = fuse::transpose(y.view());
    fuse::assign(fuse::cpu{threads}, yt, fuse::softmax(x, fuse::axis<-1>));
    CHECK(y.touched_outside() == 0);
    buffer<double, 2> yd({n, m}, l, sentinel_of<double>());
    auto ydt = fuse::transpose(yd.view());
    fuse::assign(fuse::cpu{threads}, ydt, fuse::layer_norm(xd, gamma, beta, 1e-5));
    CHECK(yd.touched_outside() == 0);
    for (index_t r = 0; r < m; ++r) {
      double mx = -1e300, total = 0, mean = 0, sq = 0;
      for (index_t j = 0; j < n; ++j) mx = std::max(mx, double(x(r, j))), mean += xd(r, j);
      for (index_t j = 0; j < n; ++j) total += std::exp(double(x(r, j)) - mx);
      mean /= double(n);
      for (index_t j = 0; j < n; ++j) sq += (xd(r, j) - mean) * (xd(r, j) - mean);
      const double sd = std::sqrt(sq / double(n) + 1e-5);
      index_t wrong = 0;
      for (index_t j = 0; j < n; ++j) {
        wrong += !close(y.cview()(j, r), std::exp(double(x(r, j)) - mx) / total, 2e-5, 1e-7);
        wrong += !close(yd.cview()(j, r), (xd(r, j) - mean) / sd * gamma(j) + beta(j), 1e-12, 1e-13);
      }
      if (wrong != 0) FAIL_CHECK("row " << r << ": " << wrong << " values wrong");
    }
  }
}

// A transpose of over 16 MiB (streaming stores) into y: plainly (y = transpose(x) * 2, y's rows
// streamed) or through transpose(y) (y's rows, the tiles' columns, streamed through a
// line-aligned row each); into an aligned and a misaligned y (every segment's head and tail
// stored normally).
TEST_CASE("a transpose of over 16 MiB, streamed into an aligned and a misaligned destination, plain or transposed",
          "[transpose][large]") {
  const index_t m = 2048, n = 2051;  // 16.8 MB of floats out
  const auto x = random_tensor<float, 2>({m, n}, 41);
  for (bool through_transpose : {false, true})
    for (layout l : {layout::contiguous, layout::misaligned})
      for (int threads = 1; threads <= 2; ++threads) {
        INFO(name(l) << (through_transpose ? ", through transpose(y), " : ", ") << threads << " threads");
        buffer<float, 2> y({n, m}, l, sentinel_of<float>());
        transpose_times_two(x, y, through_transpose, threads);
        CHECK(y.touched_outside() == 0);
        const auto v = y.cview();
        index_t wrong = 0;
        for (index_t i = 0; i < n; ++i)
          for (index_t j = 0; j < m; ++j) wrong += !(v(i, j) == 2.f * x(j, i));
        CHECK(wrong == 0);
      }
}
