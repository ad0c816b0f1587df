// fuse/backend/cpu/row_batch.hpp - short rows of a row kernel, run in batches.
//
// A row is a chain: its reduction, the fold of the lanes, finalize (mean's division), the row
// constants the epilogue computes once (rms_norm's rsqrt: a square root and a division), then the
// epilogue. On a short row that chain takes longer than the row's loads and stores, and the
// set-up around it (seeks, evaluator copies, the lane fold) is more instructions than the core's
// reorder window holds, so one row at a time waits on its own chain (rms_norm over rows of 64
// floats, one thread in L2: 0.49 ns per element against 0.12 for a hand-written loop, Zen 5).
// Here phase k runs for row_batch rows before phase k + 1, and the epilogues after all of them,
// each row with its own slots and row buffer: the rows' chains do not depend on each other, so
// the core overlaps them.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "fuse/backend/cpu/prefetch.hpp"
#include "fuse/backend/cpu/row_reduce.hpp"
#include "fuse/backend/cpu/row_write.hpp"
#include "fuse/core/online_pair.hpp"
#include "fuse/core/row_iteration.hpp"

namespace fuse::detail {

// Rows of at most this many elements run in batches (0 turns batching off, to measure it).
#ifndef FUSE_ROW_BATCH_ELEMENTS
#define FUSE_ROW_BATCH_ELEMENTS 512
#endif
inline constexpr index_t batch_max_row_elements = FUSE_ROW_BATCH_ELEMENTS;
// Rows per batch.
#ifndef FUSE_ROW_BATCH
#define FUSE_ROW_BATCH 4
#endif
inline constexpr int row_batch = FUSE_ROW_BATCH;

template <class It>
bool batches_rows(const It& it) {
  return it.row_elements() <= batch_max_row_elements;
}

// x bound to the slots s: an evaluator, or a tuple of phases.
template <class X>
X bound_to(X x, const row_slot* s) {
  if constexpr (requires { x.bind(s); }) x.bind(s);
  else for_each(x, [&](auto& p) { p.bind(s); });
  return x;
}

// One copy of x per row of a batch, each bound to that row's slots.
template <class X, std::size_t P, std::size_t... B>
std::array<X, sizeof...(B)> bound_copies(const X& x, row_slot (*slots)[P], std::index_sequence<B...>) {
  return {bound_to(x, slots[B])...};
}

// Row b's part of the row buffer (none without one). A function, not `buf + b * stride` in the
// caller: nvcc checks that expression even where `if constexpr` discards it for a null buffer.
template <class Buf>
Buf row_buffer(Buf buf, int b, index_t stride) {
  if constexpr (std::is_null_pointer_v<Buf>) return nullptr;
  else return buf + b * stride;
}

// Rows [first, last) in batches. epilogue: the epilogue's evaluator (sharing applied, unbound);
// phase Cached (>= 0) stores row b's operand at buf + b * buf_stride, and *source tells the
// epilogue's cached_eval which row's buffer to read. copies: as seeked() (row_reduce.hpp);
// Copied: copies is not null.
template <int Cached, bool Copied, class It, class Ev, class Buf, class Source>
void run_batches(const It& it, index_t first, index_t last, const Ev& epilogue, const phase_plan* plans, bool stream,
                 stream_prefetch<It::rank>& pf, row_copies<It::rank>* copies, Buf buf, index_t buf_stride, Source source) {
  constexpr std::size_t R = It::rank;
  constexpr std::size_t P = It::phase_count > 0 ? It::phase_count : 1;
  using Phases = decltype(it.phases);
  row_slot slots[row_batch][P] = {};
  auto phases = bound_copies(it.phases, slots, std::make_index_sequence<row_batch>{});
  auto evs = bound_copies(epilogue, slots, std::make_index_sequence<row_batch>{});
  const index_t n = it.shape[R - 1];
  bool plain[P] = {};  // reduce_plain_row for phase k
  for (std::size_t k = 0; k < Phases::size; ++k) plain[k] = plain_row(plans[k], it.inner_first, R);
  const bool plain_writes = plain_rows_written(it);
  // Rows of copies for the plain phases and epilogue that read through them, null for the rest
  // (pointing an evaluator at them walks its leaves). A kernel without them compiles no pointing
  // (a std::nullptr_t): with it compiled in, softmax over rows of 8 floats took 35 -> 38 ns a row
  // (Zen 3, one thread), the evaluators passed to row_copies::point kept in memory.
  using copies_t = std::conditional_t<Copied, row_copies<R>*, std::nullptr_t>;
  copies_t phase_copies[P] = {};
  copies_t epilogue_copies = nullptr;
  if constexpr (Copied) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((phase_copies[K] = reads_copies<R>(get<K>(it.phases).child) ? copies : nullptr), ...);
    }(std::make_index_sequence<Phases::size>{});
    epilogue_copies = reads_copies<R>(epilogue) ? copies : nullptr;
  }
  index_t idx[row_batch][R] = {};
  for (index_t o = first; o < last; o += row_batch) {
    const int count = int(std::min<index_t>(row_batch, last - o));
    for (int b = 0; b < count; ++b) unflatten(o + b, it.shape, 0, it.inner_first, idx[b]);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      auto phase = [&]<std::size_t k>(std::integral_constant<std::size_t, k>) {
        using PK = phase_at_t<Phases, k>;
        for (int b = 0; b < count; ++b) {
          if (it.alias[k] >= 0) {
            copy_alias_slot<PK::slot>(phases[std::size_t(b)], slots[b], it.alias[k]);
            continue;
          }
          const auto& p = get<k>(phases[std::size_t(b)]);
          const auto total = [&] {
            if constexpr (int(k) == Cached) {
              if (plain[k]) return reduce_plain_row(p, idx[b], n, pf, phase_copies[k], row_buffer(buf, b, buf_stride));
              return reduce_row(p, plans[k], it.shape, it.inner_first, idx[b], 0, n, pf, copies, row_buffer(buf, b, buf_stride));
            } else {
              if (plain[k]) return reduce_plain_row(p, idx[b], n, pf, phase_copies[k]);
              return reduce_row(p, plans[k], it.shape, it.inner_first, idx[b], 0, n, pf, copies);
            }
          }();
          write_slot(slots[b][PK::slot], PK::op::template finalize<typename PK::result_type>(total, p.count));
        }
      };
      (phase(std::integral_constant<std::size_t, K>{}), ...);
    }(std::make_index_sequence<Phases::size>{});
    for (int b = 0; b < count; ++b) {
      if constexpr (Cached >= 0) *source = row_buffer(buf, b, buf_stride);
      if (plain_writes) {
        write_plain_row(it, evs[std::size_t(b)], idx[b], n, stream, pf, epilogue_copies);
        continue;
      }
      write_row(it, evs[std::size_t(b)], idx[b], 0, n, stream, pf, copies);
    }
  }
}

}  // namespace fuse::detail
