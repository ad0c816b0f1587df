// fuse/backend/cpu/column_moments.hpp - a column pair (core/column_pair.hpp): the mean and the
// variance over leading axes in one pass, the operand's rows read in memory order.
//
// A tile of columns (as column_reduce.hpp) is read 16 rows at a time. Each block sums, per
// column, its elements and their deviations d from the block's first row (shifted data: the
// shift is a sample of the column, so the sum of d^2 does not dwarf the block's spread and
// nothing cancels badly), in float, no sum longer than 16 terms. The block's mean and its sum of
// squared deviations from it (sum d^2 - (sum d)^2 / b) then join the column's running ones in
// double by Chan, Golub and LeVeque's pairwise update. Data far from 0 (a mean of 1e3, a spread of
// 1) lose nothing to cancellation. The mean written is the plain sum over the count, as mean()
// alone gives it: a column holding inf has mean inf and variance NaN, as NumPy (the block's
// first row counts its own deviation, v - v: NaN for inf, so that a block of one row holding inf
// does not give inf).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>

#include "fuse/backend/cpu/column_reduce.hpp"
#include "fuse/core/column_pair.hpp"

namespace fuse::detail {

// Rows a block holds.
inline constexpr index_t moment_block_rows = 16;

// Chan, Golub and LeVeque's update: a set of nb elements (mean mean_b, squared deviations from it
// m2_b) joins one of na (mu, m2); to_b = nb / (na + nb), spread = na * to_b.
FUSE_INLINE void join_moments(double& mu, double& m2, double mean_b, double m2_b, double to_b, double spread) {
  const double delta = mean_b - mu;
  mu += delta * to_b;
  m2 += m2_b + delta * delta * spread;
}

// Runs column pair e (column_pair_v), writing its variance into var_dst (e's shape, leading
// extents of 1 possibly dropped) and its inner mean into mean_dst (a fresh buffer of the mean's
// shape). False, with nothing written, where it cannot (column_pair_fits, or var_dst overlapping
// the operand): the two then run as kernels of their own.
template <class TM, std::size_t RM, class TV, std::size_t RV, class E>
bool run_column_moments(const cpu& exec, const destination<TM, RM>& mean_dst, const destination<TV, RV>& var_dst, const E& e) {
  using P = column_pair<E>;
  using Acc = typename E::acc_type;
  constexpr std::size_t R = E::child_rank;
  constexpr std::uint32_t M = E::mask;
  if (!column_pair_shape_fits(e)) return false;  // (the layout: reads_by_rows below)
  const auto& a = P::operand(e);
  const shape_t<R> shape = a.shape();
  const index_t n = shape[R - 1];
  auto ev = a.template evaluator<R, 0>(shape);
  bool splats = false;
  if (!reads_by_rows(ev, shape, var_dst, splats)) return false;

  using Ev = decltype(ev);
  const int threads = threads_for(exec, shape_size(shape));
  const column_tiles c = tile_columns(shape, M, threads, column_max_tile);
  const index_t tile = c.tile;

  const index_t mean_stride = mean_dst.strides[RM - 1], var_stride = var_dst.strides[RV - 1];
  // A column's results from its total, and its sum of squared deviations from the mean.
  auto write = [&](index_t at_mean, index_t at_var, double total, double m2) {
    mean_dst.data[at_mean] = mean_op::finalize<TM>(total, c.reduced);
    var_dst.data[at_var] = static_cast<TV>(E::op::template finalize<typename E::value_type>(m2, c.reduced));
  };
  // Where the rows are split, each part's total, mean and squared deviations, joined after.
  const std::size_t parted = std::size_t(c.parts * c.kept * n);
  const std::unique_ptr<double[]> part_total(c.parts > 1 ? new double[parted] : nullptr),
      part_mean(c.parts > 1 ? new double[parted] : nullptr), part_m2(c.parts > 1 ? new double[parted] : nullptr);

  run_threads(threads, [&](index_t t, index_t nt) {
    four_rows<R, Ev> rows(ev, splats, n);  // four rows a pass
    // Per column of the tile: the block's shift, sum, sum of deviations and of their squares
    // (float); the column's total, mean and sum of squared deviations (double).
    std::unique_ptr<Acc[]> block_arrays[4];
    for (auto& p : block_arrays) p.reset(new Acc[std::size_t(tile)]);
    std::unique_ptr<double[]> column_arrays[3];
    for (auto& p : column_arrays) p.reset(new double[std::size_t(tile)]);
    Acc* const shift = block_arrays[0].get();
    Acc* const sum = block_arrays[1].get();
    Acc* const dev = block_arrays[2].get();
    Acc* const sq = block_arrays[3].get();
    double* const total = column_arrays[0].get();
    double* const mu = column_arrays[1].get();
    double* const m2 = column_arrays[2].get();
    for (index_t item = t * c.items / nt; item < (t + 1) * c.items / nt; ++item) {
      index_t idx[R - 1];
      const column_item it = start_item(c, item, shape, M, idx);
      const index_t j0 = it.j0, w = std::min(n, j0 + tile) - j0, count = it.row_end - it.row_begin;
      const index_t at_mean = result_offset<R>(mean_dst, idx, M), at_var = result_offset<R>(var_dst, idx, M);
      std::fill_n(total, w, 0.0);
      std::fill_n(mu, w, 0.0);
      std::fill_n(m2, w, 0.0);
      auto at = [&](int k, index_t j) { return rows.template at<Acc>(k, j0 + j); };
      auto next_row = [&](int k) { rows.next_row(k, idx, shape, M, j0, w); };
      for (index_t r0 = 0; r0 < count; r0 += moment_block_rows) {
        const index_t b = std::min(moment_block_rows, count - r0);
        index_t i = 0;
        if (b >= 4) {  // the block's first four rows, the first its shift
          for (int k = 0; k < 4; ++k) next_row(k);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j) {
            const Acc v0 = at(0, j), v1 = at(1, j), v2 = at(2, j), v3 = at(3, j);
            const Acc d0 = v0 - v0, d1 = v1 - v0, d2 = v2 - v0, d3 = v3 - v0;  // (d0: NaN for inf)
            shift[j] = v0, sum[j] = (v0 + v1) + (v2 + v3), dev[j] = (d0 + d1) + (d2 + d3), sq[j] = (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
          }
          i = 4;
        } else {
          next_row(0);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j) {
            const Acc v = at(0, j), d = v - v;
            shift[j] = sum[j] = v, dev[j] = d, sq[j] = d * d;
          }
          i = 1;
        }
        for (; i + 4 <= b; i += 4) {
          for (int k = 0; k < 4; ++k) next_row(k);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j) {
            const Acc v0 = at(0, j), v1 = at(1, j), v2 = at(2, j), v3 = at(3, j), h = shift[j];
            const Acc d0 = v0 - h, d1 = v1 - h, d2 = v2 - h, d3 = v3 - h;
            sum[j] += (v0 + v1) + (v2 + v3), dev[j] += (d0 + d1) + (d2 + d3), sq[j] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
          }
        }
        for (; i < b; ++i) {
          next_row(0);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j) {
            const Acc v = at(0, j), d = v - shift[j];
            sum[j] += v, dev[j] += d, sq[j] += d * d;
          }
        }
        // Chan et al.: na elements so far, nb = b in the block.
        const double na = double(r0), nb = double(b), inv_nb = 1 / nb, to_block = nb / (na + nb), spread = na * to_block;
        FUSE_SIMD_LOOP
        for (index_t j = 0; j < w; ++j) {
          const double d = double(dev[j]), offset = d * inv_nb;  // the block's mean - its shift
          const double corrected = double(sq[j]) - d * offset;
          const double block_m2 = corrected < 0 ? 0.0 : corrected;  // (rounding; NaN stays)
          total[j] += double(sum[j]);
          join_moments(mu[j], m2[j], double(shift[j]) + offset, block_m2, to_block, spread);
        }
      }
      if (c.parts > 1) {
        const std::size_t slot = std::size_t((it.part * c.kept + it.kept_index) * n + j0);
        std::copy_n(total, w, part_total.get() + slot);
        std::copy_n(mu, w, part_mean.get() + slot);
        std::copy_n(m2, w, part_m2.get() + slot);
      } else {
        for (index_t j = 0; j < w; ++j) write(at_mean + (j0 + j) * mean_stride, at_var + (j0 + j) * var_stride, total[j], m2[j]);
      }
    }
  });
  // The parts' results, joined by the same update (a few columns: kept * tiles < threads).
  for (index_t k = 0; k < (c.parts > 1 ? c.kept : 0); ++k) {
    index_t idx[R - 1];
    start_item(c, k * c.tiles * c.parts, shape, M, idx);  // the kept axes of combination k
    const index_t at_mean = result_offset<R>(mean_dst, idx, M), at_var = result_offset<R>(var_dst, idx, M);
    for (index_t j = 0; j < n; ++j) {
      double total = 0, mu = 0, m2 = 0, na = 0;
      for (index_t part = 0; part < c.parts; ++part) {
        const std::size_t slot = std::size_t((part * c.kept + k) * n + j);
        const double nb = double(c.reduced * (part + 1) / c.parts - c.reduced * part / c.parts), to_part = nb / (na + nb);
        total += part_total[slot];
        join_moments(mu, m2, part_mean[slot], part_m2[slot], to_part, na * to_part);
        na += nb;
      }
      write(at_mean + j * mean_stride, at_var + j * var_stride, total, m2);
    }
  }
  return true;
}

}  // namespace fuse::detail
