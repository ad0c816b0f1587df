// fuse/detail/tuple.hpp - a minimal tuple usable in device code (std::tuple is host-only under nvcc).
#pragma once

#include <type_traits>
#include <utility>

#include "fuse/config.hpp"

namespace fuse::detail {

template <std::size_t I, class T>
struct tuple_leaf {
  T value;
};

template <class Seq, class... T>
struct tuple_impl;

template <std::size_t... I, class... T>
struct tuple_impl<std::index_sequence<I...>, T...> : tuple_leaf<I, T>... {
  constexpr tuple_impl() = default;
  template <class... U>
  FUSE_HOST_DEVICE constexpr explicit tuple_impl(U&&... u) : tuple_leaf<I, T>{std::forward<U>(u)}... {}
};

template <class... T>
struct tuple : tuple_impl<std::index_sequence_for<T...>, T...> {
  using tuple_impl<std::index_sequence_for<T...>, T...>::tuple_impl;
  static constexpr std::size_t size = sizeof...(T);
};

template <std::size_t I, class T>
FUSE_HOST_DEVICE constexpr T& get(tuple_leaf<I, T>& t) { return t.value; }
template <std::size_t I, class T>
FUSE_HOST_DEVICE constexpr const T& get(const tuple_leaf<I, T>& t) { return t.value; }

template <class... T>
FUSE_HOST_DEVICE constexpr tuple<T...> make_tuple_of(T... t) {
  return tuple<T...>(t...);
}

FUSE_EXEC_CHECK_DISABLE
template <class F, class Tup, std::size_t... I>
FUSE_HOST_DEVICE constexpr decltype(auto) apply_impl(F&& f, Tup&& t, std::index_sequence<I...>) {
  return std::forward<F>(f)(get<I>(t)...);
}

template <class... A, class... B, std::size_t... I, std::size_t... J>
constexpr tuple<A..., B...> tuple_cat_impl(const tuple<A...>& a, const tuple<B...>& b, std::index_sequence<I...>,
                                           std::index_sequence<J...>) {
  return tuple<A..., B...>(get<I>(a)..., get<J>(b)...);
}
// The elements of a, then those of b.
template <class... A, class... B>
constexpr tuple<A..., B...> tuple_cat(const tuple<A...>& a, const tuple<B...>& b) {
  return tuple_cat_impl(a, b, std::index_sequence_for<A...>{}, std::index_sequence_for<B...>{});
}

// Calls f(get<0>(t), get<1>(t), ...).
FUSE_EXEC_CHECK_DISABLE
template <class F, class Tup>
FUSE_HOST_DEVICE constexpr decltype(auto) apply(F&& f, Tup&& t) {
  return apply_impl(std::forward<F>(f), std::forward<Tup>(t), std::make_index_sequence<std::remove_cvref_t<Tup>::size>{});
}

// Calls f(element) for every element.
FUSE_EXEC_CHECK_DISABLE
FUSE_EXEC_CHECK_DISABLE
template <class F, class Tup, std::size_t... I>
FUSE_HOST_DEVICE constexpr void for_each_impl(Tup&& t, F&& f, std::index_sequence<I...>) {
  (f(get<I>(t)), ...);
}
FUSE_EXEC_CHECK_DISABLE
template <class F, class Tup>
FUSE_HOST_DEVICE constexpr void for_each(Tup&& t, F&& f) {
  for_each_impl(t, f, std::make_index_sequence<std::remove_cvref_t<Tup>::size>{});
}

}  // namespace fuse::detail
