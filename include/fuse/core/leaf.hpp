// fuse/core/leaf.hpp - what tensors and views share as leaves of an expression: strides placed on
// the execution axes (broadcasting), their memory footprint for the plan, and element offsets.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "fuse/core/evaluator.hpp"
#include "fuse/core/expression.hpp"

namespace fuse::detail {

// Row-major strides of a contiguous array.
template <std::size_t R>
constexpr shape_t<R> contiguous_strides(const shape_t<R>& s) {
  shape_t<R> st{};
  index_t acc = 1;
  for (std::size_t i = R; i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

// The offset of element (i...) in a contiguous row-major array of shape s, and in one of strides
// st. Element access x(i, j) calls these: written without building a strides array, so that a
// loop over x(i, j) in an unoptimised build (debug builds, the unit tests) is a few operations an
// element, not a chain of calls (the transposes' test file, which checks 16 MiB outputs element by
// element, ran 33 s at -O0 through a view built per element, 18 s through these).
template <std::size_t R, class... I>
constexpr index_t row_major_offset(const shape_t<R>& s, I... i) {
  static_assert(sizeof...(I) == R, "fuse::row_major_offset: one index per axis");
  [[maybe_unused]] const index_t* e = s.data();
  index_t off = 0;
  [[maybe_unused]] std::size_t d = 0;
  ((off = off * e[d++] + static_cast<index_t>(i)), ...);
  return off;
}
template <std::size_t R, class... I>
constexpr index_t strided_offset(const shape_t<R>& st, I... i) {
  static_assert(sizeof...(I) == R, "fuse::strided_offset: one index per axis");
  [[maybe_unused]] const index_t* s = st.data();
  index_t off = 0;
  [[maybe_unused]] std::size_t d = 0;
  ((off += static_cast<index_t>(i) * s[d++]), ...);
  return off;
}

// True if the strides are row-major contiguous for the shape: every axis of extent > 1 has the
// product of the extents after it (an axis of extent 1 may have any stride, as in NumPy).
template <std::size_t R>
constexpr bool is_row_major(const shape_t<R>& shape, const shape_t<R>& strides) {
  index_t expect = 1;
  for (std::size_t d = R; d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}

// Strides of a rank-L leaf seen through an execution space of rank R: trailing axes aligned,
// an extent of 1 (or a missing axis) gets stride 0 so that it broadcasts.
template <std::size_t R, std::size_t L>
FUSE_HOST_DEVICE constexpr void place_strides(index_t* out, const shape_t<L>& shape, const shape_t<L>& strides) {
  for (std::size_t d = 0; d < R; ++d) out[d] = 0;
  for (std::size_t j = 0; j < L; ++j) {
    const std::ptrdiff_t d = static_cast<std::ptrdiff_t>(R) - static_cast<std::ptrdiff_t>(L) + static_cast<std::ptrdiff_t>(j);
    if (d >= 0 && shape[j] != 1) out[d] = strides[j];
  }
}

// Identity and size of a leaf's memory, for the plan (the bytes a perfect cache would move).
struct leaf_info {
  const void* data;
  index_t bytes;   // distinct bytes the leaf occupies (stride-0 axes count once)
  memory_space space;
  // The bytes [data + lo, data + hi) hold them all (lo == hi: no bound given, as for take, whose
  // rows count once per index). Overlapping leaves of one buffer (two slices of x) share them.
  std::ptrdiff_t lo = 0, hi = 0;
  // The layout, so that the plan can count the union of overlapping leaves exactly: the element
  // size and {extent, stride in bytes} of every axis that moves (extent > 1, stride != 0).
  index_t element_bytes = 0;
  std::vector<std::array<index_t, 2>> axes{};
  const void* picked_by = nullptr;  // take: the indices that pick the rows (no bound)
};

// Calls f(offset) for every element of an array given as {extent, stride} axes (none: one
// element at 0), the last axis fastest.
template <class F>
void for_each_offset(const std::array<index_t, 2>* axes, std::size_t n, F&& f) {
  if (n == 0) {
    f(index_t(0));
    return;
  }
  std::vector<index_t> at(n - 1, 0);
  index_t offset = 0;
  for (;;) {
    for (index_t j = 0; j < axes[n - 1][0]; ++j) f(offset + j * axes[n - 1][1]);
    std::size_t a = n - 1;
    for (;;) {  // the next index of the outer axes, as an odometer
      if (a == 0) return;
      --a;
      offset += axes[a][1];
      if (++at[a] < axes[a][0]) break;
      offset -= axes[a][1] * axes[a][0];
      at[a] = 0;
    }
  }
}

// Every element's offset, listed; for the checks that must sort them (overlap, the plan's union).
inline std::vector<index_t> element_offsets(const std::array<index_t, 2>* axes, std::size_t n) {
  std::vector<index_t> offsets;
  for_each_offset(axes, n, [&](index_t o) { offsets.push_back(o); });
  return offsets;
}

// One bit per cell of a grid (offsets divided by their common unit): marking the elements of
// overlapping arrays finds repeats and counts distinct cells in one pass, with no sort. Used where
// the grid is at most cells_per_element_limit cells per element (else sorting costs less memory).
class cell_bitmap {
 public:
  static constexpr index_t cells_per_element_limit = 16;
  explicit cell_bitmap(index_t cells) : words_(std::size_t(cells + 63) / 64, 0) {}
  // Marks cell c; true if it was marked before.
  bool mark(index_t c) {
    std::uint64_t& w = words_[std::size_t(c / 64)];
    const std::uint64_t bit = std::uint64_t(1) << (c % 64);
    const bool before = (w & bit) != 0;
    w |= bit;
    return before;
  }
  index_t count() const {
    index_t n = 0;
    for (std::uint64_t w : words_) n += std::popcount(w);
    return n;
  }

 private:
  std::vector<std::uint64_t> words_;
};

// Above this many elements, offsets_collide does not list an irregular layout out.
inline constexpr index_t overlap_listing_limit = index_t(1) << 24;

// True if two elements of a non-empty strided array, given as {extent, stride} axes of extent > 1,
// share an offset (axes is reordered). Sorted by |stride|, an axis whose stride exceeds the
// farthest offset the smaller axes reach cannot meet them: that settles every layout that slicing,
// transposing and reshaping make. Other layouts (strides {2, 3} over [3, 3] overlap nowhere, {1, 1}
// over [6, 3] does) have their offsets marked or listed and compared, up to overlap_listing_limit
// elements (beyond it: false, docs/design.md §7).
inline bool offsets_collide(std::array<index_t, 2>* axes, std::size_t n) {
  index_t elements = 1;
  for (std::size_t i = 0; i < n; ++i) {
    if (axes[i][1] < 0) axes[i][1] = -axes[i][1];
    elements *= axes[i][0];
  }
  for (std::size_t i = 1; i < n; ++i)  // insertion sort: std::sort drew a false g++ 12 -Warray-bounds
    for (std::size_t j = i; j > 0 && axes[j - 1][1] > axes[j][1]; --j) std::swap(axes[j - 1], axes[j]);
  index_t reach = 0;
  std::size_t k = 0;
  for (; k < n && axes[k][1] > reach; ++k) reach += axes[k][1] * (axes[k][0] - 1);
  if (k == n || elements > overlap_listing_limit) return false;
  // On the grid of the strides' gcd, a bitmap of the span finds a repeat in one pass where the
  // span is small against the elements (2^24 elements at -O2: 0.74 s sorted, 0.12 s marked);
  // else sort.
  index_t unit = 0, span = 0;
  for (std::size_t i = 0; i < n; ++i) {
    unit = std::gcd(unit, axes[i][1]);
    span += axes[i][1] * (axes[i][0] - 1);
  }
  if (unit == 0) return elements > 1;  // every stride 0
  if (const index_t cells = span / unit + 1; cells <= cell_bitmap::cells_per_element_limit * elements) {
    cell_bitmap marked(cells);
    bool repeat = false;
    for_each_offset(axes, n, [&](index_t o) { repeat = marked.mark(o / unit) || repeat; });
    return repeat;
  }
  auto offsets = element_offsets(axes, n);
  std::sort(offsets.begin(), offsets.end());
  return std::adjacent_find(offsets.begin(), offsets.end()) != offsets.end();
}

template <std::size_t L>
constexpr index_t footprint_elements(const shape_t<L>& shape, const shape_t<L>& strides) {
  index_t n = 1;
  for (std::size_t j = 0; j < L; ++j) {
    if (shape[j] == 0) return 0;
    if (strides[j] != 0) n *= shape[j];
  }
  return n;
}

// [lowest, highest] element offsets a strided array touches (for overlap checks).
template <std::size_t L>
constexpr std::array<index_t, 2> offset_range(const shape_t<L>& shape, const shape_t<L>& strides) {
  index_t lo = 0, hi = 0;
  for (std::size_t j = 0; j < L; ++j) {
    if (shape[j] == 0) return {0, -1};
    const index_t span = (shape[j] - 1) * strides[j];
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi};
}

}  // namespace fuse::detail
