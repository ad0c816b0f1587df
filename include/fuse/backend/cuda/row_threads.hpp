// fuse/backend/cuda/row_threads.hpp - which threads of the re-reading row kernel share a row, and
// which rows and row elements each thread takes. Host and device code, no CUDA headers, so that
// the mapping is tested on the CPU (tests/backend/test_cuda_logic.cpp).
#pragma once

#include "fuse/config.hpp"
#include "fuse/core/extents.hpp"

namespace fuse::detail {

inline constexpr int row_block = 256;  // threads per block of the row kernels
// Blocks per row in the cluster variant: 8 is the cluster size every sm_90 device supports.
inline constexpr int row_cluster = 8;

// The threads that share a row: a warp, a block, or a cluster of row_cluster blocks.
enum class row_group { warp, block, cluster };

// Thread `thread` of block `block` in a 1-D grid of `grid` blocks (a 1-D grid's clusters are runs
// of row_cluster consecutive blocks). Its rows are first_row, first_row + rows_per_step, ...; in
// each it takes the elements lane, lane + per_row, ...
template <row_group G>
struct row_threads {
  static constexpr index_t per_row = G == row_group::warp ? 32 : G == row_group::block ? row_block : index_t(row_block) * row_cluster;
  static constexpr index_t per_block = G == row_group::warp ? row_block / 32 : 1;  // rows a block holds at once
  static constexpr index_t blocks = G == row_group::cluster ? row_cluster : 1;      // blocks per row

  FUSE_HOST_DEVICE static index_t lane(unsigned block, unsigned thread) {
    if constexpr (G == row_group::warp) return thread % 32;
    else return index_t(block % blocks) * row_block + thread;
  }
  FUSE_HOST_DEVICE static index_t first_row(unsigned block, unsigned thread) {
    if constexpr (G == row_group::warp) return index_t(block) * per_block + thread / 32;
    else return index_t(block) / blocks;
  }
  FUSE_HOST_DEVICE static index_t rows_per_step(unsigned grid) { return index_t(grid) * per_block / blocks; }
  // Blocks to launch for `rows` rows, at most `cap` rows' worth (each then loops over rows).
  static unsigned grid(index_t rows, index_t cap) {
    const index_t groups = (rows + per_block - 1) / per_block;
    return static_cast<unsigned>((groups < cap ? groups : cap) * blocks);
  }
};

// The longest rows the re-reading kernel gives one warp; longer rows get a block or a cluster.
inline constexpr index_t warp_row_limit = 1024;

// How row_kernel.cuh's run lays out a row iteration that does not run in registers, on a GPU of
// `sms` multiprocessors: `columns` (a root reduction alone, `root_alone`, over strided rows that
// lie side by side in memory, `side_by_side`: column sums, NHWC statistics; a thread per row, so
// that a warp reads 32 adjacent elements, each row in parts, then a second kernel: column_grid),
// `split` (a root reduction alone over too few rows to fill the GPU: each row split across
// split_parts blocks, then a second kernel), `cluster` (long rows, too few for a
// block each; a block each where clusters cannot launch), `block` or `warp` (a warp each for rows
// up to warp_row_limit). One function for the kernel and its CPU simulation
// (tests/backend/test_cuda_logic.cpp), so that the simulation runs what the device would.
enum class row_layout { columns, split, cluster, block, warp };
inline row_layout rereading_layout(bool root_alone, index_t rows, index_t count, index_t sms, bool side_by_side = false) {
  if (root_alone && side_by_side && rows >= 32) return row_layout::columns;
  if (root_alone && rows < 2 * sms && count >= 64 * row_block) return row_layout::split;
  if (count > warp_row_limit && rows < 4 * sms) return row_layout::cluster;
  return count <= warp_row_limit ? row_layout::warp : row_layout::block;
}
// Blocks per row of the split layout: about 4 per multiprocessor over all rows, each with a
// block's worth of elements at least.
inline int split_parts(index_t rows, index_t count, index_t sms) {
  const index_t want = (4 * sms + rows - 1) / rows, most = count / row_block;
  return static_cast<int>(want < most ? want : most);
}

// The columns layout: blocks of `threads` threads (the rows rounded up to a warp, at most
// row_block), block b taking part b / row_blocks of `threads` side-by-side rows, thread t of it
// one row; each row in `parts` parts, part k its elements k, k + parts, ... (reduce_share).
// Enough parts that the rows' threads fill every multiprocessor (2048 threads each: each thread
// has only a few loads in flight), each with 16 elements of its row at least.
struct column_grid {
  int threads;
  index_t row_blocks;
  int parts;
  FUSE_HOST_DEVICE index_t row(unsigned block, unsigned thread) const { return index_t(block % row_blocks) * threads + thread; }
  FUSE_HOST_DEVICE int part(unsigned block) const { return static_cast<int>(block / row_blocks); }
  unsigned blocks() const { return static_cast<unsigned>(row_blocks * parts); }
};
inline column_grid column_layout(index_t rows, index_t count, index_t sms) {
  const index_t threads = (rows + 31) / 32 * 32 < row_block ? (rows + 31) / 32 * 32 : row_block;
  const index_t want = (sms * 2048 + rows - 1) / rows, most = count / 16;
  const index_t parts = want < most ? want : most;
  return {static_cast<int>(threads), (rows + threads - 1) / threads, static_cast<int>(parts > 1 ? parts : 1)};
}

// Does every memory leaf of phase 0 of It read rows that lie side by side: a stride of 1 (or -1,
// or 0) along the last outer axis of more than one row, 32 rows long at least (so that a warp's
// rows are adjacent elements)? Only rows that are not contiguous themselves (it.unit: the warp
// and block layouts read those well).
template <class It>
bool rows_side_by_side(const It& it) {
  std::size_t d = it.inner_first;  // the outer axes are [0, inner_first); extent-1 ones may trail
  while (d > 0 && it.shape[d - 1] == 1) --d;
  if (it.unit || d == 0 || it.shape[d - 1] < 32) return false;
  bool ok = true, any = false;
  auto phase = get<0>(it.phases);  // (a copy: for_each_tracker is not const)
  phase.for_each_tracker([&](const auto& t) {
    if (!t.base) return;  // an index (iota): no memory
    const index_t s = t.stride[d - 1];
    ok = ok && t.span == 0 && (s == 1 || s == -1 || s == 0);
    any = any || s != 0;
  });
  return ok && any;
}

// rereading_layout for row iteration It: row_kernel.cuh's run and its CPU simulation alike.
template <class It>
row_layout rereading_layout_of(const It& it, index_t sms) {
  bool root_alone = false, side_by_side = false;  // (rows_side_by_side reads phase 0: one where it matters)
  if constexpr (It::phase_count == 1) root_alone = it.root_reduction, side_by_side = root_alone && rows_side_by_side(it);
  return rereading_layout(root_alone, it.rows(), it.row_elements(), sms, side_by_side);
}

}  // namespace fuse::detail
