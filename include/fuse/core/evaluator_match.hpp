// fuse/core/evaluator_match.hpp - are two evaluators the same computation? Used to compute a
// repeated reduction once (softmax writes max(x) twice) and to reuse a phase's operand in the
// epilogue. Two tests: at compile time the types must match up to slot numbers (each reduction
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
    auto resolve = [&](std::size_t k) { return alias[k] >= 0 ? std::size_t(alias[k]) : k; };
    return resolve(A::index) == resolve(B::index);
  } else if constexpr (requires { a.args; }) {  // map_eval
    using F = std::remove_cvref_t<decltype(a.f)>;  // an empty functor's byte is indeterminate
    bool same = std::is_empty_v<F> || std::memcmp(static_cast<const void*>(&a.f), static_cast<const void*>(&b.f), sizeof(F)) == 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((same = same && same_value(get<I>(a.args), get<I>(b.args), alias)), ...);
    }(std::make_index_sequence<decltype(a.args)::size>{});
    return same;
  } else if constexpr (requires { a.inner; }) {  // invariant_eval
    return same_value(a.inner, b.inner, alias);
  } else {
    static_assert(std::is_same_v<A, B>);
    return std::memcmp(static_cast<const void*>(&a), static_cast<const void*>(&b), sizeof(A)) == 0;
  }
}

}  // namespace fuse::detail
