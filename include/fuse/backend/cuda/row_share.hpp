// fuse/backend/cuda/row_share.hpp - one thread's share of a row in the re-reading row kernel
// (row_kernel.cuh): the elements first, first + step, ... of a phase's reduction or of the
// epilogue. Host and device code, no CUDA headers, so that the CPU tests run the kernel's steps
// thread by thread (tests/backend/test_cuda_logic.cpp).
#pragma once

#include <cstddef>
#include <type_traits>

#include "fuse/config.hpp"
#include "fuse/core/row_iteration.hpp"

namespace fuse::detail {

// Elements a thread takes per trip (reduce_share, write_share).
inline constexpr int share_unroll = 4;
// As the CPU (docs/design.md §4): no float accumulator takes more than this many additions in a
// row; then it moves into the (double) total (move_into_total). A no-op for max/min and integer
// sums.
inline constexpr int share_chain_adds = 16;

template <class Op, class Total, class Acc>
FUSE_HOST_DEVICE FUSE_INLINE void move_into_total(Total& total, Acc& part) {
  total = Op::combine(total, static_cast<Total>(part));
  part = Op::template identity<Acc>();
}

// f(i, moved) for this thread's elements first, first + step, ... < count of a row made of several
// runs (row axes that do not merge: an NCHW batch norm's N runs of H * W), i the element's place
// in its run; idx is set to the run, and moved says it changed since the last call (seek again).
// The run is carried from element to element: placing each (q = r / n, then unflatten) cost a
// 64-bit division and a seek per element; a step shorter than the run costs a compare and a
// subtraction, and a seek per run.
template <class It, class F>
FUSE_HOST_DEVICE FUSE_INLINE void for_each_in_runs(const It& it, index_t* idx, index_t first, index_t step, index_t count,
                                                   F&& f) {
  constexpr std::size_t R = It::rank;
  if (first >= count) return;
  const index_t n = it.shape[R - 1];
  index_t q = first / n, i = first - q * n;
  unflatten(q, it.shape, it.inner_first, R - 1, idx);
  f(i, true);
  for (index_t r = first + step; r < count; r += step) {
    i += step;
    const bool moved = i >= n;
    if (moved) {
      const index_t k = step < n ? 1 : i / n;
      q += k, i -= k * n;
      unflatten(q, it.shape, it.inner_first, R - 1, idx);
    }
    f(i, moved);
  }
}

// This thread's share [first, row_elements) step `step` of phase p over the row at idx.
template <bool Unit, class It, class Phase, class Total>
FUSE_HOST_DEVICE FUSE_INLINE Total reduce_share(const It& it, Phase& p, index_t* idx, index_t first, index_t step,
                                                index_t count, Total total) {
  using Op = typename Phase::op;
  using Acc = typename Phase::acc_type;
  constexpr std::size_t R = It::rank;
  Acc acc = Op::template identity<Acc>();
  if (it.inner_first + 1 >= R) {  // one row axis: element r is at r
    p.child.seek(idx);
    // share_unroll elements per trip, loaded together into their own accumulators: one load per
    // trip left each warp with one load in flight (the add waits for it, the next load for the
    // add), too few to cover DRAM latency (sum of squares 2^25 ran at 0.37-0.41 x copy).
    Acc part[share_unroll];
    FUSE_UNROLL
    for (int u = 0; u < share_unroll; ++u) part[u] = Op::template identity<Acc>();
    index_t r = first;
    int trips = 0;
    for (; r + (share_unroll - 1) * step < count; r += share_unroll * step) {
      Acc v[share_unroll];
      FUSE_UNROLL
      for (int u = 0; u < share_unroll; ++u) v[u] = static_cast<Acc>(p.child.template at<Unit>(r + u * step));
      FUSE_UNROLL
      for (int u = 0; u < share_unroll; ++u) part[u] = Op::combine(part[u], v[u]);
      if (++trips == share_chain_adds) {
        trips = 0;
        FUSE_UNROLL
        for (int u = 0; u < share_unroll; ++u) move_into_total<Op>(total, part[u]);
      }
    }
    for (; r < count; r += step) part[0] = Op::combine(part[0], static_cast<Acc>(p.child.template at<Unit>(r)));
    FUSE_UNROLL
    for (int u = 0; u < share_unroll; ++u) acc = Op::combine(acc, part[u]);
  } else {
    int adds = 0;
    for_each_in_runs(it, idx, first, step, count, [&](index_t i, bool moved) {
      if (moved) p.child.seek(idx);
      acc = Op::combine(acc, static_cast<Acc>(p.child.template at<Unit>(i)));
      if (++adds == share_chain_adds) adds = 0, move_into_total<Op>(total, acc);
    });
  }
  return Op::combine(total, static_cast<Total>(acc));
}

template <bool Unit, class It, class Ev>
FUSE_HOST_DEVICE FUSE_INLINE void write_share(const It& it, Ev& ev, index_t* idx, index_t first, index_t step, index_t count) {
  constexpr std::size_t R = It::rank;
  using T = std::remove_pointer_t<decltype(it.out)>;
  if (it.root_reduction) {
    if (first == 0) {
      for (std::size_t d = it.inner_first; d < R; ++d) idx[d] = 0;
      ev.seek(idx);
      it.out[row_offset<R>(it.out_stride, idx)] = static_cast<T>(ev.template at<Unit>(0));
    }
    return;
  }
  if (it.inner_first + 1 >= R) {
    // One row axis: seek once. Placing every element (r / n, then its multi-index) cost a 64-bit
    // division, an index array in local memory and a seek per element (SASS of the cluster
    // kernel, 2026-12-02).
    ev.seek(idx);
    T* row = it.out + row_offset<R>(it.out_stride, idx);
    const index_t os = Unit ? 1 : it.out_stride[R - 1];
    index_t r = first;
    for (; r + (share_unroll - 1) * step < count; r += share_unroll * step) {  // as reduce_share
      T v[share_unroll];
      FUSE_UNROLL
      for (int u = 0; u < share_unroll; ++u) v[u] = static_cast<T>(ev.template at<Unit>(r + u * step));
      FUSE_UNROLL
      for (int u = 0; u < share_unroll; ++u) row[(r + u * step) * os] = v[u];
    }
    for (; r < count; r += step) row[r * os] = static_cast<T>(ev.template at<Unit>(r));
    return;
  }
  T* row = nullptr;
  for_each_in_runs(it, idx, first, step, count, [&](index_t i, bool moved) {
    if (moved) ev.seek(idx), row = it.out + row_offset<R>(it.out_stride, idx);
    if constexpr (Unit) row[i] = ev.template at<true>(i);
    else row[i * it.out_stride[R - 1]] = ev.template at<false>(i);
  });
}

// The root of row `row` (numbered as outer_index does) from its one phase's total t, at the row's
// first element: the reduction's value, or an elementwise root over it written once per row
// (widen_to_rows, plan/fusion.hpp). The last step of the split and column reductions.
template <class It, class Total>
FUSE_HOST_DEVICE void write_root(const It& it, index_t row, Total t) {
  constexpr std::size_t R = It::rank;
  using P = std::remove_cvref_t<decltype(get<0>(it.phases))>;
  using T = std::remove_pointer_t<decltype(it.out)>;
  row_slot slots[1];
  write_slot(slots[P::slot], P::op::template finalize<typename P::result_type>(t, get<0>(it.phases).count));
  auto ev = it.eval;
  ev.bind(slots);
  index_t idx[R] = {};
  unflatten(row, it.shape, 0, it.inner_first, idx);
  ev.seek(idx);
  it.out[row_offset<R>(it.out_stride, idx)] = static_cast<T>(ev.template at<false>(0));
}

}  // namespace fuse::detail
