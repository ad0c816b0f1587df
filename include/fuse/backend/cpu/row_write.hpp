// fuse/backend/cpu/row_write.hpp - the CPU row kernel's epilogue: writes a row (or a range of it)
// from the epilogue's evaluator, with streaming stores for large contiguous outputs, or the one
// value per row of a reduction root.
#pragma once

#include "fuse/backend/cpu/executor.hpp"
#include "fuse/backend/cpu/prefetch.hpp"
#include "fuse/backend/cpu/row_reduce.hpp"
#include "fuse/core/reused_phase.hpp"
#include "fuse/core/row_iteration.hpp"

namespace fuse::detail {

// Does the epilogue write with streaming stores? As the elementwise kernel (executor.hpp): large
// contiguous outputs, which then cost no read of the lines they write.
template <class It>
bool streams(const It& it) {
  using T = std::remove_pointer_t<decltype(it.out)>;
  if constexpr (can_stream_v<T>) {
    return it.unit && !it.root_reduction && large_enough_to_stream(it.size(), sizeof(T));
  } else {
    return false;
  }
}

// Streaming stores are weakly ordered: a thread publishes them before it joins.
inline void publish_streamed(bool stream) {
  if (stream) stream_fence();
}

// Does write_plain_row write the rows? Contiguous rows of one axis, not a reduction's one value
// per row.
template <class It>
bool plain_rows_written(const It& it) {
  return it.unit && it.inner_first == It::rank - 1 && !it.root_reduction;
}

// Does the epilogue stream the n elements at row (a row, or a range of one)? Rows of at least
// short_stream_bytes do. Shorter ones (Zen 4, 2 threads, 64 MiB, GB/s; docs/performance.md, "Short
// rows off a line"):
// - not under three chunks (384 bytes), nor of a length that is not a multiple of a 64-byte line.
//   Under a chunk, write_streaming would store them all the same, its unaligned head element by
//   element (softmax over [1048576, 8] on 2 threads, Zen 3: 2.7-2.8 -> 3.4 GB/s without). Rows of
//   one or two chunks, or with a line's tail stored beside one chunk, ran slower streamed; rows of
//   another length start on a line only every second or fourth row, and streaming those alone,
//   among stored ones, was slower than storing all (2026-12-06, Zen 4, 2 threads, 64 MiB on a
//   line, medians of 5 alternating runs, before -> after, rows of 32 / 48 / 64 / 136 / 200 floats:
//   rms_norm 13.5 / 10.6 / 19.0 / 12.8 / 14.2 -> 22.7 / 20.7 / 19.9 / 13.7 / 18.5, layer_norm
//   8.6 / 10.6 / 13.0 / 16.5 / 19.9 -> 9.5 / 15.3 / 21.9 / 19.7 / 22.1; rows of 96, 128, 160 and
//   240 floats still stream: rms_norm 36-38 / 40-43 / 42-44 / 31-36 streamed, 27-33 / 36-41 /
//   34-38 / 31-37 stored);
// - not off a line (a std::vector's memory is 16 bytes off): the head, up to 15 elements one at a
//   time, and the tail beside the streamed lines cost more than streaming saves. Rows of 32 / 64 /
//   128 floats: rms_norm 13.9 / 13.3 / 25.6 -> 19.4 / 26.5 / 36.9, softmax 10.0 / 11.1 / 15.4 ->
//   13.5 / 19.2 / 18.0;
// - not of a kernel of short_stream_max_flops an element or more (its phases' operands and its
//   epilogue as written: an exp is 10; softmax 23, log_softmax 13, layer_norm 6, rms_norm 3):
//   there ordinary stores were faster on a line too. Rows of 32 / 64 / 128 floats, streamed /
//   stored: softmax 11.7 / 17.2 / 20-24 against 14.7 / 22 / 28-31, log_softmax 10.4 / 15.9 / 22
//   against 12.5 / 19.5 / 27.5; while layer_norm and rms_norm over rows of 128 ran faster
//   streamed (26 against 20, 42 against 36.5).
// (-DFUSE_SHORT_STREAM_MAX_FLOPS=n overrides the flops; the differential tests set it high, so
// that short rows on a line stream whatever they compute.)
inline constexpr index_t short_stream_bytes = 1024;
#ifndef FUSE_SHORT_STREAM_MAX_FLOPS
#define FUSE_SHORT_STREAM_MAX_FLOPS 10
#endif
inline constexpr int short_stream_max_flops = FUSE_SHORT_STREAM_MAX_FLOPS;
// The flops an element of row kernel It, as written; row constants (1 / sum, rsqrt(mean + eps),
// log(sum): invariant_eval) count 0.
template <class It>
constexpr int row_flops() {
  using Phases = decltype(It::phases);
  return []<std::size_t... K>(std::index_sequence<K...>) {
    return (flops_of<decltype(It::eval)>::value + ... + flops_of<phase_child_t<Phases, K>>::value);
  }(std::make_index_sequence<Phases::size>{});
}
// pitch: the distance between this row and the next in bytes (0 for one row). A short row streams
// only if the next starts on a line too: a padded destination's rows (128 floats 136 apart)
// alternate on and off a line whatever their length.
template <class It, class T>
FUSE_INLINE bool streams_row(const T* row, index_t n, index_t pitch) {
  const index_t bytes = n * index_t(sizeof(T));
  if (bytes >= short_stream_bytes) return true;
  if constexpr (row_flops<It>() >= short_stream_max_flops) return false;
  return bytes >= 3 * stream_chunk_bytes && bytes % 64 == 0 && pitch % 64 == 0 && reinterpret_cast<std::uintptr_t>(row) % 64 == 0;
}
// The pitch of the rows (or sub-rows) that It writes, for streams_row.
template <class It>
index_t row_pitch_bytes(const It& it) {
  using T = std::remove_pointer_t<decltype(it.out)>;
  if constexpr (It::rank >= 2) return it.out_stride[It::rank - 2] * index_t(sizeof(T));
  else return 0;
}

// write_row of a row for which plain_rows_written holds, inline (see reduce_plain_row). (Its
// store loop is write_row's own, not shared through a helper: with one, softmax over [64, 1024]
// in L2 ran 4% slower, 0.65 -> 0.68 ns per element, Zen 3.)
// copies: as seeked() (a row_copies<R>*), or nullptr (a std::nullptr_t) where the kernel reads no
// leaf through them.
template <class It, class Ev, class Copies>
FUSE_INLINE void write_plain_row(const It& it, const Ev& ev, const index_t* idx, index_t n, bool stream,
                                 stream_prefetch<It::rank>& pf, Copies copies) {
  constexpr std::size_t R = It::rank;
  if (n <= 0) return;
  using T = std::remove_pointer_t<decltype(it.out)>;
  Ev e = ev;  // a private copy: the stores below cannot alias its per-row constants
  seek_row(e, idx, copies);
  T* row = it.out + row_offset<R>(it.out_stride, idx);
  if constexpr (can_stream_v<T>) {
    if (stream && streams_row<It>(row, n, row_pitch_bytes(it))) {
      pf.seek(idx);
      write_streaming(row, e, 0, n, pf);
      return;
    }
  }
  FUSE_SIMD_LOOP
  for (index_t i = 0; i < n; ++i) row[i] = e.template at<true>(i);
}

// The epilogue of the row at idx (outer part set), elements [begin, end) of every sub-row; a
// reduction root writes its one value per row instead. copies: as seeked().
template <class It, class Ev>
void write_row(const It& it, Ev& ev, index_t* idx, index_t begin, index_t end, bool stream, stream_prefetch<It::rank>& pf,
               row_copies<It::rank>* copies) {
  constexpr std::size_t R = It::rank;
  using T = std::remove_pointer_t<decltype(it.out)>;
  if (it.root_reduction) {
    if (begin != 0) return;
    // Over every axis with a test, not from inner_first: g++ 12 tuned for Zen made that a `rep stos`
    // per row (var over rows of 64 floats, one thread in L2, Zen 3: 1.19 -> 1.10 ns per element).
    for (std::size_t d = 0; d < R; ++d)
      if (d >= it.inner_first) idx[d] = 0;
    ev.seek(idx);
    it.out[row_offset<R>(it.out_stride, idx)] = static_cast<T>(ev.template at<true>(0));
    return;
  }
  if (begin >= end) return;
  index_t sub = 1;
  for (std::size_t d = it.inner_first; d < R - 1; ++d) sub *= it.shape[d];
  Ev e = ev;  // a private copy: the stores below cannot alias its per-row constants
  for (index_t s = 0; s < sub; ++s) {
    unflatten(s, it.shape, it.inner_first, R - 1, idx);
    seek_row(e, idx, copies);
    T* row = it.out + row_offset<R>(it.out_stride, idx);
    if constexpr (can_stream_v<T>) {
      if (stream && streams_row<It>(row + begin, end - begin, row_pitch_bytes(it))) {
        pf.seek(idx);
        write_streaming(row, e, begin, end, pf);
        continue;
      }
    }
    FUSE_SIMD_LOOP
    for (index_t i = begin; i < end; ++i) row[i] = e.template at<true>(i);
  }
}

}  // namespace fuse::detail
