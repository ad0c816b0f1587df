// fuse/backend/cpu/row_prefetch.hpp - software prefetch of the next row of a row kernel.
// Why: a row kernel reads a row from memory in its first phase and then computes from L1/L2 (the
// other phases, the epilogue). While it computes, no load misses, so the hardware prefetcher does
// not run ahead into the next row and memory idles. Asking for the next row's lines when a row
// starts overlaps that row's memory time with this row's arithmetic: softmax [16384, 1024] on 2
// threads went from 15-17 to 2x-2x GB/s (docs/performance.md).
#pragma once

#include <cstddef>

#include "fuse/core/row_iteration.hpp"

namespace fuse::detail {

// FUSE_ROW_PREFETCH=0 turns the prefetch off (to measure it).
#ifndef FUSE_ROW_PREFETCH
#define FUSE_ROW_PREFETCH 1
#endif

// Rows longer than this stream well by themselves (and would not fit L1 twice).
inline constexpr std::size_t prefetch_max_row_bytes = 16 * 1024;

template <std::size_t R>
class row_prefetch {
 public:
  // The memory leaves of it (phases and epilogue, each distinct one once) that move from row to
  // row and run contiguously along a single row axis. Nothing for other layouts.
  template <class It>
  explicit row_prefetch(const It& it) {
    if (!FUSE_ROW_PREFETCH || !it.unit || it.inner_first != R - 1) return;
    const std::size_t n = std::size_t(it.shape[R - 1]);
    It copy = it;  // for_each_tracker hands out pointers into the evaluators: use a private copy
    copy.for_each_tracker([&](const tracker& t) {
      if (t.base == nullptr || t.span != 0 || count_ == capacity) return;
      bool moves = false;
      for (std::size_t d = 0; d + 1 < R; ++d) moves |= t.stride[d] != 0;
      const std::size_t bytes = t.stride[R - 1] == 0 ? t.elem_bytes : n * t.elem_bytes;
      if (!moves || bytes > prefetch_max_row_bytes) return;
      for (int k = 0; k < count_; ++k)
        if (leaf_[k].base == t.base && same_strides(leaf_[k].stride, t)) return;  // already listed
      leaf& l = leaf_[count_++];
      l.base = static_cast<const char*>(t.base);
      l.bytes = bytes;
      for (std::size_t d = 0; d < R; ++d) l.stride[d] = t.stride[d] * index_t(t.elem_bytes);
    });
  }

  // Prefetches the row at `outer` (the R - 1 leading indices).
  void operator()(const index_t* outer) const {
    for (int k = 0; k < count_; ++k) {
      const char* p = leaf_[k].base + row_offset<R>(leaf_[k].stride, outer);
      for (std::size_t off = 0; off < leaf_[k].bytes; off += 64) __builtin_prefetch(p + off, 0, 3);
    }
  }

 private:
  struct leaf {
    const char* base;
    std::size_t bytes;
    index_t stride[R];  // in bytes
  };
  static constexpr int capacity = 8;

  static bool same_strides(const index_t* bytes_stride, const tracker& t) {
    for (std::size_t d = 0; d < R; ++d)
      if (bytes_stride[d] != t.stride[d] * index_t(t.elem_bytes)) return false;
    return true;
  }

  leaf leaf_[capacity];
  int count_ = 0;
};

}  // namespace fuse::detail
