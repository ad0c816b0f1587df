// fuse/backend/cpu/column_reduce.hpp - a reduction over leading axes, read in memory order.
//
// sum(x, axis<0>) of a row-major [M, N]: the row kernel moves the reduced axes last, so each of
// its rows is a column of x, read with stride N, one element per cache line and no vector loads:
// 14-86x a hand-written loop (a probe, 2026-12-03). Here the reduction runs the other way round,
// as a hand-written loop does: the operand's rows are read in memory order, and each element is
// combined into the accumulator of its column, a tile of at most 1024 columns at a time (so the
// accumulators stay in L1 while all the rows of the tile pass). Float sums keep the row kernel's
// accuracy scheme: no float accumulator takes more than 16 additions in a row (16 rows into one,
// 16 of those into a second, then into the double total).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "fuse/backend/cpu/executor.hpp"
#include "fuse/backend/cpu/splat.hpp"
#include "fuse/core/column_pair.hpp"
#include "fuse/core/iteration.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse::detail {

// column_min_extent (core/column_pair.hpp): a shorter last axis runs as the row kernel's strided
// rows (sum(x, axis<0>) of [65536, 3]: 1.28x a hand-written loop there, while a tile of 3 columns
// would seek once per 3 elements).
inline constexpr index_t column_max_tile = 1024;

// A reduction that keeps the last axis, over an operand without reductions of its own.
template <class E>
inline constexpr bool column_reducible_v = false;
template <class Op, std::uint32_t M, class C>
inline constexpr bool column_reducible_v<reduce_expr<Op, M, true, C>> =
    (C::rank >= 2) && !((M >> (C::rank - 1)) & 1u) && reduction_count_v<C> == 0;

// Whether the operand evaluator ev (over `shape`) can be read row by row along its last axis by a
// loop off the row kernel: every leaf contiguous along it, or of stride 0 there (read through a
// row of copies: `splats` is set), and none overlapping the destination (the row kernel's
// aliasing rules apply there).
template <std::size_t R, class Ev, class T, std::size_t RD>
bool reads_by_rows(Ev& ev, const shape_t<R>& shape, const destination<T, RD>& dst, bool& splats) {
  const auto out = byte_range<RD>(dst.data, sizeof(T), dst.shape.data(), dst.strides.data());
  bool usable = true;
  splats = false;
  ev.for_each_tracker([&](const tracker& t) {
    const index_t s = t.stride[R - 1];
    splats = splats || s == 0;
    usable = usable && reading_along_row<R>(t) != along_row::strided;
    if (t.base == nullptr) return;
    const auto in = t.span > 0 ? std::array<std::uintptr_t, 2>{reinterpret_cast<std::uintptr_t>(t.base),
                                                                reinterpret_cast<std::uintptr_t>(t.base) +
                                                                    std::uintptr_t(t.span) * t.elem_bytes - 1}
                               : byte_range<R>(t.base, t.elem_bytes, shape.data(), t.stride);
    if (in[0] <= in[1] && out[0] <= out[1] && in[0] <= out[1] && out[0] <= in[1]) usable = false;
  });
  return usable;
}

// Offset in dst (e's shape, leading extents of 1 possibly dropped) of the result at the first R - 1
// indices idx of the operand (its kept axes; the reduced ones, in mask, are extent 1 there).
template <std::size_t R, class T, std::size_t RD>
index_t result_offset(const destination<T, RD>& dst, const index_t* idx, std::uint32_t mask) {
  index_t at = 0;
  for (std::size_t d = 0; d + 1 < R; ++d)
    if (d + RD >= R && !((mask >> d) & 1u)) at += idx[d] * dst.strides[d + RD - R];
  return at;
}

// A tile is no narrower than this many columns where the rows can be split across threads
// instead: a narrow tile reads a few cache lines of each row and seeks for them (NHWC statistics
// over [N * H * W, 64]: two tiles of 32 columns, one per thread); and a part has at least
// column_min_part_rows rows.
inline constexpr index_t column_split_width = 256;
inline constexpr index_t column_min_part_rows = 64;

// How a column kernel splits its work: items, each a tile of at most `tile` columns at one of the
// `kept` combinations of the kept axes, over one of `parts` equal parts of the `reduced`
// combinations of the reduced axes (1 unless there are fewer tiles than threads; the parts'
// partial results are then combined after).
struct column_tiles {
  index_t kept = 1, reduced = 1, tile = 0, tiles = 0, parts = 1, items = 0;
};
template <std::size_t R>
column_tiles tile_columns(const shape_t<R>& shape, std::uint32_t mask, int threads, index_t max_tile) {
  column_tiles c;
  for (std::size_t d = 0; d + 1 < R; ++d) ((mask >> d) & 1u ? c.reduced : c.kept) *= shape[d];
  const index_t n = shape[R - 1];
  const index_t per_kept = std::max<index_t>(1, (threads + c.kept - 1) / std::max<index_t>(c.kept, 1));
  // Tiles narrow enough that every thread gets one, at most max_tile, on 16-element bounds...
  c.tile = std::clamp<index_t>(((n + per_kept - 1) / per_kept + 15) / 16 * 16, 16, max_tile);
  // ... but no narrower than column_split_width where the rows can be split instead.
  const index_t wide = std::min({(n + 15) / 16 * 16, column_split_width, max_tile});
  if (c.tile < wide && c.reduced >= 2 * column_min_part_rows) c.tile = wide;
  c.tiles = (n + c.tile - 1) / c.tile;
  if (c.kept * c.tiles < threads)
    c.parts = std::clamp<index_t>((threads + c.kept * c.tiles - 1) / std::max<index_t>(c.kept * c.tiles, 1), 1,
                                  std::max<index_t>(1, c.reduced / column_min_part_rows));
  c.items = c.kept * c.tiles * c.parts;
  return c;
}

// One item of a column kernel: its first column, its combination of the kept axes (row-major),
// its part, and the rows [row_begin, row_end) of the reduced combinations that the part reads.
struct column_item {
  index_t j0, kept_index, part, row_begin, row_end;
};
// Item `item`; idx (the first R - 1 indices) gets its kept axes and its first row's reduced ones.
template <std::size_t R>
column_item start_item(const column_tiles& c, index_t item, const shape_t<R>& shape, std::uint32_t mask, index_t* idx) {
  column_item it{};
  it.part = item % c.parts;
  const index_t rest = item / c.parts;
  it.j0 = (rest % c.tiles) * c.tile;
  it.kept_index = rest / c.tiles;
  it.row_begin = c.reduced * it.part / c.parts;
  it.row_end = c.reduced * (it.part + 1) / c.parts;
  index_t o = it.kept_index, r = it.row_begin;
  for (std::size_t d = R - 1; d-- > 0;) {
    index_t& v = (mask >> d) & 1u ? r : o;
    idx[d] = shape[d] > 0 ? v % shape[d] : 0;
    if (shape[d] > 0) v /= shape[d];
  }
  return it;
}
// idx to the next combination of the reduced axes.
template <std::size_t R>
void next_reduced(index_t* idx, const shape_t<R>& shape, std::uint32_t mask) {
  for (std::size_t d = R - 1; d-- > 0;) {
    if (!((mask >> d) & 1u)) continue;
    if (++idx[d] < shape[d]) break;
    idx[d] = 0;
  }
}

// Four copies of an operand's evaluator (this thread's own: seek writes row pointers), each
// seeked to one row of a tile of columns, so that a pass over the tile reads four rows and loads
// and stores each column's accumulators once for them, not once per row. (var(x, axis<0>) on
// [4096, 4096], one thread: a row a pass 0.5x a column sum's speed, four rows 1.3x; a probe,
// 2026-12-05.)
template <std::size_t R, class Ev>
class four_rows {
 public:
  four_rows(const Ev& ev, bool splats, index_t n)
      : ev_{ev, ev, ev, ev}, splat_{splat_rows(ev_[0], splats, n, rank), splat_rows(ev_[1], splats, n, rank),
                                    splat_rows(ev_[2], splats, n, rank), splat_rows(ev_[3], splats, n, rank)} {}
  four_rows(const four_rows&) = delete;
  four_rows& operator=(const four_rows&) = delete;

  // Copy k to the row at idx (the first R - 1 indices), its rows of copies filled for columns
  // [j0, j0 + w) only (the whole row would be n / w times the work); idx to the next combination
  // of the reduced axes (mask).
  void next_row(int k, index_t* idx, const shape_t<R>& shape, std::uint32_t mask, index_t j0, index_t w) {
    ev_[std::size_t(k)].seek(idx);
    splat_[k].fill(j0, w);
    next_reduced<R>(idx, shape, mask);
  }
  // Element j of copy k's row.
  template <class Acc>
  FUSE_INLINE Acc at(int k, index_t j) {
    return static_cast<Acc>(ev_[std::size_t(k)].template at<true>(j));
  }

 private:
  static constexpr std::integral_constant<std::size_t, R> rank{};
  std::array<Ev, 4> ev_;
  splat_rows splat_[4];
};

// Does run_columns run e into dst (rather than decline)? ev: the evaluator of e's operand over its
// shape; splats as reads_by_rows sets it. (fuse::plan asks too: plan/report.hpp.)
template <class T, std::size_t RD, class E, class Ev>
bool columns_accept(const destination<T, RD>& dst, const E& e, Ev& ev, bool& splats) {
  constexpr std::size_t R = E::child_rank;
  const shape_t<R> shape = e.child.shape();
  const index_t n = shape[R - 1];
  return n >= column_min_extent && n <= splat_max_row && reads_by_rows(ev, shape, dst, splats);
}

// Runs the column_reducible_v reduction e into dst (e's shape, leading extents of 1 possibly
// dropped). False, with nothing done, where the row kernel should run instead: a short last axis,
// an operand that is not contiguous along it, or a destination that overlaps the operand (the
// row kernel's aliasing rules apply there).
template <class T, std::size_t RD, class E>
bool run_columns(const cpu& exec, const destination<T, RD>& dst, const E& e) {
  using Op = typename E::op;
  using Acc = typename E::acc_type;
  using Total = typename Op::template total_t<Acc>;
  using Result = typename E::value_type;
  constexpr std::size_t R = E::child_rank;
  constexpr std::uint32_t M = E::mask;
  const shape_t<R> shape = e.child.shape();
  const index_t n = shape[R - 1];
  auto ev = e.child.template evaluator<R, 0>(shape);
  bool splats = false;
  if (!columns_accept(dst, e, ev, splats)) return false;

  const int threads = threads_for(exec, shape_size(shape));
  const column_tiles c = tile_columns(shape, M, threads, column_max_tile);
  const index_t tile = c.tile;
  const index_t out_last = dst.strides[RD - 1];

  // Where the rows are split, each part's totals, combined after (a few columns: kept * tiles <
  // threads).
  const std::unique_ptr<Total[]> partial(c.parts > 1 ? new Total[std::size_t(c.parts * c.kept * n)] : nullptr);

  run_threads(threads, [&](index_t t, index_t nt) {
    four_rows<R, decltype(ev)> rows(ev, splats, n);
    // Arrays, not std::vector: max of bool masks accumulates bool.
    const std::unique_ptr<Acc[]> rows16(new Acc[std::size_t(tile)]), rows256(new Acc[std::size_t(tile)]);
    const std::unique_ptr<Total[]> total(new Total[std::size_t(tile)]);
    for (index_t item = t * c.items / nt; item < (t + 1) * c.items / nt; ++item) {
      index_t idx[R - 1];
      const column_item it = start_item(c, item, shape, M, idx);
      const index_t j0 = it.j0, w = std::min(n, j0 + tile) - j0, count = it.row_end - it.row_begin;
      const index_t at = result_offset<R>(dst, idx, M);
      Acc* const a16 = rows16.get();
      Acc* const a256 = rows256.get();
      Total* const tot = total.get();
      std::fill_n(a16, w, Op::template identity<Acc>());
      std::fill_n(a256, w, Op::template identity<Acc>());
      std::fill_n(tot, w, Op::template identity<Total>());
      // Blocks of 16 rows (four at a time, then one): a16 takes at most 16 elements, a256 16 of
      // those, then the total.
      for (index_t r0 = 0; r0 < count; r0 += 16) {
        const index_t b = std::min<index_t>(16, count - r0);
        index_t i = 0;
        for (; i + 4 <= b; i += 4) {
          for (int k = 0; k < 4; ++k) rows.next_row(k, idx, shape, M, j0, w);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j) {
            const Acc v01 = Op::combine(rows.template at<Acc>(0, j0 + j), rows.template at<Acc>(1, j0 + j));
            const Acc v23 = Op::combine(rows.template at<Acc>(2, j0 + j), rows.template at<Acc>(3, j0 + j));
            a16[j] = Op::combine(a16[j], Op::combine(v01, v23));
          }
        }
        for (; i < b; ++i) {
          rows.next_row(0, idx, shape, M, j0, w);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j) a16[j] = Op::combine(a16[j], rows.template at<Acc>(0, j0 + j));
        }
        if (b < 16) break;  // the last block: a16 joins in the final combine
        FUSE_SIMD_LOOP
        for (index_t j = 0; j < w; ++j) a256[j] = Op::combine(a256[j], a16[j]), a16[j] = Op::template identity<Acc>();
        if (r0 % 256 == 240) {
          for (index_t j = 0; j < w; ++j)
            tot[j] = Op::combine(tot[j], static_cast<Total>(a256[j])), a256[j] = Op::template identity<Acc>();
        }
      }
      for (index_t j = 0; j < w; ++j) {
        const Total v = Op::combine(tot[j], static_cast<Total>(Op::combine(a256[j], a16[j])));
        if (c.parts > 1) partial[std::size_t((it.part * c.kept + it.kept_index) * n + j0 + j)] = v;
        else dst.data[at + (j0 + j) * out_last] = static_cast<T>(Op::template finalize<Result>(v, c.reduced));
      }
    }
  });
  for (index_t k = 0; k < (c.parts > 1 ? c.kept : 0); ++k) {
    index_t idx[R - 1];
    start_item(c, k * c.tiles * c.parts, shape, M, idx);  // the kept axes of combination k
    const index_t at = result_offset<R>(dst, idx, M);
    for (index_t j = 0; j < n; ++j) {
      Total v = partial[std::size_t(k * n + j)];
      for (index_t part = 1; part < c.parts; ++part) v = Op::combine(v, partial[std::size_t((part * c.kept + k) * n + j)]);
      dst.data[at + j * out_last] = static_cast<T>(Op::template finalize<Result>(v, c.reduced));
    }
  }
  return true;
}

}  // namespace fuse::detail
