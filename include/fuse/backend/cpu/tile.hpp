// fuse/backend/cpu/tile.hpp - rows of a few elements, several at a time.
//
// (img[448, 448, 3] - mean[3]) / sd[3], x[n, 8] + b[8]: a leaf broadcast along the rows stops the
// axes from merging, so the elementwise kernel runs rows of 3 or 8 elements, each with its own
// seek and loop set-up: 5-45x a hand-written loop (a probe, 2026-12-04). When every other leaf and
// the output run on from one row into the next (stride n between rows), k rows are one row of
// k * n elements, provided each broadcast leaf is read from a buffer holding its row k times.
// A leaf constant along the row (boxes[n, 4] * s[n, 1]) is read the same way, from a buffer of
// each row's element repeated, so that such rows run contiguous too (they ran strided).
// A repeated row's buffer is filled when the leaf's row changes or a tile is longer than its
// copies (about once per thread for x + b[n]); a spread leaf's at every tile where it moves
// across rows. Both fills, and the cache keyed on the leaf's row pointer, rely on a tile never
// crossing the end of the next-to-last axis (run_range stops it there): within it, a leaf's rows
// are its row pointer plus multiples of one stride.
#pragma once

#include <cstddef>

#include "fuse/backend/cpu/splat.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/detail/small_vector.hpp"

namespace fuse::detail {

// Rows shorter than this run tiled; a tile holds about tile_elements elements.
inline constexpr index_t tile_max_row = 256;
inline constexpr index_t tile_elements = 1024;

// How a leaf (tracker) is read in a tile of rows of n elements (rank R): it runs on from one row
// into the next (`flows`), or is read from a buffer (`copied`: its row repeated, or its element
// per row spread along the row), or the rows cannot be tiled (`none`).
enum class tile_read { flows, copied, none };
template <std::size_t R>
tile_read tile_read_of(const tracker& t, index_t n) {
  const index_t along = t.stride[R - 1], across = t.stride[R - 2];
  if (t.span > 0) return tile_read::none;
  if (along == 1 && across == n) return tile_read::flows;
  if (t.tile != nullptr && (along == 0 || (along == 1 && across == 0))) return tile_read::copied;
  return tile_read::none;
}

// Whether rows of n elements of ev (rank R), written with out_stride, run as tiles: short rows
// that follow each other in the output, every leaf flowing or copied, some leaf copied. (Then
// every leaf is contiguous within a tile, whatever its stride along the row.) The evaluator is
// copied (for_each_tracker is not const) only once the row length and output allow tiles.
template <std::size_t R, class Ev>
bool tiles_rows(const Ev& eval, index_t n, const index_t* out_stride) {
  if constexpr (R < 2) {
    return false;
  } else {
    if (n < 2 || n >= tile_max_row || out_stride[R - 1] != 1 || out_stride[R - 2] != n) return false;
    Ev ev = eval;
    bool ok = true, copies = false;
    ev.for_each_tracker([&](const tracker& t) {
      const tile_read r = tile_read_of<R>(t, n);
      ok = ok && r != tile_read::none;
      copies = copies || r == tile_read::copied;
    });
    return ok && copies;
  }
}

class tile_rows {
 public:
  // ev: this thread's copy of the evaluator over rank-R rows of n elements. Tiles nothing (rows()
  // is 1) unless `on`: tiles_rows said yes for the kernel (once, not per thread).
  template <std::size_t R, class Ev>
  tile_rows(Ev& ev, bool on, index_t n, std::integral_constant<std::size_t, R>) : n_(n) {
    if constexpr (R >= 2) {
      if (!on) return;
      const index_t k = (tile_elements + n - 1) / n;
      std::size_t bytes = 0;
      ev.for_each_tracker([&](const tracker& t) {
        if (tile_read_of<R>(t, n) != tile_read::copied) return;
        leaves_.push_back({t.self, t.tile, bytes, nullptr, 0});
        bytes += whole_lines(static_cast<std::size_t>(k * n) * t.elem_bytes);
      });
      buffer_.reserve(bytes);
      rows_ = k;
    }
  }
  // Rows per tile (1: not tiled).
  index_t rows() const { return rows_; }
  // After each seek (every row or tile once tiling is on: a leaf may not be contiguous alone):
  // points each copied leaf at its buffer of `rows` rows.
  void fill(index_t rows) {
    for (leaf& l : leaves_) {
      // The same row as last time is not copied again, unless this tile is longer than the copies
      // made then (a thread's first tile can stop short at the end of the next-to-last axis).
      const void* held = rows <= l.rows ? l.last : nullptr;
      const void* source = l.tile(l.self, buffer_.data() + l.offset, n_, rows * n_, held);
      if (source != held) l.rows = rows;  // copied
      l.last = source;
    }
  }

 private:
  struct leaf {
    void* self;
    const void* (*tile)(void*, void*, index_t, index_t, const void*);
    std::size_t offset;
    const void* last;  // the row the buffer holds copies of
    index_t rows;      // how many copies
  };
  index_t n_, rows_ = 1;
  small_vector<leaf, 8> leaves_;
  scratch_buffer<8192> buffer_;  // a tile (~tile_elements) of one or two leaves in place
};

}  // namespace fuse::detail
