// fuse/backend/cpu/hoist.hpp - an expensive subexpression whose operands vary only along the row
// (x * gelu(b[N]), the rsqrt(var[C] + eps) of a channels-last batch norm) computed once per thread
// into a row of values, not once per output element.
//
// The elementwise kernel evaluates the whole tree per element, so gelu(b) ran M * N times where
// eager evaluation (gelu(b) into a temporary, then x * t) runs it N times: fused was 6x slower
// than eager on [512, 256] (a probe, 2026-12-03). At compile time the executor picks one candidate:
// the first subtree in pre-order (not the root) that costs at least hoist_min_flops per element
// and none of whose own subtrees does. At run time it is hoisted when every leaf under it has
// stride 0 along every axis but the last, the row fits a buffer (hoist_max_row) and the thread
// has at least two rows to write; the thread then fills the buffer with the subtree's values along
// the row and runs the kernel with the subtree replaced by a read of that buffer. Only these
// expressions compile the extra loop; CUDA does not hoist (docs/design.md).
#pragma once

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

template <class... H>
struct first_type {
  using type = void;
};
template <class A, class... H>
struct first_type<A, H...> {
  using type = std::conditional_t<std::is_void_v<A>, typename first_type<H...>::type, A>;
};

// The first subtree of E (pre-order, through elementwise nodes) that costs at least
// hoist_min_flops and has no such subtree itself; void if none.
template <class E>
struct minimal_expensive {
  using type = void;
};
template <class R, class C, class F, class... A>
struct minimal_expensive<map_eval<R, C, F, A...>> {
  using self = map_eval<R, C, F, A...>;
  using below = typename first_type<typename minimal_expensive<A>::type...>::type;
  using type = std::conditional_t<!std::is_void_v<below>, below,
                                  std::conditional_t<(flops_of<self>::value >= hoist_min_flops), self, void>>;
};

// The candidate of an elementwise kernel's evaluator: never the root (it is the output).
template <class Ev>
struct hoist_candidate {
  using type = void;
};
template <class R, class C, class F, class... A>
struct hoist_candidate<map_eval<R, C, F, A...>> : first_type<typename minimal_expensive<A>::type...> {};
template <class Ev>
using hoist_candidate_t = std::conditional_t<FUSE_HOIST_ROWS != 0, typename hoist_candidate<Ev>::type, void>;

// The hoisted subtree's values along the row (element i of every row).
template <class T>
struct row_values_eval {
  using value_type = T;
  const T* values;
  void seek(const index_t*) {}
  void bind(const row_slot*) {}
  template <bool Unit, class... Env>
  FUSE_INLINE T at(index_t i, const Env&...) const { return values[i]; }
  template <class F>
  void for_each_tracker(F&&) {}
};

// Can the candidate of it.eval be hoisted (before threads split the rows)?
template <class It>
bool can_hoist(const It& it) {
  constexpr std::size_t R = It::rank;
  using H = hoist_candidate_t<std::remove_cvref_t<decltype(it.eval)>>;
  if constexpr (std::is_void_v<H> || R < 2) {
    return false;
  } else {
    const index_t inner = it.shape[R - 1];
    if (!(it.unit || it.splat) || inner > hoist_max_row || inner < 2) return false;
    const H& first = first_occurrence<H>(it.eval);
    if (!all_occurrences_equal(it.eval, first, nullptr)) return false;  // same shape, other operands
    H h = first;
    bool along_rows_only = true;
    h.for_each_tracker([&](const tracker& t) {
      for (std::size_t d = 0; d + 1 < R; ++d) along_rows_only = along_rows_only && t.stride[d] == 0;
    });
    return along_rows_only;
  }
}

// f(it.eval with its candidate replaced by a read of this thread's row of its values).
template <class It, class F>
void with_hoisted(const It& it, F&& f) {
  constexpr std::size_t R = It::rank;
  using H = hoist_candidate_t<std::remove_cvref_t<decltype(it.eval)>>;
  using V = typename H::value_type;
  const index_t inner = it.shape[R - 1];
  const std::size_t bytes = (static_cast<std::size_t>(inner) * sizeof(V) + 63) / 64 * 64;
  const std::unique_ptr<V, aligned_delete> values(static_cast<V*>(::operator new(bytes, std::align_val_t(64))));
  H h = first_occurrence<H>(it.eval);
  const index_t origin[R] = {};
  h.seek(origin);  // the same row of values on every row: any row will do
  V* const out = values.get();
  // The strided form: a leaf of stride 0 along the row (no copies made here) reads right too.
  // Vectorised, so the values are those the kernel's own loop computes.
  FUSE_SIMD_LOOP
  for (index_t j = 0; j < inner; ++j) out[j] = h.template at<false>(j);
  f(substitute<H>(it.eval, row_values_eval<V>{out}));
}

}  // namespace fuse::detail
