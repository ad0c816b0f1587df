// fuse/core/node_identity.hpp - is one expression node the same computation over the same data as
// another of its type? Used to compute a reduction once where an expression holds it twice
// (core/computed_reductions.hpp) and to list it once in a plan (plan/report.hpp). A false "no"
// costs a recomputation, a false "yes" a wrong result, so what cannot be compared is "no".
#pragma once

#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "fuse/core/leaf.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse::detail {

template <class E>
inline constexpr char type_key = 0;  // its address names the type E (no RTTI needed)

inline bool same_leaf(const leaf_info& a, const leaf_info& b) {
  return a.data == b.data && a.bytes == b.bytes && a.space == b.space && a.lo == b.lo && a.hi == b.hi &&
         a.element_bytes == b.element_bytes && a.axes == b.axes && a.picked_by == b.picked_by;
}

// Same type, same shape at every node, the same bytes in every callable and constant, the same
// memory and layout in every leaf.
template <class E>
bool same_node(const E& a, const E& b) {
  if (a.shape() != b.shape()) return false;
  if constexpr (is_reduce_v<E>) {
    return same_node(a.child, b.child);
  } else if constexpr (is_squeezed_v<E>) {
    return same_node(a.inner, b.inner);
  } else if constexpr (requires { a.args; }) {
    using F = std::remove_cvref_t<decltype(a.f)>;
    bool same = true;
    if constexpr (!std::is_empty_v<F>) {  // (an empty callable's byte is indeterminate)
      if constexpr (!std::is_trivially_copyable_v<F>) return false;
      else same = std::memcmp(static_cast<const void*>(&a.f), static_cast<const void*>(&b.f), sizeof(F)) == 0;
    }
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((same = same && same_node(get<I>(a.args), get<I>(b.args))), ...);
    }(std::make_index_sequence<decltype(a.args)::size>{});
    return same;
  } else {
    // A leaf or a generator: its constant (a scalar, full), then its memory (a view, take's table
    // and indices).
    if constexpr (requires { a.value; }) {
      using V = std::remove_cvref_t<decltype(a.value)>;
      if constexpr (!std::is_trivially_copyable_v<V>) return false;
      else if (std::memcmp(static_cast<const void*>(&a.value), static_cast<const void*>(&b.value), sizeof(V)) != 0) return false;
    }
    std::vector<leaf_info> la, lb;
    a.visit_leaves([&](const leaf_info& l) { la.push_back(l); });
    b.visit_leaves([&](const leaf_info& l) { lb.push_back(l); });
    if (la.size() != lb.size()) return false;
    for (std::size_t i = 0; i < la.size(); ++i)
      if (!same_leaf(la[i], lb[i])) return false;
    return true;
  }
}

// A node of an expression that outlives the list holding it, by type and address: lists of nodes
// seen (computed reductions, a plan's phases) look a node up with same_as.
struct node_ref {
  const void* type;
  const void* node;
};
template <class E>
node_ref ref_of(const E& e) {
  return {&type_key<E>, &e};
}
template <class E>
bool same_as(const node_ref& r, const E& e) {
  return r.type == &type_key<E> && same_node(*static_cast<const E*>(r.node), e);
}

}  // namespace fuse::detail
