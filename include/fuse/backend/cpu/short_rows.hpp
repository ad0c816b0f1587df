// fuse/backend/cpu/short_rows.hpp - a reduction over the last axis of rows shorter than a vector.
//
// sum(x, axis<-1>) of [65536, 3] (point coordinates, RGB): the row kernel's set-up per row (its
// 32-lane accumulators zeroed and folded, the slots, the write of one value) costs ~50 ns, against
// a row's 3 elements: 100x a hand-written loop (a probe, 2026-12-03). Rows shorter than 16
// elements, reduced into one value each (a root reduction of one phase), run here as a hand-written
// loop would: seek, fold the row, write.
#pragma once

#include "fuse/backend/cpu/column_reduce.hpp"

namespace fuse::detail {

inline constexpr index_t short_row_max = 16;  // exclusive

// A reduction over the last axis alone (kept), of an operand without reductions of its own.
template <class E>
inline constexpr bool short_row_reducible_v = false;
template <class Op, std::uint32_t M, class C>
inline constexpr bool short_row_reducible_v<reduce_expr<Op, M, true, C>> =
    (C::rank >= 1) && M == (std::uint32_t(1) << (C::rank - 1)) && reduction_count_v<C> == 0;

// Does run_short_rows run e into dst (rather than decline)? ev and splats as columns_accept.
template <class T, std::size_t RD, class E, class Ev>
bool short_rows_accept(const destination<T, RD>& dst, const E& e, Ev& ev, bool& splats) {
  constexpr std::size_t R = E::child_rank;
  const shape_t<R> shape = e.child.shape();
  return shape[R - 1] < short_row_max && reads_by_rows(ev, shape, dst, splats);
}

// Runs the short_row_reducible_v reduction e into dst; false (nothing done) for rows of 16 or more
// elements and where reads_by_rows says no.
template <class T, std::size_t RD, class E>
bool run_short_rows(const cpu& exec, const destination<T, RD>& dst, const E& e) {
  using Op = typename E::op;
  using Acc = typename E::acc_type;
  using Total = typename Op::template total_t<Acc>;
  using Result = typename E::value_type;
  constexpr std::size_t R = E::child_rank;
  const shape_t<R> shape = e.child.shape();
  const index_t n = shape[R - 1];
  auto ev = e.child.template evaluator<R, 0>(shape);
  bool splats = false;
  if (!short_rows_accept(dst, e, ev, splats)) return false;
  index_t rows = 1;
  for (std::size_t d = 0; d + 1 < R; ++d) rows *= shape[d];
  run_threads(threads_for(exec, rows * n), [&](index_t t, index_t nt) {
    auto my = ev;  // seek writes row pointers: this thread's own copy
    const splat_rows splat(my, splats, n, std::integral_constant<std::size_t, R>{});
    const index_t first = t * rows / nt, last = (t + 1) * rows / nt;
    index_t idx[R > 1 ? R - 1 : 1] = {};
    for (index_t o = first, d = index_t(R) - 2; d >= 0; --d) idx[d] = o % shape[d], o /= shape[d];
    for (index_t r = first; r < last; ++r) {
      Acc a = Op::template identity<Acc>();
      if (n > 0) {  // an empty row reads nothing (its operand may have no memory)
        my.seek(idx);
        splat.fill();
        for (index_t j = 0; j < n; ++j) a = Op::combine(a, static_cast<Acc>(my.template at<true>(j)));
      }
      const Total v = Op::combine(Op::template identity<Total>(), static_cast<Total>(a));
      dst.data[result_offset<R>(dst, idx, 0u)] = static_cast<T>(Op::template finalize<Result>(v, n));
      for (index_t d = index_t(R) - 2; d >= 0; --d) {  // the next row
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  });
  return true;
}

}  // namespace fuse::detail
