// fuse/backend/cpu/tile.hpp - rows of a few elements, several at a time.
//
// (img[448, 448, 3] - mean[3]) / sd[3], x[n, 8] + b[8]: a leaf broadcast along the rows stops the
// axes from merging, so the elementwise kernel runs rows of 3 or 8 elements, each with its own
// seek and loop set-up: 5-45x a hand-written loop (a probe, 2026-12-04). When every other leaf and
// the output run on from one row into the next (stride n between rows), k rows are one row of
// k * n elements, provided each broadcast leaf is read from a buffer holding its row k times.
// The buffer is filled when the leaf's row changes or a tile is longer than its copies, about
// once per thread for x + b[n].
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "fuse/backend/cpu/splat.hpp"
#include "fuse/core/evaluator.hpp"

namespace fuse::detail {

// Rows shorter than this run tiled; a tile holds about tile_elements elements.
inline constexpr index_t tile_max_row = 256;
inline constexpr index_t tile_elements = 1024;

class tile_rows {
 public:
  // ev: this thread's copy of the evaluator over rank-R rows of n elements, out_stride: the
  // output's strides; unit: every leaf has stride 1 along the rows. Tiles nothing (rows() is 1)
  // unless every leaf runs on into the next row or repeats its row, and some leaf repeats.
  template <std::size_t R, class Ev>
  tile_rows(Ev& ev, bool unit, index_t n, const index_t* out_stride, std::integral_constant<std::size_t, R>) : n_(n) {
    if constexpr (R >= 2) {
      if (!unit || n < 2 || n >= tile_max_row || out_stride[R - 2] != n) return;
      const index_t k = (tile_elements + n - 1) / n;
      bool ok = true;
      std::size_t bytes = 0;
      ev.for_each_tracker([&](const tracker& t) {
        const index_t s = t.stride[R - 2];
        if (t.span > 0 || (s != n && (s != 0 || t.tile == nullptr))) ok = false;
        if (!ok || s == n) return;
        leaves_.push_back({t.self, t.tile, bytes, nullptr, 0});
        bytes += (static_cast<std::size_t>(k * n) * t.elem_bytes + 63) / 64 * 64;
      });
      if (!ok || leaves_.empty()) {
        leaves_.clear();
        return;
      }
      buffer_.reset(static_cast<unsigned char*>(::operator new(bytes, std::align_val_t(64))));
      rows_ = k;
    }
  }
  // Rows per tile (1: not tiled).
  index_t rows() const { return rows_; }
  // After each seek: points each repeating leaf at its buffer of `rows` copies of its row.
  void fill(index_t rows) {
    for (leaf& l : leaves_) {
      // The same row as last time is not copied again, unless this tile is longer than the copies
      // made then (a thread's first tile can stop short at the end of the next-to-last axis).
      const void* held = rows <= l.rows ? l.last : nullptr;
      const void* source = l.tile(l.self, buffer_.get() + l.offset, n_, rows * n_, held);
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
  std::vector<leaf> leaves_;
  std::unique_ptr<unsigned char[], aligned_delete> buffer_;
};

}  // namespace fuse::detail
