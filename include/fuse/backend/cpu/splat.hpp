// fuse/backend/cpu/splat.hpp - rows of copies for the leaves that stay put along a row.
//
// x * scale[M, 1], or NCHW x * scale[C, 1, 1]: one leaf has stride 0 along the innermost axis, so
// the row is not contiguous for every leaf, and the whole kernel ran the strided scalar loop (4-9x
// a hand-written loop; a probe, 2026-12-03). Instead, after each seek, such a leaf's element is
// copied along a per-thread buffer as long as the row and its row pointer is pointed there: every
// leaf is then contiguous and the vectorised loop runs. The copies cost one store per element and
// leaf (rows of at most splat_max_row elements, core/iteration.hpp). The elementwise kernel runs a
// row splat_chunk columns at a time and writes a row's copies once, one chunk's worth, in a window
// that every chunk of the row reads (fill_window), so that they are read back from L1.
#pragma once

#include <cstddef>

#include "fuse/backend/cpu/scratch.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/detail/small_vector.hpp"

namespace fuse::detail {

// Columns the elementwise kernel runs at a time through a window of copies (run_range).
#ifndef FUSE_SPLAT_CHUNK
#define FUSE_SPLAT_CHUNK 256
#endif
inline constexpr index_t splat_chunk = FUSE_SPLAT_CHUNK;

class splat_rows {
 public:
  // The leaves of `ev` (this thread's copy of the evaluator) with stride 0 along the last of R
  // axes, for rows of n elements; none unless `on`. window > 0: for fill_window (chunks of at most
  // that many columns).
  template <std::size_t R, class Ev>
  splat_rows(Ev& ev, bool on, index_t n, std::integral_constant<std::size_t, R>, index_t window = 0)
      : n_(n) {
    if (!on) return;
    std::size_t bytes = 0;
    ev.for_each_tracker([&](const tracker& t) {
      if (reading_along_row<R>(t) != along_row::copied) return;
      leaves_.push_back({t.self, t.splat, bytes, t.elem_bytes});
      bytes += whole_lines(static_cast<std::size_t>(n) * t.elem_bytes);
      if (window > 0) bytes += whole_lines(static_cast<std::size_t>(window) * t.elem_bytes);
    });
    buffer_.reserve(bytes);
  }
  // After each seek: copies each leaf's element along [from, from + count) of its buffer (the
  // columns the caller reads: a column tile reads <= 1024 of a row of up to 65536) and points the
  // leaf there.
  void fill(index_t from = 0, index_t count = -1) const {
    for (const leaf& l : leaves_) l.splat(l.self, buffer_.data() + l.offset, from, count < 0 ? n_ - from : count);
  }
  // Before a chunk of columns from `from` of the row the leaves were seeked to: points each leaf
  // so that those columns read its window (at most `window` columns), writing the first `count`
  // copies there (the row's first chunk; 0 after it, when the window holds them). The window lies
  // after n elements' worth of the leaf's space, so that the pointer (window - from) stays inside
  // it. Writing copies along the whole row took half of an NCHW batch norm's time over 28 x 28
  // planes (perf, 2026-12-05).
  void fill_window(index_t from, index_t count) const {
    for (const leaf& l : leaves_) {
      unsigned char* const window = buffer_.data() + l.offset + whole_lines(static_cast<std::size_t>(n_) * l.elem_bytes);
      l.splat(l.self, window - from * static_cast<index_t>(l.elem_bytes), from, count);
    }
  }
  bool empty() const { return leaves_.empty(); }

 private:
  struct leaf {
    void* self;
    void (*splat)(void*, void*, index_t, index_t);
    std::size_t offset;
    std::size_t elem_bytes;
  };
  index_t n_;
  small_vector<leaf, 8> leaves_;
  scratch_buffer<4096> buffer_;  // a row of up to 1024 floats in place (768 and its window)
};

}  // namespace fuse::detail
