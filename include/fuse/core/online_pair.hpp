// fuse/core/online_pair.hpp - which phases of a row kernel may run as one online pass.
//
// softmax reduces its row twice before the epilogue: m = max(a), then s = sum(exp(a - m)). The
// second reduction needs the first one's result, so a row is read twice. The two can share one
// pass (online softmax: Milakov and Gimelshein, 2018) because a sum of exponentials can be
// rescaled when the shift changes: sum(exp(a - m')) = exp(m - m') * sum(exp(a - m)). The kernel
// takes a block's max, raises the running max, rescales the running sum, and adds the block's
// exponentials while the block is still in L1 (cpu/row_online.hpp).
//
// The pair is found in the phases' evaluator types, so the hand-written form qualifies as well as
// fuse::softmax, log_softmax and logsumexp: a sum phase J whose operand is exp(A - slot K2), where
// phase K2 is a max of an operand shaped like A. Phase K0 is the first phase shaped like K2: the
// kernel computes that one (a repeated max aliases it). At run time the operands must be the same
// values (same_value) and K2 must alias K0 (online_pair_holds).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "fuse/core/evaluator_match.hpp"
#include "fuse/core/reused_phase.hpp"
#include "fuse/ops/math.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse::detail {

// exp(A - slot K), with exp either form; operand: A's evaluator type.
template <class Ev>
struct exp_of_shift : std::false_type {};
template <class R, class C, class F, class R2, class C2, class A, class T, std::size_t K>
  requires(std::is_same_v<F, fn::exp> || std::is_same_v<F, fn::exp_nonpositive>)
struct exp_of_shift<map_eval<R, C, F, map_eval<R2, C2, fn::sub, A, slot_eval<T, K>>>> : std::true_type {
  using operand = A;
  static constexpr std::size_t slot = K;
};

template <class Phases, std::size_t K>
using phase_at_t = std::remove_cvref_t<decltype(get<K>(std::declval<Phases&>()))>;

// Phase P is a max over a floating-point operand.
template <class P>
inline constexpr bool is_float_max_v = std::is_base_of_v<max_op, typename P::op> && std::is_floating_point_v<typename P::acc_type>;

// Phases P and Q compute the same kind of value from operands of the same shape.
template <class P, class Q>
inline constexpr bool same_phase_shape_v = std::is_same_v<typename P::op, typename Q::op> &&
                                           std::is_same_v<typename P::acc_type, typename Q::acc_type> &&
                                           std::is_same_v<typename P::result_type, typename Q::result_type> &&
                                           same_shape<typename P::child_type, typename Q::child_type>::value;

struct online_pair_t {
  int max_phase = -1;  // K0: the max the kernel computes
  int read_phase = -1; // K2: the max the sum's operand reads (K0, or a repeat of it)
  int sum_phase = -1;  // J
  constexpr bool found() const { return sum_phase >= 0; }
};

// The first pair in Phases, or none (FUSE_ONLINE_SOFTMAX=0 turns it off, to measure it).
#ifndef FUSE_ONLINE_SOFTMAX
#define FUSE_ONLINE_SOFTMAX 1
#endif
template <class Phases>
constexpr online_pair_t online_pair() {
  online_pair_t r;
  if (!FUSE_ONLINE_SOFTMAX) return r;
  [&]<std::size_t... J>(std::index_sequence<J...>) {
    auto try_sum = [&]<std::size_t j>(std::integral_constant<std::size_t, j>) {
      using PJ = phase_at_t<Phases, j>;
      using C = typename PJ::child_type;
      if constexpr (std::is_same_v<typename PJ::op, sum_op> && std::is_floating_point_v<typename PJ::acc_type> &&
                    exp_of_shift<C>::value) {
        constexpr std::size_t k2 = exp_of_shift<C>::slot;
        static_assert(phase_at_t<Phases, k2>::slot == k2, "fuse: phases are numbered in slot order");
        using PK = phase_at_t<Phases, k2>;
        if constexpr (is_float_max_v<PK> && same_shape<typename PK::child_type, typename exp_of_shift<C>::operand>::value) {
          if (r.found()) return;
          r = {int(k2), int(k2), int(j)};
          // The first phase shaped like K2 (K2 itself at the latest).
          [&]<std::size_t... I>(std::index_sequence<I...>) {
            ((r.max_phase == int(k2) && I < k2 && same_phase_shape_v<phase_at_t<Phases, I>, PK> ? (void)(r.max_phase = int(I))
                                                                                                  : (void)0),
             ...);
          }(std::make_index_sequence<k2>{});
        }
      }
    };
    (try_sum(std::integral_constant<std::size_t, J>{}), ...);
  }(std::make_index_sequence<Phases::size>{});
  return r;
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
           same_value(get<k0>(it.phases).child, first_occurrence<typename exp_of_shift<phase_child_t<decltype(it.phases), j>>::operand>(
                                                     get<j>(it.phases).child),
                      it.alias);
  }
}

}  // namespace fuse::detail
