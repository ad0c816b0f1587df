// fuse/core/evaluator_match.hpp - are two evaluators the same computation? Used to compute a
// repeated reduction once (softmax writes max(x) twice), to reuse a phase's operand in the
// epilogue, and to evaluate a repeated subexpression once per element (shared_subtree.hpp). Two tests: at compile time the types must match up to slot numbers (each reduction
// node has its own slot, so two copies of max(x) are slot 0 and slot 1); at run time the bytes
// must match (pointers, strides, constants) and the slots must be equal after aliasing.
#pragma once

#include <cstring>
#include <type_traits>
#include <utility>

#include "fuse/core/evaluator.hpp"

namespace fuse::detail {

template <class A, class B>
struct same_shape : std::is_same<A, B> {};
template <class T, std::size_t K1, std::size_t K2>
struct same_shape<slot_eval<T, K1>, slot_eval<T, K2>> : std::true_type {};
template <class T, std::size_t K1, std::size_t K2>
struct same_shape<spread_eval<T, K1>, spread_eval<T, K2>> : std::true_type {};
template <class T, class I1, class I2>
struct same_shape<invariant_eval<T, I1>, invariant_eval<T, I2>> : same_shape<I1, I2> {};
template <class R, class C, class F, class... A, class... B>
  requires(sizeof...(A) == sizeof...(B))
struct same_shape<map_eval<R, C, F, A...>, map_eval<R, C, F, B...>>
    : std::bool_constant<(same_shape<A, B>::value && ...)> {};

// alias[k] >= 0: slot k holds the same value as slot alias[k].
template <class A, class B>
bool same_value(const A& a, const B& b, const int* alias) {
  if constexpr (requires { a.slots; }) {  // slot_eval
    auto resolve = [&](std::size_t k) { return alias && alias[k] >= 0 ? std::size_t(alias[k]) : k; };
    return resolve(A::index) == resolve(B::index);
  } else if constexpr (requires { a.args; }) {  // map_eval
    using F = std::remove_cvref_t<decltype(a.f)>;  // an empty functor's byte is indeterminate
    bool same = std::is_empty_v<F> || std::memcmp(static_cast<const void*>(&a.f), static_cast<const void*>(&b.f), sizeof(F)) == 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((same = same && same_value(get<I>(a.args), get<I>(b.args), alias)), ...);
    }(std::make_index_sequence<decltype(a.args)::size>{});
    return same;
  } else if constexpr (is_spread_eval_v<A>) {  // a repeated phase's slot reads the same buffer
    return a.values == b.values;
  } else if constexpr (requires { a.load; a.in_register; }) {  // CUDA's register_or_load: members, not padding
    return a.in_register == b.in_register && same_value(a.load, b.load, alias);
  } else if constexpr (requires { a.inner; }) {  // invariant_eval
    return same_value(a.inner, b.inner, alias);
  } else if constexpr (std::is_empty_v<A>) {  // a hole (shared_subtree.hpp): no bytes to compare
    return std::is_same_v<A, B>;
  } else {
    static_assert(std::is_same_v<A, B>);
    return std::memcmp(static_cast<const void*>(&a), static_cast<const void*>(&b), sizeof(A)) == 0;
  }
}

// Occurrences in E of a subtree shaped like C, looking through elementwise nodes only (a row
// constant, invariant_eval, is computed once per row already).
template <class C, class E>
struct occurrences : std::integral_constant<int, same_shape<E, C>::value ? 1 : 0> {};
template <class C, class R, class Cv, class F, class... A>
struct occurrences<C, map_eval<R, Cv, F, A...>>
    : std::integral_constant<int, same_shape<map_eval<R, Cv, F, A...>, C>::value ? 1 : (0 + ... + occurrences<C, A>::value)> {};
template <class C, class T, class I>
struct occurrences<C, invariant_eval<T, I>> : std::integral_constant<int, 0> {};

// Does every subtree of e shaped like c hold the same value?
template <class C, class E>
bool all_occurrences_equal(const E& e, const C& c, const int* alias) {
  if constexpr (same_shape<E, C>::value) {
    return same_value(e, c, alias);
  } else if constexpr (requires { e.args; }) {
    bool ok = true;
    for_each(e.args, [&](const auto& a) { ok = ok && all_occurrences_equal(a, c, alias); });
    return ok;
  } else {
    return true;
  }
}

// Index of the first of the arguments Args (a tuple) that contains a subtree shaped like C.
template <class C, class Args>
struct first_containing;
template <class C, class... A>
struct first_containing<C, tuple<A...>> {
  static constexpr std::size_t value = [] {
    constexpr bool has[] = {(occurrences<C, A>::value > 0)...};
    for (std::size_t i = 0; i < sizeof...(A); ++i)
      if (has[i]) return i;
    return sizeof...(A);
  }();
};

// The first subtree of e (pre-order) shaped like C; e must contain one.
template <class C, class E>
const auto& first_occurrence(const E& e) {
  if constexpr (same_shape<E, C>::value) return e;
  else return first_occurrence<C>(get<first_containing<C, decltype(e.args)>::value>(e.args));
}

// e with every subtree shaped like C replaced by the evaluator `with`.
template <class C, class W, class E>
auto substitute(const E& e, const W& with) {
  if constexpr (same_shape<E, C>::value) {
    return with;
  } else if constexpr (requires { e.args; } && occurrences<C, E>::value > 0) {
    return detail::apply(
        [&](const auto&... a) {
          using M = map_eval<typename E::value_type, typename E::convert, std::remove_cvref_t<decltype(e.f)>,
                             decltype(substitute<C>(a, with))...>;
          return M{e.f, make_tuple_of(substitute<C>(a, with)...)};
        },
        e.args);
  } else {
    return e;
  }
}

}  // namespace fuse::detail
