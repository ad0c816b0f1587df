// fuse/core/online_pair.hpp - which phases of a row kernel may run as one online pass.
//
// softmax reduces its row twice before the epilogue: m = max(a), then s = sum(exp(a - m)). The
// second reduction needs the first one's result, so a row is read twice. The two can share one
// pass (online softmax: Milakov and Gimelshein, 2018) because a sum of exponentials can be
// rescaled when the shift changes: sum(exp(a - m')) = exp(m - m') * sum(exp(a - m)). The kernel
// takes a block's max, raises the running max, rescales the running sum, and adds the block's
// exponentials while the block is still in L1 (cpu/row_online.hpp). Layer norm's mean and
// variance, mean(a) then mean(square(a - mean)), pair the same way: each block's sum of squared
// deviations from its own mean, combined across blocks with the blocks' means (Chan, Golub and
// LeVeque's update, the parallel form of Welford's).
//
// The pair is found in the phases' evaluator types, so hand-written forms qualify as well as
// fuse::softmax, log_softmax, layer_norm and var: a phase J whose operand is f(A - slot K2) -
// exp (either form) under a sum, square under a mean - where phase K2 is a max (a mean) of an
// operand shaped like A. Phase K0 is the first phase shaped like K2: the kernel computes that one
// (a repeated reduction aliases it). At run time the operands must be the same values
// (same_value) and K2 must alias K0 (online_pair_holds).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "fuse/core/evaluator_match.hpp"
#include "fuse/core/reused_phase.hpp"
#include "fuse/ops/math.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse::detail {

enum class online_kind { none, softmax, variance };

// f(A - slot K) with f exp (either form) or square; operand: A's evaluator type.
template <class Ev>
struct fn_of_shift {
  static constexpr online_kind kind = online_kind::none;
};
template <class R, class C, class F, class R2, class C2, class A, class T, std::size_t K>
struct fn_of_shift<map_eval<R, C, F, map_eval<R2, C2, fn::sub, A, slot_eval<T, K>>>> {
  static constexpr online_kind kind = std::is_same_v<F, fn::exp> || std::is_same_v<F, fn::exp_nonpositive> ? online_kind::softmax
                                      : std::is_same_v<F, fn::square>                                      ? online_kind::variance
                                                                                                           : online_kind::none;
  using operand = A;
  static constexpr std::size_t slot = K;
};

// logsumexp's f(A - finite_or_zero(slot K)), a row constant (invariant_eval, computed when the
// operand is seeked: the online pass seeks it again after each new shift): the same shift wherever
// the max is finite, and a row whose max is not finite runs as two phases anyway (finish_online).
template <class R, class C, class F, class R2, class C2, class A, class TI, class R3, class C3, class T, std::size_t K>
struct fn_of_shift<
    map_eval<R, C, F, map_eval<R2, C2, fn::sub, A, invariant_eval<TI, map_eval<R3, C3, fn::finite_or_zero, slot_eval<T, K>>>>>>
    : fn_of_shift<map_eval<R, C, F, map_eval<R2, C2, fn::sub, A, slot_eval<T, K>>>> {};

template <class Phases, std::size_t K>
using phase_at_t = std::remove_cvref_t<decltype(get<K>(std::declval<Phases&>()))>;

// Phase J (operand kind: fn_of_shift) and the phase K2 it reads, by kind: sum(exp(a - max(a))),
// mean(square(a - mean(a))); floating-point accumulators.
template <online_kind Kind, class PJ, class PK>
inline constexpr bool pairs_v =
    std::is_floating_point_v<typename PJ::acc_type> && std::is_floating_point_v<typename PK::acc_type> &&
    ((Kind == online_kind::softmax && std::is_same_v<typename PJ::op, sum_op> && std::is_base_of_v<max_op, typename PK::op>) ||
     (Kind == online_kind::variance && std::is_base_of_v<mean_op, typename PJ::op> && std::is_same_v<typename PK::op, mean_op>));

struct online_pair_t {
  online_kind kind = online_kind::none;
  int max_phase = -1;  // K0: the max (mean) the kernel computes
  int read_phase = -1; // K2: the one phase J's operand reads (K0, or a repeat of it)
  int sum_phase = -1;  // J: the sum of exponentials (mean of squares)
  constexpr bool found() const { return sum_phase >= 0; }
};

// The index of the first phase shaped like PK among phases [0, sizeof...(I)).
template <class Phases, class PK, std::size_t... I>
constexpr int first_shaped_like(std::index_sequence<I...>) {
  constexpr bool like[] = {same_phase_shape_v<phase_at_t<Phases, I>, PK>..., false};
  for (std::size_t i = 0; i < sizeof...(I); ++i)
    if (like[i]) return int(i);
  return -1;
}

// The pair whose second phase is J, or none. (Plain templates, not generic lambdas: g++ 12
// reused a nested lambda's instantiation across different Phases and missed pairs.)
template <class Phases, std::size_t J>
constexpr online_pair_t pair_ending_at() {
  using PJ = phase_at_t<Phases, J>;
  using C = typename PJ::child_type;
  constexpr online_kind kind = fn_of_shift<C>::kind;
  if constexpr (kind == online_kind::none) {
    return {};
  } else {
    constexpr std::size_t k2 = fn_of_shift<C>::slot;
    static_assert(phase_at_t<Phases, k2>::slot == k2, "fuse: phases are numbered in slot order");
    using PK = phase_at_t<Phases, k2>;
    if constexpr (pairs_v<kind, PJ, PK> && same_shape<typename PK::child_type, typename fn_of_shift<C>::operand>::value)
      return {kind, first_shaped_like<Phases, PK>(std::make_index_sequence<k2 + 1>{}), int(k2), int(J)};
    else
      return {};
  }
}

template <class Phases, std::size_t... J>
constexpr online_pair_t first_pair(std::index_sequence<J...>) {
  constexpr online_pair_t pairs[] = {pair_ending_at<Phases, J>()..., online_pair_t{}};
  for (const auto& p : pairs)
    if (p.found()) return p;
  return {};
}

// The first pair in Phases, or none (FUSE_ONLINE_PAIRS=0 turns it off, to measure it).
#ifndef FUSE_ONLINE_PAIRS
#define FUSE_ONLINE_PAIRS 1
#endif
template <class Phases>
constexpr online_pair_t online_pair() {
  if constexpr (!FUSE_ONLINE_PAIRS) return {};
  else return first_pair<Phases>(std::make_index_sequence<Phases::size>{});
}

template <class Phases>
inline constexpr online_pair_t online_pair_v = online_pair<Phases>();

// Does the pair found in the types hold for these values? The max computed (K0) is the one the
// sum reads (K2 aliases it), of the same operand, and neither it nor the sum repeats another phase.
template <class It>
bool online_pair_holds(const It& it) {
  constexpr online_pair_t pair = online_pair<decltype(it.phases)>();
  if constexpr (!pair.found()) {
    return false;
  } else {
    constexpr std::size_t k0 = std::size_t(pair.max_phase), k2 = std::size_t(pair.read_phase), j = std::size_t(pair.sum_phase);
    const bool k2_is_k0 = k2 == k0 || it.alias[k2] == int(k0);
    return it.alias[k0] < 0 && it.alias[j] < 0 && k2_is_k0 && get<k0>(it.phases).count == get<j>(it.phases).count &&
           same_value(get<k0>(it.phases).child, get<0>(get<0>(get<j>(it.phases).child.args).args), it.alias);
  }
}

}  // namespace fuse::detail
