// fuse/plan/fusion.hpp - the compile-time planner: which nodes share a kernel.
//
// Read top to bottom:
//  1. every node states its kind (node_kind, TVM's op-pattern lattice);
//  2. a kernel starts at the root and grows downwards through every child that may join it;
//  3. a child that may not join (a reduction whose result is not broadcast back along the
//     group's rows, an anchor, an opaque node) starts kernels of its own, and its result is read
//     by the consumer as a leaf;
//  4. kernels_v is the number of groups. The eager plan instead counts every interior node.
#pragma once

#include <cstddef>

#include "fuse/core/map_expr.hpp"

namespace fuse {

namespace detail {

// Visit the operand types of a node (none for leaves and generators).
template <class E>
struct operands {
  template <template <class...> class F>
  using apply = F<>;
};
template <class F, class... A>
struct operands<map_expr<F, A...>> {
  template <template <class...> class G>
  using apply = G<A...>;
};

// Does child C execute inside the kernel of its consumer P?
template <class P, class C>
inline constexpr bool joins_consumer = C::kind == node_kind::leaf || C::kind == node_kind::elementwise ||
                                       C::kind == node_kind::view || C::kind == node_kind::generator;

template <class E>
struct fusion;

// Kernels that the operands of E need beyond E's own kernel.
template <class P>
struct split_kernels {
  template <class... C>
  struct of {
    static constexpr std::size_t value = (std::size_t{0} + ... + (joins_consumer<P, C> ? fusion<C>::below : fusion<C>::kernels));
  };
};

template <class E>
struct fusion {
  static constexpr std::size_t below = operands<E>::template apply<split_kernels<E>::template of>::value;
  static constexpr std::size_t kernels = 1 + below;
};

// Interior nodes: those an unfused framework runs as a kernel each.
template <class E>
struct eager_count {
  template <class... C>
  struct of {
    static constexpr std::size_t value = (std::size_t{0} + ... + eager_count<C>::value);
  };
  static constexpr bool interior = E::kind == node_kind::elementwise || E::kind == node_kind::reduction ||
                                   E::kind == node_kind::anchor;
  static constexpr std::size_t value = (interior ? 1 : 0) + operands<E>::template apply<of>::value;
};

}  // namespace detail

// Fused kernels in the plan of E (a lone leaf is one copy kernel).
template <class E>
inline constexpr std::size_t kernels_v = detail::fusion<std::remove_cvref_t<E>>::kernels;

// Kernels in the eager plan of E: one per interior node (at least one: a copy).
template <class E>
inline constexpr std::size_t eager_kernels_v =
    detail::eager_count<std::remove_cvref_t<E>>::value ? detail::eager_count<std::remove_cvref_t<E>>::value : 1;

}  // namespace fuse
