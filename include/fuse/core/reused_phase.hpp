// fuse/core/reused_phase.hpp - which phase's operand a row kernel's epilogue may reuse instead of
// recomputing it (both backends decide alike; how they keep the values is theirs).
//
// softmax is exp(x - max) * (1 / sum(exp(x - max))): the sum phase computes exp(x - max) for every
// element of the row, and the epilogue computes it again. When a phase's operand is expensive
// (transcendental functions) and the epilogue contains the same subexpression, the phase keeps its
// values - the CPU in a per-thread row buffer (cpu/row_cache.hpp), the GPU in registers
// (cuda/row_registers.hpp) - and the epilogue reads them back.
//
// "The same" is decided twice: at compile time the evaluator types must match up to slot numbers
// (softmax's two max nodes are separate slots), and at run time the bytes must match (pointers,
// strides, constants) with slots equal after aliasing (all_occurrences_equal). Otherwise the
// kernel recomputes.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "fuse/core/evaluator.hpp"
#include "fuse/core/evaluator_match.hpp"
#include "fuse/core/row_iteration.hpp"

namespace fuse::detail {

// FUSE_ROW_CACHE=0 turns the reuse off (to measure it).
#ifndef FUSE_ROW_CACHE
#define FUSE_ROW_CACHE 1
#endif

// Operands cheaper than this many flops per element are recomputed (a buffer store + load costs
// about as much as a few arithmetic ops).
inline constexpr int cache_min_flops = 8;

template <class Phases, std::size_t K>
using phase_child_t = decltype(std::declval<std::remove_cvref_t<decltype(get<K>(std::declval<Phases&>()))>>().child);

// The phase whose operand the epilogue Ev reuses: the last expensive one that occurs in it; -1
// when none.
template <class Ev, class Phases>
constexpr int cached_phase() {
  int found = -1;
  if (!FUSE_ROW_CACHE) return found;
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    ((found = flops_of<phase_child_t<Phases, K>>::value >= cache_min_flops && occurrences<phase_child_t<Phases, K>, Ev>::value > 0
                  ? int(K)
                  : found),
     ...);
  }(std::make_index_sequence<Phases::size>{});
  return found;
}

}  // namespace fuse::detail
