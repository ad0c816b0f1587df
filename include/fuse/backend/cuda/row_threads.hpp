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

}  // namespace fuse::detail
