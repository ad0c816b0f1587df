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
#include <array>
#include <cstddef>
#include <memory>

#include "fuse/backend/cpu/column_pair_kernel.hpp"

namespace fuse::detail {

// Chan, Golub and LeVeque's update: a set of nb elements (mean mean_b, squared deviations from it
// m2_b) joins one of na (mu, m2); to_b = nb / (na + nb), spread = na * to_b.
FUSE_INLINE void join_moments(double& mu, double& m2, double mean_b, double m2_b, double to_b, double spread) {
  const double delta = mean_b - mu;
  mu += delta * to_b;
  // (The first set joins nothing: spread 0. Not delta^2 * 0, NaN for |mean_b| > 1.3e154.)
  m2 += m2_b + (spread == 0 ? 0.0 : delta * delta * spread);
}

// Runs column pair e (column_pair_v, kind moments), writing its variance into var_dst and its
// inner mean into mean_dst; as run_column_pair_kernel.
template <class TM, std::size_t RM, class TV, std::size_t RV, class E>
bool run_column_moments(const cpu& exec, const destination<TM, RM>& mean_dst, const destination<TV, RV>& var_dst, const E& e) {
  using Acc = typename E::acc_type;
  // A column's state: its total, mean and sum of squared deviations from the mean.
  auto make_pass = [](index_t tile) {
    // Per column of the tile: the block's shift, sum, sum of deviations and of their squares.
    std::array<std::unique_ptr<Acc[]>, 4> block;
    for (auto& p : block) p.reset(new Acc[std::size_t(tile)]);
    return [block = std::move(block)](auto& rows, auto cursor, index_t count, column_state<3> state) {
      const index_t j0 = cursor.j0, w = cursor.w;
      Acc* const shift = block[0].get();
      Acc* const sum = block[1].get();
      Acc* const dev = block[2].get();
      Acc* const sq = block[3].get();
      double* const total = state[0];
      double* const mu = state[1];
      double* const m2 = state[2];
      std::fill_n(total, w, 0.0);
      std::fill_n(mu, w, 0.0);
      std::fill_n(m2, w, 0.0);
      auto at = [&](int k, index_t j) { return rows.template at<Acc>(k, j0 + j); };
      auto next_row = [&](int k) { cursor.next(k); };
      for (index_t r0 = 0; r0 < count; r0 += pair_block_rows) {
        const index_t b = std::min(pair_block_rows, count - r0);
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
    };
  };
  auto join = [](std::array<double, 3>& acc, const std::array<double, 3>& part, double na, double nb) {
    const double to_part = nb / (na + nb);
    acc[0] += part[0];
    join_moments(acc[1], acc[2], part[1], part[2], to_part, na * to_part);
  };
  auto write = [&](index_t at_mean, index_t at_var, const std::array<double, 3>& v, index_t reduced) {
    mean_dst.data[at_mean] = mean_op::finalize<TM>(v[0], reduced);
    var_dst.data[at_var] = static_cast<TV>(E::op::template finalize<typename E::value_type>(v[2], reduced));
  };
  return run_column_pair_kernel<3>(exec, mean_dst, var_dst, e, make_pass, join, write);
}

}  // namespace fuse::detail
