// fuse/core/shared_subtree.hpp - a subexpression that occurs several times is evaluated once per
// element.
//
// `auto z = x + bias;` used five times in a hand-written GELU is five copies of the same node, and
// `sum(x * x)` holds two copies of x. Each copy's evaluator has its own row pointers; the compiler
// cannot tell they are equal, so it loads and computes every copy. Before a CPU loop runs, the
// executor looks at compile time for the largest subtree of the evaluator that occurs more than
// once and reads memory, and checks once at run time that every occurrence is the same value
// (evaluator_match.hpp: same pointers, strides, constants). Then it runs
//     let_eval:   v = z.at(i);   body.at(i, v)
// where the body has every occurrence replaced by a hole that returns v. The values travel down
// the body's at() calls as an environment (`env...`), so a second shared subtree, found in the body
// (up to max_shared_subtrees of them), nests: its holes read the second value.
#pragma once

#include <cstddef>
#include <type_traits>

#include "fuse/core/evaluator.hpp"
#include "fuse/core/evaluator_match.hpp"

namespace fuse::detail {

// FUSE_SHARE_SUBTREES=0 turns the sharing off (to measure it).
#ifndef FUSE_SHARE_SUBTREES
#define FUSE_SHARE_SUBTREES 1
#endif

// Each level (and candidate, below) instantiates the kernel's loop once more: a bound on compile
// time.
inline constexpr std::size_t max_shared_subtrees = 1;

// The K-th of a pack of values.
template <std::size_t K, class First, class... Rest>
FUSE_HOST_DEVICE FUSE_INLINE const auto& nth_value(const First& first, const Rest&... rest) {
  if constexpr (K == 0) return first;
  else return nth_value<K - 1>(rest...);
}

// Element i of the K-th shared value. (Members are host and device only because map_eval's are:
// nvcc checks the calls. Sharing runs on the CPU.)
template <class T, std::size_t K>
struct hole_eval {
  using value_type = T;
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t*) {}
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot*) {}
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE T at(index_t, const Env&... env) const {
    return nth_value<K>(env...);
  }
  template <class F>
  void for_each_tracker(F&&) {}
};

// Z evaluated once; its value passed to Body's holes.
template <class Z, class Body>
struct let_eval {
  using value_type = typename Body::value_type;
  Z z;
  Body body;
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t* outer) { z.seek(outer), body.seek(outer); }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot* s) { z.bind(s), body.bind(s); }
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE value_type at(index_t i, const Env&... env) const {
    const typename Z::value_type v = z.template at<Unit>(i, env...);
    return body.template at<Unit>(i, env..., v);
  }
  template <class F>
  void for_each_tracker(F&& f) {
    z.for_each_tracker(f);
    body.for_each_tracker(f);
  }
};

template <class Z, class Body>
struct flops_of<let_eval<Z, Body>> : std::integral_constant<int, flops_of<Z>::value + flops_of<Body>::value> {};

template <class E>
struct node_count : std::integral_constant<int, 1> {};
template <class R, class C, class F, class... A>
struct node_count<map_eval<R, C, F, A...>> : std::integral_constant<int, (1 + ... + node_count<A>::value)> {};

template <class E>
struct reads_memory : std::false_type {};
template <class T, std::size_t R>
struct reads_memory<load_eval<T, R>> : std::true_type {};
template <class T, std::size_t R, class I>
struct reads_memory<take_eval<T, R, I>> : std::true_type {};
template <class R, class C, class F, class... A>
struct reads_memory<map_eval<R, C, F, A...>> : std::bool_constant<(reads_memory<A>::value || ...)> {};

template <class A, class B>
using larger_t = std::conditional_t<std::is_void_v<A>, B,
                                    std::conditional_t<std::is_void_v<B> || node_count<A>::value >= node_count<B>::value, A, B>>;
template <class A, class... B>
struct largest {
  using type = A;
};
template <class A, class B, class... C>
struct largest<A, B, C...> : largest<larger_t<A, B>, C...> {};

// A leaf read alone is no candidate: a second load of the same element costs about nothing, and
// leaves of one type are common (layer_norm's x, gamma and beta; bias_gelu's x and bias), so every
// such kernel compiled its loop once more for a sharing that its values then refused.
template <class E>
struct worth_sharing : std::true_type {};
template <class T, std::size_t R>
struct worth_sharing<load_eval<T, R>> : std::false_type {};

// The largest subtree of E (through elementwise nodes) that occurs in Root at least twice, reads
// memory, is more than a leaf's load and is not shaped like one of Excl; void if there is none.
template <class Root, class E, class... Excl>
using shared_candidate_t = std::conditional_t<(occurrences<E, Root>::value >= 2 && reads_memory<E>::value && worth_sharing<E>::value &&
                                               !(same_shape<E, Excl>::value || ...)),
                                              E, void>;
template <class Root, class E, class... Excl>
struct repeat_in {
  using type = shared_candidate_t<Root, E, Excl...>;
};
template <class Root, class R, class C, class F, class... A, class... Excl>
struct repeat_in<Root, map_eval<R, C, F, A...>, Excl...>
    : largest<shared_candidate_t<Root, map_eval<R, C, F, A...>, Excl...>, typename repeat_in<Root, A, Excl...>::type...> {};

// Candidates for sharing in Ev, largest first: the one that fails its run-time check (0.5f * z and
// 0.044715f * z have one shape and two values) gives way to the next (z itself).
inline constexpr int shared_candidates = 2;
template <class Ev, int C>
struct candidate;
template <class Ev, class Before>
struct candidate_after;
template <class Ev, int... B>
struct candidate_after<Ev, std::integer_sequence<int, B...>> : repeat_in<Ev, Ev, typename candidate<Ev, B>::type...> {};
template <class Ev, int C>
struct candidate : candidate_after<Ev, std::make_integer_sequence<int, C>> {};
template <class Ev, int C>
using candidate_t = typename candidate<Ev, C>::type;

// Which candidate each level binds (-1: none), decided at run time once per kernel.
struct shared_plan {
  int pick[max_shared_subtrees] = {};
  shared_plan() {
    for (int& p : pick) p = -1;
  }
};

template <std::size_t Depth = 0, class Ev, class F>
decltype(auto) with_shared(const Ev& ev, const shared_plan& plan, F&& f);
template <std::size_t Depth, int C, class Ev, class F>
decltype(auto) with_candidate(const Ev& ev, const shared_plan& plan, F&& f);

// The body of ev with candidate C replaced by hole Depth; g(z, body).
template <std::size_t Depth, int C, class Ev, class G>
decltype(auto) split_candidate(const Ev& ev, G&& g) {
  using Z = candidate_t<Ev, C>;
  return g(first_occurrence<Z>(ev), substitute<Z>(ev, hole_eval<typename Z::value_type, Depth>{}));
}

template <std::size_t Depth = 0, class Ev>
void plan_shared(const Ev& ev, const int* alias, shared_plan& plan) {
  if constexpr (Depth < max_shared_subtrees) {
    auto try_candidate = [&]<int C>(std::integral_constant<int, C>) {
      if constexpr (!std::is_void_v<candidate_t<Ev, C>>) {
        if (plan.pick[Depth] >= 0 || !all_occurrences_equal(ev, first_occurrence<candidate_t<Ev, C>>(ev), alias)) return;
        plan.pick[Depth] = C;
        split_candidate<Depth, C>(ev, [&](const auto&, const auto& body) { plan_shared<Depth + 1>(body, alias, plan); });
      }
    };
    [&]<int... C>(std::integer_sequence<int, C...>) {
      (try_candidate(std::integral_constant<int, C>{}), ...);
    }(std::make_integer_sequence<int, shared_candidates>{});
  }
}

// The sharing plan for ev (alias: the row kernel's repeated phases, or nullptr).
template <class Ev>
shared_plan plan_shared(const Ev& ev, const int* alias) {
  shared_plan plan;
  if (FUSE_SHARE_SUBTREES) plan_shared<0>(ev, alias, plan);
  return plan;
}

// f(ev with the planned shared subtrees bound by let_eval).
template <std::size_t Depth, class Ev, class F>
decltype(auto) with_shared(const Ev& ev, const shared_plan& plan, F&& f) {
  return with_candidate<Depth, 0>(ev, plan, f);
}

// Binds candidate C of level Depth if the plan picks it, else tries candidate C + 1.
template <std::size_t Depth, int C, class Ev, class F>
decltype(auto) with_candidate(const Ev& ev, const shared_plan& plan, F&& f) {
  if constexpr (Depth < max_shared_subtrees && C < shared_candidates) {
    if constexpr (!std::is_void_v<candidate_t<Ev, C>>) {
      if (plan.pick[Depth] == C) {
        return split_candidate<Depth, C>(ev, [&](const auto& z, const auto& body) -> decltype(auto) {
          return with_shared<Depth + 1>(body, plan, [&](const auto& b) -> decltype(auto) {
            return f(let_eval<std::remove_cvref_t<decltype(z)>, std::remove_cvref_t<decltype(b)>>{z, b});
          });
        });
      }
    }
    return with_candidate<Depth, C + 1>(ev, plan, f);
  } else {
    return f(ev);
  }
}

}  // namespace fuse::detail
