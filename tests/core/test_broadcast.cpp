// NumPy broadcasting: every pattern of extent-1 axes and missing leading axes on ranks 1-4,
// stride-0 views, scalars, sizes that exercise SIMD tails and the thread split, transposed and
// misaligned inputs and outputs, and empty tensors.
#include <atomic>
#include <tuple>

#include "support.hpp"

using namespace fuse_test;

namespace {

// The shape `full` with the axes in `ones` (bit d = axis d) set to 1 and the first `drop` axes removed.
template <std::size_t R, std::size_t RA>
shape<RA> derive(const shape<R>& full, unsigned ones) {
  shape<RA> s{};
  for (std::size_t j = 0; j < RA; ++j) {
    const std::size_t d = R - RA + j;
    s[j] = (ones >> d) & 1u ? 1 : full[d];
  }
  return s;
}

// a[sa] * b[sb] - a, evaluated with `exec`, against the double reference.
template <std::size_t R, std::size_t RA, std::size_t RB, class Exec>
void check_pair(const Exec& exec, const shape<R>& out, unsigned ma, unsigned mb, std::uint64_t seed) {
  const auto sa = derive<R, RA>(out, ma);
  const auto sb = derive<R, RB>(out, mb);
  auto a = random_tensor<float, RA>(sa, seed);
  auto b = random_tensor<float, RB>(sb, seed + 1);
  CAPTURE(to_string(sa), to_string(sb));
  auto e = a * b - a;
  // The broadcast shape: each axis the larger of the two (1 only where both are 1).
  shape<(RA > RB ? RA : RB)> want{};
  constexpr std::size_t RO = RA > RB ? RA : RB;
  for (std::size_t d = 0; d < RO; ++d) {
    const index_t x = d + RA >= RO ? sa[d + RA - RO] : 1;
    const index_t y = d + RB >= RO ? sb[d + RB - RO] : 1;
    want[d] = x > y ? x : y;
  }
  REQUIRE(e.shape() == want);
  auto t = fuse::eval(exec, e);
  check_all(t, [&](const shape<RO>& i) {
    const double av = at(a, broadcast_index(i, sa)), bv = at(b, broadcast_index(i, sb));
    return av * bv - av;
  });
}

template <std::size_t R, std::size_t RA, std::size_t RB, class Exec>
void all_masks(const Exec& exec, const shape<R>& out) {
  for (unsigned ma = 0; ma < (1u << R); ++ma)
    for (unsigned mb = 0; mb < (1u << R); ++mb) check_pair<R, RA, RB>(exec, out, ma, mb, 1000 + ma * 37 + mb);
}

}  // namespace

TEST_CASE("broadcast matrix: ranks 1-4, extents of 1 on either side, missing leading axes", "[core][broadcast]") {
  const fuse::cpu exec{};
  all_masks<1, 1, 1>(exec, shape<1>{7});
  all_masks<2, 2, 2>(exec, shape<2>{3, 5});
  all_masks<2, 2, 1>(exec, shape<2>{3, 5});
  all_masks<2, 1, 2>(exec, shape<2>{3, 5});
  all_masks<3, 3, 3>(exec, shape<3>{2, 3, 4});
  all_masks<3, 3, 1>(exec, shape<3>{2, 3, 4});
  all_masks<3, 2, 3>(exec, shape<3>{2, 3, 4});
  all_masks<4, 4, 4>(exec, shape<4>{2, 3, 4, 5});
  all_masks<4, 4, 2>(exec, shape<4>{2, 3, 4, 5});
  all_masks<4, 1, 4>(exec, shape<4>{2, 3, 4, 5});
  all_masks<4, 3, 4>(exec, shape<4>{3, 2, 1, 17});
}

TEST_CASE("broadcast: one thread and eager give the same results", "[core][broadcast]") {
  all_masks<3, 3, 2>(fuse::cpu{.threads = 1}, shape<3>{3, 4, 5});
  all_masks<3, 3, 3>(fuse::eager(fuse::cpu{}), shape<3>{2, 3, 4});
  all_masks<2, 1, 2>(fuse::eager(fuse::cpu{.threads = 1}), shape<2>{4, 6});
}

TEST_CASE("broadcast: scalar operands of every side and kind", "[core][broadcast]") {
  auto x = random_tensor<float, 3>({2, 3, 5}, 201);
  check_all(fuse::eval(2.5f - x), [&](const shape<3>& i) { return 2.5 - at(x, i); });
  check_all(fuse::eval(x / 4), [&](const shape<3>& i) { return at(x, i) / 4.0; });
  check_all(fuse::eval(3.0 * x + 1), [&](const shape<3>& i) { return 3.0 * at(x, i) + 1.0; });
  check_all(fuse::eval(fuse::where(x > 0.f, 1, -1) * x), [&](const shape<3>& i) { return std::fabs(at(x, i)); });
  // A rank-0 tensor is an operand like any other.
  fuse::tensor<float, 0> s{fuse::shape_t<0>{}};
  *s.data() = -1.75f;
  check_all(fuse::eval(x * s), [&](const shape<3>& i) { return -1.75 * at(x, i); });
}

TEST_CASE("broadcast: stride-0 views as operands", "[core][broadcast]") {
  const index_t m = 37, n = 19;
  std::vector<double> buf(std::size_t(m * n));
  fill_random(buf.data(), index_t(buf.size()), 202);
  auto x = random_tensor<double, 3>({3, m, n}, 203);
  // A row stretched along axis 0 by a zero stride, a column stretched along axis 1, and a value.
  auto rows = fuse::view(buf.data(), shape<2>{m, n}, shape<2>{0, 1});
  auto cols = fuse::view(buf.data() + 2, shape<2>{m, n}, shape<2>{n, 0});
  auto one = fuse::view(buf.data() + 7, shape<3>{3, m, n}, shape<3>{0, 0, 0});
  auto y = fuse::eval(x * rows + cols - one);
  check_all(y, [&](const shape<3>& i) {
    return at(x, i) * buf[std::size_t(i[2])] + buf[std::size_t(2 + i[1] * n)] - buf[7];
  });
  // Stride 0 on an extent-1 axis of an operand is the same as any stride.
  auto flat = fuse::view(buf.data(), shape<3>{1, m, n}, shape<3>{0, n, 1});
  check_all(fuse::eval(x - flat), [&](const shape<3>& i) { return at(x, i) - buf[std::size_t(i[1] * n + i[2])]; });
}

TEST_CASE("broadcast: odd sizes (SIMD tails, thread split)", "[core][broadcast]") {
  for (index_t n : {1, 2, 3, 15, 17, 31, 33, 1023, 4097, 32767, 32768, 65537, 100003}) {
    CAPTURE(n);
    auto a = random_tensor<float, 1>({n}, 204 + std::uint64_t(n));
    auto b = random_tensor<float, 1>({n}, 205 + std::uint64_t(n));
    for (int threads : {0, 1, 2, 3}) {
      CAPTURE(threads);
      fuse::tensor<float, 1> y(n);
      fuse::assign(fuse::cpu{.threads = threads}, y, a * b + 0.5f);
      check_all(y, [&](const shape<1>& i) { return at(a, i) * at(b, i) + 0.5; });
    }
    // Broadcasting a rank-1 vector across rows of a [3, n] / [n, 3] matrix.
    auto m = random_tensor<float, 2>({3, n}, 206);
    check_all(fuse::eval(m - a), [&](const shape<2>& i) { return at(m, i) - at(a, shape<1>{i[1]}); });
    auto c = fuse::reshape(a, n, 1);
    auto row3 = random_tensor<float, 1>({3}, 207);
    check_all(fuse::eval(c * row3), [&](const shape<2>& i) { return at(a, shape<1>{i[0]}) * at(row3, shape<1>{i[1]}); });
  }
}

TEST_CASE("broadcast: large 2-D shapes split across threads", "[core][broadcast]") {
  const shape<2> s{301, 517};
  auto x = random_tensor<float, 2>(s, 208);
  auto col = random_tensor<float, 2>({301, 1}, 209);
  auto row = random_tensor<float, 1>({517}, 210);
  for (int threads : {0, 1, 2, 5}) {
    CAPTURE(threads);
    const fuse::cpu exec{.threads = threads};
    auto y = fuse::eval(exec, x * col + row);
    check_all(y, [&](const shape<2>& i) { return at(x, i) * at(col, shape<2>{i[0], 0}) + at(row, shape<1>{i[1]}); });
    // Outer product of a column and a row: neither operand has the full shape.
    auto o = fuse::eval(exec, col - row);
    CHECK(o.shape() == s);
    check_all(o, [&](const shape<2>& i) { return at(col, shape<2>{i[0], 0}) - at(row, shape<1>{i[1]}); });
    // Transposed input (non-unit inner stride) at this size.
    auto xt = random_tensor<float, 2>({517, 301}, 211);
    auto z = fuse::eval(exec, fuse::transpose(xt) + x);
    check_all(z, [&](const shape<2>& i) { return at(xt, shape<2>{i[1], i[0]}) + at(x, i); });
  }
  // A rank-3 thread split over [7, 301, 517]/[301, 1]: the row offset of every thread's start.
  auto big = random_tensor<float, 3>({7, 61, 517}, 212);
  auto c3 = random_tensor<float, 2>({61, 1}, 213);
  auto w = fuse::eval(fuse::cpu{.threads = 3}, big / c3);
  check_all(w, [&](const shape<3>& i) { return at(big, i) / at(c3, shape<2>{i[1], 0}); }, 1e-6);
}

TEST_CASE("broadcast: transposed, padded, strided, reversed and misaligned inputs", "[core][broadcast]") {
  for (const shape<2> s : {shape<2>{1, 1}, shape<2>{3, 17}, shape<2>{17, 3}, shape<2>{33, 129}, shape<2>{301, 517}}) {
    for (layout la : all_layouts) {
      for (layout lb : {layout::contiguous, layout::misaligned, layout::transposed}) {
        CAPTURE(to_string(s), name(la), name(lb));
        buffer<float, 2> a(s, la, sentinel<float>());
        a.fill_random(214);
        buffer<float, 1> b(shape<1>{s[1]}, lb == layout::transposed ? layout::reversed : lb, sentinel<float>());
        b.fill_random(215);
        auto av = a.cview();
        auto bv = b.cview();
        auto y = fuse::eval(av * 2.f - bv);
        check_all(y, [&](const shape<2>& i) { return 2.0 * at(av, i) - at(bv, shape<1>{i[1]}); });
      }
    }
  }
}

TEST_CASE("broadcast: transposed, padded, strided, reversed and misaligned outputs", "[core][broadcast]") {
  for (const shape<2> s : {shape<2>{1, 1}, shape<2>{3, 17}, shape<2>{17, 3}, shape<2>{33, 129}, shape<2>{301, 517}}) {
    auto x = random_tensor<float, 2>(s, 216);
    auto r = random_tensor<float, 1>({s[1]}, 217);
    for (layout l : all_layouts) {
      CAPTURE(to_string(s), name(l));
      buffer<float, 2> out(s, l, sentinel<float>());
      auto y = out.view();
      y = x - r;
      check_all(y, [&](const shape<2>& i) { return at(x, i) - at(r, shape<1>{i[1]}); });
      CHECK(out.touched_outside() == 0);
      // Both sides strided the same way, and a scalar fill.
      buffer<float, 2> in(s, l, 0.f);
      in.fill_random(218);
      fuse::assign(fuse::cpu{.threads = 1}, y, in.cview() + r);
      check_all(y, [&](const shape<2>& i) { return at(in.cview(), i) + at(r, shape<1>{i[1]}); });
      y = 3.5f;
      check_all(y, [](const shape<2>&) { return 3.5; });
      CHECK(out.touched_outside() == 0);
      CHECK(out.untouched_inside() == 0);
    }
  }
}

TEST_CASE("broadcast: rank-4 outputs with strided layouts and threads", "[core][broadcast]") {
  const shape<4> s{3, 5, 7, 331};  // 34755 elements: two threads
  auto a = random_tensor<double, 4>({3, 1, 7, 331}, 219);
  auto b = random_tensor<double, 3>({5, 1, 1}, 220);
  for (layout l : all_layouts) {
    CAPTURE(name(l));
    buffer<double, 4> out(s, l, sentinel<double>());
    fuse::assign(out.view(), a + b * a);
    check_all(out.view(), [&](const shape<4>& i) {
      const double av = at(a, shape<4>{i[0], 0, i[2], i[3]});
      return av + at(b, shape<3>{i[1], 0, 0}) * av;
    });
    CHECK(out.touched_outside() == 0);
  }
}

TEST_CASE("broadcast: empty tensors do nothing and do not crash", "[core][broadcast][empty]") {
  fuse::tensor<float, 2> a(0, 5);
  auto b = random_tensor<float, 1>({5}, 221);
  auto e = a + b;
  CHECK(e.shape() == shape<2>{0, 5});
  auto t = fuse::eval(e);
  CHECK(t.shape() == shape<2>{0, 5});
  CHECK(t.size() == 0);

  fuse::tensor<float, 2> c(3, 0);
  fuse::tensor<float, 1> z(0);
  CHECK(fuse::eval(c * z).shape() == shape<2>{3, 0});
  CHECK(fuse::eval(fuse::cpu{.threads = 1}, c - 1.f).shape() == shape<2>{3, 0});
  CHECK(fuse::eval(fuse::eager(fuse::cpu{}), fuse::exp(c) * 2.f + c).shape() == shape<2>{3, 0});
  // [3, 0] with a [1] operand and a [3, 1] operand: still [3, 0].
  fuse::tensor<float, 1> one(1);
  *one.data() = 2.f;
  auto col = random_tensor<float, 2>({3, 1}, 222);
  CHECK((c + one + col).shape() == shape<2>{3, 0});
  fuse::assign(c, c + one + col);
  c = 0.f;
  // Empty destinations and views over null pointers.
  fuse::assign(fuse::view(static_cast<float*>(nullptr), 0), 1.f);
  fuse::assign(fuse::view(static_cast<float*>(nullptr), 4, 0), z);
  fuse::assign(fuse::view(static_cast<float*>(nullptr), 4, 0), one * 3.f);
  // As NumPy: a [5] cannot be written into [4, 0] (5 does not stretch to 0).
  CHECK_THROWS_AS(fuse::assign(fuse::view(static_cast<float*>(nullptr), 4, 0), b), fuse::shape_error);
}

TEST_CASE("broadcast: an extent of 0 does not stretch against another extent", "[core][broadcast][empty][errors]") {
  fuse::tensor<float, 1> z(0);
  auto x = random_tensor<float, 1>({3}, 223);
  CHECK_THROWS_AS(z + x, fuse::shape_error);
  fuse::tensor<float, 2> e(0, 4);
  CHECK_THROWS_AS(e + x, fuse::shape_error);
  fuse::tensor<float, 2> y(2, 3);
  CHECK_THROWS_AS(fuse::assign(y, z), fuse::shape_error);
}

TEST_CASE("broadcast: leaves of stride 0 along the row (x * s[M, 1], NCHW * s[C, 1, 1])", "[core][broadcast]") {
  // Such a leaf is read from a row of copies so that the contiguous loop runs (backend/cpu/splat.hpp).
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    auto x = random_tensor<float, 4>({3, 5, 7, 9}, 501);
    auto s = random_tensor<float, 3>({5, 1, 1}, 502);
    auto b = random_tensor<float, 3>({5, 1, 1}, 503);
    fuse::tensor<float, 4> y(3, 5, 7, 9);
    auto z = x * s;
    fuse::assign(exec, y, z * z + b - s);  // z twice: a shared subtree holding the leaf
    check_all(y, [&](const shape<4>& i) {
      const double zz = double(x(i[0], i[1], i[2], i[3])) * s(i[1], 0, 0);
      return zz * zz + b(i[1], 0, 0) - s(i[1], 0, 0);
    });
    // Two such leaves of other types, into a double destination; an int8 per-row offset.
    auto rows = random_tensor<double, 2>({33, 1}, 504);
    fuse::tensor<std::int8_t, 2> off(33, 1);
    for (index_t r = 0; r < 33; ++r) off(r, 0) = std::int8_t(r * 7 - 100);
    auto m = random_tensor<double, 2>({33, 65}, 505);
    fuse::tensor<double, 2> w(33, 65);
    fuse::assign(exec, w, m * rows + off);
    check_all(w, [&](const shape<2>& i) { return m(i[0], i[1]) * rows(i[0], 0) + off(i[0], 0); });
    // A stride-0 view as the operand, and rows longer than the copies are made for (strided loop).
    std::vector<float> per_row{1.5f, -2.f, 0.25f};
    auto col = fuse::view(per_row.data(), shape<2>{3, 70001}, shape<2>{1, 0});
    auto v = random_tensor<float, 2>({3, 70001}, 506);
    fuse::tensor<float, 2> u(3, 70001);
    fuse::assign(exec, u, v * col);
    check_all(u, [&](const shape<2>& i) { return double(v(i[0], i[1])) * per_row[std::size_t(i[0])]; });
    auto short_rows = fuse::view(per_row.data(), shape<2>{3, 4097}, shape<2>{1, 0});
    auto v2 = random_tensor<float, 2>({3, 4097}, 507);
    fuse::tensor<float, 2> u2(3, 4097);
    fuse::assign(exec, u2, v2 - short_rows);
    check_all(u2, [&](const shape<2>& i) { return double(v2(i[0], i[1])) - per_row[std::size_t(i[0])]; });
  }
}

TEST_CASE("broadcast: rows of copies through one window a row (NCHW batch norm, ranges starting mid-row)", "[core][broadcast]") {
  // Rows longer than splat_chunk run chunk by chunk, every chunk of a row reading one window of
  // copies written before the row's first chunk (splat.hpp). 1-4 threads start their ranges
  // inside rows and off the chunk grid, so a row's first chunk is shorter than the next ones
  // (each thread takes at least 32768 elements: both kernels have enough for 4).
  for (int threads : {1, 2, 3, 4}) {
    CAPTURE(threads);
    const fuse::cpu exec{.threads = threads};
    // An inference batch norm over planes of 61 x 67 (rows of 4087): three leaves of stride 0
    // along the row and a hoisted rsqrt per row.
    auto x = random_tensor<float, 4>({5, 7, 61, 67}, 521);
    auto mean = random_tensor<float, 3>({7, 1, 1}, 522), gamma = random_tensor<float, 3>({7, 1, 1}, 523);
    auto beta = random_tensor<float, 3>({7, 1, 1}, 524);
    auto var = fuse::eval(fuse::abs(random_tensor<float, 3>({7, 1, 1}, 525)) + 0.1f);
    fuse::tensor<float, 4> y(5, 7, 61, 67);
    fuse::assign(exec, y, fuse::relu((x - mean) * fuse::rsqrt(var + 1e-5f) * gamma + beta));
    check_all(y, [&](const shape<4>& i) {
      const index_t c = i[1];
      const double v = (double(x(i[0], i[1], i[2], i[3])) - mean(c, 0, 0)) / std::sqrt(double(var(c, 0, 0)) + 1e-5) * gamma(c, 0, 0) + beta(c, 0, 0);
      return std::max(v, 0.0);
    }, 1e-5);
    // Rows of 1000 doubles with a double and an int8 per-row operand, into a misaligned destination.
    auto m = random_tensor<double, 2>({140, 1000}, 526);
    auto rows = random_tensor<double, 2>({140, 1}, 527);
    fuse::tensor<std::int8_t, 2> off(140, 1);
    for (index_t r = 0; r < 140; ++r) off(r, 0) = std::int8_t(r % 70 * 3 - 100);
    buffer<double, 2> out({140, 1000}, layout::misaligned, -7.0);
    fuse::assign(exec, out.view(), m * rows + off);
    check_all(out.view(), [&](const shape<2>& i) { return m(i[0], i[1]) * rows(i[0], 0) + off(i[0], 0); });
    CHECK(out.touched_outside() == 0);
  }
}

TEST_CASE("broadcast: a leaf of stride 0 along the rows of a streamed output (16 MiB and more)", "[core][broadcast][large]") {
  auto big = random_tensor<float, 2>({1024, 4099}, 508);
  auto scale = random_tensor<float, 2>({1024, 1}, 509);
  fuse::tensor<float, 2> out(1024, 4099);
  fuse::assign(fuse::cpu{.threads = 2}, out, big * scale + 1.f);
  check_all(out, [&](const shape<2>& i) { return double(big(i[0], i[1])) * scale(i[0], 0) + 1.0; });
}

TEST_CASE("broadcast: short rows with a leaf broadcast along them run several at a time (x[M, 3] - mean[3])", "[core][broadcast]") {
  // Rows of under 256 elements whose broadcast leaves repeat one row are run as tiles of rows
  // (backend/cpu/tile.hpp). Tiles stop at the end of the next-to-last axis and of each thread's
  // range (threads start mid-row), and a leaf that changes along an outer axis is copied again.
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    const fuse::cpu exec{.threads = threads};
    for (index_t m : {1, 2, 7, 1001, 40001}) {
      CAPTURE(m);
      auto x = random_tensor<float, 2>({m, 3}, 601);
      auto mu = random_tensor<float, 1>({3}, 602);
      auto sd = random_tensor<float, 1>({3}, 603);
      fuse::tensor<float, 2> y(m, 3);
      fuse::assign(exec, y, (x - mu) * sd);
      check_all(y, [&](const shape<2>& i) { return (double(x(i[0], i[1])) - mu(i[1])) * sd(i[1]); });
    }
    // Rank 3: the broadcast leaf changes along axis 0 (copied again there), rows of 13 per tile run.
    auto x3 = random_tensor<float, 3>({5, 13, 6}, 604);
    auto c3 = random_tensor<float, 3>({5, 1, 6}, 605);
    fuse::tensor<float, 3> y3(5, 13, 6);
    fuse::assign(exec, y3, x3 * c3 + c3);
    check_all(y3, [&](const shape<3>& i) { return double(x3(i[0], i[1], i[2])) * c3(i[0], 0, i[2]) + c3(i[0], 0, i[2]); });
    // A crop that keeps the axes from merging (rows of 6, 13 per outer index, 120 apart): a
    // thread starting mid-way along axis 1 makes a short first tile, then longer ones over the
    // same broadcast row (found by a review: the copies stopped at the first tile's length).
    auto big = random_tensor<float, 3>({1000, 20, 6}, 612);  // 78000 elements: over the threads' threshold
    auto crop = fuse::slice<1>(big, 0, 13);
    auto b6 = random_tensor<float, 1>({6}, 613);
    fuse::tensor<float, 3> yc(1000, 13, 6);
    fuse::assign(exec, yc, crop + b6);
    check_all(yc, [&](const shape<3>& i) { return double(big(i[0], i[1], i[2])) + b6(i[2]); });
    // Two broadcast leaves of other types into a double destination, a misaligned input, an
    // image of 3 channels.
    buffer<float, 3> img({45, 47, 3}, layout::misaligned, sentinel<float>());
    img.fill_random(606);
    auto chan = random_tensor<double, 1>({3}, 607);
    fuse::tensor<std::int8_t, 1> off(3);
    off(0) = -7, off(1) = 3, off(2) = 100;
    fuse::tensor<double, 3> out(45, 47, 3);
    fuse::assign(exec, out, img.cview() * chan + off);
    auto iv = img.cview();
    check_all(out, [&](const shape<3>& i) { return double(iv(i[0], i[1], i[2])) * chan(i[2]) + off(i[2]); });
    // Integer rows of 5, and a padded destination (rows do not run on: one row at a time).
    fuse::tensor<int, 2> k(333, 5), kb(1, 5), kout(333, 5);
    for (index_t i = 0; i < k.size(); ++i) k.data()[i] = int(i * 37 % 101) - 50;
    for (index_t j = 0; j < 5; ++j) kb(0, j) = int(j * 11) - 20;
    fuse::assign(exec, kout, k * kb - k);
    check_all(kout, [&](const shape<2>& i) { return double(k(i[0], i[1])) * kb(0, i[1]) - k(i[0], i[1]); });
    buffer<float, 2> padded({1001, 3}, layout::padded, sentinel<float>());
    auto xp = random_tensor<float, 2>({1001, 3}, 608);
    auto bp = random_tensor<float, 1>({3}, 609);
    fuse::assign(exec, padded.view(), xp + bp);
    CHECK(padded.touched_outside() == 0);
    check_all(padded.cview(), [&](const shape<2>& i) { return double(xp(i[0], i[1])) + bp(i[1]); });
  }
}

TEST_CASE("broadcast: short rows with a leaf constant along them run several at a time (boxes[n, 4] * s[n, 1])", "[core][broadcast]") {
  // Such a leaf is spread into a tile's buffer, each row's element n times (backend/cpu/tile.hpp);
  // alone it made the rows strided (rows under 16) or filled a row of copies per row.
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    const fuse::cpu exec{.threads = threads};
    for (index_t n : {2, 4, 5, 20, 255, 300}) {
      CAPTURE(n);
      const index_t m = 70001 / n + 3;  // over the threads' threshold, rows split mid-row
      auto x = random_tensor<float, 2>({m, n}, 620);
      auto s = random_tensor<float, 2>({m, 1}, 621);
      auto b = random_tensor<float, 1>({n}, 622);
      fuse::tensor<float, 2> y(m, n);
      fuse::assign(exec, y, x * s + b);
      check_all(y, [&](const shape<2>& i) { return double(x(i[0], i[1])) * s(i[0], 0) + b(i[1]); });
    }
    // Rank 3 with a crop (axes stay apart): a per-row leaf [A, B, 1], a scalar-like [1, 1, 1], int8.
    auto big = random_tensor<float, 3>({700, 20, 4}, 623);
    auto crop = fuse::slice<1>(big, 1, 14);
    auto per = random_tensor<double, 3>({700, 13, 1}, 624);
    fuse::tensor<std::int8_t, 3> one(1, 1, 1);
    one(0, 0, 0) = -3;
    fuse::tensor<double, 3> z(700, 13, 4);
    fuse::assign(exec, z, crop * per + one);
    check_all(z, [&](const shape<3>& i) { return double(big(i[0], i[1] + 1, i[2])) * per(i[0], i[1], 0) - 3.0; });
    // A misaligned input and a per-row leaf inside a shared subtree (used twice).
    buffer<float, 2> mis({9001, 3}, layout::misaligned, sentinel<float>());
    mis.fill_random(625);
    auto w = random_tensor<float, 2>({9001, 1}, 626);
    auto u = mis.cview() * w;
    fuse::tensor<float, 2> o(9001, 3);
    fuse::assign(exec, o, u * u - w);
    auto mv = mis.cview();
    check_all(o, [&](const shape<2>& i) {
      const double v = double(mv(i[0], i[1])) * w(i[0], 0);
      return v * v - w(i[0], 0);
    });
  }
}

TEST_CASE("broadcast: short rows of a streamed output run several at a time (16 MiB and more)", "[core][broadcast][large]") {
  auto x = random_tensor<float, 2>({(index_t(1) << 21) + 3, 3}, 610);
  auto b = random_tensor<float, 1>({3}, 611);
  fuse::tensor<float, 2> y((index_t(1) << 21) + 3, 3);
  fuse::assign(fuse::cpu{.threads = 2}, y, x - b);
  check_all(y, [&](const shape<2>& i) { return double(x(i[0], i[1])) - b(i[1]); });
}

namespace {
// An identity map that counts its calls: how often a hoisted subtree was evaluated.
auto counting_identity(std::atomic<long>& calls) {
  return [&calls](float v) {
    calls.fetch_add(1, std::memory_order_relaxed);
    return v;
  };
}
}  // namespace

// An expensive subtree of operands that vary only along the row is computed once per thread into
// a row of values (backend/cpu/hoist.hpp). A counting map inside it tells whether it was.
TEST_CASE("broadcast: an expensive function of a row operand is computed once per thread (x * exp(b[N]))", "[core][broadcast]") {
  std::atomic<long> calls{0};
  const auto count = counting_identity(calls);
  for (auto [m, n, threads] : {std::tuple<index_t, index_t, int>{37, 1029, 1}, {101, 1029, 3}, {5, 3, 1}}) {
    CAPTURE(m, n, threads);
    auto x = random_tensor<float, 2>({m, n}, 601);
    auto b = random_tensor<float, 1>({n}, 602);
    fuse::tensor<float, 2> y(m, n);
    calls = 0;
    fuse::assign(fuse::cpu{.threads = threads}, y, x * fuse::exp(fuse::map(count, b)) + b);
    CHECK(calls <= long(threads) * n);  // per element it would be m * n
    check_all(y, [&](const shape<2>& i) { return double(x(i[0], i[1])) * std::exp(double(b(i[1]))) + b(i[1]); }, 1e-5);
  }
  SECTION("operands that vary along the rows, rows too long for a buffer: computed per element") {
    auto x = random_tensor<float, 2>({3, 70001}, 603);
    auto b = random_tensor<float, 1>({70001}, 604);
    fuse::tensor<float, 2> y(3, 70001);
    calls = 0;
    fuse::assign(fuse::cpu{.threads = 1}, y, x * fuse::exp(fuse::map(count, b)));
    CHECK(calls == 3 * 70001);
    check_all(y, [&](const shape<2>& i) { return double(x(i[0], i[1])) * std::exp(double(b(i[1]))); }, 1e-5);
    auto w = random_tensor<float, 2>({3, 70}, 605), xw = random_tensor<float, 2>({3, 70}, 609);
    fuse::tensor<float, 2> v(3, 70);
    calls = 0;
    fuse::assign(fuse::cpu{.threads = 1}, v, xw * fuse::exp(fuse::map(count, w)) - 1.f);
    CHECK(calls == 3 * 70);
    check_all(v, [&](const shape<2>& i) { return double(xw(i[0], i[1])) * std::exp(double(w(i[0], i[1]))) - 1; }, 1e-5);
  }
  SECTION("two subtrees of one shape over different operands are not taken for one") {
    auto x = random_tensor<float, 2>({9, 129}, 606);
    auto b = random_tensor<float, 1>({129}, 607);
    auto c = random_tensor<float, 1>({129}, 608);
    fuse::tensor<float, 2> y(9, 129), z(9, 129);
    fuse::assign(fuse::cpu{.threads = 1}, y, x * fuse::exp(fuse::map(count, b)) + fuse::exp(fuse::map(count, c)));
    check_all(y, [&](const shape<2>& i) { return double(x(i[0], i[1])) * std::exp(double(b(i[1]))) + std::exp(double(c(i[1]))); }, 1e-5);
    calls = 0;
    fuse::assign(fuse::cpu{.threads = 1}, z, x * fuse::exp(fuse::map(count, b)) + fuse::exp(fuse::map(count, b)));
    CHECK(calls <= 2 * 129);  // the same operand twice: one row of values serves both
    check_all(z, [&](const shape<2>& i) { return (double(x(i[0], i[1])) + 1) * std::exp(double(b(i[1]))); }, 1e-5);
  }
}

TEST_CASE("broadcast: an expensive function of a per-row operand is computed once per row (x * exp(s[M, 1]))", "[core][broadcast]") {
  std::atomic<long> calls{0};
  const auto count = counting_identity(calls);
  for (auto [m, n, threads] : {std::tuple<index_t, index_t, int>{37, 1029, 1}, {101, 1029, 3}, {7, 16, 1}}) {
    CAPTURE(m, n, threads);
    auto x = random_tensor<float, 2>({m, n}, 631);
    auto s = random_tensor<float, 2>({m, 1}, 632);
    fuse::tensor<float, 2> y(m, n);
    calls = 0;
    fuse::assign(fuse::cpu{.threads = threads}, y, x * fuse::exp(fuse::map(count, s)) - s);
    CHECK(calls <= m + threads);  // once per row a thread starts (a row split between threads: twice)
    check_all(y, [&](const shape<2>& i) { return double(x(i[0], i[1])) * std::exp(double(s(i[0], 0))) - s(i[0], 0); }, 1e-5);
  }
  SECTION("rows shorter than the copies are made for: once per row in tiles, else per element") {
    auto x = random_tensor<float, 2>({5, 8}, 633);
    auto s = random_tensor<float, 2>({5, 1}, 634);
    fuse::tensor<float, 2> y(5, 8);
    calls = 0;
    fuse::assign(fuse::cpu{.threads = 1}, y, x * fuse::exp(fuse::map(count, s)));
    CHECK(calls == 5);  // the rows run as one tile (backend/cpu/tile.hpp), each row's value spread
    check_all(y, [&](const shape<2>& i) { return double(x(i[0], i[1])) * std::exp(double(s(i[0], 0))); }, 1e-5);
    // x read with stride 2: no tiles, and too short for copies: the subtree per element.
    auto wide = random_tensor<float, 2>({5, 16}, 639);
    calls = 0;
    fuse::assign(fuse::cpu{.threads = 1}, y, fuse::slice<1>(wide.view(), 0, 16, 2) * fuse::exp(fuse::map(count, s)));
    CHECK(calls == 5 * 8);
    check_all(y, [&](const shape<2>& i) { return double(wide(i[0], 2 * i[1])) * std::exp(double(s(i[0], 0))); }, 1e-5);
  }
  SECTION("a batch norm over small NCHW planes: rows in tiles, the per-row value spread, threads") {
    // 9 x 9 planes (rows of 81, tiles of 13 rows that stop at the end of the channel axis), 3
    // threads whose ranges start and end inside rows.
    auto x = random_tensor<float, 4>({40, 61, 9, 9}, 641);
    auto mean = random_tensor<float, 3>({61, 1, 1}, 642), gamma = random_tensor<float, 3>({61, 1, 1}, 643);
    auto beta = random_tensor<float, 3>({61, 1, 1}, 644);
    auto var = fuse::eval(fuse::abs(random_tensor<float, 3>({61, 1, 1}, 645)) + 0.1f);
    auto ref = [&](const shape<4>& i) {
      return (double(x(i[0], i[1], i[2], i[3])) - mean(i[1], 0, 0)) / std::sqrt(double(var(i[1], 0, 0)) + 1e-5) * gamma(i[1], 0, 0) +
             beta(i[1], 0, 0);
    };
    for (int threads : {1, 3}) {
      CAPTURE(threads);
      fuse::tensor<float, 4> y(40, 61, 9, 9);
      calls = 0;
      fuse::assign(fuse::cpu{.threads = threads}, y, (x - mean) * fuse::rsqrt(fuse::map(count, var) + 1e-5f) * gamma + beta);
      CHECK(calls <= 40 * 61 + threads);  // once per row, and once more for a row a thread starts inside
      check_all(y, ref, 1e-5);
    }
    // Planes of 3 x 5 on one thread, and a channel axis that ends inside a tile.
    auto x2 = random_tensor<float, 4>({3, 7, 3, 5}, 646);
    auto v2 = fuse::eval(fuse::abs(random_tensor<float, 3>({7, 1, 1}, 647)) + 0.1f);
    fuse::tensor<float, 4> y2(3, 7, 3, 5);
    calls = 0;
    fuse::assign(fuse::cpu{.threads = 1}, y2, x2 * fuse::rsqrt(fuse::map(count, v2) + 1e-5f));
    CHECK(calls == 3 * 7);
    check_all(y2, [&](const shape<4>& i) { return double(x2(i[0], i[1], i[2], i[3])) / std::sqrt(double(v2(i[1], 0, 0)) + 1e-5); }, 1e-5);
  }
  SECTION("a batch norm over NCHW: rsqrt(var[C, 1, 1] + eps) once per row, into a transposed destination too") {
    for (int threads : {1, 2}) {
      auto x = random_tensor<float, 4>({3, 5, 7, 9}, 635);
      auto mean = random_tensor<float, 3>({5, 1, 1}, 636), gamma = random_tensor<float, 3>({5, 1, 1}, 637);
      auto var = fuse::eval(fuse::abs(random_tensor<float, 3>({5, 1, 1}, 638)) + 0.1f);
      fuse::tensor<float, 4> y(3, 5, 7, 9);
      auto bn = (x - mean) * fuse::rsqrt(var + 1e-5f) * gamma;
      fuse::assign(fuse::cpu{.threads = threads}, y, fuse::relu(bn));
      auto ref = [&](const shape<4>& i) {
        const double v = (double(x(i[0], i[1], i[2], i[3])) - mean(i[1], 0, 0)) / std::sqrt(double(var(i[1], 0, 0)) + 1e-5) * gamma(i[1], 0, 0);
        return v > 0 ? v : 0.0;
      };
      check_all(y, ref, 1e-5);
      buffer<float, 4> t({3, 5, 7, 9}, layout::transposed, -7.f);
      fuse::assign(fuse::cpu{.threads = threads}, t.view(), fuse::relu(bn));
      check_all(t.view(), ref, 1e-5);
    }
  }
}

TEST_CASE("broadcast: hoisted row operands with strided, misaligned and rank-3 layouts, batch norm (NHWC)", "[core][broadcast]") {
  for (int threads : {1, 2}) {
    const fuse::cpu exec{.threads = threads};
    // A channels-last batch norm: rsqrt(var + eps) is computed once per channel.
    const index_t rows = 67, c = 131;
    auto x = random_tensor<float, 2>({rows, c}, 611);
    auto mean = random_tensor<float, 1>({c}, 612), gamma = random_tensor<float, 1>({c}, 613), beta = random_tensor<float, 1>({c}, 614);
    auto var = fuse::eval(fuse::abs(random_tensor<float, 1>({c}, 615)) + 0.1f);
    fuse::tensor<float, 2> y(rows, c);
    fuse::assign(exec, y, (x - mean) * fuse::rsqrt(var + 1e-5f) * gamma + beta);
    check_all(y, [&](const shape<2>& i) {
      return (double(x(i[0], i[1])) - mean(i[1])) / std::sqrt(double(var(i[1])) + 1e-5) * gamma(i[1]) + beta(i[1]);
    }, 1e-5);
    // Rank 3, a misaligned operand and a misaligned destination.
    buffer<float, 1> bm({33}, layout::misaligned, -7.f);
    bm.fill_random(616);
    auto x3 = random_tensor<float, 3>({4, 7, 33}, 617);
    buffer<float, 3> out({4, 7, 33}, layout::misaligned, -7.f);
    fuse::assign(exec, out.view(), x3 * fuse::gelu(bm.cview()));
    auto gelu_ref = [](double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); };
    check_all(out.view(), [&](const shape<3>& i) { return double(x3(i[0], i[1], i[2])) * gelu_ref(at(bm.cview(), shape<1>{i[2]})); }, 1e-5);
    CHECK(out.touched_outside() == 0);
    // A strided operand (stride 2) and a transposed input: the strided loop, values the same.
    buffer<float, 1> bs({33}, layout::step2, -7.f);
    bs.fill_random(618);
    auto xt = random_tensor<float, 2>({33, 28}, 619);
    fuse::tensor<float, 2> y2(28, 33), y3(28, 33);
    fuse::assign(exec, y2, fuse::transpose(xt) * fuse::exp(bs.cview()));
    fuse::assign(exec, y3, fuse::reshape(x3, 28, 33) / fuse::sigmoid(bs.cview()));
    check_all(y2, [&](const shape<2>& i) { return double(xt(i[1], i[0])) * std::exp(double(at(bs.cview(), shape<1>{i[1]}))); }, 1e-5);
    check_all(y3, [&](const shape<2>& i) {
      return double(x3.data()[i[0] * 33 + i[1]]) * (1 + std::exp(-double(at(bs.cview(), shape<1>{i[1]}))));
    }, 1e-5);
  }
}

TEST_CASE("broadcast: a hoisted row operand in a streamed output (16 MiB and more)", "[core][broadcast][large]") {
  auto big = random_tensor<float, 2>({4099, 1027}, 620);
  auto b = random_tensor<float, 1>({1027}, 621);
  fuse::tensor<float, 2> out(4099, 1027);
  fuse::assign(fuse::cpu{.threads = 2}, out, big * fuse::exp(b));
  check_all(out, [&](const shape<2>& i) { return double(big(i[0], i[1])) * std::exp(double(b(i[1]))); }, 1e-5);
}

TEST_CASE("broadcast: an arithmetic-bound expression into a large output (16 MiB and more)", "[core][broadcast][large]") {
  // Below AVX-512 an expression of FUSE_STREAMING_MAX_FLOPS flops an element or more writes a
  // large output with ordinary stores (executor.hpp); a cheap one streams. Both into a
  // destination one float off its alignment.
  auto big = random_tensor<float, 2>({1024, 4099}, 630);
  auto b = random_tensor<float, 1>({4099}, 631);
  std::vector<float> buf(std::size_t(1024) * 4099 + 1);
  auto out = fuse::view(buf.data() + 1, index_t(1024), index_t(4099));
  fuse::assign(fuse::cpu{.threads = 2}, out, fuse::erf(big + b));
  check_all(out, [&](const shape<2>& i) { return std::erf(double(big(i[0], i[1])) + b(i[1])); }, 1e-5, 1e-6);
  fuse::assign(fuse::cpu{.threads = 2}, out, big - b);
  check_all(out, [&](const shape<2>& i) { return double(big(i[0], i[1])) - b(i[1]); });
}
