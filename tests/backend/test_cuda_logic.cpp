// The device-independent logic of the CUDA backend, run on the CPU: the fast divider of the
// elementwise kernel (backend/cuda/fast_divide.hpp), the re-reading row kernel's thread mapping
// (backend/cuda/row_threads.hpp), and the register row kernel's steps
// (backend/cuda/row_registers.hpp) lane by lane: `warp_sim` is an executor that runs every row
// iteration the way row_kernel_registers does (a warp per row, or a block per row for rows over
// 1024 elements), with the warp or block reduction replaced by a loop over the lanes' totals. This tests what can go
// wrong without a GPU: which loads read the registers, the lane layout, slot order and aliases.
#include "support.hpp"

#include "fuse/backend/cuda/fast_divide.hpp"
#include "fuse/backend/cuda/row_registers.hpp"
#include "fuse/backend/cuda/row_share.hpp"
#include "fuse/backend/cuda/row_threads.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace warp_test {

using fuse::index_t;

// ChunkBytes: as FUSE_ROW_CHUNK_BYTES (0: an element per access; 16: 16-byte chunks). Sms: the
// multiprocessors of the simulated GPU (an H100 or H200 has 132), which pick the re-reading
// kernel's layout (rereading_layout): with 1, rows of over 1024 elements take a block each from 4
// rows on, where 132 gives them a cluster.
template <int ChunkBytes = fuse::detail::row_chunk_bytes, int Sms = 132>
struct warp_sim {
  static constexpr fuse::memory_space space = fuse::memory_space::host;
};
int register_rows = 0;  // row iterations the simulation ran in registers
int block_rows = 0;     // ... of them, with a block per row
int fallbacks = 0;      // row iterations register_lanes refused (run by the re-reading kernel)

// Found by argument-dependent lookup from assign_fused's run(exec, it).
template <int B, int S, class T, std::size_t R, class Ev>
void run(const warp_sim<B, S>&, const fuse::detail::iteration<T, R, Ev>& it) {
  fuse::detail::run(fuse::cpu{}, it);
}

// row_kernel_registers<Kept, Lanes> on the CPU, one lane after another, in chunks of P elements.
template <int Kept, int Lanes, int P, class It, class S>
void simulate(const It& it, const S& source, fuse::detail::row_vectors vector) {
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
  struct lane_registers {
    V reg[N];
    KeptT kept[N];
  };
  std::vector<lane_registers> lanes(Lanes);  // a block's worth is too large for the stack
  auto reg = [&](int lane) -> V(&)[N] { return lanes[lane].reg; };
  auto kept = [&](int lane) -> KeptT(&)[N] { return lanes[lane].kept; };
  for (index_t o = 0; o < it.rows(); ++o) {
    index_t idx[R] = {};
    unflatten_leading<R - 1>(o, it.shape, idx);  // as the kernel: register_lanes leaves one row axis
    auto src = source;
    src.seek(idx);
    for (int lane = 0; lane < Lanes; ++lane) load_lane<N, Lanes, P>(src, lane, count, vector.load, reg(lane));
    run_phases(phases, it.alias, slots, idx, [&](auto& p) {  // the warp's reduction: a loop over lanes
      using Ph = std::remove_cvref_t<decltype(p)>;
      using Op = typename Ph::op;
      auto t = Op::template identity<typename Op::template total_t<typename Ph::acc_type>>();
      for (int lane = 0; lane < Lanes; ++lane) {
        if constexpr (int(Ph::slot) == Kept) t = Op::combine(t, reduce_lane_keeping<N, Lanes, P>(p, lane, count, reg(lane), kept(lane)));
        else t = Op::combine(t, reduce_lane<N, Lanes, P>(p, lane, count, reg(lane)));
      }
      return t;
    });
    ev.seek(idx);
    T* row = it.out + row_offset<R>(it.out_stride, idx);
    for (int lane = 0; lane < Lanes; ++lane) {
      auto& r = reg(lane);
      auto& k = kept(lane);
      if constexpr (Kept >= 0)
        write_lane<N, Lanes, P>(row, lane, count, vector.store, [&](int j, index_t i) { return ev.template at<true>(i, r[j], k[j]); });
      else if (it.root_reduction)
        *row = static_cast<T>(ev.template at<true>(0, reg(0)[0]));
      else
        write_lane<N, Lanes, P>(row, lane, count, vector.store, [&](int j, index_t i) { return ev.template at<true>(i, r[j]); });
    }
  }
}

int kept_rows = 0;    // row iterations run with a phase's operand kept for the epilogue
int vector_loads = 0;   // ... whose rows were read 16 bytes at a time
int vector_stores = 0;  // ... written 16 bytes at a time

int exact_rows = 0;   // row iterations run with every occurrence of the source's type in registers
int exact_phases = 0; // ... in the phases only (the epilogue tests them)

// As row_kernel.cuh's launch_registers: the choice is with_register_reads', counted here.
template <int Kept, int Lanes, int P, class It, class S>
void simulate_reads(const It& it, const S& source, fuse::detail::row_vectors vector, fuse::detail::register_reads reads) {
  using fuse::detail::register_reads;
  fuse::detail::with_register_reads<S>(it, reads, [&](const auto& run, register_reads how) {
    exact_rows += how == register_reads::all;
    exact_phases += how == register_reads::phases;
    simulate<Kept, Lanes, P>(run, source, vector);
  });
}

// As row_kernel.cuh's run_registers: the register kernel, keeping an operand where it can.
template <int Lanes, int ChunkBytes, class It>
void simulate_registers(const It& original) {
  using namespace fuse::detail;
  const auto r = registers_iteration(original);
  using RIt = std::remove_cvref_t<decltype(r.it)>;
  using S = std::remove_cvref_t<decltype(r.source)>;
  using T = std::remove_pointer_t<decltype(original.out)>;
  constexpr int P = row_chunk_elements<typename S::value_type, T, ChunkBytes>();
  const row_vectors vector = row_vectors_for<P, T, It::rank>(original.out, original.out_stride, r.source);
  vector_loads += vector.load, vector_stores += vector.store;
  const register_reads reads = register_reads_of(r.it);
  constexpr int kept = register_cached_phase<RIt>();
  if constexpr (kept >= 0) {
    if (!r.it.root_reduction && register_cache_fits<kept>(r.it)) {
      ++kept_rows;
      return simulate_reads<kept, Lanes, P>(register_cached_iteration<kept>(r.it), r.source, vector, reads);
    }
  }
  simulate_reads<-1, Lanes, P>(r.it, r.source, vector, reads);
}

// row_kernel<G, Unit> (the re-reading kernel) on the CPU: the `lanes` threads of a row one after
// another, each with its share of every phase (reduce_share) and of the epilogue (write_share);
// the warp, block or cluster reduction is the running total over the lanes.
template <bool Unit, class It>
void simulate_rereading(const It& it, fuse::index_t lanes) {
  using namespace fuse::detail;
  constexpr std::size_t R = It::rank;
  row_slot slots[It::phase_count > 0 ? It::phase_count : 1] = {};
  auto ev = it.eval;
  auto phases = it.phases;
  ev.bind(slots);
  for_each(phases, [&](auto& p) { p.bind(slots); });
  const index_t count = it.row_elements();
  for (index_t o = 0; o < it.rows(); ++o) {
    index_t idx[R] = {};
    unflatten(o, it.shape, 0, it.inner_first, idx);  // as outer_index
    run_phases(phases, it.alias, slots, idx, [&](auto& p) {
      using P = std::remove_cvref_t<decltype(p)>;
      using Total = typename P::op::template total_t<typename P::acc_type>;
      Total t = P::op::template identity<Total>();
      for (index_t lane = 0; lane < lanes; ++lane) t = reduce_share<Unit>(it, p, idx, lane, lanes, count, t);
      return t;
    });
    for (index_t lane = 0; lane < lanes; ++lane) write_share<Unit>(it, ev, idx, lane, lanes, count);
  }
}
int rereading_rows = 0;  // row iterations simulated through the re-reading kernel
int split_rows = 0;      // ... through the split reduction
int cluster_rows = 0;    // ... with a cluster per row
int rereading_block_rows = 0;  // ... with a block per row
int column_rows = 0;     // ... through the column reduction (a thread per row)

// split_reduce_kernel and split_finish_kernel on the CPU: each row's `parts` blocks take every
// parts * row_block-th element from their first (a block's reduction is the running total over
// its threads), then the parts are combined in order and the root written.
template <bool Unit, class It>
void simulate_split(const It& it, int parts) {
  using namespace fuse::detail;
  constexpr std::size_t R = It::rank;
  using P = std::remove_cvref_t<decltype(get<0>(it.phases))>;
  using Total = typename P::op::template total_t<typename P::acc_type>;
  const index_t count = it.row_elements(), step = index_t(parts) * row_block;
  for (index_t o = 0; o < it.rows(); ++o) {
    index_t idx[R] = {};
    unflatten(o, it.shape, 0, it.inner_first, idx);  // as outer_index
    auto p = get<0>(it.phases);
    Total t = P::op::template identity<Total>();
    for (int part = 0; part < parts; ++part) {
      Total block = P::op::template identity<Total>();
      for (index_t thread = 0; thread < row_block; ++thread)
        block = P::op::combine(block, reduce_share<Unit>(it, p, idx, part * row_block + thread, step, count, P::op::template identity<Total>()));
      t = P::op::combine(t, block);
    }
    write_root(it, o, t);
  }
}

int column_partials = 0;  // partials the simulated column kernel wrote (rows x parts where parts > 1)

// column_reduce_kernel and split_finish_kernel on the CPU, block by block and thread by thread
// through column_grid's mapping; every (row, part) must be reduced exactly once.
template <class It>
void simulate_columns(const It& it, const fuse::detail::column_grid& grid) {
  using namespace fuse::detail;
  constexpr std::size_t R = It::rank;
  using P = std::remove_cvref_t<decltype(get<0>(it.phases))>;
  using Total = typename P::op::template total_t<typename P::acc_type>;
  const index_t rows = it.rows(), count = it.row_elements();
  std::vector<Total> partial(std::size_t(rows * grid.parts));
  std::vector<int> visits(partial.size());
  for (unsigned b = 0; b < grid.blocks(); ++b)
    for (unsigned t = 0; t < unsigned(grid.threads); ++t) {
      const index_t row = grid.row(b, t);
      const int part = grid.part(b);
      if (row >= rows) continue;
      index_t idx[R] = {};
      unflatten(row, it.shape, 0, it.inner_first, idx);
      auto p = get<0>(it.phases);
      partial[std::size_t(part * rows + row)] = reduce_share<false>(it, p, idx, part, grid.parts, count, P::op::template identity<Total>());
      ++visits[std::size_t(part * rows + row)];
    }
  CHECK(std::count(visits.begin(), visits.end(), 1) == std::ptrdiff_t(visits.size()));
  if (grid.parts > 1) column_partials += int(partial.size());
  for (index_t o = 0; o < rows; ++o) {
    Total t = P::op::template identity<Total>();
    for (int part = 0; part < grid.parts; ++part) t = P::op::combine(t, partial[std::size_t(part * rows + o)]);
    write_root(it, o, t);
  }
}

// As row_kernel.cuh's run: the column reduction for a root reduction alone over rows side by
// side; the split reduction for a root reduction alone over few long rows; a
// warp or a block per row where the row fits in registers; else the re-reading kernel with the
// layout rereading_layout picks for S multiprocessors.
template <int B, int S, class T, std::size_t R, class Ev, class Ph>
void run(const warp_sim<B, S>&, const fuse::detail::row_iteration<T, R, Ev, Ph>& it) {
  using namespace fuse::detail;
  using It = row_iteration<T, R, Ev, Ph>;
  const index_t count = it.row_elements();
  const row_layout layout = rereading_layout_of(it, S);
  if constexpr (It::phase_count == 1) {
    if (layout == row_layout::columns) {
      ++column_rows;
      return simulate_columns(it, column_layout(it.rows(), count, S));
    }
    if (layout == row_layout::split) {
      ++split_rows;
      const int parts = split_parts(it.rows(), count, S);
      return it.unit ? simulate_split<true>(it, parts) : simulate_split<false>(it, parts);
    }
  }
  switch (register_lanes(it)) {
    case row_lanes: ++register_rows; return simulate_registers<row_lanes, B>(it);
    case register_block_lanes: ++register_rows, ++block_rows; return simulate_registers<register_block_lanes, B>(it);
    default: break;
  }
  ++fallbacks, ++rereading_rows;
  cluster_rows += layout == row_layout::cluster;
  rereading_block_rows += layout == row_layout::block;
  const index_t lanes = layout == row_layout::warp ? 32 : layout == row_layout::cluster ? index_t(row_block) * row_cluster : row_block;
  if (it.unit) simulate_rereading<true>(it, lanes);
  else simulate_rereading<false>(it, lanes);
}

// y = f(x...) through the simulation equals f on double copies through the CPU executor.
template <int ChunkBytes = fuse::detail::row_chunk_bytes, int Sms = 132, class F, class... X>
void check_layer(const F& f, int expected_register_runs, const X&... x) {
  const int before = register_rows;
  auto got = fuse::eval(warp_sim<ChunkBytes, Sms>{}, f(x...));
  CHECK(register_rows - before == expected_register_runs);
  auto want = fuse::eval(f(fuse::cast<double>(x)...));
  fuse_test::check_same(got, want, 2e-5, 2e-6);
}

}  // namespace warp_test

TEST_CASE("cuda register rows (simulated lane by lane): layers against double", "[cuda][registers]") {
  using namespace warp_test;
  using fuse_test::shape;
  // Up to 1024: a warp per row; 1025 to 8192: a block per row..
  for (index_t n : {1, 2, 31, 33, 100, 1000, 1024, 1025, 3001, 8192}) {
    for (index_t m : {1, 3}) {
      INFO("rows " << m << " of " << n);
      const int block_before = block_rows;
      auto x = fuse_test::random_tensor<float>(shape<2>{m, n}, 1 + n + m);
      auto y = fuse_test::random_tensor<float>(shape<2>{m, n}, 2 + n + m);
      auto g = fuse_test::random_tensor<float>(shape<1>{n}, 3 + n);
      auto b = fuse_test::random_tensor<float>(shape<1>{n}, 4 + n);
      int kept_before = kept_rows, exact_before = exact_rows;
      check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 1, x);
      CHECK(kept_rows - kept_before == 1);  // exp(x - max) kept from the sum phase for the epilogue
      CHECK(exact_rows - exact_before == 1);  // every occurrence of x's type is x: no loads
      kept_before = kept_rows, exact_before = exact_rows;
      check_layer([](const auto& a) { return fuse::log_softmax(a, fuse::axis<-1>); }, 1, x);
      CHECK(kept_rows == kept_before);
      CHECK(exact_rows - exact_before == 1);
      // gamma and beta are loads of the same type as x: they must read memory, not x's registers
      // (the phases read x alone: only they go without loads).
      exact_before = exact_rows;
      int phases_before = exact_phases;
      check_layer([](const auto& a, const auto& gg, const auto& bb) { return fuse::layer_norm(a, gg, bb); }, 1, x, g, b);
      check_layer([](const auto& a, const auto& gg) { return fuse::rms_norm(a, gg); }, 1, x, g);
      CHECK(exact_phases - phases_before == 2);
      // Two inputs: the registers hold x (phase 0's first load); y is read from memory each time.
      phases_before = exact_phases;
      check_layer([](const auto& a, const auto& c) { return fuse::softmax(a * c, fuse::axis<-1>) + c; }, 1, x, y);
      kept_before = kept_rows;
      check_layer([](const auto& a, const auto& c) { return fuse::softmax(a, fuse::axis<-1>) + c; }, 1, x, y);
      CHECK(exact_phases - phases_before == 1);  // the second: y in the epilogue alone
      CHECK(kept_rows - kept_before == 1);       // ... which still reads exp(x - max) kept
      CHECK(exact_rows == exact_before);
      // The same tensor twice, as two leaves: both are the source.
      check_layer([](const auto& a, const auto& c) { return fuse::softmax(a * c, fuse::axis<-1>) + c; }, 1, x, x);
      CHECK(exact_rows - exact_before == 1);
      check_layer([](const auto& a) { return a - fuse::max(a, fuse::axis<-1>); }, 1, x);
      check_layer([](const auto& a) { return fuse::sum(a * a, fuse::axis<-1>); }, 1, x);
      CHECK(exact_rows - exact_before == 3);
      CHECK(block_rows - block_before == (n > 1024 ? 9 : 0));
    }
  }
  // Empty rows: no lane reads, and a reduction root still writes its identity for each row.
  auto empty = fuse_test::random_tensor<float>(shape<2>{3, 0}, 5);
  check_layer([](const auto& a) { return fuse::sum(a * a, fuse::axis<-1>); }, 1, empty);
  check_layer([](const auto& a) { return fuse::exp(fuse::sum(a, fuse::axis<-1>)); }, 1, empty);
}

TEST_CASE("cuda register rows (simulated): padded rows use registers; longer or strided rows do not", "[cuda][registers]") {
  using namespace warp_test;
  using fuse_test::shape;
  auto wide = fuse_test::random_tensor<float>(shape<2>{5, 8200}, 7);
  auto padded = fuse::slice<1>(wide, 3, 1027);  // rows of 1024, row stride 8200: still one unit-stride axis
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 1, padded);
  const int block_before = block_rows;
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 1, fuse::slice<1>(wide, 5, 8197));  // 8192
  CHECK(block_rows - block_before == 1);
  // Two outer axes that do not merge into one (every other block of axis 0): the kernel splits
  // the row number into both.
  auto blocks = fuse_test::random_tensor<float>(shape<3>{6, 5, 37}, 8);
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 1, fuse::slice<0>(blocks, 0, 6, 2));
  int before = fallbacks;
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 0, wide);  // 8200 > 8192
  CHECK(fallbacks - before == 1);
  before = fallbacks;
  const int columns = column_rows;
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<0>); }, 0, wide);  // column rows
  CHECK(fallbacks == before);  // (a reduction over a leading axis is a group of its own: its max and
  CHECK(column_rows - columns == 2);  // its sum of exponentials are column reductions on CUDA)
  before = fallbacks;
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 0, fuse::slice<1>(wide, 0, 2060, 2));  // step 2
  CHECK(fallbacks - before == 1);
}

TEST_CASE("cuda re-reading rows (simulated thread by thread): warp, block and cluster shares, tails, two-axis rows", "[cuda][rows]") {
  using namespace warp_test;
  using fuse_test::shape;
  const int before = rereading_rows;
  // Lengths around the per-trip unroll (share_unroll elements a step apart): full trips, a
  // remainder, threads with no element. Rows of over 1024 elements get a cluster (2048 threads)
  // each on 132 SMs (a block each below, on one SM).
  for (index_t n : {8201, 8200 + 4 * 256 + 3}) {
    for (index_t m : {1, 3, 5}) {
      INFO("rows " << m << " of " << n);
      auto x = fuse_test::random_tensor<float>(shape<2>{m, n}, 30 + n + m);
      auto g = fuse_test::random_tensor<float>(shape<1>{n}, 31 + n);
      auto b = fuse_test::random_tensor<float>(shape<1>{n}, 32 + n);
      check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 0, x);
      check_layer([](const auto& a, const auto& gg, const auto& bb) { return fuse::layer_norm(a, gg, bb); }, 0, x, g, b);
      check_layer([](const auto& a) { return fuse::sum(a * a, fuse::axis<-1>); }, 0, x);
      check_layer([](const auto& a) { return fuse::logsumexp(a, fuse::axis<-1>); }, 0, x);
    }
  }
  // Strided rows up to 1024 (a warp each), and rows over two axes (each thread walks its elements
  // run by run, for_each_in_runs).
  auto strided = fuse_test::random_tensor<float>(shape<2>{7, 2 * 517}, 33);
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 0, fuse::slice<1>(strided, 0, 2 * 517, 2));
  // Every other element along axis 1: the row axes (1, 2) do not merge.
  auto cube = fuse_test::random_tensor<float>(shape<3>{4, 18, 13}, 34);
  auto softmax12 = [](const auto& a) {
    auto e = fuse::exp(a - fuse::max(a, fuse::axes<-2, -1>));
    return e / fuse::sum(e, fuse::axes<-2, -1>);
  };
  check_layer(softmax12, 0, fuse::slice<1>(cube, 0, 18, 2));
  check_layer([](const auto& a) { return a - fuse::mean(a, fuse::axes<-2, -1>); }, 0, fuse::slice<1>(cube, 1, 18, 2));
  CHECK(rereading_rows - before >= 2 * 3 * 4 + 3);
  // Contiguous, the same two row axes merge into one row of 18 * 13: registers.
  check_layer(softmax12, 1, cube);
  // A training batch norm over NCHW: rows of N runs of H * W (plan/fusion.hpp), re-read. Runs
  // shorter than a thread's step (6 against a warp's 32: a division per element), longer (35, 49
  // against a warp's 32), and runs of 1640 and 2460 under a cluster's 2048 (a block's 256 below).
  auto bn = [](const auto& a, const auto& g, const auto& b) {
    return fuse::relu((a - fuse::mean(a, fuse::axes<0, 2, 3>)) * fuse::rsqrt(fuse::var(a, fuse::axes<0, 2, 3>) + 1e-5f) * g + b);
  };
  for (const auto& s : {shape<4>{6, 3, 2, 3}, shape<4>{3, 4, 5, 7}, shape<4>{20, 2, 7, 7}, shape<4>{5, 3, 40, 41}, shape<4>{2, 5, 60, 41}}) {
    INFO("batch norm over " << s[0] << " x " << s[1] << " x " << s[2] << " x " << s[3]);
    auto x = fuse_test::random_tensor<float>(s, 35 + s[0]);
    auto g = fuse_test::random_tensor<float>(shape<3>{s[1], 1, 1}, 36);
    auto b = fuse_test::random_tensor<float>(shape<3>{s[1], 1, 1}, 37);
    const int rows = rereading_rows;
    check_layer(bn, 0, x, g, b);
    CHECK(rereading_rows - rows == 1);
  }
  // The same on a GPU of one multiprocessor: rows of over 1024 elements take a block each from 4
  // rows on (a cluster each above).
  const int blocks = rereading_block_rows;
  constexpr int chunk = fuse::detail::row_chunk_bytes;
  for (index_t n : {8201, 8200 + 4 * 256 + 3}) {
    INFO("5 rows of " << n << ", a block each");
    auto x = fuse_test::random_tensor<float>(shape<2>{5, n}, 40 + n);
    auto g = fuse_test::random_tensor<float>(shape<1>{n}, 41 + n);
    auto b = fuse_test::random_tensor<float>(shape<1>{n}, 42 + n);
    check_layer<chunk, 1>([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 0, x);
    check_layer<chunk, 1>([](const auto& a, const auto& gg, const auto& bb) { return fuse::layer_norm(a, gg, bb); }, 0, x, g, b);
    check_layer<chunk, 1>([](const auto& a) { return fuse::sum(a * a, fuse::axis<-1>); }, 0, x);
  }
  for (const auto& s : {shape<4>{5, 4, 40, 41}, shape<4>{2, 5, 60, 41}}) {
    INFO("batch norm over " << s[0] << " x " << s[1] << " x " << s[2] << " x " << s[3] << ", a block a channel");
    auto x = fuse_test::random_tensor<float>(s, 43 + s[0]);
    auto g = fuse_test::random_tensor<float>(shape<3>{s[1], 1, 1}, 44);
    auto b = fuse_test::random_tensor<float>(shape<3>{s[1], 1, 1}, 45);
    check_layer<chunk, 1>(bn, 0, x, g, b);
  }
  CHECK(rereading_block_rows - blocks == 2 * 3 + 2);
}

namespace warp_test {
// sum(x) over the row axes of x's rows, simulated on a GPU of Sms multiprocessors, within 1e-6 of
// a double sum (non-negative data: relative to the sum itself).
template <int Sms, class E, class X>
void check_float_sum(const E& sum_expr, const X& x_double) {
  auto got = fuse::eval(warp_sim<fuse::detail::row_chunk_bytes, Sms>{}, sum_expr);
  auto want = fuse::eval(x_double);
  REQUIRE(got.size() == want.size());
  for (index_t r = 0; r < got.size(); ++r) {
    INFO("row " << r);
    CHECK(std::abs(double(got.data()[r]) - want.data()[r]) <= 1e-6 * want.data()[r]);
  }
}
}  // namespace warp_test

TEST_CASE("cuda re-reading rows (simulated): float sums of long rows within 1e-6", "[cuda][rows][accuracy]") {
  // 5 rows of 2^17: on a GPU of 1 multiprocessor a block each, 512 terms per thread; on 132 the
  // split reduction. Summed in one float chain per unrolled part, a constant row was 1.9e-6 off
  // (found by a review, 2026-12-03); the parts now move into the double total every 16 trips, as
  // the CPU's float lanes do. Rows of several runs (a sum over axes 0 and 2 of [64, 5, 2048], the
  // batch-norm statistics' layout) did the same in one float chain per thread until 2026-12-06.
  using namespace warp_test;
  const index_t n = index_t(1) << 17;
  fuse::tensor<float, 2> x(5, n);
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (index_t i = 0; i < x.size(); ++i) x.data()[i] = i < n ? 0.52497673f : u(gen);
  const auto rows = fuse::sum(x, fuse::axis<-1>);
  const auto rows_double = fuse::sum(fuse::cast<double>(x), fuse::axis<-1>);
  int blocks = rereading_block_rows, splits = split_rows;
  check_float_sum<1>(rows, rows_double);
  CHECK(rereading_block_rows - blocks == 1);
  check_float_sum<132>(rows, rows_double);
  CHECK(split_rows - splits == 1);

  auto runs = fuse::reshape(x, 64, 5, 2048);
  for (index_t i = 0; i < runs.size(); ++i)  // channel 0 constant, the others random
    if ((i / 2048) % 5 == 0) x.data()[i] = 0.52497673f;
  const auto channels = fuse::sum(runs, fuse::axes<0, 2>);
  const auto channels_double = fuse::sum(fuse::cast<double>(runs), fuse::axes<0, 2>);
  blocks = rereading_block_rows, splits = split_rows;
  const int clusters = cluster_rows;
  check_float_sum<1>(channels, channels_double);  // a block each: 512 terms per thread, 64 runs
  CHECK(rereading_block_rows - blocks == 1);
  check_float_sum<132>(channels, channels_double);  // split, parts of several runs
  CHECK(split_rows - splits == 1);
  // Two phases (the mean, then the sum of squares about it): not split; a cluster each on 132.
  auto data = fuse_test::random_tensor<float>(fuse_test::shape<3>{64, 5, 2048}, 8);
  const auto spread = fuse::sum(fuse::square(data - fuse::mean(data, fuse::axes<0, 2>)), fuse::axes<0, 2>);
  auto rd = fuse::cast<double>(data);
  const auto spread_double = fuse::sum(fuse::square(rd - fuse::mean(rd, fuse::axes<0, 2>)), fuse::axes<0, 2>);
  check_float_sum<132>(spread, spread_double);
  CHECK(cluster_rows - clusters == 1);
}

TEST_CASE("cuda register rows (simulated, FUSE_ROW_CHUNK_BYTES=16): 16-byte chunks where rows are aligned, partial last chunks", "[cuda][registers]") {
  using namespace warp_test;
  using fuse_test::shape;
  auto softmax = [](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); };
  // Aligned rows: read and written 4 floats at a time, a warp (1024) or a block (8192) per row.
  // Layer norm's gamma and beta are read element by element at the chunk layout's positions.
  for (index_t n : {1024, 8192}) {
    const int loads = vector_loads, stores = vector_stores;
    auto x = fuse_test::random_tensor<float>(shape<2>{3, n}, 20 + n);
    auto g = fuse_test::random_tensor<float>(shape<1>{n}, 30 + n);
    auto b = fuse_test::random_tensor<float>(shape<1>{n}, 40 + n);
    check_layer<16>(softmax, 1, x);
    check_layer<16>([](const auto& a, const auto& gg, const auto& bb) { return fuse::layer_norm(a, gg, bb); }, 1, x, g, b);
    CHECK(vector_loads - loads == 2);
    CHECK(vector_stores - stores == 2);
  }
  // Rows of 101 and 1030 with padded, aligned row strides: the last chunk of each row is partial.
  auto narrow = fuse_test::random_tensor<float>(shape<2>{5, 104}, 21);
  auto wide = fuse_test::random_tensor<float>(shape<2>{4, 1032}, 22);
  for (int k = 0; k < 2; ++k) {
    const int loads = vector_loads;
    if (k == 0) check_layer<16>(softmax, 1, fuse::slice<1>(narrow, 0, 101));
    else check_layer<16>(softmax, 1, fuse::slice<1>(wide, 0, 1030));
    CHECK(vector_loads - loads == 1);
  }
  // A row start 4 bytes past alignment, and rows of 33 (132-byte strides): element by element.
  const int loads = vector_loads;
  check_layer<16>(softmax, 1, fuse::slice<1>(narrow, 1, 101));
  check_layer<16>(softmax, 1, fuse_test::random_tensor<float>(shape<2>{3, 33}, 23));
  CHECK(vector_loads == loads);
  // A double output: chunks of 2 (16 bytes of the wider type).
  check_layer<16>([](const auto& a) { return fuse::softmax(fuse::cast<double>(a), fuse::axis<-1>); }, 1,
              fuse_test::random_tensor<float>(shape<2>{3, 1000}, 24));
}

namespace {

using fuse::index_t;

// Runs the row kernel's loops over a whole grid on the CPU: every element of every row must be
// taken by exactly one thread, and the threads of a block (of a cluster) must take the same rows,
// or they would wait at different barriers.
template <fuse::detail::row_group G>
void check_row_threads(index_t rows, index_t count, index_t cap) {
  using threads = fuse::detail::row_threads<G>;
  const unsigned grid = threads::grid(rows, cap);
  INFO("rows " << rows << ", count " << count << ", grid " << grid);
  REQUIRE(grid % threads::blocks == 0);
  std::vector<int> taken(std::size_t(rows * count), 0);
  std::vector<std::vector<index_t>> block_rows(grid);
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned t = 0; t < unsigned(fuse::detail::row_block); ++t) {
      std::vector<index_t> mine;
      for (index_t o = threads::first_row(b, t); o < rows; o += threads::rows_per_step(grid)) {
        mine.push_back(o);
        for (index_t i = threads::lane(b, t); i < count; i += threads::per_row) ++taken[std::size_t(o * count + i)];
      }
      if (G == fuse::detail::row_group::warp) continue;  // a warp's rows are its own
      if (t == 0) block_rows[b] = mine;
      else REQUIRE(mine == block_rows[b]);
    }
    if (G == fuse::detail::row_group::cluster && b % threads::blocks != 0) REQUIRE(block_rows[b] == block_rows[b - b % threads::blocks]);
  }
  index_t wrong = 0;
  for (int k : taken) wrong += k != 1;
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("cuda row kernel threads (simulated): every row element taken once; a block's threads share rows", "[cuda][rows]") {
  using fuse::detail::row_group;
  using fuse::index_t;
  for (auto [rows, count] : {std::pair<index_t, index_t>{1, 1}, {3, 70001}, {64, 4099}, {37, 1025}}) {
    check_row_threads<row_group::cluster>(rows, count, 4 * 132);
    check_row_threads<row_group::block>(rows, count, 32 * 132);
  }
  check_row_threads<row_group::cluster>(20, 2049, 4);  // fewer clusters than rows: each loops
  check_row_threads<row_group::block>(700, 300, 64);
  for (auto [rows, count] : {std::pair<index_t, index_t>{1, 1}, {37, 33}, {1000, 1024}, {5000, 7}}) check_row_threads<row_group::warp>(rows, count, 32 * 132);
  check_row_threads<row_group::warp>(1000, 100, 16);
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

TEST_CASE("cuda column reductions (simulated): a thread per row where rows lie side by side", "[cuda][rows]") {
  // A reduction alone over strided rows that lie side by side (column sums, NHWC statistics, a
  // transposed operand) takes a thread per row, so that a warp reads 32 adjacent elements; each
  // row in column_layout's parts, combined in order by the second kernel (none in one part).
  using namespace warp_test;
  using fuse_test::shape;
  auto x = fuse_test::random_tensor<float>(shape<2>{1000, 333}, 50);
  x.data()[7 * 333 + 5] = std::numeric_limits<float>::quiet_NaN();  // column 5's max is NaN
  int columns = column_rows;
  {  // (a sum of 1000 terms of either sign: float error relative to the terms, not to the sum)
    auto got = fuse::eval(warp_sim<>{}, fuse::sum(x, fuse::axis<0>));
    fuse_test::check_same(got, fuse::eval(fuse::sum(fuse::cast<double>(x), fuse::axis<0>)), 1e-6, 1e-4);
  }
  check_layer([](const auto& a) { return fuse::max(a, fuse::axis<0>); }, 0, x);
  check_layer([](const auto& a) { return fuse::mean(a * a, fuse::axis<0>); }, 0, x);
  check_layer([](const auto& a) { return fuse::exp(fuse::sum(a, fuse::axis<0>) * 0.01f); }, 0, x);
  CHECK(column_rows - columns == 4);
  // NHWC statistics over N, H, W (rows: the 100 channels); a transposed operand's rows.
  auto nhwc = fuse_test::random_tensor<float>(shape<4>{6, 7, 9, 100}, 51);
  auto y = fuse_test::random_tensor<float>(shape<2>{333, 1000}, 52);
  columns = column_rows;
  check_layer([](const auto& a) { return fuse::sum(a, fuse::axes<0, 1, 2>); }, 0, nhwc);
  check_layer([](const auto& a) { return fuse::sum(a, fuse::axis<-1>); }, 0, fuse::transpose(y));
  CHECK(column_rows - columns == 2);
  // Rows of several runs (every other plane of axis 1), and a reversed view (every stride
  // negative): the parts cross runs, the rows run backwards.
  auto planes = fuse_test::random_tensor<float>(shape<3>{6, 50, 100}, 54);
  fuse_test::buffer<float, 2> reversed(shape<2>{1000, 333}, fuse_test::layout::reversed, 0.f);
  fuse::assign(reversed.view(), x);
  columns = column_rows;
  check_layer([](const auto& a) { return fuse::sum(a, fuse::axes<0, 1>); }, 0, fuse::slice<1>(planes, 0, 50, 2));
  check_layer([](const auto& a) { return fuse::max(a, fuse::axis<0>); }, 0, reversed.view());
  CHECK(column_rows - columns == 2);
  // Long columns, split into many parts (40 rows: a block of 64 threads, 4375 parts of 16
  // elements): within 1e-6 of a double sum.
  fuse::tensor<float, 2> tall(70001, 40);
  std::mt19937 gen(9);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (index_t i = 0; i < tall.size(); ++i) tall.data()[i] = i % 40 == 3 ? 0.52497673f : u(gen);
  columns = column_rows;
  const int partials = column_partials;
  check_float_sum<132>(fuse::sum(tall, fuse::axis<0>), fuse::sum(fuse::cast<double>(tall), fuse::axis<0>));
  CHECK(column_rows - columns == 1);
  CHECK(column_partials - partials == 40 * 4375);
  const auto grid = fuse::detail::column_layout(40, 70001, 132);
  CHECK(grid.threads == 64);
  CHECK(grid.parts == 4375);
  // Many rows: blocks of row_block threads, one part (the root written by the first kernel).
  CHECK(fuse::detail::column_layout(300000, 50, 132).parts == 1);
  CHECK(fuse::detail::column_layout(300000, 50, 132).threads == 256);
  // var over axis 0: its mean, then the sum of squares about it, each a column reduction.
  columns = column_rows;
  check_layer([](const auto& a) { return fuse::var(a, fuse::axis<0>); }, 0, x);
  CHECK(column_rows - columns == 2);
  // Too few rows for a warp (16: a cluster each), contiguous rows (registers), phases with an
  // epilogue over rows side by side (a warp each), 16 side-by-side rows at a time (of [100, 16]
  // planes): other layouts.
  columns = column_rows;
  const int rereading = rereading_rows;
  check_layer([](const auto& a) { return fuse::sum(a, fuse::axis<0>); }, 0, fuse_test::random_tensor<float>(shape<2>{5000, 16}, 53));
  check_layer([](const auto& a) { return fuse::sum(a, fuse::axis<-1>); }, 1, x);
  check_layer([](const auto& a) { return fuse::softmax(a, fuse::axis<-1>); }, 0, fuse::transpose(y));
  check_layer([](const auto& a) { return fuse::sum(a, fuse::axis<1>); }, 0, fuse_test::random_tensor<float>(shape<3>{100, 300, 16}, 55));
  CHECK(column_rows == columns);
  CHECK(rereading_rows - rereading == 3);
}
