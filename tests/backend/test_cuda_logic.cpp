// The device-independent logic of the CUDA backend, run on the CPU: the fast divider of the
// elementwise kernel (backend/cuda/fast_divide.hpp), and the register row kernel's steps
// (backend/cuda/row_registers.hpp) lane by lane: `warp_sim` is an executor that runs every row iteration the way row_kernel_registers does,
// with the warp reduction replaced by a loop over the 32 lanes' totals. This tests what can go
// wrong without a GPU: which loads read the registers, the lane layout, slot order and aliases.
#include "support.hpp"

#include "fuse/backend/cuda/fast_divide.hpp"
#include "fuse/backend/cuda/row_registers.hpp"

#include <cstdint>
#include <random>

namespace warp_test {

using fuse::index_t;

struct warp_sim {
  static constexpr fuse::memory_space space = fuse::memory_space::host;
};
int register_rows = 0;  // row iterations the simulation ran in registers
int fallbacks = 0;      // row iterations registers_fit refused (run by the CPU executor)

// Found by argument-dependent lookup from assign_fused's run(exec, it).
template <class T, std::size_t R, class Ev>
void run(const warp_sim&, const fuse::detail::iteration<T, R, Ev>& it) {
  fuse::detail::run(fuse::cpu{}, it);
}

// row_kernel_registers<Kept> on the CPU, one lane after another.
template <int Kept, class It, class S>
void simulate(const It& it, const S& source) {
  using namespace fuse::detail;
  constexpr std::size_t R = It::rank;
  constexpr int N = row_lane_elements;
  using T = std::remove_pointer_t<decltype(it.out)>;
  using V = typename S::value_type;
  using KeptT = typename std::remove_cvref_t<decltype(get<std::size_t(Kept < 0 ? 0 : Kept)>(it.phases).child)>::value_type;
  row_slot slots[It::phase_count] = {};
  auto ev = it.eval;
  auto phases = it.phases;
  ev.bind(slots);
  for_each(phases, [&](auto& p) { p.bind(slots); });
  const index_t count = it.row_elements();
  V reg[row_lanes][N];
  KeptT kept[row_lanes][N];
  for (index_t o = 0; o < it.rows(); ++o) {
    index_t idx[R] = {};
    unflatten(o, it.shape, 0, it.inner_first, idx);
    auto src = source;
    src.seek(idx);
    for (int lane = 0; lane < row_lanes; ++lane) load_lane<N>(src, lane, count, reg[lane]);
    run_phases(phases, it.alias, slots, idx, [&](auto& p) {  // the warp's reduction: a loop over lanes
      using P = std::remove_cvref_t<decltype(p)>;
      auto t = P::op::template identity<typename P::op::template total_t<typename P::acc_type>>();
      for (int lane = 0; lane < row_lanes; ++lane) {
        if constexpr (int(P::slot) == Kept) t = P::op::combine(t, reduce_lane_keeping<N>(p, lane, count, reg[lane], kept[lane]));
        else t = P::op::combine(t, reduce_lane<N>(p, lane, count, reg[lane]));
      }
      return t;
    });
    ev.seek(idx);
    T* row = it.out + row_offset<R>(it.out_stride, idx);
    for (int lane = 0; lane < row_lanes; ++lane) {
      if constexpr (Kept >= 0) write_lane_kept<N>(row, ev, lane, count, reg[lane], kept[lane]);
      else if (it.root_reduction) *row = static_cast<T>(ev.template at<true>(0, reg[0][0]));
      else write_lane<N>(row, ev, lane, count, reg[lane]);
    }
  }
}

int kept_rows = 0;  // row iterations run with a phase's operand kept for the epilogue

// As row_kernel.cuh's run: the register kernel where it fits, keeping an operand where it can.
template <class T, std::size_t R, class Ev, class Ph>
void run(const warp_sim&, const fuse::detail::row_iteration<T, R, Ev, Ph>& original) {
  using namespace fuse::detail;
  if (!registers_fit(original)) {
    ++fallbacks;
    return run(fuse::cpu{}, original);
  }
  ++register_rows;
  const auto r = registers_iteration(original);
  using RIt = std::remove_cvref_t<decltype(r.it)>;
  constexpr int kept = register_cached_phase<RIt>();
  if constexpr (kept >= 0) {
    if (!r.it.root_reduction && register_cache_fits<kept>(r.it)) {
      ++kept_rows;
      return simulate<kept>(register_cached_iteration<kept>(r.it), r.source);
    }
  }
  simulate<-1>(r.it, r.source);
}

// y = f(x...) through the simulation equals f on double copies through the CPU executor.
template <class F, class... X>
void check_layer(const F& f, int expected_register_runs, const X&... x) {
  const int before = register_rows;
  auto got = fuse::eval(warp_sim{}, f(x...));
  CHECK(register_rows - before == expected_register_runs);
  auto want = fuse::eval(f(fuse::cast<double>(x)...));
  fuse_test::check_same(got, want, 2e-5, 2e-6);
}

}  // namespace warp_test

TEST_CASE("cuda register rows (simulated lane by lane): layers against double", "[cuda][registers]") {
  using namespace warp_test;
  using fuse_test::shape;
  for (index_t n : {1, 2, 31, 33, 100, 1000, 1024}) {
    for (index_t m : {1, 3}) {
      INFO("rows " << m << " of " << n);
      auto x = fuse_test::random_tensor<float>(shape<2>{m, n}, 1 + n + m);
      auto y = fuse_test::random_tensor<float>(shape<2>{m, n}, 2 + n + m);
      auto g = fuse_test::random_tensor<float>(shape<1>{n}, 3 + n);
      auto b = fuse_test::random_tensor<float>(shape<1>{n}, 4 + n);
      int kept_before = kept_rows;
      check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 1, x);
      CHECK(kept_rows - kept_before == 1);  // exp(x - max) kept from the sum phase for the epilogue
      kept_before = kept_rows;
      check_layer([](const auto& a) { return fuse::log_softmax(a, fuse::axis<-1>); }, 1, x);
      CHECK(kept_rows == kept_before);
      // gamma and beta are loads of the same type as x: they must read memory, not x's registers.
      check_layer([](const auto& a, const auto& gg, const auto& bb) { return fuse::layer_norm(a, gg, bb); }, 1, x, g, b);
      check_layer([](const auto& a, const auto& gg) { return fuse::rms_norm(a, gg); }, 1, x, g);
      // Two inputs: the registers hold x (phase 0's first load); y is read from memory each time.
      check_layer([](const auto& a, const auto& c) { return fuse::softmax(a * c, fuse::axis<-1>) + c; }, 1, x, y);
      check_layer([](const auto& a) { return a - fuse::max(a, fuse::axis<-1>); }, 1, x);
      check_layer([](const auto& a) { return fuse::sum(a * a, fuse::axis<-1>); }, 1, x);
    }
  }
}

TEST_CASE("cuda register rows (simulated): padded rows use registers; longer or strided rows do not", "[cuda][registers]") {
  using namespace warp_test;
  using fuse_test::shape;
  auto wide = fuse_test::random_tensor<float>(shape<2>{5, 1030}, 7);
  auto padded = fuse::slice<1>(wide, 3, 1027);  // rows of 1024, row stride 1030: still one unit-stride axis
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 1, padded);
  int before = fallbacks;
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 0, wide);  // 1030 > 1024
  CHECK(fallbacks - before == 1);
  before = fallbacks;
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<0>); }, 0, wide);  // column rows
  CHECK(fallbacks > before);  // (a reduction over a leading axis is a group of its own: several kernels)
  before = fallbacks;
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 0, fuse::slice<1>(wide, 0, 1030, 2));  // step 2
  CHECK(fallbacks - before == 1);
}

TEST_CASE("cuda fast divider: exact for dividends and divisors below 2^31", "[cuda][divide]") {
  using fuse::detail::fast_divider;
  std::mt19937_64 gen(20261129);
  const std::uint32_t top = (std::uint32_t(1) << 31) - 1;
  auto check = [&](std::uint32_t d) {
    const fast_divider f(d);
    std::uint32_t bad = 0;
    auto one = [&](std::uint32_t n) {
      if (n <= top && f.divide(n) != n / d) ++bad;
    };
    for (std::uint32_t n : {0u, 1u, d - 1, d, d + 1, top, top - 1, top - d, top / d * d, top / d * d - 1}) one(n);
    for (std::uint32_t k = 1; k < 64; ++k) one(std::uint32_t(std::min<std::uint64_t>(top, std::uint64_t(d) * (gen() % (top / d + 1)) + (k % 3) - 1)));
    for (int k = 0; k < 64; ++k) one(std::uint32_t(gen() % (std::uint64_t(top) + 1)));
    INFO("divisor " << d);
    CHECK(bad == 0);
  };
  for (std::uint32_t d = 1; d <= 3000; ++d) check(d);
  for (int s = 2; s <= 31; ++s) {
    const std::uint32_t p = std::uint32_t(1) << s;
    check(p - 1), check(p);
    if (s < 31) check(p + 1);
  }
  for (int k = 0; k < 3000; ++k) check(std::uint32_t(1 + gen() % (std::uint64_t(1) << 31)));
}

TEST_CASE("cuda fast divider: the elementwise kernel's index split matches 64-bit division", "[cuda][divide]") {
  using fuse::index_t;
  std::mt19937_64 gen(7);
  for (int k = 0; k < 200; ++k) {
    index_t shape[3] = {index_t(1 + gen() % 1000), index_t(1 + gen() % 1000), index_t(1 + gen() % 2000)};
    const index_t size = shape[0] * shape[1] * shape[2];
    const auto fs = fuse::detail::prepare_fast_shape<3>(shape, size);
    REQUIRE(fs.usable == (size < (index_t(1) << 31)));
    if (!fs.usable) continue;
    for (int j = 0; j < 100; ++j) {
      const index_t g = j == 0 ? size - 1 : index_t(gen() % std::uint64_t(size));
      index_t a[2] = {}, b[2] = {};
      const index_t ia = fuse::detail::split_index<3>(static_cast<std::uint32_t>(g), fs, a);
      const index_t ib = fuse::detail::split_index<3>(g, shape, b);
      CHECK((ia == ib && a[0] == b[0] && a[1] == b[1]));
    }
  }
}
