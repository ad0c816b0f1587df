// fuse/backend/cpu/strided_rows.hpp - a row kernel whose rows are strided in memory runs over
// contiguous copies.
//
// Where a leaf is strided along the rows (softmax of a transposed view, layer norm of
// x[:, ::2]) or the destination is (softmax into y.T), the row kernel had a variant of its own
// with strided loads, slow: each pass gathered the row again (softmax of a transposed
// [4096, 1024] float view 1.0 GB/s against 37.7 contiguous, 2 threads, Zen 4: each element of a
// row on a line of its own and, at a power-of-two stride, in one cache set). Now the kernel is
// contiguous only (docs/design.md §4, "Strided rows are read through copies"):
// - a leaf strided along the row but no more than along any other axis (x[:, ::2], a reversed
//   view: gathers_row, row_copies.hpp) is gathered row by row into a row of copies;
// - any other strided leaf (a transpose) is copied here, before the kernel, into a contiguous
//   temporary, by a copy that walks a transpose in tiles so that both sides move whole lines;
// - a strided destination is written through a contiguous temporary, copied out after.
// A leaf that cannot be copied so (take's table read along an index axis, an affine index of
// another stride) makes the kernel decline: the assignment's run-time fallback computes the
// group instead (core/assign.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fuse/backend/cpu/executor.hpp"
#include "fuse/backend/cpu/row_copies.hpp"
#include "fuse/backend/cpu/transpose_tiles.hpp"
#include "fuse/config.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/core/pool.hpp"
#include "fuse/detail/small_vector.hpp"

namespace fuse::detail {

// The pieces of a long last axis that threads copy apart (one long strided row: a full
// reduction).
inline constexpr index_t strided_copy_piece = 4096;

// The offsets in src (strides ss) and dst (ds) of the element at row-major position u over the
// axes of `shape` not in `skip` (those taken as 0).
template <std::size_t R>
void unflatten_offsets(index_t u, const index_t* shape, std::uint32_t skip, const index_t* ss, const index_t* ds,
                       index_t& so, index_t& dso) {
  so = 0, dso = 0;
  for (std::size_t d = R; d-- > 0;) {
    if ((skip >> d) & 1u) continue;
    const index_t i = u % shape[d];
    u /= shape[d];
    so += i * ss[d], dso += i * ds[d];
  }
}

// The source of a transposing copy, as the tile walk reads it: its row pointer, which the walk
// points at its tile's buffer where it is strided along the rows.
template <std::size_t R>
struct copy_source {
  const unsigned char* base;
  index_t stride[R];
  const void* row = nullptr;
  static void point(void* self, void* row, index_t, index_t) { static_cast<copy_source*>(self)->row = row; }
};

// Copies an array of elements of sizeof(U) bytes over `shape` from src (strides ss, in elements) to
// dst (strides ds), as words of type U that may alias any type: the bytes of any value type, and
// reading a float through them is defined. (Moved by memcpy instead, the loops no longer
// vectorised: a contiguous copy 63-81 -> 13.5 GB/s.) stream: the tiles' stores, where dst runs
// along a tile's rows or columns, are streaming ones (a destination nothing reads soon).
template <class U, std::size_t R>
void copy_elements(void* to, const index_t* ds, const void* from, const index_t* ss, const index_t* shape, int threads,
                   bool stream) {
  typedef U FUSE_MAY_ALIAS E;
  constexpr std::size_t L = R - 1;
  // Axes dst does not keep (stride 0 there: a leaf broadcast along them) are copied once, not once
  // per index by threads storing the same bytes.
  index_t extent[R];
  std::uint32_t skip = 1u << L;
  for (std::size_t d = 0; d < R; ++d) {
    extent[d] = d < L && ds[d] == 0 ? 1 : shape[d];
    if (d < L && ds[d] == 0) skip |= 1u << d;
  }
  // Where src or dst is closer to contiguous along another axis than the last (a transpose, either
  // way), the elementwise kernel's tiles (transpose_tiles.hpp): both sides move whole lines. (Rows
  // shorter than transpose_min_row: along the last axis, a row's lines read again from L1 for
  // the next rows, as in the elementwise kernel.)
  int across = closer_than_rows<R>(extent, ss);
  if (across < 0) across = closer_than_rows<R>(extent, ds);
  if (across >= 0 && shape[L] >= transpose_min_row) {
    // The row of a tile: from the source's row, or from its tile's buffer where the walk copied it.
    const auto row = [](void* ctx, const tile_walk<R>& w, const index_t* outer, index_t i, index_t n0, index_t n1, void* out) {
      auto& src = *static_cast<copy_source<R>*>(ctx);
      if (w.copies.empty()) src.row = src.base + row_offset<R>(src.stride, outer) * static_cast<index_t>(sizeof(U));
      else point_copies(w, i, n0);
      const E* const s = static_cast<const E*>(src.row);
      E* const o = static_cast<E*>(out);
      FUSE_SIMD_LOOP
      for (index_t j = n0; j < n1; ++j) o[j] = s[j];
    };
    run_threads(threads, [&](index_t t, index_t nt) {
      copy_source<R> source{static_cast<const unsigned char*>(from), {}};  // this thread's row pointer
      std::copy(ss, ss + R, source.stride);
      tile_walk<R> w{extent, to, ds, static_cast<std::size_t>(across), stream, {}, row, &source};
      if (ss[L] != 1) w.copies.push_back({&source, &copy_source<R>::point, source.base, source.stride, sizeof(U), 0});
      walk_tiles<R, U>(w, t, nt);
      if (stream) stream_fence();  // before the join
    });
    return;
  }
  // Otherwise along the last axis, threads taking pieces of it.
  index_t outer = 1;
  for (std::size_t d = 0; d < L; ++d)
    if (!((skip >> d) & 1u)) outer *= shape[d];
  const index_t n = shape[L];
  const index_t pieces = (n + strided_copy_piece - 1) / strided_copy_piece;
  const index_t units = outer * pieces;
  run_threads(threads, [&](index_t t, index_t nt) {
    // (In the thread's own locals: a store through a word that may alias anything would make
    // the loops reload what they read through the capture.)
    const index_t dl = ds[L], sl = ss[L], len = n, pieces_ = pieces;
    E* const out = static_cast<E*>(to);
    const E* const in = static_cast<const E*>(from);
    for (index_t u = units * t / nt; u < units * (t + 1) / nt; ++u) {
      index_t so, dso;
      unflatten_offsets<R>(u / pieces_, shape, skip, ss, ds, so, dso);
      const index_t p0 = (u % pieces_) * strided_copy_piece, p1 = std::min(len, p0 + strided_copy_piece);
      const E* s = in + so;
      E* o = out + dso;
      for (index_t j = p0; j < p1; ++j) o[j * dl] = s[j * sl];
    }
  });
}

// copy_elements for elements of elem_bytes bytes (one loop per size, whatever the value type).
template <std::size_t R>
void copy_strided(void* dst, const index_t* ds, const void* src, const index_t* ss, const index_t* shape, std::size_t elem_bytes,
                  int threads, bool stream = false) {
  switch (elem_bytes) {
    case 1: return copy_elements<std::uint8_t, R>(dst, ds, src, ss, shape, threads, stream);
    case 2: return copy_elements<std::uint16_t, R>(dst, ds, src, ss, shape, threads, stream);
    case 4: return copy_elements<std::uint32_t, R>(dst, ds, src, ss, shape, threads, stream);
    case 8: return copy_elements<std::uint64_t, R>(dst, ds, src, ss, shape, threads, stream);
    default: break;
  }
  // Other sizes (a user's number class convertible to float, promote.hpp's is_element_v, of 3, 12
  // or 16 bytes): one memcpy each.
  index_t total = 1;
  for (std::size_t d = 0; d < R; ++d) total *= shape[d];
  auto* o = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const auto eb = static_cast<index_t>(elem_bytes);
  for (index_t u = 0; u < total; ++u) {
    index_t so, dso;
    unflatten_offsets<R>(u, shape, 0, ss, ds, so, dso);
    std::memcpy(o + dso * eb, s + so * eb, elem_bytes);
  }
}

// Row-major strides over `shape` for the axes a copy keeps (keep[d]; the last axis always),
// 0 elsewhere; returns the elements the copy holds.
template <std::size_t R>
index_t dense_strides(const index_t* shape, const bool* keep, index_t* stride) {
  index_t s = 1;
  for (std::size_t d = R; d-- > 0;) {
    if (d == R - 1 || (keep[d] && shape[d] > 1)) stride[d] = s, s *= shape[d];
    else stride[d] = 0;
  }
  return s;
}

// The contiguous copies of one row kernel's strided leaves, and its output's temporary.
template <std::size_t R>
class contiguous_rows {
 public:
  // Points every leaf of `it` (the caller's copy of the iteration) that the contiguous kernel
  // cannot read, directly or through rows of copies (row_copies.hpp), at a contiguous copy of it,
  // and a destination strided along the rows at a contiguous temporary. False, with nothing
  // copied, where some such leaf is read otherwise than at base + offset (take's table) or is no
  // memory (an affine index): the caller declines the kernel.
  template <class It>
  bool prepare(It& it, int threads) {
    if (!copyable(it)) return false;
    it.for_each_tracker([&](tracker t) {
      if (!needs_copy(t, it.shape)) return;
      const void* copy = copy_of(t, it.shape, threads);
      t.rebase(t.self, copy);
    });
    if (!it.root_reduction && it.out_stride[R - 1] != 1) {
      using T = std::remove_pointer_t<decltype(it.out)>;
      out_ = it.out;
      out_bytes_ = sizeof(T);
      for (std::size_t d = 0; d < R; ++d) out_stride_[d] = it.out_stride[d], shape_[d] = it.shape[d];
      bool keep[R];
      for (std::size_t d = 0; d < R; ++d) keep[d] = it.out_stride[d] != 0;
      const index_t elements = dense_strides<R>(it.shape, keep, it.out_stride);
      it.out = arena_.template make<T, 1>(shape_t<1>{elements}).data();
      temp_ = it.out;
      for (std::size_t d = 0; d < R; ++d) temp_stride_[d] = it.out_stride[d];
    }
    return true;
  }

  // The bytes of the contiguous copies that prepare would make of it's leaves (one per leaf and
  // layout), nothing copied; -1 where it would decline. (What fuse::plan counts: plan/report.hpp.)
  template <class It>
  static index_t copy_bytes(It it) {
    if (!copyable(it)) return -1;
    small_vector<copied, 4> seen;
    index_t bytes = 0;
    it.for_each_tracker([&](const tracker& t) {
      if (!needs_copy(t, it.shape) || find_copy(seen, t) != nullptr) return;
      index_t elements = 0;
      seen.push_back(layout_of(t, it.shape, elements));
      bytes += elements * static_cast<index_t>(t.elem_bytes);
    });
    return bytes;
  }

  // After the kernel: the temporary's rows copied to the destination, with streaming stores
  // where it is as large as the elementwise kernel streams (executor.hpp).
  void finish(int threads) {
    if (out_ == nullptr) return;
    index_t n = 1;
    for (std::size_t d = 0; d < R; ++d) n *= shape_[d];
    copy_strided<R>(out_, out_stride_, temp_, temp_stride_, shape_, out_bytes_, threads, large_enough_to_stream(n, out_bytes_));
  }

 private:
  // What cpu_reading (row_kernel.hpp) does not read through rows of copies: a strided leaf not
  // gathered row by row. (A leaf of stride 0 is, on rows of any length: copied whole it would be
  // a row as long for every row, a cross-entropy's labels [N, 1] over a vocabulary of 131072 half
  // a MiB each.)
  static bool needs_copy(const tracker& t, const index_t* shape) {
    return reading_along_row<R>(t) == along_row::strided && !gathers_row<R>(t, shape);
  }

  // Can every leaf that needs a copy be copied (read at base + offset, its base rebindable)?
  template <class It>
  static bool copyable(It& it) {
    bool ok = true;
    it.for_each_tracker([&](const tracker& t) {
      if (needs_copy(t, it.shape)) ok = ok && t.rebase != nullptr && t.span == 0 && t.base != nullptr;
    });
    return ok;
  }

  // The copy of t's elements over shape, laid out by t.stride as rewritten here; one per leaf
  // and layout (softmax reads x in each of its passes: one copy).
  const void* copy_of(const tracker& t, const index_t* shape, int threads) {
    if (const copied* c = find_copy(copies_, t)) {
      for (std::size_t d = 0; d < R; ++d) t.stride[d] = c->stride[d];
      return c->data;
    }
    index_t elements = 0;
    copied c = layout_of(t, shape, elements);
    c.data = arena_.template make<unsigned char, 1>(shape_t<1>{elements * static_cast<index_t>(t.elem_bytes)}).data();
    copy_strided<R>(c.data, c.stride, t.base, c.source, shape, t.elem_bytes, threads);
    for (std::size_t d = 0; d < R; ++d) t.stride[d] = c.stride[d];
    copies_.push_back(c);
    return c.data;
  }

  struct copied {
    const void* base;
    std::size_t elem_bytes;
    index_t source[R];
    index_t stride[R];
    unsigned char* data;
  };
  // The copy of t's elements over shape, without its data: t's layout (source), the copy's (dense
  // along the axes t does not broadcast) and its size in elements.
  static copied layout_of(const tracker& t, const index_t* shape, index_t& elements) {
    copied c{t.base, t.elem_bytes, {}, {}, nullptr};
    std::copy(t.stride, t.stride + R, c.source);
    bool keep[R];
    for (std::size_t d = 0; d < R; ++d) keep[d] = c.source[d] != 0;
    elements = dense_strides<R>(shape, keep, c.stride);
    return c;
  }

  // The copy of t's leaf in its layout among `list`, if there is one.
  static const copied* find_copy(const small_vector<copied, 4>& list, const tracker& t) {
    for (const copied& c : list)
      if (c.base == t.base && c.elem_bytes == t.elem_bytes && std::equal(t.stride, t.stride + R, c.source)) return &c;
    return nullptr;
  }

  pool_arena<host_allocator> arena_;
  small_vector<copied, 4> copies_;
  void* out_ = nullptr;  // the destination, when written through temp_
  const void* temp_ = nullptr;
  std::size_t out_bytes_ = 0;
  index_t out_stride_[R] = {}, temp_stride_[R] = {}, shape_[R] = {};
};

}  // namespace fuse::detail
