// Which inputs the CPU kernels prefetch ahead along a row (backend/cpu/prefetch.hpp): the leaves
// that run contiguously along the last axis and are not re-read from cache (a short broadcast
// row); each distinct leaf once. A prefetch cannot change a result, so what can go wrong is the
// list: a leaf missed (no speed-up) or a strided one listed (wasted lines).
#include "support.hpp"

#include "fuse/backend/cpu/prefetch.hpp"
#include "fuse/backend/cpu/row_kernel.hpp"

namespace {

using fuse::index_t;

// Rows of 16 KiB: x and y [6, 4096], a bias row, and an output of x's shape.
struct rows_of_4096 {
  fuse::tensor<float, 2> x, y;
  fuse::tensor<float, 1> bias;
  fuse::tensor<float, 2> out{6, 4096};
  explicit rows_of_4096(std::uint64_t seed)
      : x(fuse_test::random_tensor<float, 2>({6, 4096}, seed)),
        y(fuse_test::random_tensor<float, 2>({6, 4096}, seed + 1)),
        bias(fuse_test::random_tensor<float, 1>({4096}, seed + 2)) {}
};

template <class D, class E>
int listed(D& dst, const E& e, bool on = true, std::size_t min_moving_bytes = 0) {
  auto it = fuse::detail::make_iteration(fuse::detail::destination_of(dst), e);
  return fuse::detail::stream_prefetch<decltype(it)::rank>(it, on, min_moving_bytes).size();
}

}  // namespace

TEST_CASE("stream_prefetch lists the contiguous leaves that move along the rows", "[prefetch]") {
  rows_of_4096 d(1);
  auto& [x, y, bias, out] = d;
  CHECK(listed(out, x + bias) == 1);      // a 16 KiB broadcast row stays in cache
  CHECK(listed(out, x * y + bias) == 2);  // x and y
  CHECK(listed(out, x * x + x) == 1);     // one leaf, read three times
  CHECK(listed(out, x + bias, false) == 0);
  // A row kernel leaves rows up to 16 KiB to row_prefetch. (Without bias, the contiguous x * y
  // would merge into one 96 KiB row.)
  CHECK(listed(out, x * y + bias, true, fuse::detail::prefetch_max_row_bytes) == 0);
  CHECK(listed(out, x * y, true, fuse::detail::prefetch_max_row_bytes) == 2);

  auto wide = fuse_test::random_tensor<float, 2>({3, 8192}, 4);
  auto wide_bias = fuse_test::random_tensor<float, 1>({8192}, 5);
  fuse::tensor<float, 2> wide_out(3, 8192);
  CHECK(listed(wide_out, wide + wide_bias) == 2);  // a 32 KiB broadcast row is fetched too
  CHECK(listed(wide_out, wide + wide_bias, true, fuse::detail::prefetch_max_row_bytes) == 2);
}

TEST_CASE("stream_prefetch leaves out strided and broadcast-along-the-row leaves", "[prefetch]") {
  auto x = fuse_test::random_tensor<float, 2>({300, 200}, 6);
  auto col = fuse_test::random_tensor<float, 2>({300, 1}, 7);
  fuse::tensor<float, 2> out(200, 300), out2(300, 200);
  CHECK(listed(out, fuse::transpose(x)) == 0);  // stride 200 along the row
  CHECK(listed(out2, x + col) == 1);             // col is one element per row
  // One flat row: every contiguous leaf.
  auto a = fuse_test::random_tensor<float, 1>({100001}, 8);
  auto b = fuse_test::random_tensor<double, 1>({100001}, 9);
  fuse::tensor<double, 1> flat(100001);
  CHECK(listed(flat, a * b + a) == 2);
}

namespace {

// What spread_pass reads of a row iteration: its phases' aliases.
template <std::size_t N>
struct fake_rows {
  static constexpr std::size_t phase_count = N;
  int alias[N > 0 ? N : 1];
};

}  // namespace

TEST_CASE("the row kernel asks for the next row along a pass that computes", "[prefetch]") {
  using fuse::detail::spread_pass;
  // softmax: max, the same max repeated (copied, no pass), sum of exp: the exp pass.
  CHECK(spread_pass(fake_rows<3>{{-1, 0, -1}}, true) == 2);
  CHECK(spread_pass(fake_rows<3>{{-1, 0, -1}}, false) == 2);
  // rms_norm: one phase reads the row; the streaming epilogue (pass 1) computes.
  CHECK(spread_pass(fake_rows<1>{{-1}}, true) == 1);
  // A plain epilogue does not ask ahead: the one phase does.
  CHECK(spread_pass(fake_rows<1>{{-1}}, false) == 0);
  // Two phases, the second repeating the first: one pass computes.
  CHECK(spread_pass(fake_rows<2>{{-1, 0}}, true) == 2);
  CHECK(spread_pass(fake_rows<2>{{-1, 0}}, false) == 0);
}

namespace {

// Whether the pass that evaluates e (with its shared subtrees bound, as the kernels run it) leaves
// its stream to the hardware prefetcher; `shared`: whether a shared subtree was bound.
template <class D, class E>
bool streams_by_itself(D& dst, const E& e, bool& shared) {
  auto it = fuse::detail::make_iteration(fuse::detail::destination_of(dst), e);
  const auto plan = fuse::detail::plan_shared(it.eval, nullptr);
  return fuse::detail::with_shared(it.eval, plan, [&](const auto& ev) {
    using Ev = std::remove_cvref_t<decltype(ev)>;
    shared = !std::is_same_v<Ev, decltype(it.eval)>;
    return fuse::detail::streams_by_itself<Ev>;
  });
}

}  // namespace

TEST_CASE("stream_prefetch asks ahead only along passes that compute", "[prefetch]") {
  rows_of_4096 d(10);
  auto& [x, y, bias, out] = d;
  bool shared = false;
  // A loop that mostly loads: the hardware prefetcher keeps up.
  CHECK(streams_by_itself(out, x * y + bias, shared));
  CHECK(streams_by_itself(out, fuse::max(2.f * x + 3.f * y, 0.f), shared));
  // x * x loads x twice (a leaf alone is not shared): still one multiply per element. x + bias
  // written twice is shared.
  CHECK(streams_by_itself(out, x * x, shared));
  CHECK_FALSE(shared);
  CHECK(streams_by_itself(out, (x + bias) * (x + bias), shared));
  CHECK(shared);
  // Transcendental work between the loads: asked for ahead.
  CHECK_FALSE(streams_by_itself(out, fuse::gelu(x + bias), shared));
  CHECK_FALSE(streams_by_itself(out, fuse::exp(x - y), shared));
  // The hand-written GELU with z reused: the shared form counts the body's flops as well as z's.
  auto z = x + bias;
  auto hand_gelu = 0.5f * z * (1.f + fuse::tanh(0.7978845608f * (z + 0.044715f * z * z * z)));
  CHECK_FALSE(streams_by_itself(out, hand_gelu, shared));
  CHECK(shared);
}
