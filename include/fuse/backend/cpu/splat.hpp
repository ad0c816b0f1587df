// fuse/backend/cpu/splat.hpp - rows of copies for the leaves that stay put along a row.
//
// x * scale[M, 1], or NCHW x * scale[C, 1, 1]: one leaf has stride 0 along the innermost axis, so
// the row is not contiguous for every leaf, and the whole kernel ran the strided scalar loop (4-9x
// a hand-written loop; a probe, 2026-12-03). Instead, after each seek, such a leaf's element is
// copied along a per-thread buffer as long as the row and its row pointer is pointed there: every
// leaf is then contiguous and the vectorised loop runs. The copies cost one store per element and
// leaf (rows of at most splat_max_row elements, core/iteration.hpp); the elementwise kernel makes
// them splat_chunk columns at a time, so that they are read back from L1.
#pragma once

#include <cstddef>

#include "fuse/backend/cpu/scratch.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/detail/small_vector.hpp"

namespace fuse::detail {

// Columns the elementwise kernel fills copies for at a time (run_range): 4 KiB a float leaf.
inline constexpr index_t splat_chunk = 1024;

class splat_rows {
 public:
  // The leaves of `ev` (this thread's copy of the evaluator) with stride 0 along the last of R
  // axes, for rows of n elements; none unless `on`.
  template <std::size_t R, class Ev>
  splat_rows(Ev& ev, bool on, index_t n, std::integral_constant<std::size_t, R>) : n_(n) {
    if (!on) return;
    std::size_t bytes = 0;
    ev.for_each_tracker([&](const tracker& t) {
      if (reading_along_row<R>(t) != along_row::copied) return;
      leaves_.push_back({t.self, t.splat, bytes});
      bytes += (static_cast<std::size_t>(n) * t.elem_bytes + 63) / 64 * 64;
    });
    buffer_.reserve(bytes);
  }
  // After each seek: copies each leaf's element along [from, from + count) of its buffer (the
  // columns the caller reads: a column tile reads <= 1024 of a row of up to 65536) and points the
  // leaf there.
  void fill(index_t from = 0, index_t count = -1) const {
    for (const leaf& l : leaves_) l.splat(l.self, buffer_.data() + l.offset, from, count < 0 ? n_ - from : count);
  }
  bool empty() const { return leaves_.empty(); }

 private:
  struct leaf {
    void* self;
    void (*splat)(void*, void*, index_t, index_t);
    std::size_t offset;
  };
  index_t n_;
  small_vector<leaf, 8> leaves_;
  scratch_buffer<4096> buffer_;  // rows of up to 1024 floats in place
};

}  // namespace fuse::detail
