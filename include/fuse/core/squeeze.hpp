// fuse/core/squeeze.hpp - squeeze<k> / unsqueeze<k> of any expression.
//
// An axis of extent 1 is inserted or removed by pushing the change down to the leaves: a node's
// operands are aligned on trailing axes, so axis k of the node is axis k - (rank - operand rank) of
// each operand (or none, when negative). The tree keeps its shape, so fusion is unaffected.
#pragma once

#include "fuse/core/generators.hpp"
#include "fuse/core/map_expr.hpp"
#include "fuse/core/tensor.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse {

namespace detail {

// Insert (Insert=true) or remove axis K of e, which has rank e.rank.
template <bool Insert, std::size_t K, class E>
auto reshape_axis(const E& e);

template <bool Insert, std::size_t K, std::size_t R>
void check_squeezable(const shape_t<R>& s) {
  if constexpr (!Insert)
    if (s[K] != 1)
      throw shape_error("fuse::squeeze: axis " + std::to_string(K) + " of " + format_shape(s) + " has extent " +
                        std::to_string(s[K]) + ", not 1");
}

template <bool Insert, std::size_t K, class T, class Ext, bool S, memory_space M>
auto reshape_axis_impl(const basic_view<T, Ext, S, M>& v) {
  constexpr std::size_t R = Ext::rank;
  check_squeezable<Insert, K>(v.shape());
  if constexpr (Insert)
    return strided_view<T, R + 1, M>(v.data(), extents_from_shape<R + 1, dextents<R + 1>>(insert_at(v.shape(), K, 1)),
                                     insert_at(v.strides(), K, 0));
  else
    return strided_view<T, R - 1, M>(v.data(), extents_from_shape<R - 1, dextents<R - 1>>(remove_at(v.shape(), K)),
                                     remove_at(v.strides(), K));
}
// Nodes recurse into their operands, which may be any of these.
template <bool Insert, std::size_t K, class F, class... A>
auto reshape_axis_impl(const map_expr<F, A...>& m);
template <bool Insert, std::size_t K, class Op, std::uint32_t M, class C>
auto reshape_axis_impl(const reduce_expr<Op, M, true, C>& r);
template <bool Insert, std::size_t K, std::size_t A, class I>
auto reshape_axis_impl(const squeezed_reduce<A, I>& s);

// A shared temporary tensor: its view changes, the ownership stays.
template <bool Insert, std::size_t K, class V>
auto reshape_axis_impl(const owned_view<V>& o) {
  auto v = reshape_axis_impl<Insert, K>(o.view());
  return owned_view<decltype(v)>(v, o.owner());
}
template <bool Insert, std::size_t K, class T>
auto reshape_axis_impl(const scalar_expr<T>& s) { return s; }
template <bool Insert, std::size_t K, class T, std::size_t R>
auto reshape_axis_impl(const full_expr<T, R>& f) {
  check_squeezable<Insert, K>(f.shape());
  if constexpr (Insert) return full_expr<T, R + 1>{{}, insert_at(f.shape(), K, 1), f.value};
  else return full_expr<T, R - 1>{{}, remove_at(f.shape(), K), f.value};
}
template <bool Insert, std::size_t K, std::size_t A, std::size_t R>
auto reshape_axis_impl(const iota_expr<A, R>& f) {
  check_squeezable<Insert, K>(f.shape());
  if constexpr (Insert) return iota_expr<(A >= K ? A + 1 : A), R + 1>{{}, insert_at(f.shape(), K, 1)};
  else if constexpr (A == K) return full_expr<index_t, R - 1>{{}, remove_at(f.shape(), K), 0};  // the index along an extent-1 axis is 0
  else return iota_expr<(A > K ? A - 1 : A), R - 1>{{}, remove_at(f.shape(), K)};
}
template <bool Insert, std::size_t K, class Table, class Indices>
auto reshape_axis_impl(const take_expr<Table, Indices>& t) {
  check_squeezable<Insert, K>(t.shape());
  constexpr std::size_t ri = Indices::rank;
  if constexpr (K < ri || (Insert && K == ri)) {
    auto idx = reshape_axis_impl<Insert, K>(t.indices);
    return take_expr<Table, decltype(idx)>(t.table, idx, t.table_owner, t.indices_owner);
  } else {
    auto tab = reshape_axis_impl<Insert, K - ri + 1>(t.table);
    return take_expr<decltype(tab), Indices>(tab, t.indices, t.table_owner, t.indices_owner);
  }
}
// Is axis K of e (extent 1) one that a reduction reduces, reached through elementwise nodes?
template <std::size_t K, class E>
constexpr bool drops_reduced_axis() {
  if constexpr (is_reduce_v<E>) {
    return E::keepdims && ((E::mask >> K) & 1u);
  } else if constexpr (E::kind == node_kind::elementwise) {
    return []<class... A>(const tuple<A...>*) {
      return (... || [] {
        if constexpr (K + A::rank >= E::rank) return drops_reduced_axis<K + A::rank - E::rank, A>();
        else return false;
      }());
    }(static_cast<const decltype(E::args)*>(nullptr));
  } else {
    return false;
  }
}

template <bool Insert, std::size_t K, class F, class... A>
auto reshape_axis_impl(const map_expr<F, A...>& m) {
  constexpr std::size_t R = map_expr<F, A...>::rank;
  check_squeezable<Insert, K>(m.shape());
  // Over reductions of that axis (squeeze<1>(logsumexp(x, axis<1>))): the node is computed with
  // the axis, as one kernel, and read without it.
  if constexpr (!Insert && drops_reduced_axis<K, map_expr<F, A...>>()) {
    return squeezed_reduce<K, map_expr<F, A...>>(m);
  } else if constexpr (Insert && R == 0 && reduction_count_v<map_expr<F, A...>> > 0) {
    // A rank-0 node over full reductions (logsumexp(x)) is lifted whole, so that it stays one row
    // kernel (group_of in plan/fusion.hpp); pushed down, each reduction was lifted on its own.
    return make_map(fn::first_of{}, m, full_expr<bool, 1>{{}, shape_t<1>{1}, false});
  } else return detail::apply(
      [&](const auto&... a) {
        auto child = [&]<class C>(const C& c) {
          if constexpr (K + C::rank < R) return c;  // the operand does not have this axis
          else return reshape_axis_impl<Insert, K + C::rank - R>(c);
        };
        return map_expr<F, decltype(child(a))...>(m.f, child(a)...);
      },
      m.args);
}

// A reduction that keeps its axes: the change goes to its operand, the reduced axes renumbered.
// Dropping an axis that the reduction reduces changes the rank of the result alone: a
// squeezed_reduce (ops/reduce.hpp), computed as a kernel of its own.
template <bool Insert, std::size_t K, class Op, std::uint32_t M, class C>
auto reshape_axis_impl(const reduce_expr<Op, M, true, C>& r) {
  if constexpr (!Insert && ((M >> K) & 1u)) {
    return squeezed_reduce<K, reduce_expr<Op, M, true, C>>(r);
  } else {
    check_squeezable<Insert, K>(r.shape());
    constexpr std::uint32_t low = M & ((1u << K) - 1u);
    constexpr std::uint32_t mask = Insert ? (low | ((M >> K) << (K + 1))) : (low | ((M >> (K + 1)) << K));
    auto child = reshape_axis_impl<Insert, K>(r.child);
    return reduce_expr<Op, mask, true, decltype(child)>(child);
  }
}
// Of a squeezed reduction: putting its axis back gives the reduction again (which may then join a
// row kernel); any other axis K goes to the reduction, at its position there.
template <bool Insert, std::size_t K, std::size_t A, class I>
auto reshape_axis_impl(const squeezed_reduce<A, I>& s) {
  if constexpr (Insert && K == A) {
    return s.inner;
  } else {
    constexpr std::size_t at = Insert ? (K <= A ? K : K + 1) : (K < A ? K : K + 1);  // K in the reduction's axes
    constexpr std::size_t axis = Insert ? (K <= A ? A + 1 : A) : (K < A ? A - 1 : A);
    auto inner = reshape_axis_impl<Insert, at>(s.inner);
    return squeezed_reduce<axis, decltype(inner)>(inner);
  }
}
// A reduction over every axis (rank 0) gains its axis by broadcasting against a one-element full.
template <bool Insert, std::size_t K, class Op, std::uint32_t M, class C>
auto reshape_axis_impl(const reduce_expr<Op, M, false, C>& r) {
  static_assert(Insert && K == 0);  // squeeze and unsqueeze check the axis against rank 0
  return make_map(fn::first_of{}, r, full_expr<bool, 1>{{}, shape_t<1>{1}, false});
}

template <bool Insert, std::size_t K, class E>
auto reshape_axis(const E& e) {
  if constexpr (requires { reshape_axis_impl<Insert, K>(e); }) {
    return reshape_axis_impl<Insert, K>(e);
  } else {
    static_assert(sizeof(E) == 0, "fuse::squeeze: this kind of expression cannot change its rank");
  }
}

}  // namespace detail

// Removes axis K, which must have extent 1 (else fuse::shape_error).
template <int K, class E>
  requires expression<E>
auto squeeze(E&& e) {
  constexpr std::size_t R = std::remove_cvref_t<E>::rank;
  static_assert(R > 0, "fuse::squeeze: a rank-0 expression has no axis to remove");
  if constexpr (R > 0) {  // else nothing more: R - 1 would wrap (clang then ran out of memory)
    constexpr std::size_t k = detail::normalize_axis<K, R>();
    return detail::reshape_axis<false, k>(detail::hold_operand(std::forward<E>(e)));
  }
}

// Inserts an axis of extent 1 before axis K (K may equal the rank: a new last axis).
template <int K, class E>
  requires expression<E>
auto unsqueeze(E&& e) {
  constexpr std::size_t R = std::remove_cvref_t<E>::rank;
  constexpr std::size_t k = detail::normalize_axis<K, R + 1>();
  return detail::reshape_axis<true, k>(detail::hold_operand(std::forward<E>(e)));
}

}  // namespace fuse
