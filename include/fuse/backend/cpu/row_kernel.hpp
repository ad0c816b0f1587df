// fuse/backend/cpu/row_kernel.hpp - the CPU row kernel: rows split across threads; per row each
// phase reduces the row (several SIMD accumulators; float sums in float lanes per block of
// block_elements, blocks combined in double), then the epilogue writes the row. A row of a few
// thousand elements stays in L1/L2 between phases, so memory sees one read and one write.
// With fewer rows than threads (a full reduction, a single long row), each row is split across
// the threads instead, phase by phase. A phase whose expensive operand the epilogue repeats
// (softmax's exp(x - max)) stores it in a row buffer for the epilogue (row_cache.hpp). On rows over
// 16 KiB, softmax's max and sum(exp(x - max)), or layer norm's mean and variance, share one pass
// (row_online.hpp). Rows strided in memory run over contiguous copies (strided_rows.hpp): the
// kernel is compiled for contiguous rows only.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "fuse/backend/cpu/executor.hpp"
#include "fuse/backend/cpu/row_cache.hpp"
#include "fuse/backend/cpu/prefetch.hpp"
#include "fuse/backend/cpu/row_online.hpp"
#include "fuse/backend/cpu/row_reduce.hpp"
#include "fuse/backend/cpu/row_batch.hpp"
#include "fuse/backend/cpu/row_tiles.hpp"
#include "fuse/backend/cpu/row_write.hpp"
#include "fuse/backend/cpu/strided_rows.hpp"
#include "fuse/core/row_iteration.hpp"
#include "fuse/core/shared_subtree.hpp"

namespace fuse::detail {

// The plan of every phase over rows of n elements (alias: the kernel's repeated phases).
template <std::size_t R, class Phases>
auto phase_plans(const Phases& phases, const int* alias, index_t n) {
  std::array<phase_plan, Phases::size> plans{};
  std::size_t k = 0;
  for_each(phases, [&](const auto& p) {
    plans[k++] = {plan_shared(p.child, alias), n > row_mask_min_elements ? row_mask_of<R>(p.child, alias) : row_mask{}};
  });
  return plans;
}

// Does a phase narrow its rows to a mask's kept interval (row_mask.hpp)? The online pair then
// does not run: it would exponentiate the whole row.
template <std::size_t N>
bool any_masked(const std::array<phase_plan, N>& plans) {
  for (const phase_plan& p : plans)
    if (p.mask.on) return true;
  return false;
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
// online (if not null): the online pair runs as one pass (row_online.hpp). copies: as seeked()
// (row_reduce.hpp).
template <int Cached = -1, class It, class Ev, class Phases, class Buf = std::nullptr_t>
void run_row(const It& it, Ev& ev, Phases& phases, const phase_plan* plans, row_slot* slots, index_t* idx, bool stream,
             stream_prefetch<It::rank>& pf, row_prefetch<It::rank>* next, int spread, online_rows<It::rank>* online,
             row_copies<It::rank>* copies, Buf buf = nullptr) {
  constexpr std::size_t R = It::rank;
  // (A variable template, not a local constant: nvcc does not see a captured one as constant.)
  constexpr const online_pair_t& pair = online_pair_v<Phases>;
  const index_t n = it.shape[R - 1];
  bool paired = false;  // the pair ran online: its slots are written
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    auto phase = [&]<std::size_t k>(std::integral_constant<std::size_t, k>) {
      auto& p = get<k>(phases);
      using P = std::remove_cvref_t<decltype(p)>;
      // (Not when the row buffer is the max phase's: the pass would not fill it.)
      if constexpr (int(k) == online_pair_v<Phases>.max_phase && Cached != int(k)) {
        pf.follow(nullptr);
        if (online != nullptr) {
          copy_aliases_before(phases, slots, it.alias, int(k));
          // The buffer only where it is the pair's sum phase's: another phase's values are in it.
          const bool ran = [&] {
            if constexpr (Cached == online_pair_v<Phases>.sum_phase) return run_online_pair(it, phases, plans, slots, idx, pf, *online, copies, buf);
            else return run_online_pair(it, phases, plans, slots, idx, pf, *online, copies, nullptr);
          }();
          if (ran) {
            paired = true;
            return;
          }
        }
      }
      if constexpr (int(k) == online_pair_v<Phases>.sum_phase) {
        if (paired) return;
      }
      if (it.alias[k] >= 0) {
        copy_alias_slot<P::slot>(phases, slots, it.alias[k]);
      } else {
        pf.follow(int(k) == spread ? next : nullptr);
        const auto total = [&] {
          if constexpr (int(k) == Cached) return reduce_row(p, plans[k], it.shape, it.inner_first, idx, 0, n, pf, copies, buf);
          else return reduce_row(p, plans[k], it.shape, it.inner_first, idx, 0, n, pf, copies);
        }();
        write_slot(slots[P::slot], P::op::template finalize<typename P::result_type>(total, p.count));
      }
    };
    (phase(std::integral_constant<std::size_t, K>{}), ...);
  }(std::make_index_sequence<Phases::size>{});
  pf.follow(spread == int(Phases::size) ? next : nullptr);
  bool written = false;
  if constexpr (pair.kind == online_kind::softmax && Cached >= 0 && Cached == pair.sum_phase) {
    if (paired && !it.root_reduction) {
      // The buffer holds exp(x - m_b) per block: each block is rescaled just before it is written.
      const double m = read_slot<double>(slots[std::remove_cvref_t<decltype(get<std::size_t(pair.max_phase)>(phases))>::slot]);
      for (index_t b = 0; b < n; b += block_elements) {
        const index_t e = std::min(n, b + block_elements);
        rescale_block(buf, b, e, online->block_max[std::size_t(b / block_elements)], m);
        write_row(it, ev, idx, b, e, stream, pf, copies);
      }
      written = true;
    }
  }
  if (!written) write_row(it, ev, idx, 0, n, stream, pf, copies);
  pf.follow(nullptr);
  if (next != nullptr) next->finish(n);
}

// A row buffer up to this size is a local array, not an allocation.
inline constexpr std::size_t row_buffer_on_stack_bytes = 4096;

// Rows [first, last); phase Cached (>= 0) shares its operand with the epilogue through a buffer.
// online: the pair runs as one pass (row_online.hpp). Short rows run in batches (row_batch.hpp).
// copied: leaves that stay put along the row, read through rows of copies (row_copies.hpp).
template <int Cached, class It>
void run_rows_with(const It& it, index_t first, index_t last, bool stream, bool online, copied_leaves copied) {
  constexpr std::size_t R = It::rank;
  auto phases = it.phases;
  const auto plans = phase_plans<R>(phases, it.alias, it.shape[R - 1]);
  online = online && !any_masked(plans);
  const bool batched = !online && batches_rows(it);
  row_slot slots[It::phase_count > 0 ? It::phase_count : 1] = {};
  for_each(phases, [&](auto& p) { p.bind(slots); });
  index_t idx[R] = {}, next[R] = {};
  row_prefetch<R> prefetch(it);
  stream_prefetch<R> ahead(it, it.unit, prefetch_max_row_bytes);
  const int spread = spread_pass(it, stream);
  std::unique_ptr<online_rows<R>> online_state;
  if (online) online_state = std::make_unique<online_rows<R>>(it);
  std::optional<row_copies<R>> held_copies;  // (in place: row_copies holds a scratch_buffer)
  if (copied.count > 0) held_copies.emplace(it.shape[R - 1], copied);
  row_copies<R>* const copies = held_copies ? &*held_copies : nullptr;
  auto rows = [&](const auto& epilogue, auto buf, index_t buf_stride, auto source) {
    with_shared(epilogue, plan_shared(epilogue, it.alias), [&](const auto& e) {
      if (batched) {
        if (copies != nullptr)
          return run_batches<Cached, true>(it, first, last, e, plans.data(), stream, ahead, copies, buf, buf_stride, source);
        return run_batches<Cached, false>(it, first, last, e, plans.data(), stream, ahead, copies, buf, buf_stride, source);
      }
      auto ev = e;
      ev.bind(slots);
      for (index_t o = first; o < last; ++o) {
        unflatten(o, it.shape, 0, it.inner_first, idx);
        const bool has_next = o + 1 < last && prefetch.size() > 0;
        if (has_next) unflatten(o + 1, it.shape, 0, it.inner_first, next), prefetch.seek(next);
        run_row<Cached>(it, ev, phases, plans.data(), slots, idx, stream, ahead, has_next ? &prefetch : nullptr,
                              spread, online_state.get(), copies, buf);
      }
    });
  };
  if constexpr (Cached >= 0) {
    using C = phase_child_t<decltype(it.phases), std::size_t(Cached)>;
    using CT = typename C::value_type;
    // 64-byte aligned: new[]'s 16 bytes split half the 32-byte stores across cache lines
    // (softmax [16384, 1024], 2 threads: +4-26% in four alternating pairs, Zen 3). A batch's rows
    // each start on a line of their own.
    constexpr index_t line = index_t(64 / sizeof(CT) > 0 ? 64 / sizeof(CT) : 1);
    const index_t n = std::max<index_t>(it.shape[R - 1], 1);
    const index_t stride = (n + line - 1) / line * line;
    const std::size_t elements = std::size_t(batched ? stride * row_batch : n);
    // Short rows' buffers in place (scratch.hpp): the aligned allocation was ~10% of a call of
    // softmax over [4, 16] (perf, 2026-12-04).
    scratch_buffer<row_buffer_on_stack_bytes> storage;
    CT* buf = reinterpret_cast<CT*>(storage.reserve(elements * sizeof(CT)));
    const CT* current = buf;  // the row buffer the epilogue reads (cached_eval)
    rows(substitute<C>(it.eval, cached_eval<CT>{&current}), buf, stride, &current);
  } else {
    rows(it.eval, nullptr, 0, nullptr);
  }
}

// reuse: may_cache(it), online: may_online(it), copied: cpu_reading(it).copied, decided once per kernel.
template <class It>
void run_rows(const It& it, index_t first, index_t last, bool reuse, bool stream, bool online, copied_leaves copied) {
  constexpr int cached = cached_phase<decltype(it.eval), decltype(it.phases)>();
  if constexpr (cached >= 0) {
    if (reuse) return run_rows_with<cached>(it, first, last, stream, online, copied);
  }
  run_rows_with<-1>(it, first, last, stream, online, copied);
}

// The online pair of a row split across threads: each thread's range in one pass, with slots of
// its own (the running shift is per range); the parts combined, the slots written. False as
// run_online_pair. (var(x) over a whole long vector, softmax of one long row: one pass over
// memory, not two.)
template <class It>
bool run_split_online_pair(const It& it, int threads, row_slot* slots, const index_t* idx, const phase_plan* plans,
                           const stream_prefetch<It::rank>& long_rows) {
  constexpr std::size_t R = It::rank;
  using Phases = decltype(it.phases);
  constexpr online_pair_t pair = online_pair<Phases>();
  const index_t n = it.shape[R - 1];
  std::vector<online_part> parts(static_cast<std::size_t>(threads));  // empty parts (a thread omp did not start)
  run_threads(threads, [&](index_t t, index_t nt) {
    auto phases = it.phases;
    std::vector<row_slot> mine(slots, slots + It::phase_count);
    for_each(phases, [&](auto& p) { p.bind(mine.data()); });
    index_t my_idx[R];
    std::copy(idx, idx + R, my_idx);
    stream_prefetch<R> ahead = long_rows;
    online_rows<R> state(it);
    parts[std::size_t(t)] = online_pair_range(phases, plans, mine.data(), my_idx, n * t / nt, n * (t + 1) / nt, ahead, state, nullptr, nullptr);
  });
  online_part all = parts[0];
  for (std::size_t t = 1; t < parts.size(); ++t)
    all = pair.kind == online_kind::softmax ? combine_softmax(all, parts[t]) : combine_variance(all, parts[t]);
  using PK = phase_at_t<Phases, std::size_t(pair.max_phase)>;
  using PJ = phase_at_t<Phases, std::size_t(pair.sum_phase)>;
  return finish_online<pair.kind, PK, PJ>(all, n, shift_writer<Phases>(slots), slots);
}

// Rows of copies hold whole rows up to this many elements (row_copies.hpp; 4 MiB of floats per
// leaf and thread); longer rows with leaves read through them run split (run_split_rows), each
// thread's part in windows of copies_window elements: a row of 2^32 elements with a value per row
// (test_large_index.cpp) would otherwise take 32 GiB of copies.
inline constexpr index_t copies_max_row = index_t(1) << 20;
inline constexpr index_t copies_window = index_t(1) << 16;

// Fewer rows than threads, or rows of copies longer than copies_max_row: each row's phases and
// epilogue are split across the threads along the last axis (each thread's part in windows of
// copies_window where leaves are read through rows of copies); partial results are combined
// before the next phase. online: the pair runs as one pass (run_split_online_pair).
template <class It>
void run_split_rows(const It& it, int threads, bool stream, bool online, copied_leaves copied) {
  constexpr std::size_t R = It::rank;
  const index_t rows = it.rows();
  const index_t n = it.shape[R - 1];
  std::vector<row_slot> slots(It::phase_count > 0 ? It::phase_count : 1);
  const auto plans = phase_plans<R>(it.phases, it.alias, it.shape[R - 1]);
  online = online && !any_masked(plans) && copied.count == 0;  // (the pair reads no rows of copies)
  // Each thread's rows of copies (row_copies.hpp), where leaves stay put along the row: made once,
  // kept across phases and rows (a fresh one per phase cost a row of 2^22 floats 4.4 -> 14 ms on
  // 2 threads, page faults in each thread's 8 MiB), each window of its part in turn.
  std::vector<std::optional<row_copies<R>>> thread_copies(static_cast<std::size_t>(threads));
  // f(from, to, copies) over thread t's part [b, e) of the row: in windows where copies are read.
  auto by_windows = [&](index_t t, index_t b, index_t e, const auto& f) {
    if (copied.count == 0 || t >= index_t(thread_copies.size())) return f(b, e, nullptr);
    auto& held = thread_copies[std::size_t(t)];
    if (!held) held.emplace(std::min(n, copies_window), copied);
    for (index_t w = b; w < e; w += copies_window) {
      const index_t stop = std::min(e, w + copies_window);
      held->window(w, stop);
      f(w, stop, &*held);
    }
  };
  const shared_plan epilogue_shared = plan_shared(it.eval, it.alias);
  const stream_prefetch<R> long_rows(it, it.unit, prefetch_max_row_bytes);  // each thread seeks a copy
  index_t idx[R] = {};
  for (index_t o = 0; o < rows; ++o) {
    index_t q = o;
    unflatten(q, it.shape, 0, it.inner_first, idx);
    bool paired = false;  // the pair's slots are written
    std::size_t k = 0;
    for_each(it.phases, [&](const auto& phase) {
      using P = std::remove_cvref_t<decltype(phase)>;
      using Total = typename P::op::template total_t<typename P::acc_type>;
      constexpr const online_pair_t& pair = online_pair_v<decltype(it.phases)>;
      if constexpr (pair.found()) {
        // At the pair's turn: the phases before it are done (its operand may read them).
        if (online && int(k) == pair.max_phase) {
          copy_aliases_before(it.phases, slots.data(), it.alias, pair.max_phase);
          paired = run_split_online_pair(it, threads, slots.data(), idx, plans.data(), long_rows);
        }
      }
      if (paired && (int(k) == pair.max_phase || int(k) == pair.sum_phase)) {
        // written by the pair
      } else if (it.alias[k] >= 0) {
        copy_alias_slot<P::slot>(it.phases, slots.data(), it.alias[k]);
      } else {
        // One per thread. Not std::vector<Total>: for bool (max of a mask) it packs the threads'
        // values into shared bytes.
        auto partial = std::make_unique<Total[]>(std::size_t(threads));
        std::fill_n(partial.get(), threads, P::op::template identity<Total>());
        run_threads(threads, [&](index_t t, index_t nt) {
          P p = phase;
          p.bind(slots.data());
          index_t my_idx[R];
          std::copy(idx, idx + R, my_idx);
          stream_prefetch<R> ahead = long_rows;
          by_windows(t, n * t / nt, n * (t + 1) / nt, [&](index_t b, index_t e, row_copies<R>* copies) {
            partial[t] = P::op::combine(partial[t], reduce_row(p, plans[k], it.shape, it.inner_first, my_idx, b, e, ahead, copies));
          });
        });
        Total total = P::op::template identity<Total>();
        for (int t = 0; t < threads; ++t) total = P::op::combine(total, partial[t]);
        write_slot(slots[P::slot], P::op::template finalize<typename P::result_type>(total, phase.count));
      }
      ++k;
    });
    if (it.root_reduction) {
      auto ev = it.eval;
      ev.bind(slots.data());
      stream_prefetch<R> none(it, false);
      write_row(it, ev, idx, 0, n, false, none, nullptr);  // (reads element 0 only: no copies)
      continue;
    }
    run_threads(threads, [&](index_t t, index_t nt) {
      index_t my_idx[R];
      std::copy(idx, idx + R, my_idx);
      stream_prefetch<R> ahead = long_rows;
      with_shared(it.eval, epilogue_shared, [&](const auto& e) {
        auto ev = e;
        ev.bind(slots.data());
        by_windows(t, n * t / nt, n * (t + 1) / nt, [&](index_t b, index_t stop, row_copies<R>* copies) {
          write_row(it, ev, my_idx, b, stop, stream, ahead, copies);
        });
      });
      publish_streamed(stream);
    });
  }
}

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

// How the CPU reads the rows of a row kernel that make_row_iteration marked strided: contiguous
// where every tracker of another stride than 1 along the row is an index (take's too: the CPU's
// unit loop reads the table row found at seek) or a memory leaf read through rows of copies
// (row_copies.hpp, counted in `copied`): of stride 0 along the row, or strided along it but
// gathers_row (its row gathered). Otherwise the strided
// leaves are copied first (strided_rows.hpp) and this is asked again.
struct cpu_row_reading {
  bool contiguous = false;
  copied_leaves copied;
};
template <class It>
cpu_row_reading cpu_reading(const It& it) {
  constexpr std::size_t R = It::rank;
  if (it.unit || (!it.root_reduction && it.out_stride[R - 1] != 1)) return {};
  cpu_row_reading r{true, {}};
  auto copy = it;  // for_each_tracker is not const
  copy.for_each_tracker([&](const tracker& t) {
    const along_row reading = reading_along_row<R>(t);
    if (reading == along_row::copied || gathers_row<R>(t, it.shape)) {
      ++r.copied.count;
      r.copied.elem_bytes = std::max(r.copied.elem_bytes, t.elem_bytes);
    } else if (reading == along_row::strided) {
      r.contiguous = false;
    }
  });
  return r;
}

// Are the rows split across the threads (fewer rows than threads: run_split_rows)?
inline bool splits_rows(int threads, index_t rows) {
#if defined(_OPENMP)
  return threads > 1 && rows < threads;
#else
  (void)threads, (void)rows;
  return false;
#endif
}

// threads: threads_for(it); copied: cpu_reading(it).copied; `it` reads contiguous rows (marked
// unit: strided rows are copied first, strided_rows.hpp).
template <class It>
void run_row_kernel_on(const It& it, [[maybe_unused]] int threads, copied_leaves copied) {
  const index_t rows = it.rows();
  const bool reuse = may_cache(it);
  const bool stream = streams(it);
  const bool online = may_online(it);
  const bool tiled = tiles_row_kernel(it, reuse);
  auto body = [&](index_t t, index_t nt) {
    const index_t b = rows * t / nt, e = rows * (t + 1) / nt;
    if constexpr (row_tiles_compiled<It>()) {
      if (tiled) {
        run_row_tiles(it, b, e, stream);
        publish_streamed(stream);
        return;
      }
    }
    run_rows(it, b, e, reuse, stream, online, copied);
    publish_streamed(stream);
  };
  if (splits_rows(threads, rows) || (copied.count > 0 && it.shape[It::rank - 1] > copies_max_row))
    return run_split_rows(it, threads, stream, online, copied);
#if defined(_OPENMP)
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    body(omp_get_thread_num(), omp_get_num_threads());
    return;
  }
#endif
  body(0, 1);
}

// The bytes that run_row_kernel copies before it reads the rows of `it` (strided leaves made
// contiguous, strided_rows.hpp): 0 where it reads them as they are, -1 where it declines.
// (fuse::plan: plan/report.hpp. A strided destination's temporary is not counted: the plan writes
// a fresh tensor.)
template <class It>
index_t row_copy_bytes(const It& it) {
  if (it.rows() == 0 || it.unit) return 0;
  return contiguous_rows<It::rank>::copy_bytes(it);
}

// False where the rows are strided and cannot be copied contiguous (strided_rows.hpp): nothing
// was written, and the caller computes the group otherwise.
template <class It>
bool run_row_kernel(const cpu& exec, const It& it) {
  const index_t rows = it.rows();
  if (rows == 0) return true;
  const int threads = threads_for(exec, rows * std::max<index_t>(it.row_elements(), 1));
  if (it.unit) {
    run_row_kernel_on(it, threads, {});
    return true;
  }
  // A leaf that stays put along the rows (x * s[N, 1]) is read through rows of copies, take's
  // index not at all; anything else strided along the rows through a contiguous copy.
  auto contiguous = it;
  contiguous_rows<It::rank> copies;
  if (!copies.prepare(contiguous, threads)) return false;
  const cpu_row_reading r = cpu_reading(contiguous);
  if (!r.contiguous) return false;  // (not reached: prepare copied every leaf cpu_reading refuses)
  contiguous.unit = true;
  run_row_kernel_on(contiguous, threads, r.copied);
  copies.finish(threads);
  return true;
}

}  // namespace fuse::detail
