// fuse/backend/cpu/executor.hpp - fuse::cpu: one fused pass over the iteration space, rows split
// across threads, the contiguous inner loop vectorised by the compiler.
#pragma once

#include <algorithm>
#include <limits>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "fuse/backend/cpu/hoist.hpp"
#include "fuse/backend/cpu/prefetch.hpp"
#include "fuse/backend/cpu/splat.hpp"
#include "fuse/backend/cpu/stream_store.hpp"
#include "fuse/backend/cpu/tile.hpp"
#include "fuse/backend/cpu/transpose_tiles.hpp"
#include "fuse/core/iteration.hpp"
#include "fuse/core/shared_subtree.hpp"

namespace fuse {

// Run on the host: SIMD and `threads` threads (0: all hardware threads).
struct cpu {
  int threads = 0;
  static constexpr memory_space space = memory_space::host;

  int thread_count() const {
    if (threads > 0) return threads;
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
  }
};

namespace detail {

// Below this many elements a second thread costs more than it saves. (Overridable so that tests
// can split tiny arrays across threads.)
#ifndef FUSE_MIN_ELEMENTS_PER_THREAD
#define FUSE_MIN_ELEMENTS_PER_THREAD (1 << 15)
#endif
inline constexpr index_t min_elements_per_thread = FUSE_MIN_ELEMENTS_PER_THREAD;

// Outputs at least this large are written with non-temporal (streaming) stores: an ordinary
// store first reads the line it writes, a streaming one does not, so a large output costs 2/3 of
// the traffic (measured here: docs/performance.md). Smaller outputs stay in cache for their reader.
// Override with -DFUSE_STREAMING_STORE_BYTES=n (0 = always, a huge value = never).
#ifndef FUSE_STREAMING_STORE_BYTES
#define FUSE_STREAMING_STORE_BYTES (std::size_t(16) << 20)
#endif
inline constexpr std::size_t streaming_store_bytes = FUSE_STREAMING_STORE_BYTES;
// Whether an output of n elements of `bytes` bytes each is that large.
inline bool large_enough_to_stream(index_t n, std::size_t bytes) { return std::size_t(n) * bytes >= streaming_store_bytes; }

// ...unless the expression's arithmetic, not its memory, sets the pace: on AVX2 (Zen 3, 2
// threads, [8192, 4096] + a row, docs/design.md "Streaming stores") erf, gelu_erf and gelu of
// x + b ran 11%, 18% and 4% faster with ordinary stores, while exp, tanh and sigmoid (11-13
// flops an element) and cheaper expressions ran faster streamed. So below 64-byte vectors an
// expression of this many flops an element or more (as written: flops_of) stores normally.
// AVX-512 builds keep streaming everything: on a Zen 4 every one of those ran as fast or faster
// streamed but erf (even) and gelu_erf (5-6% slower) (docs/performance.md). Override with
// -DFUSE_STREAMING_MAX_FLOPS=n.
#ifndef FUSE_STREAMING_MAX_FLOPS
#if FUSE_STREAM_BYTES >= 64
#define FUSE_STREAMING_MAX_FLOPS (1 << 30)
#else
#define FUSE_STREAMING_MAX_FLOPS 15
#endif
#endif
template <class Ev>
inline constexpr bool streams_by_flops = flops_of<Ev>::value < FUSE_STREAMING_MAX_FLOPS;

// row[j] = ev.at(j) for j in [i, stop): computed into an L1 buffer by the vectorised loop, then
// streamed out 64-byte line by line; the unaligned head and the tail use ordinary stores. pf: the
// row's inputs, asked for ahead of each chunk.
// Chunks of two lines, not 16: the streaming stores then drain while the next chunk computes,
// instead of 16 lines queueing at once behind the few write-combining buffers. bias_gelu on a
// Zen 3, 2 threads: faster in 15 of 21 alternating pairs, by 4% over all and up to 39%
// (docs/performance.md); one line per chunk lost on axpby.
inline constexpr index_t stream_chunk_bytes = 128;
template <class T, class Ev, std::size_t R>
void write_streaming(T* row, const Ev& ev, index_t i, index_t stop, const stream_prefetch<R>& pf) {
  constexpr index_t chunk = stream_chunk_bytes / sizeof(T);
  alignas(64) T buf[chunk];
  while (i < stop && reinterpret_cast<std::uintptr_t>(row + i) % 64 != 0) row[i] = ev.template at<true>(i), ++i;
  for (; i + chunk <= stop; i += chunk) {
    pf.template ahead<streams_by_itself<Ev>>(i, chunk);
    FUSE_SIMD_LOOP
    for (index_t k = 0; k < chunk; ++k) buf[k] = ev.template at<true>(i + k);
    stream_out(row + i, buf, chunk);
  }
  FUSE_SIMD_LOOP
  for (index_t j = i; j < stop; ++j) row[j] = ev.template at<true>(j);
}

// Elements [begin, end) in row-major order of the iteration space `it`, computed by `eval` (it.eval
// or the same with shared subtrees bound, shared_subtree.hpp). tiled: short rows run several at
// a time (tile.hpp's tiles_rows holds; not where a hoisted row of values is as long as one row).
template <bool Unit, bool Stream, class It, class Ev>
void run_range(const It& it, const Ev& eval, index_t begin, index_t end, bool tiled = false) {
  constexpr std::size_t R = It::rank;
  const index_t inner = it.shape[R - 1];
  auto ev = eval;  // a private copy: its row pointers are this thread's
  auto* const out = it.out;
  const index_t os = it.out_stride[R - 1];
  index_t outer[R] = {};
  index_t o = begin / inner;
  for (std::size_t d = R - 1; d-- > 0;) outer[d] = o % it.shape[d], o /= it.shape[d];
  index_t i = begin % inner;
  stream_prefetch<R> pf(it, Stream);
  tile_rows tile(ev, Unit && tiled, inner, std::integral_constant<std::size_t, R>{});
  const splat_rows splat(ev, Unit && it.splat && tile.rows() == 1, inner, std::integral_constant<std::size_t, R>{}, splat_chunk);
  // Rows with leaves read through copies run a chunk of columns at a time (chunks aligned to
  // multiples of splat_chunk), every chunk of a row through one window of copies, written before
  // the row's first chunk (splat_rows::fill_window) and read from L1. A whole row of copies (50 KB
  // a leaf for an NCHW plane of 112 x 112) was read back from L2.
  const index_t chunk = splat.empty() ? std::numeric_limits<index_t>::max() : splat_chunk;
  while (begin < end) {
    // Rows this step covers: one, or a tile of whole rows left in this thread's range and along
    // the next-to-last axis (the same loop below runs over all of them).
    index_t rows = 1;
    if constexpr (R >= 2) {
      if (tile.rows() > 1 && i == 0) rows = std::max<index_t>(1, std::min({tile.rows(), (end - begin) / inner, it.shape[R - 2] - outer[R - 2]}));
    }
    const index_t stop = rows > 1 ? rows * inner : std::min(inner, i + (end - begin));
    ev.seek(outer);
    if (tile.rows() > 1) tile.fill(rows);
    auto* const row = out + row_offset<R>(it.out_stride, outer);
    if constexpr (Stream) pf.seek(outer);
    for (index_t c = i; c < stop;) {
      const index_t cend = std::min(stop, (c / chunk + 1) * chunk);
      if constexpr (Unit) {
        if (!splat.empty()) splat.fill_window(c, c == i ? std::min(chunk, stop - c) : 0);
      }
      if constexpr (Stream) {
        write_streaming(row, ev, c, cend, pf);
      } else if constexpr (Unit) {
        FUSE_SIMD_LOOP
        for (index_t j = c; j < cend; ++j) row[j] = ev.template at<true>(j);
      } else {
        for (index_t j = c; j < cend; ++j) row[j * os] = ev.template at<false>(j);
      }
      c = cend;
    }
    begin += stop - i;
    i = 0;
    if constexpr (R >= 2) outer[R - 2] += rows - 1;  // to the tile's last row; the step moves past it
    for (std::size_t d = R - 1; d-- > 0;) {
      if (++outer[d] < it.shape[d]) break;
      outer[d] = 0;
    }
  }
}

// body(t, nt) on each of `threads` threads (serially without OpenMP). Used by the fallback's
// generic kernels; the fast paths keep their own parallel regions, the code they had before
// (docs/performance.md, "The run-time fallback compiled once per kernel").
template <class Body>
void run_threads(int threads, const Body& body) {
#if defined(_OPENMP)
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    body(index_t(omp_get_thread_num()), index_t(omp_get_num_threads()));
    return;
  }
#endif
  (void)threads;
  body(index_t(0), index_t(1));
}

// Threads worth starting for `work` elements.
inline int threads_for(const cpu& exec, index_t work) {
  return static_cast<int>(std::clamp<index_t>(work / min_elements_per_thread, 1, exec.thread_count()));
}

// Where thread t of nt starts in n elements (thread t's are [chunk_begin(t), chunk_begin(t + 1))):
// chunks on 16-element boundaries, so that threads do not share cache lines.
inline index_t chunk_begin(index_t n, index_t t, index_t nt) {
  const index_t chunk = ((n + nt - 1) / nt + 15) & ~index_t(15);
  return std::min(n, t * chunk);
}

template <class It>
void run_cpu(const cpu& exec, const It& it) {
  const index_t n = it.size();
  if (n == 0) return;
  [[maybe_unused]] const int threads = threads_for(exec, n);
  const shared_plan shared = plan_shared(it.eval, nullptr);
  const bool tiles = tiles_rows<It::rank>(it.eval, it.shape[It::rank - 1], it.out_stride);
  const hoist_mode hoist = hoist_mode_of(it, tiles);
  // A transposed leaf or destination: tiles through L1 buffers (transpose_tiles.hpp).
  const int across = it.unit || it.splat || tiles ? -1 : transpose_axis(it);
  // Streaming stores: for this type and expression (compile time), and this output's size.
  using T = std::remove_pointer_t<decltype(it.out)>;
  constexpr bool streamable = can_stream_v<T> && streams_by_flops<std::remove_cvref_t<decltype(it.eval)>>;
  const bool large = large_enough_to_stream(n, sizeof(T));
  const bool stream_tiles = streamable && large;  // (a transposed destination where it runs along `across`)
  auto body = [&](index_t t, index_t nt) {
    const index_t b = chunk_begin(n, t, nt), e = chunk_begin(n, t + 1, nt);
    auto run_contiguous = [&](const auto& ev, bool tiled = false) {
      if constexpr (streamable) {
        if (large) {
          run_range<true, true>(it, ev, b, e, tiled);
          stream_fence();  // before the join
          return;
        }
      }
      run_range<true, false>(it, ev, b, e, tiled);
    };
    if constexpr (It::rank >= 2 && !std::is_void_v<hoist_candidate_t<std::remove_cvref_t<decltype(it.eval)>>>) {
      // Every thread alike, even one of under a row (it computes a row of values it partly
      // needs): whether a value was hoisted then does not depend on the thread count.
      // Per row, short rows still run as tiles (each row's value spread along it); across rows
      // the values are one row long, read at the row's own indices: no tiles.
      if (hoist != hoist_mode::none)
        return with_hoisted(it, hoist, [&](const auto& ev) { run_contiguous(ev, tiles && hoist == hoist_mode::per_row); });
    }
    with_shared(it.eval, shared, [&](const auto& ev) {
      // Short rows with leaves constant along them run contiguous as tiles (tile.hpp).
      if (it.unit || it.splat || tiles) {
        run_contiguous(ev, tiles);
      } else if (across >= 0) {
        run_transpose_tiles(it, ev, across, stream_tiles, t, nt);
        if (stream_tiles) stream_fence();  // before the join
      } else {
        run_range<false, false>(it, ev, b, e);
      }
    });
  };
#if defined(_OPENMP)
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    body(omp_get_thread_num(), omp_get_num_threads());
    return;
  }
#endif
  body(0, 1);
}

// The same pass compiled once, strided only: for assign_fused's run-time fallback, a rare path
// whose kernels are not worth the fast path's variants (contiguous, streaming) in every user's
// binary. Threads are kept: data that breaks a group can be large.
template <class It>
void run_cpu_generic(const cpu& exec, const It& it) {
  const index_t n = it.size();
  if (n == 0) return;
  const shared_plan shared = plan_shared(it.eval, nullptr);
  run_threads(threads_for(exec, n), [&](index_t t, index_t nt) {
    const index_t b = chunk_begin(n, t, nt), e = chunk_begin(n, t + 1, nt);
    with_shared(it.eval, shared, [&](const auto& ev) { run_range<false, false>(it, ev, b, e); });
  });
}

}  // namespace detail
}  // namespace fuse
