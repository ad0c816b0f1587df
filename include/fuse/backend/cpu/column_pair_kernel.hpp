// fuse/backend/cpu/column_pair_kernel.hpp - what the kernels of the column pairs share
// (core/column_pair.hpp): the checks, the split of tiles and rows across threads (as run_columns,
// column_reduce.hpp), the rows read four at a time, and the parts joined after. Each kind brings
// its pass over a tile's rows, its join of two parts and its results (column_moments.hpp,
// column_softmax.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>

#include "fuse/backend/cpu/column_reduce.hpp"
#include "fuse/core/column_pair.hpp"

namespace fuse::detail {

// Rows a block of a pair's pass holds: its float sums run over a block, the blocks join in double.
inline constexpr index_t pair_block_rows = 16;

// A tile's running state in double, K values a column (moments: total, mean, squared deviations;
// softmax: max, sum of exponentials): K arrays of the tile's width.
template <std::size_t K>
using column_state = std::array<double*, K>;

// The rows of a tile that a pass reads, through four_rows `rows`: next(k) seeks its copy k to the
// next row; mark() remembers the row it is at, rewind() goes back there (softmax reads each block
// twice). The tile's columns are [j0, j0 + w). A pass takes it by value: its indices then live
// in the pass's own frame, and M, the reduced axes, is a constant (as a reference and a run-time
// mask they cost var over [200704, 64], rows of four vectors, a fifth of its speed).
template <std::size_t R, std::uint32_t M, class Rows>
struct row_cursor {
  Rows& rows;
  const shape_t<R>& shape;
  index_t j0, w;
  index_t idx[R - 1];  // the next row's indices
  index_t marked[R - 1] = {};

  FUSE_INLINE void next(int k) { rows.next_row(k, idx, shape, M, j0, w); }
  void mark() { std::copy(idx, idx + (R - 1), marked); }
  void rewind() { std::copy(marked, marked + (R - 1), idx); }
};

// Runs column pair e into inner_dst (its inner reduction: a fresh buffer of that shape) and dst
// (e's shape, leading extents of 1 possibly dropped). False, with nothing written, where it cannot
// (column_pair_shape_fits, an operand not read along the last axis in memory order, dst
// overlapping it): the two then run as kernels of their own.
// - make_pass(tile): a thread's pass (owning its block arrays); pass(rows, cursor, count, state)
//   reduces `count` rows of the cursor's columns (rows: four_rows; cursor: a row_cursor, by value)
//   into state.
// - join(acc, part, na, nb): std::array<double, K> acc, of na rows, takes part, of nb rows after them.
// - write(at_inner, at_outer, values, count): a column's results from its state (std::array<double,
//   K>) over `count` reduced elements.
template <std::size_t K, class TI, std::size_t RI, class TO, std::size_t RO, class E, class MakePass, class Join, class Write>
bool run_column_pair_kernel(const cpu& exec, const destination<TI, RI>& inner_dst, const destination<TO, RO>& dst, const E& e,
                            MakePass make_pass, Join join, Write write) {
  constexpr std::size_t R = E::child_rank;
  constexpr std::uint32_t M = E::mask;
  if (!column_pair_shape_fits(e)) return false;  // (the layout: reads_by_rows below)
  const auto& a = column_pair<E>::operand(e);
  const shape_t<R> shape = a.shape();
  const index_t n = shape[R - 1];
  auto ev = a.template evaluator<R, 0>(shape);
  bool splats = false;
  if (!reads_by_rows(ev, shape, dst, splats)) return false;

  const int threads = threads_for(exec, shape_size(shape));
  const column_tiles c = tile_columns(shape, M, threads, column_max_tile);
  const index_t inner_stride = inner_dst.strides[RI - 1], outer_stride = dst.strides[RO - 1];
  using values = std::array<double, K>;
  auto write_column = [&](const index_t* idx, index_t j, const values& v) {
    write(result_offset<R>(inner_dst, idx, M) + j * inner_stride, result_offset<R>(dst, idx, M) + j * outer_stride, v, c.reduced);
  };
  // Where the rows are split, each part's state, joined after: K values a column of a kept
  // combination, at ((part * kept + kept index) * K + k) * n + column.
  const std::unique_ptr<double[]> parts(c.parts > 1 ? new double[std::size_t(c.parts * c.kept * n) * K] : nullptr);
  auto part_at = [&](index_t part, index_t kept, std::size_t k) { return parts.get() + ((part * c.kept + kept) * index_t(K) + index_t(k)) * n; };

  run_threads(threads, [&](index_t t, index_t nt) {
    four_rows<R, decltype(ev)> rows(ev, splats, n);
    auto pass = make_pass(c.tile);
    const std::unique_ptr<double[]> own(new double[std::size_t(c.tile) * K]);
    column_state<K> state;
    for (std::size_t k = 0; k < K; ++k) state[k] = own.get() + index_t(k) * c.tile;
    for (index_t item = t * c.items / nt; item < (t + 1) * c.items / nt; ++item) {
      index_t idx[R - 1];
      const column_item it = start_item(c, item, shape, M, idx);
      const index_t j0 = it.j0, w = std::min(n, j0 + c.tile) - j0;
      row_cursor<R, M, decltype(rows)> cursor{rows, shape, j0, w, {}, {}};
      std::copy(idx, idx + (R - 1), cursor.idx);
      pass(rows, cursor, it.row_end - it.row_begin, state);
      if (c.parts > 1) {
        for (std::size_t k = 0; k < K; ++k) std::copy_n(state[k], w, part_at(it.part, it.kept_index, k) + j0);
      } else {
        for (index_t j = 0; j < w; ++j) {
          values v;
          for (std::size_t k = 0; k < K; ++k) v[k] = state[k][j];
          write_column(idx, j0 + j, v);
        }
      }
    }
  });
  // The parts joined in order (a few columns: kept * tiles < threads).
  for (index_t kept = 0; kept < (c.parts > 1 ? c.kept : 0); ++kept) {
    index_t idx[R - 1];
    start_item(c, kept * c.tiles * c.parts, shape, M, idx);  // the kept axes of combination `kept`
    for (index_t j = 0; j < n; ++j) {
      values acc{};
      double na = 0;
      for (index_t part = 0; part < c.parts; ++part) {
        values v;
        for (std::size_t k = 0; k < K; ++k) v[k] = part_at(part, kept, k)[j];
        const double nb = double(c.reduced * (part + 1) / c.parts - c.reduced * part / c.parts);
        if (part == 0) acc = v;
        else join(acc, v, na, nb);
        na += nb;
      }
      write_column(idx, j, acc);
    }
  }
  return true;
}

}  // namespace fuse::detail
