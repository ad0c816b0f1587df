// fuse/backend/cpu/hoist.hpp - an expensive subexpression whose operands vary only along the row
// (x * gelu(b[N]), the rsqrt(var[C] + eps) of a channels-last batch norm) computed once per thread
// into a row of values, or one whose operands are constant along the row (rsqrt(var[C, 1, 1] +
// eps) of an NCHW batch norm, exp(s[M, 1])) computed once per row, not once per output element.
//
// The elementwise kernel evaluates the whole tree per element, so gelu(b) ran M * N times where
// eager evaluation (gelu(b) into a temporary, then x * t) runs it N times: fused was 6x slower
// than eager on [512, 256] (a probe, 2026-12-03). At compile time the executor picks one candidate:
// the first subtree in pre-order (not the root) that costs at least hoist_min_flops per element
// and none of whose own subtrees does. At run time it is hoisted across rows when every leaf under
// it has stride 0 along every axis but the last and the row fits a buffer (hoist_max_row): each
// thread fills the buffer with the subtree's values along the row and runs the kernel with the
// subtree replaced by a read of that buffer. It is hoisted per row when every leaf under it has
// stride 0 along the last axis and the contiguous loop reads such leaves through copies, or short
// rows run as tiles (tile.hpp): its value at each row start is copied along the row instead.
// Only these expressions compile the extra loop; CUDA does not hoist (docs/design.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>

#include "fuse/backend/cpu/splat.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/core/evaluator_match.hpp"

namespace fuse::detail {

// FUSE_HOIST_ROWS=0 turns hoisting off (to measure it).
#ifndef FUSE_HOIST_ROWS
#define FUSE_HOIST_ROWS 1
#endif

// A buffer store and load cost about as much as a couple of arithmetic operations: below this a
// subtree is recomputed. rsqrt(v + eps) is 3.
inline constexpr int hoist_min_flops = 3;
// Rows longer than this are not hoisted (a buffer of up to 256 KiB of floats per thread).
inline constexpr index_t hoist_max_row = index_t(1) << 16;

// The first subtree of E (pre-order, through elementwise nodes) that costs at least
// hoist_min_flops and has no such subtree itself; void if none.
template <class E>
struct minimal_expensive {
  using type = void;
};
template <class R, class C, class F, class... A>
struct minimal_expensive<map_eval<R, C, F, A...>> {
  using self = map_eval<R, C, F, A...>;
  using below = typename first_non_void<typename minimal_expensive<A>::type...>::type;
  using type = std::conditional_t<!std::is_void_v<below>, below,
                                  std::conditional_t<(flops_of<self>::value >= hoist_min_flops), self, void>>;
};

// The candidate of an elementwise kernel's evaluator: never the root (it is the output).
template <class Ev>
struct hoist_candidate {
  using type = void;
};
template <class R, class C, class F, class... A>
struct hoist_candidate<map_eval<R, C, F, A...>> : first_non_void<typename minimal_expensive<A>::type...> {};
template <class Ev>
using hoist_candidate_t = std::conditional_t<FUSE_HOIST_ROWS != 0, typename hoist_candidate<Ev>::type, void>;

// How a kernel's candidate is hoisted, decided once per kernel at run time.
enum class hoist_mode {
  none,
  across_rows,  // the same values on every row: computed once per thread along the row
  per_row,      // one value per row (leaves of stride 0 along the row): computed once per row
};

// The hoisted subtree's values along the row (element i of the current row). Across rows: a
// buffer the thread filled once. Per row: the subtree is evaluated at element 0 of each row and
// its value copied along a row buffer by the splat mechanism (backend/cpu/splat.hpp: this node
// reports itself as a leaf of stride 0 along the row, which the contiguous loop reads through
// copies), so that both modes are one type and the kernel's loop is compiled once more, not twice.
template <class T, class H, std::size_t R>
struct row_values_eval {
  using value_type = T;
  const T* values = nullptr;
  H h;
  bool per_row = false;
  index_t no_stride[R] = {};
  // Per row: the row h was last evaluated on (the kernel seeks again for each chunk of copies).
  index_t row_at[R] = {-1};
  bool stale = true;
  T value{};

  // Host and device only because map_eval's members are (nvcc checks the calls); hoisting runs
  // on the CPU.
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t* outer) {
    if (!per_row) return;
    bool same = true;
    for (std::size_t d = 0; d + 1 < R; ++d) same = same && row_at[d] == outer[d];
    if (same) return;
    for (std::size_t d = 0; d + 1 < R; ++d) row_at[d] = outer[d];
    h.seek(outer);
    stale = true;
  }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot*) {}
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE T at(index_t i, const Env&...) const { return values[i]; }
  template <class F>
  void for_each_tracker(F&& f) {
    if (per_row) f(tracker{no_stride, nullptr, sizeof(T), 0, this, &fill_row, &fill_tile});
  }
  static void fill_row(void* self, void* buffer, index_t from, index_t count) {
    auto& ev = *static_cast<row_values_eval*>(self);
    if (ev.stale) ev.value = ev.h.template at<false>(0), ev.stale = false;
    T* const row = static_cast<T*>(buffer);
    for (index_t k = from; k < from + count; ++k) row[k] = ev.value;
    ev.values = row;
  }
  // Short rows run as tiles (tile.hpp): rows of n elements from the row seek() last saw on along
  // the next-to-last axis (a tile never crosses its end); each row's value, n times. Always
  // filled: the value of one row is one evaluation of h, not worth a cache.
  static const void* fill_tile(void* self, void* buffer, index_t n, index_t count, const void*) {
    auto& ev = *static_cast<row_values_eval*>(self);
    T* const out = static_cast<T*>(buffer);
    if constexpr (R >= 2) {
      index_t at[R];
      for (std::size_t d = 0; d < R; ++d) at[d] = ev.row_at[d];
      for (index_t k = 0; k < count; k += n, ++at[R - 2]) {
        ev.h.seek(at);
        const T v = ev.h.template at<false>(0);
        const index_t stop = std::min(n, count - k);
        for (index_t j = 0; j < stop; ++j) out[k + j] = v;
      }
    }
    ev.h.seek(ev.row_at);  // back at the row seek() saw; `value` may be another row's
    ev.stale = true;
    ev.values = out;
    return nullptr;
  }
};

// The mode for it.eval's candidate (before threads split the rows); tiles: the kernel's short rows
// run as tiles. Across rows wins where both hold (a subtree of constants and stride-0 leaves only).
template <class It>
hoist_mode hoist_mode_of(const It& it, bool tiles) {
  constexpr std::size_t R = It::rank;
  using H = hoist_candidate_t<std::remove_cvref_t<decltype(it.eval)>>;
  if constexpr (std::is_void_v<H> || R < 2) {
    return hoist_mode::none;
  } else {
    const index_t inner = it.shape[R - 1];
    if (!(it.unit || it.splat || tiles) || inner > hoist_max_row || inner < 2) return hoist_mode::none;
    const H& first = first_occurrence<H>(it.eval);
    if (!all_occurrences_equal(it.eval, first, nullptr)) return hoist_mode::none;  // same shape, other operands
    H h = first;
    bool across_rows = true, along_row = true;
    h.for_each_tracker([&](const tracker& t) {
      for (std::size_t d = 0; d + 1 < R; ++d) across_rows = across_rows && t.stride[d] == 0;
      along_row = along_row && t.stride[R - 1] == 0;
    });
    // Across rows only where the kernel's loop is contiguous without tiles (a row of values).
    if (across_rows && (it.unit || it.splat)) return hoist_mode::across_rows;
    // Per row only through the copies of the contiguous loop: it.splat says the row is long
    // enough for them (and it.unit cannot hold with such a leaf), `tiles` that short rows run as
    // tiles (tile.hpp), each row's value spread along its row in the tile.
    if (along_row && (it.splat || tiles)) return hoist_mode::per_row;
    return hoist_mode::none;
  }
}

// f(it.eval with its candidate replaced by a row_values_eval in `mode`).
template <class It, class F>
void with_hoisted(const It& it, hoist_mode mode, F&& f) {
  constexpr std::size_t R = It::rank;
  using H = hoist_candidate_t<std::remove_cvref_t<decltype(it.eval)>>;
  using V = typename H::value_type;
  row_values_eval<V, H, R> hoisted{nullptr, first_occurrence<H>(it.eval)};
  std::unique_ptr<V, aligned_delete> values;
  if (mode == hoist_mode::per_row) {
    hoisted.per_row = true;
  } else {
    const index_t inner = it.shape[R - 1];
    const std::size_t bytes = whole_lines(static_cast<std::size_t>(inner) * sizeof(V));
    values.reset(static_cast<V*>(::operator new(bytes, std::align_val_t(64))));
    H h = hoisted.h;
    const index_t origin[R] = {};
    h.seek(origin);  // the same row of values on every row: any row will do
    V* const out = values.get();
    // The strided form: a leaf of stride 0 along the row (no copies made here) reads right too.
    // The values are rounded to V here; the per-element loop may instead contract the subtree's
    // last multiply into an FMA with its parent (g++'s default -ffp-contract=fast): an ulp apart
    // at most, and identical with -ffp-contract=off (docs/design.md, "Row operands hoisted").
    FUSE_SIMD_LOOP
    for (index_t j = 0; j < inner; ++j) out[j] = h.template at<false>(j);
    hoisted.values = out;
  }
  f(substitute<H>(it.eval, hoisted));
}

}  // namespace fuse::detail
