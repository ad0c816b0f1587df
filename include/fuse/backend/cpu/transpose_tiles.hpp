// fuse/backend/cpu/transpose_tiles.hpp - an elementwise kernel over a transposed leaf or into a
// transposed destination runs in tiles.
//
// y = transpose(x), an NCHW -> NHWC permute, x + transpose(z), transpose(y) = x: a leaf (or the
// destination) whose elements along the destination's rows each lie on a line of their own ran
// the strided scalar loop, every line fetched again for each of its elements (and at a
// power-of-two stride all of them in one cache set): y = transpose(x) over [4096, 4096] floats
// moved 2.0 GB/s against a copy's 25-30 (2 threads, Zen 3). Now such a kernel walks tiles: a
// band of rows along the axis `across` on which that leaf is closest to contiguous, by a piece of
// the rows. Each leaf not contiguous along the rows has its tile copied first into an L1 buffer in
// the destination's order (the copy's inner loop along the leaf's closest-to-contiguous axis, so
// that it reads whole lines); the tile's rows then run the contiguous, vectorised loop over those
// buffers. A transposed destination is written through a buffer, copied out the same way; a large
// contiguous one through a buffer streamed out (docs/design.md §4, "Transposed elementwise
// kernels run in tiles").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuse/backend/cpu/scratch.hpp"
#include "fuse/backend/cpu/stream_store.hpp"
#include "fuse/config.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/detail/small_vector.hpp"

namespace fuse::detail {

// The tiles' sizes (docs/performance.md, "Transposed elementwise kernels in tiles" and "Tiles of
// 512 bytes"; measured on a Zen 3, 2 threads, where the copies' speeds varied up to 2x from run to
// run):
// - rows (along `across`): 512 bytes of the widest element the tile moves where it is 4 bytes or
//   less (128 floats), a line where it is 8 (8 doubles). A thread reads its tiles' source rows a
//   band at a time, in order: with a line a band, at a stride that maps them to a few cache sets
//   (y = transpose(x) over x [128, 131072], [4096, 4096] floats) they ran 3-8 GB/s, with 512
//   bytes 8-12; doubles ran 10-14 GB/s in bands of a line, 8-10 in bands of 512 bytes. Where all
//   of `across` spans at most transpose_whole_band_bytes, the whole of it, so that each column's
//   read is one block (NHWC to NCHW over C = 64: 3.0-4.8 GB/s in bands of a line, 13-17 whole);
// - columns (along the last axis): 64 elements in bands of 512 bytes (a 32 KiB buffer per leaf),
//   128 in bands of a line (8 KiB);
// - rows shorter than transpose_min_row elements keep the strided loop, which reads a row's lines
//   again from L1 for the next rows, 16 floats to a line, as long as a row's lines fit there
//   (y[2^21, 8] = transpose(x): 8-16 GB/s strided, 4-8 in tiles; NCHW to NHWC over C = 64:
//   9-11 strided, 7-9 in tiles; rows of 16 and 32 about even).
#ifndef FUSE_TRANSPOSE_TILE_BYTES
#define FUSE_TRANSPOSE_TILE_BYTES 512
#endif
#ifndef FUSE_TRANSPOSE_TILE_COLS
#define FUSE_TRANSPOSE_TILE_COLS 64
#endif
#ifndef FUSE_TRANSPOSE_TILE_BYTES_8
#define FUSE_TRANSPOSE_TILE_BYTES_8 64
#endif
#ifndef FUSE_TRANSPOSE_TILE_COLS_8
#define FUSE_TRANSPOSE_TILE_COLS_8 128
#endif
#ifndef FUSE_TRANSPOSE_WHOLE_BAND
#define FUSE_TRANSPOSE_WHOLE_BAND 256
#endif
#ifndef FUSE_TRANSPOSE_MIN_ROW
#define FUSE_TRANSPOSE_MIN_ROW 128
#endif
inline constexpr index_t transpose_tile_bytes = FUSE_TRANSPOSE_TILE_BYTES;
inline constexpr index_t transpose_tile_cols = FUSE_TRANSPOSE_TILE_COLS;
inline constexpr index_t transpose_tile_bytes_8 = FUSE_TRANSPOSE_TILE_BYTES_8;
inline constexpr index_t transpose_tile_cols_8 = FUSE_TRANSPOSE_TILE_COLS_8;
inline constexpr index_t transpose_whole_band_bytes = FUSE_TRANSPOSE_WHOLE_BAND;
inline constexpr index_t transpose_min_row = FUSE_TRANSPOSE_MIN_ROW;

// Copies rows x cols elements, words of type U, from `from` (strides fa along the rows, fc along
// the columns, in elements) to `to` (ta, tc); the inner loop along the rows where `rows_inner`.
// (Words that may alias any type: a float read through them is defined, as in copy_elements.)
template <class U>
void move_tile(void* to, index_t ta, index_t tc, const void* from, index_t fa, index_t fc, index_t rows, index_t cols,
               bool rows_inner) {
  typedef U FUSE_MAY_ALIAS E;
  E* const o = static_cast<E*>(to);
  const E* const s = static_cast<const E*>(from);
  if (rows_inner) {
    for (index_t j = 0; j < cols; ++j)
      for (index_t i = 0; i < rows; ++i) o[i * ta + j * tc] = s[i * fa + j * fc];
  } else {
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j) o[i * ta + j * tc] = s[i * fa + j * fc];
  }
}

// move_tile for elements of `bytes` bytes (1, 2, 4 or 8: transpose_axis admits no other). Not
// inlined: one copy of its eight loops per program, not one per walk_tiles.
FUSE_NOINLINE inline void move_tile_bytes(std::size_t bytes, void* to, index_t ta, index_t tc, const void* from, index_t fa,
                                          index_t fc, index_t rows, index_t cols, bool rows_inner) {
  switch (bytes) {
    case 1: return move_tile<std::uint8_t>(to, ta, tc, from, fa, fc, rows, cols, rows_inner);
    case 2: return move_tile<std::uint16_t>(to, ta, tc, from, fa, fc, rows, cols, rows_inner);
    case 4: return move_tile<std::uint32_t>(to, ta, tc, from, fa, fc, rows, cols, rows_inner);
    default: return move_tile<std::uint64_t>(to, ta, tc, from, fa, fc, rows, cols, rows_inner);
  }
}

inline bool tile_word_size(std::size_t bytes) { return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8; }

// A memory leaf read at base + offset whose row pointer the kernel can point at a buffer.
inline bool tile_leaf(const tracker& t) {
  return t.base != nullptr && t.span == 0 && t.splat != nullptr && t.splat != &tracker::no_copies;
}

// The axis (< R - 1, extent > 1) on which strides `s` are smallest, if smaller than along the last
// axis (a transpose: -1 otherwise).
template <std::size_t R>
int closer_than_rows(const index_t* shape, const index_t* s) {
  int best = -1;
  const index_t along = std::abs(s[R - 1]);
  for (std::size_t d = 0; d + 1 < R; ++d) {
    const index_t sd = std::abs(s[d]);
    if (shape[d] > 1 && sd != 0 && sd < along && (best < 0 || sd < std::abs(s[best]))) best = static_cast<int>(d);
  }
  return best;
}

// The axis an elementwise kernel that is neither contiguous nor read through copies (it.unit,
// it.splat) runs its tiles across, or -1 to keep the strided loop: the destination or a leaf is
// closer to contiguous along another axis than along the rows, and every leaf not contiguous
// along the rows is memory read at base + offset (not take's table, not an affine index of
// another stride), in elements a tile can move.
template <class It>
int transpose_axis(const It& it) {
  constexpr std::size_t R = It::rank;
  if constexpr (R < 2) {
    return -1;
  } else {
    if (it.shape[R - 1] < transpose_min_row) return -1;
    using T = std::remove_pointer_t<decltype(it.out)>;
    const bool out_strided = it.out_stride[R - 1] != 1;
    if (out_strided && !tile_word_size(sizeof(T))) return -1;
    int across = out_strided ? closer_than_rows<R>(it.shape, it.out_stride) : -1;
    bool ok = true;
    auto ev = it.eval;  // (a copy: for_each_tracker hands out pointers into it)
    ev.for_each_tracker([&](const tracker& t) {
      const along_row r = reading_along_row<R>(t);
      if (r == along_row::contiguous || r == along_row::index || r == along_row::row_index) return;
      if (!tile_leaf(t) || !tile_word_size(t.elem_bytes)) {
        ok = false;
        return;
      }
      if (across < 0 && t.stride[R - 1] != 0) across = closer_than_rows<R>(it.shape, t.stride);
    });
    return ok ? across : -1;
  }
}

// p moved back by k elements of `bytes` bytes, for a loop that indexes it from k: as an integer,
// since the pointer lies before the buffer it is used within.
inline void* indexed_from(void* p, index_t k, std::size_t bytes) {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) - static_cast<std::uintptr_t>(k) * bytes);
}

// to[0, n) = from[0, n) (from: a 64-byte aligned buffer), streaming the whole 64-byte lines of to.
// (T: a value type, or the words copy_strided moves any value type's bytes as, which may alias it.)
template <class T>
void stream_row(T* to, const T* from, index_t n) {
  if constexpr (can_stream_words_v<T>) {
    typedef T FUSE_MAY_ALIAS E;
    E* const t = to;
    const E* const f = from;
    constexpr index_t line = 64 / sizeof(T);
    index_t i = 0;
    while (i < n && reinterpret_cast<std::uintptr_t>(t + i) % 64 != 0) t[i] = f[i], ++i;
    if ((reinterpret_cast<std::uintptr_t>(f + i) % 64) == 0) {
      const index_t whole = (n - i) / line * line;
      stream_out(to + i, from + i, whole);
      i += whole;
    }
    for (; i < n; ++i) t[i] = f[i];
  } else {
    for (index_t i = 0; i < n; ++i) to[i] = from[i];
  }
}

// A leaf whose tiles are copied into the buffer: its tracker's pointers, and its tile's place.
struct tile_copy {
  void* self;
  void (*point)(void*, void*, index_t, index_t);  // tracker::splat: (self, buffer, from, 0) points its row
  const unsigned char* base;
  const index_t* stride;
  std::size_t bytes;
  std::size_t offset;  // of its tile in the buffer
};

// What one thread's walk over the tiles needs besides the expression.
template <std::size_t R>
struct tile_walk {
  const index_t* shape;
  void* out;
  const index_t* out_stride;
  std::size_t a;  // `across`
  bool stream;  // streaming stores: a contiguous destination, or a transposed one along `across`
  small_vector<tile_copy, 8> copies;
  // Computes row[j] for j in [n0, n1) of the row at `outer` (ctx: the thread's evaluator), once the
  // copies' rows (row i of the tile) are pointed: point_copies(walk, i, n0) after its seek.
  void (*row)(void* ctx, const tile_walk& walk, const index_t* outer, index_t i, index_t n0, index_t n1, void* row);
  void* ctx;
  unsigned char* buffer = nullptr;
  index_t tile_cols = 0;
};

// Points each copied leaf's row at row i of its tile, indexed from column n0.
template <std::size_t R>
void point_copies(const tile_walk<R>& w, index_t i, index_t n0) {
  for (const tile_copy& c : w.copies)
    c.point(c.self, indexed_from(w.buffer + c.offset + static_cast<std::size_t>(i * w.tile_cols) * c.bytes, n0, c.bytes), n0, 0);
}

// Thread t of nt's share of the tiles (one instance per rank and destination type: the loop over
// elements is w.row's, compiled per expression).
template <std::size_t R, class T>
void walk_tiles(tile_walk<R>& w, index_t t, index_t nt) {
  constexpr std::size_t L = R - 1;
  const std::size_t a = w.a;
  const index_t n = w.shape[L], extent = w.shape[a];
  // Rows: 512 bytes of the widest element moved (128 floats), a line of 8-byte ones, or all of
  // `across`.
  const bool out_tiled = w.out_stride[L] != 1, via_buffer = out_tiled || w.stream;
  // (The destination's element counts where it goes through a buffer, so that its buffer is no
  // larger than a leaf's.)
  std::size_t widest = via_buffer ? sizeof(T) : 1;
  for (const tile_copy& c : w.copies) widest = std::max(widest, c.bytes);
  const bool eight = widest > 4;
  const index_t tile_cols = std::min(n, eight ? transpose_tile_cols_8 : transpose_tile_cols);
  const index_t band_bytes = eight ? transpose_tile_bytes_8 : transpose_tile_bytes;
  const index_t band = extent * static_cast<index_t>(widest) <= transpose_whole_band_bytes ? extent : band_bytes / static_cast<index_t>(widest);
  const index_t tile_rows = std::min(extent, std::max<index_t>(1, band));
  std::size_t bytes = 0;
  for (tile_copy& c : w.copies) {
    c.offset = bytes;
    bytes += whole_lines(static_cast<std::size_t>(tile_rows * tile_cols) * c.bytes);
  }
  // The destination through a buffer too where it is transposed, or where it is streamed (each
  // buffer row then starts at its destination row's offset within a line, so that both align).
  // A transposed destination contiguous along `across` is streamed a tile column at a time: each
  // column gathered into a line-aligned row first (`turned`), where a column spans two lines or
  // more (so that one at least is whole) of words that stream.
  constexpr index_t line = 64 / sizeof(T) > 0 ? 64 / sizeof(T) : 1;
  const bool stream_rows = w.stream && !out_tiled;
  const bool stream_columns =
      can_stream_words_v<T> && w.stream && out_tiled && w.out_stride[a] == 1 && tile_rows * index_t(sizeof(T)) >= 128;
  const index_t out_row = tile_cols + (stream_rows ? line : 0);
  const std::size_t out_offset = bytes;
  if (via_buffer) bytes += whole_lines(static_cast<std::size_t>(tile_rows * out_row) * sizeof(T));
  const std::size_t turned_offset = bytes;
  if (stream_columns) bytes += whole_lines(static_cast<std::size_t>(tile_rows + line) * sizeof(T));
  scratch_buffer<16384> buffer;
  w.buffer = buffer.reserve(bytes);
  w.tile_cols = tile_cols;
  T* const out = static_cast<T*>(w.out);

  // The tiles: every index of the other axes, times pieces of the rows, times bands of rows along
  // `across`; thread t takes a run of them. Bands vary fastest: the next tile reads the next line
  // of the same leaf rows, in order (y = transpose(x) over [4096, 4096] floats, 2 threads, Zen 3:
  // 4.3-5.3 GB/s with pieces varying fastest, 8.5-10.9 so).
  index_t others = 1;
  for (std::size_t d = 0; d < L; ++d)
    if (d != a) others *= w.shape[d];
  const index_t bands = (extent + tile_rows - 1) / tile_rows, pieces = (n + tile_cols - 1) / tile_cols;
  const index_t tiles = others * bands * pieces;
  index_t outer[R] = {};
  for (index_t u = tiles * t / nt; u < tiles * (t + 1) / nt; ++u) {
    const index_t a0 = (u % bands) * tile_rows, a1 = std::min(extent, a0 + tile_rows);
    const index_t n0 = (u / bands % pieces) * tile_cols, n1 = std::min(n, n0 + tile_cols);
    index_t o = u / (pieces * bands);
    for (std::size_t d = L; d-- > 0;) {
      if (d == a) continue;
      outer[d] = o % w.shape[d];
      o /= w.shape[d];
    }
    outer[a] = a0;
    const index_t rows = a1 - a0, cols = n1 - n0;
    for (const tile_copy& c : w.copies) {
      const unsigned char* from = c.base + (row_offset<R>(c.stride, outer) + n0 * c.stride[L]) * static_cast<index_t>(c.bytes);
      move_tile_bytes(c.bytes, w.buffer + c.offset, tile_cols, 1, from, c.stride[a], c.stride[L], rows, cols,
                      std::abs(c.stride[a]) < std::abs(c.stride[L]));
    }
    for (index_t i = 0; i < rows; ++i) {
      outer[a] = a0 + i;
      T* const dst = out + row_offset<R>(w.out_stride, outer);
      T* const held = reinterpret_cast<T*>(w.buffer + out_offset) + i * out_row +
                      (stream_rows ? static_cast<index_t>(reinterpret_cast<std::uintptr_t>(dst + n0) % 64 / sizeof(T)) : 0);
      w.row(w.ctx, w, outer, i, n0, n1, via_buffer ? indexed_from(held, n0, sizeof(T)) : dst);
      if (stream_rows) stream_row(dst + n0, held, cols);
    }
    if (out_tiled) {
      outer[a] = a0;
      T* const to = out + row_offset<R>(w.out_stride, outer) + n0 * w.out_stride[L];
      if (stream_columns) {
        const T* const tile = reinterpret_cast<const T*>(w.buffer + out_offset);
        for (index_t j = 0; j < cols; ++j) {
          T* const d = to + j * w.out_stride[L];
          T* const turned = reinterpret_cast<T*>(w.buffer + turned_offset) +
                            static_cast<index_t>(reinterpret_cast<std::uintptr_t>(d) % 64 / sizeof(T));
          for (index_t i = 0; i < rows; ++i) turned[i] = tile[i * out_row + j];
          stream_row(d, turned, rows);
        }
      } else {
        move_tile_bytes(sizeof(T), to, w.out_stride[a], w.out_stride[L], w.buffer + out_offset, out_row, 1, rows, cols,
                        std::abs(w.out_stride[a]) < std::abs(w.out_stride[L]));
      }
    }
  }
}

// Thread t of nt's share of the tiles of iteration `it`, computed by `eval` (it.eval, or the same
// with shared subtrees bound) across axis `across` (transpose_axis). stream: a destination large
// enough for streaming stores, used where it is contiguous along the rows or along `across` (the
// caller fences before the threads join).
template <class It, class Ev>
void run_transpose_tiles(const It& it, const Ev& eval, int across, bool stream, index_t t, index_t nt) {
  constexpr std::size_t R = It::rank;
  using T = std::remove_pointer_t<decltype(it.out)>;
  auto ev = eval;  // a private copy: its row pointers are this thread's
  tile_walk<R> w{it.shape, it.out, it.out_stride, static_cast<std::size_t>(across), stream, {}, nullptr, &ev};
  ev.for_each_tracker([&](const tracker& tr) {
    if (tr.stride[R - 1] != 1 && tile_leaf(tr))
      w.copies.push_back({tr.self, tr.splat, static_cast<const unsigned char*>(tr.base), tr.stride, tr.elem_bytes, 0});
  });
  w.row = [](void* ctx, const tile_walk<R>& walk, const index_t* outer, index_t i, index_t n0, index_t n1, void* to) {
    Ev& e = *static_cast<Ev*>(ctx);
    e.seek(outer);
    point_copies(walk, i, n0);
    T* const row = static_cast<T*>(to);
    FUSE_SIMD_LOOP
    for (index_t j = n0; j < n1; ++j) row[j] = e.template at<true>(j);
  };
  walk_tiles<R, T>(w, t, nt);
}

}  // namespace fuse::detail
