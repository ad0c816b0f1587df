// fuse/backend/eager.hpp - fuse::eager(exec): the unfused baseline. Every interior node is
// materialised into its own temporary by its own pass, children first, as an unfused framework
// runs; temporaries come from a caching pool so that the comparison measures memory traffic.
#pragma once

#include "fuse/core/map_expr.hpp"
#include "fuse/core/pool.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse {

template <class Exec>
struct eager {
  Exec exec;
  static constexpr memory_space space = Exec::space;
  explicit eager(Exec e = Exec{}) : exec(e) {}
};

namespace detail {

template <class E>
inline constexpr bool is_eager_v = false;
template <class X>
inline constexpr bool is_eager_v<eager<X>> = true;

template <class Exec, class D, class E>
void assign_fused(const Exec& exec, D&& d, const E& e);

// A node with every interior child replaced by a view of its materialised temporary.
template <class Exec, class Arena, class E>
auto with_materialised_children(const Exec& exec, Arena& arena, const E& e);

// The node itself materialised (interior nodes) or kept as it is (leaves, generators, views).
template <class Exec, class Arena, class E>
auto materialise(const Exec& exec, Arena& arena, const E& e) {
  if constexpr (is_rank_lift_v<E>) {
    return relift(e, materialise(exec, arena, get<0>(e.args)));  // index arithmetic, no pass
  } else if constexpr (E::kind == node_kind::elementwise || E::kind == node_kind::reduction) {
    auto node = with_materialised_children(exec, arena, e);
    auto tmp = arena.template make<typename E::value_type>(e.shape());
    assign_fused(exec, tmp, node);
    return tmp;
  } else {
    return e;
  }
}

// The expression e with every subtree of type X replaced by r (as substitute does for evaluators).
template <class X, class R, class E>
auto replace_operand(const E& e, const R& r) {
  if constexpr (std::is_same_v<E, X>) {
    return r;
  } else if constexpr (is_reduce_v<E> || requires { e.args; }) {
    return rebuild_over(e, [&](const auto& a) { return replace_operand<X>(a, r); });
  } else {
    return e;
  }
}

template <class Exec, class Arena, class E>
auto with_materialised_children(const Exec& exec, Arena& arena, const E& e) {
  if constexpr (is_eager_unit_v<E>) {
    // var(x), logsumexp(x): one node (spec section 5). x is materialised, the rest is one kernel
    // (over leading axes alone, its fused plan's: on the CPU var(x, axis<0>) is one column pair,
    // core/column_pair.hpp; logsumexp(x, axis<0>) its max and sum one column pair, then the rest).
    return replace_operand<unit_operand_t<E>>(e, materialise(exec, arena, unit_operand(e)));
  } else if constexpr (is_rank_lift_v<E>) {
    return relift(e, with_materialised_children(exec, arena, get<0>(e.args)));
  } else if constexpr (is_squeezed_v<E>) {
    auto inner = with_materialised_children(exec, arena, e.inner);
    return squeezed_reduce<E::axis, decltype(inner)>(inner);
  } else if constexpr (is_reduce_v<E> || requires { e.args; }) {
    return rebuild_over(e, [&](const auto& a) { return materialise(exec, arena, a); });
  } else {
    return e;
  }
}

}  // namespace detail
}  // namespace fuse
