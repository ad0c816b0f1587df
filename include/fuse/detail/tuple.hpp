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

// Calls f(get<0>(t), get<1>(t), ...).
template <class F, class Tup>
FUSE_HOST_DEVICE constexpr decltype(auto) apply(F&& f, Tup&& t) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    return std::forward<F>(f)(get<I>(t)...);
  }(std::make_index_sequence<std::remove_cvref_t<Tup>::size>{});
}

// Calls f(element) for every element.
template <class F, class Tup>
FUSE_HOST_DEVICE constexpr void for_each(Tup&& t, F&& f) {
  apply([&](auto&... e) { (f(e), ...); }, t);
}

}  // namespace fuse::detail
