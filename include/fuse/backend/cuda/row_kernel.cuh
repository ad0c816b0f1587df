// fuse/backend/cuda/row_kernel.cuh - the CUDA row kernel: the same phases as on the CPU, chosen at
// run time among variants instantiated at compile time:
//   - rows of one unit-stride axis up to 1024 elements: one warp per row, the row in registers
//     (row_registers.hpp); up to 8192: one block per row, the row in the block's registers;
//   - other rows up to warp_row_limit elements: one warp per row; longer: one block per row, or,
//     with too few rows to fill the GPU on sm_90, one cluster of row_cluster blocks per row. Later
//     phases and the epilogue re-read the row, which a short or medium row finds in L1/L2;
//   - a root reduction with fewer rows than multiprocessors (sum of squares over everything) is
//     split across blocks in two stages;
//   - a root reduction over strided rows that lie side by side (column sums) takes a thread per
//     row, each row split into parts, in the same two stages.
// Each phase is reduced with CUB's warp or block reduction and broadcast to the row's threads.
#pragma once

#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

#include "fuse/backend/cuda/executor.hpp"
#include "fuse/backend/cuda/memory.hpp"
#include "fuse/backend/cuda/row_registers.hpp"
#include "fuse/backend/cuda/row_share.hpp"
#include "fuse/backend/cuda/row_threads.hpp"
#include "fuse/core/row_iteration.hpp"

namespace fuse::detail {

template <class Op>
struct combine_fn {
  template <class A>
  __device__ __forceinline__ A operator()(const A& a, const A& b) const { return Op::combine(a, b); }
};

template <class It>
__device__ __forceinline__ void outer_index(const It& it, index_t o, index_t* idx) {
  unflatten(o, it.shape, 0, it.inner_first, idx);
}

// Reduces v across the row's threads and returns the result to all of them.
template <row_group G, class Op, class Total>
__device__ __forceinline__ Total row_allreduce(Total v, void* scratch) {
  if constexpr (G == row_group::warp) {
    using reduce = cub::WarpReduce<Total>;
    auto& storage = static_cast<typename reduce::TempStorage*>(scratch)[threadIdx.x / 32];
    Total r = reduce(storage).Reduce(v, combine_fn<Op>{});
    return __shfl_sync(0xffffffffu, r, 0);
  } else {
    using reduce = cub::BlockReduce<Total, row_block>;
    auto& storage = *static_cast<typename reduce::TempStorage*>(scratch);
    __shared__ Total result;
    Total r = reduce(storage).Reduce(v, combine_fn<Op>{});
    if (threadIdx.x == 0) result = r;
    if constexpr (G == row_group::block) {
      __syncthreads();
      r = result;
      __syncthreads();
      return r;
    } else {
#if __CUDA_ARCH__ >= 900
      // Every thread combines the blocks' results from their shared memory, in rank order, so
      // every block gets the same total.
      auto cluster = cooperative_groups::this_cluster();
      cluster.sync();
      Total t = Op::template identity<Total>();
      for (unsigned b = 0; b < row_cluster; ++b) t = Op::combine(t, *cluster.map_shared_rank(&result, b));
      cluster.sync();  // nobody overwrites `result` (next phase, next row) before all have read it
      return t;
#else
      __trap();  // run() launches the cluster variant only where the device runs sm_90 code
      return r;
#endif
    }
  }
}

// Largest CUB scratch any phase needs, for one block.
template <row_group G, class Phases>
FUSE_HOST_DEVICE constexpr std::size_t scratch_bytes() {
  std::size_t bytes = 16;
  []<class... P>(const tuple<P...>*, std::size_t& b) {
    ((b = std::max(b, G == row_group::warp ? sizeof(typename cub::WarpReduce<typename P::op::template total_t<typename P::acc_type>>::TempStorage) * (row_block / 32)
                                           : sizeof(typename cub::BlockReduce<typename P::op::template total_t<typename P::acc_type>, row_block>::TempStorage))),
     ...);
  }(static_cast<const Phases*>(nullptr), bytes);
  return bytes;
}

// One row per warp, block or cluster; rows strided over the grid. Every thread of a block (of a
// cluster) runs the same rows, so all reach the reductions' barriers.
template <row_group G, bool Unit, class It>
__global__ void __launch_bounds__(row_block) row_kernel(It it) {
  using threads = row_threads<G>;
  constexpr std::size_t R = It::rank;
  constexpr std::size_t scratch = scratch_bytes<G, decltype(it.phases)>();
  __shared__ __align__(16) unsigned char storage[scratch];
  const index_t lane = threads::lane(blockIdx.x, threadIdx.x);
  const index_t count = it.row_elements();
  const index_t rows = it.rows();
  row_slot slots[It::phase_count > 0 ? It::phase_count : 1];
  auto ev = it.eval;
  auto phases = it.phases;
  ev.bind(slots);
  for_each(phases, [&](auto& p) { p.bind(slots); });
  for (index_t o = threads::first_row(blockIdx.x, threadIdx.x); o < rows; o += threads::rows_per_step(gridDim.x)) {
    index_t idx[R] = {};
    outer_index(it, o, idx);
    run_phases(phases, it.alias, slots, idx, [&](auto& p) {
      using P = std::remove_cvref_t<decltype(p)>;
      using Total = typename P::op::template total_t<typename P::acc_type>;
      const Total t = reduce_share<Unit>(it, p, idx, lane, threads::per_row, count, P::op::template identity<Total>());
      return row_allreduce<G, typename P::op>(t, storage);
    });
    write_share<Unit>(it, ev, idx, lane, threads::per_row, count);
  }
}

// Blocks of the register kernel resident per multiprocessor (the register cap is 65536 / (256 *
// blocks)). Without tests per slot (row_registers.hpp, for_each_slot) ptxas interleaves a lane's
// slots and wants 141-222 registers for softmax and layer norm, fp32 and bf16 (sm_90, nvcc 13):
// 2 blocks (128 registers) spill nothing, 3 (80) spilled 140 bytes in fp32 softmax. With tests
// per slot (FUSE_ROW_SLOT_TESTS=1), as measured on the H200 (docs/performance.md, run 8): from
// the 32-bit registers a lane's row values need (the source's N values plus, with a kept operand,
// N more), 3 blocks for fp32 softmax (64 data registers: 0.625 x copy, 0.565 with 4), 4 for layer
// norm fp32 and bf16 softmax and layer norm (0.508 vs 0.475, 0.33 vs 0.308, 0.27 vs 0.235).
// Kernels without loads in their phases (Exact: only_registers) need fewer: ptxas (sm_90, nvcc
// 13) fits fp32 and bf16 softmax, keeping exp(x - max), in 96 registers unconstrained and in 80
// with 16-36 bytes of spills (3 blocks; the testing kernel spills 102-140 there), log_softmax in
// 64 without spills, layer norm with 16-32 (4 blocks). A heuristic for other expressions: the
// data registers are the same, the rest of the work is what spills.
// FUSE_ROW_REGISTER_MIN_BLOCKS sets one count for every kernel (to measure).
template <class V, class KeptT, bool Keeps, bool Exact>
constexpr int register_min_blocks() {
#ifdef FUSE_ROW_REGISTER_MIN_BLOCKS
  return FUSE_ROW_REGISTER_MIN_BLOCKS;
#else
  if constexpr (Exact && !FUSE_ROW_SLOT_TESTS) return Keeps ? 3 : 4;
  if constexpr (!FUSE_ROW_SLOT_TESTS) return 2;
  constexpr std::size_t data = row_lane_elements * (sizeof(V) + (Keeps ? sizeof(KeptT) : 0)) / 4;
  return data > 48 ? 3 : 4;
#endif
}

// The value type of phase Kept's operand (the source's type when there is none, Kept < 0).
template <int Kept, class It, class S>
using kept_value_t = std::conditional_t<
    (Kept >= 0), typename std::remove_cvref_t<decltype(get<std::size_t(Kept < 0 ? 0 : Kept)>(std::declval<It&>().phases).child)>::value_type,
    typename S::value_type>;
// Does the iteration read the source from registers alone (only_registers)? Phase 0's operand
// holds the source.
template <class It, class S>
inline constexpr bool only_registers_v =
    occurrences<register_value<S>, std::remove_cvref_t<decltype(get<0>(std::declval<It&>().phases).child)>>::value > 0;
template <int Kept, class It, class S>
inline constexpr int register_blocks_v =
    register_min_blocks<typename S::value_type, kept_value_t<Kept, It, S>, (Kept >= 0), only_registers_v<It, S>>();

#ifndef FUSE_ROW_REGISTER_WAVES
#define FUSE_ROW_REGISTER_WAVES 0
#endif

// One row per warp (Lanes = row_lanes) or per block (Lanes = row_block) with the row in registers
// (row_registers.hpp): rows of one unit-stride axis up to Lanes * row_lane_elements elements.
// Memory is read once per row instead of once per phase. Kept >= 0: phase Kept's operand values
// stay in a second register array for the epilogue.
static_assert(register_block_lanes == row_block, "fuse: the block register kernel holds a row in one block");
template <int Kept, int Lanes, class It, class S>
__global__ void __launch_bounds__(row_block, (register_blocks_v<Kept, It, S>))
    row_kernel_registers(It it, S source, row_vectors vector) {
  constexpr std::size_t R = It::rank;
  constexpr int N = row_lane_elements;
  constexpr row_group G = Lanes == row_lanes ? row_group::warp : row_group::block;
  constexpr int rows_per_block = row_block / Lanes;
  using T = std::remove_pointer_t<decltype(it.out)>;
  constexpr int P = row_chunk_elements<typename S::value_type, T>();
  constexpr std::size_t scratch = scratch_bytes<G, decltype(it.phases)>();
  __shared__ __align__(16) unsigned char storage[scratch];
  const int lane = threadIdx.x % Lanes;
  const index_t rows_per_step = index_t(gridDim.x) * rows_per_block;
  const index_t count = it.row_elements();
  const index_t rows = it.rows();
  row_slot slots[It::phase_count > 0 ? It::phase_count : 1];
  auto ev = it.eval;
  auto phases = it.phases;
  ev.bind(slots);
  for_each(phases, [&](auto& p) { p.bind(slots); });
  // Per block: every thread of the block takes the same rows, so all reach the barriers.
  for (index_t o = index_t(blockIdx.x) * rows_per_block + threadIdx.x / Lanes; o < rows; o += rows_per_step) {
    index_t idx[R] = {};
    unflatten_leading<R - 1>(o, it.shape, idx);  // register_lanes: the row is the last axis alone
    typename S::value_type reg[N];
    S src = source;
    src.seek(idx);
    load_lane<N, Lanes, P>(src, lane, count, vector.load, reg);
    [[maybe_unused]] kept_value_t<Kept, It, S> kept[Kept >= 0 ? N : 1];
    run_phases(phases, it.alias, slots, idx, [&](auto& p) {
      using Op = typename std::remove_cvref_t<decltype(p)>::op;
      if constexpr (int(std::remove_cvref_t<decltype(p)>::slot) == Kept)
        return row_allreduce<G, Op>(reduce_lane_keeping<N, Lanes, P>(p, lane, count, reg, kept), storage);
      else
        return row_allreduce<G, Op>(reduce_lane<N, Lanes, P>(p, lane, count, reg), storage);
    });
    ev.seek(idx);
    T* row = it.out + row_offset<R>(it.out_stride, idx);
    if constexpr (Kept >= 0)  // never a reduction root
      write_lane<N, Lanes, P>(row, lane, count, vector.store, [&](int j, index_t i) { return ev.template at<true>(i, reg[j], kept[j]); });
    else if (!it.root_reduction)
      write_lane<N, Lanes, P>(row, lane, count, vector.store, [&](int j, index_t i) { return ev.template at<true>(i, reg[j]); });
    else if (lane == 0)
      *row = static_cast<T>(ev.template at<true>(0, reg[0]));
  }
}

// Launches row_kernel_registers<Kept, Lanes> over `it` as it is.
template <int Kept, int Lanes, class It, class S>
void launch_register_kernel(const cuda& exec, const It& it, const S& source, row_vectors vector, index_t sms) {
  const index_t rows_per_block = row_block / Lanes;
  // FUSE_ROW_REGISTER_WAVES > 0: at most that many waves of resident blocks, each warp looping
  // over rows (measured against one row per warp: docs/performance.md).
  constexpr int resident = register_blocks_v<Kept, It, S>;
  const index_t cap = FUSE_ROW_REGISTER_WAVES > 0 ? sms * resident * FUSE_ROW_REGISTER_WAVES : sms * 32;
  const auto blocks = static_cast<unsigned>(std::min<index_t>((it.rows() + rows_per_block - 1) / rows_per_block, cap));
  row_kernel_registers<Kept, Lanes><<<blocks, row_block, 0, exec.stream>>>(it, source, vector);
  cuda_check(cudaGetLastError(), Kept >= 0 ? "cuda: row kernel (registers, kept operand) launch" : "cuda: row kernel (registers) launch");
}

// The register kernel over the marked iteration `it` (Kept >= 0: its epilogue reads phase Kept's
// operand through the hole), without loads where `reads` allows (with_register_reads).
template <int Kept, int Lanes, class It, class S>
void launch_registers(const cuda& exec, const It& it, const S& source, row_vectors vector, register_reads reads, index_t sms) {
  with_register_reads<S>(it, reads, [&](const auto& run, register_reads) {
    launch_register_kernel<Kept, Lanes>(exec, run, source, vector, sms);
  });
}

// The register kernel for rows held by Lanes threads, keeping an operand where it can: without
// loads of the source's type where every occurrence is the source, else testing each at run time.
template <int Lanes, class It>
void run_registers(const cuda& exec, const It& it, index_t sms) {
  const auto r = registers_iteration(it);
  using RIt = std::remove_cvref_t<decltype(r.it)>;
  using S = std::remove_cvref_t<decltype(r.source)>;
  using T = std::remove_pointer_t<decltype(it.out)>;
  const row_vectors vector = row_vectors_for<row_chunk_elements<typename S::value_type, T>(), T, It::rank>(it.out, it.out_stride, r.source);
  const register_reads reads = register_reads_of(r.it);
  constexpr int kept = register_cached_phase<RIt>();
  if constexpr (kept >= 0) {
    if (!r.it.root_reduction && register_cache_fits<kept>(r.it))
      return launch_registers<kept, Lanes>(exec, register_cached_iteration<kept>(r.it), r.source, vector, reads, sms);
  }
  launch_registers<-1, Lanes>(exec, r.it, r.source, vector, reads, sms);
}

// Stage 1 of a split root reduction: block b reduces its share of every row into partial[row][b].
template <bool Unit, class It, class Total>
__global__ void __launch_bounds__(row_block) split_reduce_kernel(It it, Total* partial, int blocks_per_row) {
  constexpr std::size_t R = It::rank;
  using P = std::remove_cvref_t<decltype(get<0>(it.phases))>;
  using reduce = cub::BlockReduce<Total, row_block>;
  __shared__ typename reduce::TempStorage storage;
  const index_t row = blockIdx.x / blocks_per_row;
  const index_t part = blockIdx.x % blocks_per_row;
  index_t idx[R] = {};
  outer_index(it, row, idx);
  auto p = get<0>(it.phases);
  const index_t step = index_t(blocks_per_row) * row_block;
  Total t = reduce_share<Unit>(it, p, idx, part * row_block + threadIdx.x, step, it.row_elements(),
                               P::op::template identity<Total>());
  t = reduce(storage).Reduce(t, combine_fn<typename P::op>{});
  if (threadIdx.x == 0) partial[blockIdx.x] = t;
}

// Stage 1 of a column reduction (row_layout::columns, column_grid): a thread per row, so that a
// warp reads 32 side-by-side rows' elements at once; its part into partial[part][row] (or, in
// one part, the root directly). Rows are strided: rows_side_by_side refuses unit-stride ones.
template <class It, class Total>
__global__ void __launch_bounds__(row_block) column_reduce_kernel(It it, Total* partial, column_grid grid) {
  constexpr std::size_t R = It::rank;
  using P = std::remove_cvref_t<decltype(get<0>(it.phases))>;
  const index_t row = grid.row(blockIdx.x, threadIdx.x);
  const int part = grid.part(blockIdx.x);
  const index_t rows = it.rows();
  if (row >= rows) return;
  index_t idx[R] = {};
  outer_index(it, row, idx);
  auto p = get<0>(it.phases);
  const Total t = reduce_share<false>(it, p, idx, part, grid.parts, it.row_elements(), P::op::template identity<Total>());
  if (grid.parts == 1) write_root(it, row, t);
  else partial[part * rows + row] = t;
}

// Stage 2: one thread per row combines the row's `parts` partials (at row * row_stride +
// part * part_stride) in order and writes the root.
template <class It, class Total>
__global__ void split_finish_kernel(It it, const Total* partial, int parts, index_t row_stride, index_t part_stride) {
  using P = std::remove_cvref_t<decltype(get<0>(it.phases))>;
  const index_t row = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= it.rows()) return;
  Total t = P::op::template identity<Total>();
  for (int b = 0; b < parts; ++b) t = P::op::combine(t, partial[row * row_stride + b * part_stride]);
  write_root(it, row, t);
}

template <row_group G, class It>
void launch_rows(const cuda& exec, const It& it, index_t sms) {
  using threads = row_threads<G>;
  const unsigned blocks = threads::grid(it.rows(), sms * 32);
  if (it.unit) row_kernel<G, true><<<blocks, row_block, 0, exec.stream>>>(it);
  else row_kernel<G, false><<<blocks, row_block, 0, exec.stream>>>(it);
  cuda_check(cudaGetLastError(), "cuda: row kernel launch");
}

// One cluster of row_cluster blocks per row. Needs a device that launches clusters and this
// kernel's code for it built for sm_90 or later (a PTX-only build for an older architecture is
// JIT-compiled without the cluster code); returns false, launching nothing, otherwise.
template <bool Unit, class It>
bool launch_cluster_rows(const cuda& exec, const It& it, index_t sms) {
  using threads = row_threads<row_group::cluster>;
  auto* kernel = &row_kernel<row_group::cluster, Unit, It>;
  int clusters = 0;
  cuda_check(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, current_device()), "cuda: cluster launch attribute");
  if (!clusters) return false;
  cudaFuncAttributes attributes{};
  cuda_check(cudaFuncGetAttributes(&attributes, kernel), "cuda: row kernel (cluster) attributes");
  if (attributes.ptxVersion < 90 || attributes.binaryVersion < 90) return false;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = row_cluster, cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(threads::grid(it.rows(), sms * 4));
  config.blockDim = dim3(row_block);
  config.stream = exec.stream;
  config.attrs = &cluster;
  config.numAttrs = 1;
  cuda_check(cudaLaunchKernelEx(&config, kernel, it), "cuda: row kernel (cluster) launch");
  return true;
}

template <class T, std::size_t R, class Ev, class Ph>
void run(const cuda& exec, const row_iteration<T, R, Ev, Ph>& it) {
  using It = row_iteration<T, R, Ev, Ph>;
  const index_t rows = it.rows();
  if (rows == 0) return;
  const index_t count = it.row_elements();
  const index_t sms = multiprocessor_count();
  const row_layout layout = rereading_layout_of(it, sms);
  if constexpr (It::phase_count == 1) {
    using P = std::remove_cvref_t<decltype(get<0>(it.phases))>;
    using Total = typename P::op::template total_t<typename P::acc_type>;
    // A root reduction alone over rows side by side (column sums): a thread per row.
    if (layout == row_layout::columns) {
      const column_grid grid = column_layout(rows, count, sms);
      stream_arena arena(exec);
      auto partial = arena.template make<Total>(shape_t<1>{grid.parts > 1 ? rows * grid.parts : 0});
      column_reduce_kernel<<<grid.blocks(), grid.threads, 0, exec.stream>>>(it, partial.data(), grid);
      cuda_check(cudaGetLastError(), "cuda: column reduction launch");
      if (grid.parts > 1) {
        split_finish_kernel<<<static_cast<unsigned>((rows + 127) / 128), 128, 0, exec.stream>>>(it, partial.data(), grid.parts, index_t(1), rows);
        cuda_check(cudaGetLastError(), "cuda: column reduction finish");
      }
      return;  // `partial` is freed on the stream, after the kernels
    }
    // A root reduction alone (sum(x * x)): too few rows to fill the GPU -> split rows across blocks.
    if (layout == row_layout::split) {
      const int per_row = split_parts(rows, count, sms);
      stream_arena arena(exec);
      auto partial = arena.template make<Total>(shape_t<1>{rows * per_row});
      const unsigned blocks = static_cast<unsigned>(rows * per_row);
      if (it.unit) split_reduce_kernel<true><<<blocks, row_block, 0, exec.stream>>>(it, partial.data(), per_row);
      else split_reduce_kernel<false><<<blocks, row_block, 0, exec.stream>>>(it, partial.data(), per_row);
      cuda_check(cudaGetLastError(), "cuda: split reduction launch");
      split_finish_kernel<<<static_cast<unsigned>((rows + 127) / 128), 128, 0, exec.stream>>>(it, partial.data(), per_row, index_t(per_row), index_t(1));
      cuda_check(cudaGetLastError(), "cuda: split reduction finish");
      return;  // `partial` is freed on the stream, after the two kernels
    }
  }
  if constexpr (!std::is_void_v<row_source_t<It>>) {
    switch (register_lanes(it)) {
      case row_lanes: return run_registers<row_lanes>(exec, it, sms);
      case register_block_lanes: return run_registers<register_block_lanes>(exec, it, sms);
      default: break;
    }
  }
  if (layout == row_layout::cluster) {
    // Too few rows for one block each to fill the GPU ([64, 262144]: 64 blocks on 132 SMs).
    if (it.unit ? launch_cluster_rows<true>(exec, it, sms) : launch_cluster_rows<false>(exec, it, sms)) return;
  }
  if (layout == row_layout::warp) launch_rows<row_group::warp>(exec, it, sms);
  else launch_rows<row_group::block>(exec, it, sms);
}

}  // namespace fuse::detail
