// fuse/core/extents.hpp - extents with static and dynamic dimensions; only the dynamic ones are stored.
#pragma once

#include <array>
#include <concepts>

#include "fuse/config.hpp"

namespace fuse {

template <std::size_t R>
using shape_t = std::array<index_t, R>;

namespace detail {
// s with v inserted at axis k / without axis k (squeeze, unsqueeze).
template <std::size_t R>
constexpr shape_t<R + 1> insert_at(const shape_t<R>& s, std::size_t k, index_t v) {
  shape_t<R + 1> o{};
  for (std::size_t i = 0, j = 0; i <= R; ++i) o[i] = i == k ? v : s[j++];
  return o;
}
template <std::size_t R>
constexpr shape_t<R - 1> remove_at(const shape_t<R>& s, std::size_t k) {
  shape_t<R - 1> o{};
  for (std::size_t i = 0, j = 0; i < R; ++i)
    if (i != k) o[j++] = s[i];
  return o;
}
}  // namespace detail

template <index_t... E>
struct extents {
  static constexpr std::size_t rank = sizeof...(E);
  static constexpr std::size_t rank_dynamic = ((E == dyn ? 1u : 0u) + ... + 0u);
  static constexpr shape_t<rank> static_shape{E...};

  static_assert(((E == dyn || E >= 0) && ...), "fuse::extents: a static extent must be >= 0 or fuse::dyn");

  std::array<index_t, rank_dynamic> dynamic{};

  constexpr extents() = default;

  // One value per dynamic extent, in order: extents<dyn, 1024, dyn>{m, k}.
  template <std::integral... I>
    requires(sizeof...(I) == rank_dynamic && rank_dynamic > 0)
  constexpr extents(I... d) : dynamic{static_cast<index_t>(d)...} {}

  static constexpr index_t static_extent(std::size_t i) { return static_shape[i]; }

  constexpr index_t extent(std::size_t i) const {
    if (static_shape[i] != dyn) return static_shape[i];
    std::size_t k = 0;
    for (std::size_t j = 0; j < i; ++j) k += static_shape[j] == dyn;
    return dynamic[k];
  }

  constexpr shape_t<rank> shape() const {
    shape_t<rank> s{};
    for (std::size_t i = 0; i < rank; ++i) s[i] = extent(i);
    return s;
  }
};

// All-dynamic extents of rank R.
namespace detail {
template <std::size_t R, class = std::make_index_sequence<R>>
struct dextents_impl;
template <std::size_t R, std::size_t... I>
struct dextents_impl<R, std::index_sequence<I...>> {
  using type = extents<((void)I, dyn)...>;
};

template <std::size_t R, class Ext>
constexpr Ext extents_from_shape(const shape_t<R>& s) {
  Ext e{};
  std::size_t k = 0;
  for (std::size_t i = 0; i < R; ++i)
    if (Ext::static_shape[i] == dyn) e.dynamic[k++] = s[i];
  return e;
}
}  // namespace detail

template <std::size_t R>
using dextents = typename detail::dextents_impl<R>::type;

template <std::size_t R>
constexpr index_t shape_size(const shape_t<R>& s) {
  index_t n = 1;
  for (auto e : s) n *= e;
  return n;
}

}  // namespace fuse
