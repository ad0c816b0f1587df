// fuse/backend/cpu/prefetch.hpp - software prefetch for the CPU kernels.
//
// row_prefetch: the next row of a row kernel. A row kernel reads a row from memory in its first
// phase and then computes from L1/L2 (the other phases, the epilogue). While it computes, no load
// misses, so the hardware prefetcher does not run ahead into the next row and memory idles.
// Asking for the next row's lines while this row computes overlaps the two. The lines are asked
// for a few at a time, along one pass over the row (row_kernel.hpp picks which), not all at the
// row's start: a burst of 64 prefetches queues behind the few miss buffers a core has and stalls
// the arithmetic behind it. softmax [16384, 1024] on 2 threads, hand-written AVX2 loops on a Zen 3:
// 0.84-0.91 x copy with the burst, 1.03-1.18 spread along the exp pass (docs/performance.md).
//
// stream_prefetch: a fixed distance ahead along a long row. The hardware prefetcher keeps up
// with a loop that only moves data (axpby: 40 GB/s with or without), not with one that computes
// between its loads: gelu(x + bias) over [8192, 4096] on 2 threads went from 20-21 to 27-29 GB/s
// with lines asked for 2 KiB ahead, sum(x * x) over 2^25 floats from 43-45 to 51-54 GB/s
// (hand-written loops; docs/performance.md has the library's numbers). It also carries the row
// kernel's row_prefetch along the pass that spreads it (follow).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fuse/core/evaluator.hpp"

namespace fuse::detail {

// FUSE_ROW_PREFETCH=0 / FUSE_STREAM_PREFETCH=0 turn the prefetches off (to measure them).
#ifndef FUSE_ROW_PREFETCH
#define FUSE_ROW_PREFETCH 1
#endif
#ifndef FUSE_STREAM_PREFETCH
#define FUSE_STREAM_PREFETCH 1
#endif

// Rows longer than this stream well by themselves (and would not fit L1 twice): stream_prefetch
// takes over from row_prefetch there.
inline constexpr std::size_t prefetch_max_row_bytes = 16 * 1024;
// How far ahead stream_prefetch asks (2 KiB was best among 1, 2, 4, 8 KiB here).
inline constexpr index_t prefetch_distance_bytes = 2048;
// Passes that compute fewer flops per element than this stream well by themselves: the hardware
// prefetcher keeps up with a loop that mostly loads, and asking as well only adds instructions
// and queues behind the miss buffers. sum(x * x) over 2^25 floats on 2 threads, Zen 4: 23-27 ->
// 31-41 GB/s without (the hand-written loop 29-33 in the same runs; docs/performance.md).
inline constexpr int stream_prefetch_min_flops = 8;
template <class Ev>
inline constexpr bool streams_by_itself = flops_of<Ev>::value < stream_prefetch_min_flops;

// The memory leaves of an iteration space (each distinct one once) that run contiguously along
// its last axis, with their strides over the other axes in bytes.
template <std::size_t R>
class prefetch_leaves {
 public:
  // keep(t, row_bytes): whether to list leaf t, whose row spans row_bytes; `any`: false lists
  // none without walking the trackers (which copies the iteration space).
  template <class It, class Keep>
  prefetch_leaves(const It& it, bool any, Keep keep) {
    if (!any) return;
    const std::size_t n = std::size_t(it.shape[R - 1]);
    It copy = it;  // for_each_tracker hands out pointers into the evaluators: use a private copy
    copy.for_each_tracker([&](const tracker& t) {
      if (t.base == nullptr || t.span != 0 || count_ == capacity) return;
      const std::size_t bytes = t.stride[R - 1] == 0 ? t.elem_bytes : n * t.elem_bytes;
      if ((t.stride[R - 1] != 0 && t.stride[R - 1] != 1) || !keep(t, bytes)) return;
      for (int k = 0; k < count_; ++k)
        if (leaf_[k].base == t.base && same_strides(leaf_[k], t)) return;  // already listed
      leaf& l = leaf_[count_++];
      l.base = static_cast<const char*>(t.base);
      l.bytes = bytes;
      l.elem_bytes = index_t(t.elem_bytes) * t.stride[R - 1];
      for (std::size_t d = 0; d < R; ++d) l.stride[d] = t.stride[d] * index_t(t.elem_bytes);
    });
  }
  int size() const { return count_; }

 protected:
  struct leaf {
    const char* base;
    std::size_t bytes;     // one row
    index_t elem_bytes;    // per step along the row (0: the row is one element)
    index_t stride[R];     // in bytes
  };
  static constexpr int capacity = 8;

  static bool same_strides(const leaf& l, const tracker& t) {
    for (std::size_t d = 0; d < R; ++d)
      if (l.stride[d] != t.stride[d] * index_t(t.elem_bytes)) return false;
    return true;
  }

  leaf leaf_[capacity] = {};
  int count_ = 0;
};

// Does leaf t move from row to row?
template <std::size_t R>
bool moves_across_rows(const tracker& t) {
  for (std::size_t d = 0; d + 1 < R; ++d)
    if (t.stride[d] != 0) return true;
  return false;
}

template <std::size_t R>
class row_prefetch : prefetch_leaves<R> {
 public:
  using prefetch_leaves<R>::size;
  // Leaves that move from row to row, for contiguous single-axis rows up to prefetch_max_row_bytes.
  template <class It>
  explicit row_prefetch(const It& it)
      : prefetch_leaves<R>(it, FUSE_ROW_PREFETCH && it.unit && it.inner_first == R - 1,
                           [](const tracker& t, std::size_t bytes) {
                             return moves_across_rows<R>(t) && bytes <= prefetch_max_row_bytes;
                           }) {}

  // The row to ask for: the one at `outer` (the R - 1 leading indices).
  void seek(const index_t* outer) {
    for (int k = 0; k < this->count_; ++k) row_[k] = this->leaf_[k].base + row_offset<R>(this->leaf_[k].stride, outer);
    done_ = 0;
  }
  // Asks for that row's elements up to i + n (the current row's pass has reached i + n), from
  // where the last call stopped.
  FUSE_INLINE void ahead(index_t i, index_t n) {
    const index_t stop = i + n;
    if (stop <= done_) return;
    for (int k = 0; k < this->count_; ++k) {
      const auto& l = this->leaf_[k];
      if (l.elem_bytes == 0) {  // one element per row
        if (done_ == 0) __builtin_prefetch(row_[k], 0, 3);
        continue;
      }
      const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(row_[k]);
      const std::uintptr_t end = p + std::min(std::uintptr_t(stop * l.elem_bytes), std::uintptr_t(l.bytes));
      for (std::uintptr_t a = (p + std::uintptr_t(done_ * l.elem_bytes)) & ~std::uintptr_t(63); a < end; a += 64)
        __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 3);
    }
    done_ = stop;
  }
  // Whatever of the row of n elements the pass did not reach.
  void finish(index_t n) { ahead(0, n); }

 private:
  const char* row_[prefetch_leaves<R>::capacity] = {};
  index_t done_ = 0;
};

template <std::size_t R>
class stream_prefetch : prefetch_leaves<R> {
 public:
  using prefetch_leaves<R>::size;
  // Leaves contiguous along the rows: those that move from row to row and span more than
  // min_moving_bytes per row (0 for an elementwise kernel; prefetch_max_row_bytes for a row
  // kernel, whose shorter rows row_prefetch fetches whole), and any leaf whose row is longer than
  // prefetch_max_row_bytes (a shorter broadcast row, re-read for every row, stays in cache).
  // `on`: false lists none.
  template <class It>
  stream_prefetch(const It& it, bool on, std::size_t min_moving_bytes = 0)
      : prefetch_leaves<R>(it, FUSE_STREAM_PREFETCH && on, [&](const tracker& t, std::size_t bytes) {
          return t.stride[R - 1] == 1 && bytes > (moves_across_rows<R>(t) ? min_moving_bytes : prefetch_max_row_bytes);
        }) {}

  // The row at `outer`.
  void seek(const index_t* outer) {
    for (int k = 0; k < this->count_; ++k) row_[k] = this->leaf_[k].base + row_offset<R>(this->leaf_[k].stride, outer);
  }
  // While set, ahead() also carries `next` along (the row kernel's next row).
  void follow(row_prefetch<R>* next) { next_ = next; }
  // While set (>= 0), ahead() asks for the elements `elements` further along the row instead of
  // prefetch_distance_bytes ahead: the next block of an online pass (row_online.hpp).
  void lead(index_t elements) { lead_ = elements; }

  // Asks for what elements [i, i + n) of the row will read prefetch_distance_bytes later. Cheap:
  // the pass streams by itself (streams_by_itself), so only the followed row and the lead.
  template <bool Cheap = false>
  FUSE_INLINE void ahead(index_t i, index_t n) const {
    if (next_ != nullptr) next_->ahead(i, n);
    if (Cheap && lead_ < 0) return;
    for (int k = 0; k < this->count_; ++k) {
      const index_t eb = this->leaf_[k].elem_bytes;
      const index_t from = lead_ >= 0 ? (i + lead_) * eb : i * eb + prefetch_distance_bytes;
      // Integer addresses: the lines ahead may lie past the array (a prefetch never faults, but
      // a pointer formed there would be undefined behaviour).
      const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(row_[k]) + std::uintptr_t(from);
      for (index_t off = 0; off < n * eb; off += 64) __builtin_prefetch(reinterpret_cast<const void*>(p + std::uintptr_t(off)), 0, 3);
    }
  }

 private:
  const char* row_[prefetch_leaves<R>::capacity] = {};
  row_prefetch<R>* next_ = nullptr;
  index_t lead_ = -1;
};

}  // namespace fuse::detail
