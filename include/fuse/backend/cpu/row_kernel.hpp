// fuse/backend/cpu/row_kernel.hpp - the CPU row kernel: rows split across threads; per row each
// phase reduces the row (several SIMD accumulators; float sums in float lanes per block of
// block_elements, blocks combined in double), then the epilogue writes the row. A row of a few
// thousand elements stays in L1/L2 between phases, so memory sees one read and one write.
// With fewer rows than threads (a full reduction, a single long row), each row is split across
// the threads instead, phase by phase. A phase whose expensive operand the epilogue repeats
// (softmax's exp(x - max)) stores it in a row buffer for the epilogue (row_cache.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "fuse/backend/cpu/executor.hpp"
#include "fuse/backend/cpu/row_cache.hpp"
#include "fuse/backend/cpu/prefetch.hpp"
#include "fuse/core/row_iteration.hpp"
#include "fuse/core/shared_subtree.hpp"

namespace fuse::detail {

// Reductions accumulate blocks of this many elements in Acc, then blocks in the wider total type.
// (Overridable so that tests can cross block boundaries on short rows.)
#ifndef FUSE_ROW_BLOCK_ELEMENTS
#define FUSE_ROW_BLOCK_ELEMENTS 4096
#endif
inline constexpr index_t block_elements = FUSE_ROW_BLOCK_ELEMENTS;

// Ops with a cheaper combine that is right on NaN-free data (max, min: see reduce.hpp).
template <class Op, class Acc>
concept has_finite_combine = std::is_floating_point_v<Acc> && requires(Acc a) { Op::finite_combine(a, a); };

// f(a[0], a[1], ..., a[W-1]) combined pairwise, in place. Not in lane order: that would be a
// chain of W dependent scalar ops (the compiler may not reorder float adds), which cost softmax's
// max phase ~130 cycles per block.
template <int W, class Acc, class F>
FUSE_INLINE Acc fold_pairwise(Acc* a, F f) {
  for (int w = W / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) a[l] = f(a[l], a[l + w]);
  return a[0];
}

// Elements [b, e) of the current row folded with Op (W lanes, so that the compiler vectorises and
// the latency of combine is hidden); with a buffer, also stores each element there (for the
// epilogue, see row_cache.hpp). Finite: combines with Op::finite_combine and sums v on the side
// (one add), which ends infinite or NaN when some v is NaN or infinite (or, rarely, when the sum
// overflows); then `clean` says whether the result can be used (otherwise the caller repeats the
// block with Op::combine, exactly). pf asks for the row's long inputs ahead (prefetch.hpp).
template <class Op, class Acc, bool Unit, bool Finite, class Ev, class Store, std::size_t R>
Acc reduce_block(const Ev& ev, index_t b, index_t e, Store store, bool& clean, const stream_prefetch<R>& pf) {
  constexpr int W = sizeof(Acc) >= 8 ? 16 : 32;  // two 64-byte registers of lanes
  Acc lane[W], probe[W];
  for (int l = 0; l < W; ++l) lane[l] = Op::template identity<Acc>(), probe[l] = Acc(0);
  index_t i = b;
  while (i + W <= e) {
    const index_t stop = std::min(e, i + 8 * W);
    pf.ahead(i, stop - i);
    for (; i + W <= stop; i += W) {
      FUSE_SIMD_LOOP
      for (int l = 0; l < W; ++l) {
        const auto v = ev.template at<Unit>(i + l);
        if constexpr (!std::is_null_pointer_v<Store>) store[i + l] = v;
        if constexpr (Finite) {
          lane[l] = Op::finite_combine(lane[l], static_cast<Acc>(v));
          probe[l] += static_cast<Acc>(v);
        } else {
          lane[l] = Op::combine(lane[l], static_cast<Acc>(v));
        }
      }
    }
  }
  for (; i < e; ++i) {
    const auto v = ev.template at<Unit>(i);
    if constexpr (!std::is_null_pointer_v<Store>) store[i] = v;
    if constexpr (Finite) probe[0] += static_cast<Acc>(v);
    lane[0] = Op::combine(lane[0], static_cast<Acc>(v));
  }
  if constexpr (Finite) {
    // Any order detects a NaN or an infinity.
    const Acc sum = fold_pairwise<W>(probe, [](Acc x, Acc y) { return x + y; });
    clean = sum - sum == Acc(0);  // false for inf and NaN
    // A clean block holds no NaN (the tail above is probed too), so the lanes combine with the
    // cheap form as well; an unclean block's result is discarded (the caller repeats it).
    return fold_pairwise<W>(lane, [](Acc x, Acc y) { return Op::finite_combine(x, y); });
  } else {
    return fold_pairwise<W>(lane, [](Acc x, Acc y) { return Op::combine(x, y); });
  }
}

// Reduces elements [begin, end) of the current row of ev with Op, block by block (float sums in
// float lanes per block of block_elements, blocks combined in double).
template <class Op, class Acc, bool Unit, class Ev, std::size_t R, class Store = std::nullptr_t>
typename Op::template total_t<Acc> reduce_range(const Ev& row_ev, index_t begin, index_t end, const stream_prefetch<R>& pf,
                                                Store store = nullptr) {
  // A private copy: its members (row pointers, per-row constants) cannot alias anything written.
  const Ev ev = row_ev;
  using Total = typename Op::template total_t<Acc>;
  Total total = Op::template identity<Total>();
  for (index_t b = begin; b < end; b += block_elements) {
    const index_t e = std::min(end, b + block_elements);
    bool clean = true;
    Acc block;
    if constexpr (has_finite_combine<Op, Acc>) {
      block = reduce_block<Op, Acc, Unit, true>(ev, b, e, store, clean, pf);
      if (!clean) block = reduce_block<Op, Acc, Unit, false>(ev, b, e, nullptr, clean, pf);  // a NaN or inf: exact
    } else {
      block = reduce_block<Op, Acc, Unit, false>(ev, b, e, store, clean, pf);
    }
    total = Op::combine(total, static_cast<Total>(block));
  }
  return total;
}

// Phase p over elements [begin, end) of the row at idx; `shared`: the sharing plan of its operand.
template <bool Unit, class Phase, std::size_t R, class Store = std::nullptr_t>
auto reduce_row(const Phase& p, const shared_plan& shared, const index_t* shape, std::size_t inner_first, index_t* idx,
                index_t begin, index_t end, stream_prefetch<R>& pf, Store store = nullptr) {
  using Op = typename Phase::op;
  using Acc = typename Phase::acc_type;
  auto total = Op::template identity<typename Op::template total_t<Acc>>();
  if (begin >= end) return total;  // an empty row (its operand may have no memory: do not seek)
  // Sub-rows: every combination of the row axes but the last.
  index_t sub = 1;
  for (std::size_t d = inner_first; d < R - 1; ++d) sub *= shape[d];
  with_shared(p.child, shared, [&](const auto& operand) {
    auto child = operand;
    for (index_t s = 0; s < sub; ++s) {
      unflatten(s, shape, inner_first, R - 1, idx);
      child.seek(idx);
      pf.seek(idx);
      total = Op::combine(total, reduce_range<Op, Acc, Unit>(child, begin, end, pf, store));  // store: one sub-row
    }
  });
  return total;
}

// The sharing plan of every phase's operand (alias: the kernel's repeated phases).
template <class Phases>
auto phase_shared_plans(const Phases& phases, const int* alias) {
  std::array<shared_plan, Phases::size> plans{};
  std::size_t k = 0;
  for_each(phases, [&](const auto& p) { plans[k++] = plan_shared(p.child, alias); });
  return plans;
}

// Does the epilogue write with streaming stores? As the elementwise kernel (executor.hpp): large
// contiguous outputs, which then cost no read of the lines they write.
template <class It>
bool streams(const It& it) {
  using T = std::remove_pointer_t<decltype(it.out)>;
  if constexpr (can_stream_v<T>) {
    return it.unit && !it.root_reduction && std::size_t(it.size()) * sizeof(T) >= streaming_store_bytes;
  } else {
    return false;
  }
}

// Streaming stores are weakly ordered: a thread publishes them before it joins.
inline void publish_streamed(bool stream) {
  if (stream) stream_fence();
}

// The epilogue of the row at idx (outer part set), elements [begin, end) of every sub-row; a
// reduction root writes its one value per row instead.
template <bool Unit, class It, class Ev>
void write_row(const It& it, Ev& ev, index_t* idx, index_t begin, index_t end, bool stream, stream_prefetch<It::rank>& pf) {
  constexpr std::size_t R = It::rank;
  using T = std::remove_pointer_t<decltype(it.out)>;
  if (it.root_reduction) {
    if (begin != 0) return;
    for (std::size_t d = it.inner_first; d < R; ++d) idx[d] = 0;
    ev.seek(idx);
    it.out[row_offset<R>(it.out_stride, idx)] = static_cast<T>(ev.template at<Unit>(0));
    return;
  }
  if (begin >= end) return;
  index_t sub = 1;
  for (std::size_t d = it.inner_first; d < R - 1; ++d) sub *= it.shape[d];
  const index_t os = it.out_stride[R - 1];
  for (index_t s = 0; s < sub; ++s) {
    unflatten(s, it.shape, it.inner_first, R - 1, idx);
    ev.seek(idx);
    const Ev e = ev;  // a private copy: the stores below cannot alias its per-row constants
    T* row = it.out + row_offset<R>(it.out_stride, idx);
    if constexpr (Unit) {
      if constexpr (can_stream_v<T>) {
        if (stream) {
          pf.seek(idx);
          write_streaming(row, e, begin, end, pf);
          continue;
        }
      }
      FUSE_SIMD_LOOP
      for (index_t i = begin; i < end; ++i) row[i] = e.template at<true>(i);
    } else {
      for (index_t i = begin; i < end; ++i) row[i * os] = e.template at<false>(i);
    }
  }
}

// Which pass over a row asks for the next row (row_prefetch, spread along it): the last phase
// that computes when there are two or more (the first reads this row from memory), else the
// epilogue when it streams (the plain one does not call ahead()), else the one phase. The
// epilogue is pass It::phase_count.
template <class It>
int spread_pass(const It& it, bool stream) {
  int computing = 0, last = 0;
  for (int k = 0; k < int(It::phase_count); ++k)
    if (it.alias[k] < 0) ++computing, last = k;
  return computing < 2 && stream ? int(It::phase_count) : last;
}

// One row: phases, then the epilogue. idx holds the row's outer index. Phase Cached (if >= 0)
// also stores its operand in buf. next (if not null): the next row, asked for along pass `spread`.
template <bool Unit, int Cached = -1, class It, class Ev, class Phases, class Buf = std::nullptr_t>
void run_row(const It& it, Ev& ev, Phases& phases, const shared_plan* shared, row_slot* slots, index_t* idx, bool stream,
             stream_prefetch<It::rank>& pf, row_prefetch<It::rank>* next, int spread, Buf buf = nullptr) {
  constexpr std::size_t R = It::rank;
  const index_t n = it.shape[R - 1];
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    auto phase = [&]<std::size_t k>(std::integral_constant<std::size_t, k>) {
      auto& p = get<k>(phases);
      using P = std::remove_cvref_t<decltype(p)>;
      if (it.alias[k] >= 0) {
        copy_alias_slot<P::slot>(phases, slots, it.alias[k]);
      } else {
        pf.follow(int(k) == spread ? next : nullptr);
        const auto total = [&] {
          if constexpr (int(k) == Cached) return reduce_row<Unit>(p, shared[k], it.shape, it.inner_first, idx, 0, n, pf, buf);
          else return reduce_row<Unit>(p, shared[k], it.shape, it.inner_first, idx, 0, n, pf);
        }();
        write_slot(slots[P::slot], P::op::template finalize<typename P::result_type>(total, p.count));
      }
    };
    (phase(std::integral_constant<std::size_t, K>{}), ...);
  }(std::make_index_sequence<Phases::size>{});
  pf.follow(spread == int(Phases::size) ? next : nullptr);
  write_row<Unit>(it, ev, idx, 0, n, stream, pf);
  pf.follow(nullptr);
  if (next != nullptr) next->finish(n);
}

// Frees what ::operator new(size, align_val_t(64)) gave (the row buffer, of a trivial type).
struct aligned_delete {
  void operator()(void* p) const { ::operator delete(p, std::align_val_t(64)); }
};

// Rows [first, last); phase Cached (>= 0) shares its operand with the epilogue through a buffer.
template <bool Unit, int Cached, class It>
void run_rows_with(const It& it, index_t first, index_t last, bool stream) {
  constexpr std::size_t R = It::rank;
  auto phases = it.phases;
  row_slot slots[It::phase_count > 0 ? It::phase_count : 1] = {};
  for_each(phases, [&](auto& p) { p.bind(slots); });
  index_t idx[R] = {}, next[R] = {};
  row_prefetch<R> prefetch(it);
  stream_prefetch<R> ahead(it, it.unit, prefetch_max_row_bytes);
  const int spread = spread_pass(it, stream);
  const auto phase_shared = phase_shared_plans(phases, it.alias);
  auto rows = [&](const auto& epilogue, auto buf) {
    with_shared(epilogue, plan_shared(epilogue, it.alias), [&](const auto& e) {
      auto ev = e;
      ev.bind(slots);
      for (index_t o = first; o < last; ++o) {
        unflatten(o, it.shape, 0, it.inner_first, idx);
        const bool has_next = o + 1 < last && prefetch.size() > 0;
        if (has_next) unflatten(o + 1, it.shape, 0, it.inner_first, next), prefetch.seek(next);
        run_row<Unit, Cached>(it, ev, phases, phase_shared.data(), slots, idx, stream, ahead, has_next ? &prefetch : nullptr,
                              spread, buf);
      }
    });
  };
  if constexpr (Cached >= 0) {
    using C = phase_child_t<decltype(it.phases), std::size_t(Cached)>;
    using CT = typename C::value_type;
    // 64-byte aligned: new[]'s 16 bytes split half the 32-byte stores across cache lines
    // (softmax [16384, 1024], 2 threads: +4-26% in four alternating pairs, Zen 3).
    const std::size_t n = std::size_t(std::max<index_t>(it.shape[R - 1], 1));
    const std::unique_ptr<CT[], aligned_delete> buf(static_cast<CT*>(::operator new(n * sizeof(CT), std::align_val_t(64))));
    rows(substitute<C>(it.eval, cached_eval<CT>{buf.get()}), buf.get());
  } else {
    rows(it.eval, nullptr);
  }
}

// reuse: may_cache(it), decided once per kernel.
template <bool Unit, class It>
void run_rows(const It& it, index_t first, index_t last, bool reuse, bool stream) {
  constexpr int cached = cached_phase<decltype(it.eval), decltype(it.phases)>();
  if constexpr (Unit && cached >= 0) {
    if (reuse) return run_rows_with<Unit, cached>(it, first, last, stream);
  }
  run_rows_with<Unit, -1>(it, first, last, stream);
}

#if defined(_OPENMP)
// Fewer rows than threads: each row's phases and epilogue are split across the threads along the
// last axis; partial results are combined before the next phase.
template <bool Unit, class It>
void run_split_rows(const It& it, int threads, bool stream) {
  constexpr std::size_t R = It::rank;
  const index_t rows = it.rows();
  const index_t n = it.shape[R - 1];
  std::vector<row_slot> slots(It::phase_count > 0 ? It::phase_count : 1);
  const auto phase_shared = phase_shared_plans(it.phases, it.alias);
  const shared_plan epilogue_shared = plan_shared(it.eval, it.alias);
  const stream_prefetch<R> long_rows(it, it.unit, prefetch_max_row_bytes);  // each thread seeks a copy
  index_t idx[R] = {};
  for (index_t o = 0; o < rows; ++o) {
    index_t q = o;
    unflatten(q, it.shape, 0, it.inner_first, idx);
    std::size_t k = 0;
    for_each(it.phases, [&](const auto& phase) {
      using P = std::remove_cvref_t<decltype(phase)>;
      using Total = typename P::op::template total_t<typename P::acc_type>;
      if (it.alias[k] >= 0) {
        copy_alias_slot<P::slot>(it.phases, slots.data(), it.alias[k]);
      } else {
        std::vector<Total> partial(threads, P::op::template identity<Total>());
#pragma omp parallel num_threads(threads)
        {
          const index_t t = omp_get_thread_num(), nt = omp_get_num_threads();
          P p = phase;
          p.bind(slots.data());
          index_t my_idx[R];
          std::copy(idx, idx + R, my_idx);
          stream_prefetch<R> ahead = long_rows;
          partial[t] = reduce_row<Unit>(p, phase_shared[k], it.shape, it.inner_first, my_idx, n * t / nt, n * (t + 1) / nt, ahead);
        }
        Total total = P::op::template identity<Total>();
        for (auto v : partial) total = P::op::combine(total, v);
        write_slot(slots[P::slot], P::op::template finalize<typename P::result_type>(total, phase.count));
      }
      ++k;
    });
    if (it.root_reduction) {
      auto ev = it.eval;
      ev.bind(slots.data());
      stream_prefetch<R> none(it, false);
      write_row<Unit>(it, ev, idx, 0, n, false, none);
      continue;
    }
#pragma omp parallel num_threads(threads)
    {
      const index_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      index_t my_idx[R];
      std::copy(idx, idx + R, my_idx);
      stream_prefetch<R> ahead = long_rows;
      with_shared(it.eval, epilogue_shared, [&](const auto& e) {
        auto ev = e;
        ev.bind(slots.data());
        write_row<Unit>(it, ev, my_idx, n * t / nt, n * (t + 1) / nt, stream, ahead);
      });
      publish_streamed(stream);
    }
  }
}
#endif

// May the rows reuse a phase's operand in the epilogue (row_cache.hpp)? Contiguous single rows that
// fit the buffer, the phase not a repeat of another, and every repeat of its operand in the
// epilogue the same value.
template <class It>
bool may_cache(const It& it) {
  constexpr int k = cached_phase<decltype(it.eval), decltype(it.phases)>();
  if constexpr (k < 0) {
    return false;
  } else {
    constexpr std::size_t R = It::rank;
    using C = phase_child_t<decltype(it.phases), std::size_t(k)>;
    const auto& child = get<std::size_t(k)>(it.phases).child;
    return it.unit && it.inner_first == R - 1 && !it.root_reduction && it.alias[k] < 0 &&
           std::size_t(it.shape[R - 1]) * sizeof(typename C::value_type) <= cache_max_bytes &&
           all_occurrences_equal(it.eval, child, it.alias);
  }
}

template <class It>
void run_row_kernel(const cpu& exec, const It& it) {
  const index_t rows = it.rows();
  if (rows == 0) return;
  const bool reuse = may_cache(it);
  const bool stream = streams(it);
  [[maybe_unused]] const int threads = threads_for(exec, rows * std::max<index_t>(it.row_elements(), 1));
  auto body = [&](index_t t, index_t nt) {
    const index_t b = rows * t / nt, e = rows * (t + 1) / nt;
    if (it.unit) run_rows<true>(it, b, e, reuse, stream);
    else run_rows<false>(it, b, e, reuse, stream);
    publish_streamed(stream);
  };
#if defined(_OPENMP)
  if (threads > 1 && rows >= threads) {
#pragma omp parallel num_threads(threads)
    body(omp_get_thread_num(), omp_get_num_threads());
    return;
  }
  if (threads > 1) return it.unit ? run_split_rows<true>(it, threads, stream) : run_split_rows<false>(it, threads, stream);
#endif
  body(0, 1);
}

// The row kernel compiled once, strided only: for assign_fused's run-time fallback (as
// run_cpu_generic). Rows split across threads, or each row when there are fewer rows than threads
// (a full reduction).
template <class It>
void run_row_kernel_generic(const cpu& exec, const It& it) {
  const index_t rows = it.rows();
  if (rows == 0) return;
  const int threads = threads_for(exec, rows * std::max<index_t>(it.row_elements(), 1));
#if defined(_OPENMP)
  if (threads > 1 && rows < threads) return run_split_rows<false>(it, threads, false);
#endif
  run_threads(threads, [&](index_t t, index_t nt) { run_rows<false>(it, rows * t / nt, rows * (t + 1) / nt, false, false); });
}

}  // namespace fuse::detail
