// fuse/backend/cpu/row_copies.hpp - rows of copies for the row kernel's leaves that stay put
// along a row.
//
// A [N, 1] operand of a row kernel (a per-row scale, the label of a cross-entropy, the length of a
// padding mask) has stride 0 along the row, so the kernel ran its strided scalar loop for every
// phase: softmax(z * s[N, 1]) 2.1 ns per element against 0.46 for softmax(z) (one thread, rows of
// 1024). As the elementwise kernel does (splat.hpp), such a leaf is read instead through a
// per-thread row of copies of its element, and every loop stays contiguous. Unlike there, the row
// kernel seeks many copies of its evaluators (each phase, the epilogue, batches, the online pair),
// so the rows of copies are kept by source: the passes over a row that read the same element
// share one row of copies, filled by the first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fuse/backend/cpu/splat.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/detail/small_vector.hpp"

namespace fuse::detail {

// The leaf occurrences of a row kernel read along_row::copied, in its evaluators and phases
// together, and the widest of their elements (cpu_reading counts them, row_kernel.hpp). They are
// memory leaves: the elementwise kernel's splat_rows also copies hoisted row values, which have
// no memory, but the row kernel hoists none.
struct copied_leaves {
  std::size_t count = 0;
  std::size_t elem_bytes = 0;
};

// Is t gathered row by row into a row of copies (rather than copied contiguous before the kernel,
// strided_rows.hpp)? A memory leaf strided along rows of at most splat_max_row elements that keeps
// each row to itself: the row's axis is its smallest stride (x[:, ::2], a reversed view), not
// another's (a transpose, whose row r and r + 1 share every line).
template <std::size_t R>
bool gathers_row(const tracker& t, const index_t* shape) {
  if (reading_along_row<R>(t) != along_row::strided || shape[R - 1] > splat_max_row) return false;
  if (t.splat == nullptr || t.splat == &tracker::no_copies || t.span > 0) return false;
  const index_t along = t.stride[R - 1] < 0 ? -t.stride[R - 1] : t.stride[R - 1];
  for (std::size_t d = 0; d + 1 < R; ++d)
    if (shape[d] > 1 && t.stride[d] != 0 && (t.stride[d] < 0 ? -t.stride[d] : t.stride[d]) < along) return false;
  return true;
}

// Is t read through rows of copies? Its element repeated along the row (stride 0), or its row
// gathered (strided: gathers_row, the others copied contiguous before the kernel).
template <std::size_t R>
bool through_copies(const tracker& t) {
  const along_row r = reading_along_row<R>(t);
  return r == along_row::copied || (r == along_row::strided && t.splat != nullptr && t.splat != &tracker::no_copies);
}

// Does ev read a leaf through rows of copies (only those evaluators are pointed at them)? A
// copy: for_each_tracker is not const.
template <std::size_t R, class Ev>
bool reads_copies(Ev ev) {
  bool any = false;
  ev.for_each_tracker([&](const tracker& t) { any = any || through_copies<R>(t); });
  return any;
}

template <std::size_t R>
class row_copies {
 public:
  // For rows of n elements: a row of copies for each leaf occurrence. That many suffice: a thread
  // holds at most two seeked evaluators at once (the online pair's), and a row of copies is given
  // to another source only when it is the least recently used. (A batch's rows, or the sub-rows
  // of a row of several axes, may then refill on each pass: cheap on such short rows, and
  // cheaper than searching more rows, measured in design.md §4.)
  // Rows of n elements, or windows of up to n elements of longer rows (window()).
  row_copies(index_t n, copied_leaves leaves)
      : from_(0), to_(n), stride_(whole_lines(static_cast<std::size_t>(n) * leaves.elem_bytes)) {
    if (leaves.count == 0 || stride_ == 0) return;
    buffer_.reserve(leaves.count * stride_);
    for (std::size_t k = 0; k < leaves.count; ++k) rows_.push_back({nullptr, 0, 0, 0});
  }

  // From now on elements [from, to) of each row (at most n, a thread's part of a long row split
  // across threads, run_split_rows): the row of copies is read at those indices only.
  void window(index_t from, index_t to) {
    from_ = from, to_ = to;
    for (copied_row& r : rows_) r.source = nullptr;  // filled for another window
  }

  // After ev (a private copy) was seeked to the row at idx: points each of its leaves that stay
  // put along the row at a row of copies of its element, filled unless it holds them already.
  template <class Ev>
  void point(Ev& ev, const index_t* idx) {
    ev.for_each_tracker([&](const tracker& t) {
      if (!through_copies<R>(t)) return;
      const auto* source = static_cast<const unsigned char*>(t.base) + static_cast<index_t>(t.elem_bytes) * row_offset<R>(t.stride, idx);
      ++clock_;
      std::size_t k = 0;
      for (; k < rows_.size(); ++k)
        if (rows_[k].source == source && rows_[k].elem_bytes == t.elem_bytes && rows_[k].stride == t.stride[R - 1]) break;
      const bool filled = k < rows_.size();
      if (!filled) {
        k = 0;  // the least recently used
        for (std::size_t j = 1; j < rows_.size(); ++j)
          if (rows_[j].used < rows_[k].used) k = j;
        rows_[k].source = source;
        rows_[k].elem_bytes = t.elem_bytes;
        rows_[k].stride = t.stride[R - 1];
      }
      rows_[k].used = clock_;
      // (The window's start stands for element from_ of the row, as splat_rows' windows do.)
      unsigned char* window = buffer_.data() + k * stride_ - from_ * static_cast<index_t>(t.elem_bytes);
      t.splat(t.self, window, from_, filled ? 0 : to_ - from_);  // a count of 0 only points
    });
  }

 private:
  struct copied_row {
    const unsigned char* source;
    std::size_t elem_bytes;
    index_t stride;  // along the row: 0 (repeated) or gathered
    std::uint64_t used;
  };
  index_t from_, to_;
  std::size_t stride_;
  std::uint64_t clock_ = 0;
  small_vector<copied_row, 8> rows_;
  // The copies of a few short rows in place. Not more: row_copies lives in the row kernel's
  // frame, and 4 KiB there slowed softmax over [4, 16], which reads none, 560 -> 600 ns.
  scratch_buffer<256> buffer_;
};

}  // namespace fuse::detail
