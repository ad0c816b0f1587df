// fuse/core/column_pair.hpp - two reductions over leading axes, the second reading the first,
// found as one pair: a variance and its mean, or a sum of exponentials and its max.
//
// var(x, axis<0>) is mean(square(x - mean(x, axis<0>)), axis<0>). Over leading axes neither
// reduction joins a row kernel (plan/fusion.hpp), so each was a kernel of its own and x was read
// twice; a batch norm over N, H, W of NHWC, or a column standardisation (x - mean) / sqrt(var),
// read x three times. A column kernel can compute both in one pass instead: each block of 16
// rows gives its columns' sums and squared deviations from the block's mean, and the blocks
// combine by Chan, Golub and LeVeque's update (backend/cpu/column_moments.hpp). The mean it
// computes is the inner one, so that a mean(x) elsewhere in the expression reads it too.
//
// softmax(x, axis<0>) and logsumexp(x, axis<0>) hold sum(exp(x - max(x, axis<0>)), axis<0>) (the
// max maybe through logsumexp's finite_or_zero): the same pass keeps each column's running max
// and rescales its running sum of exponentials when the max rises (online softmax, by columns:
// backend/cpu/column_softmax.hpp), and the max goes into the same table.
//
// The pair is found in the expression's type (var, softmax, logsumexp, or the same written by
// hand), as the row kernel's online pairs are (core/online_pair.hpp), and checked at run time:
// the two operands must be the same data, read along the last axis in memory order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "fuse/core/evaluator.hpp"
#include "fuse/core/iteration.hpp"
#include "fuse/core/map_expr.hpp"
#include "fuse/core/node_identity.hpp"
#include "fuse/ops/math.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse::detail {

// A last axis shorter than this runs as the row kernel's strided rows (column_reduce.hpp).
inline constexpr index_t column_min_extent = 16;

enum class column_pair_kind { moments, softmax };

template <class E>
struct column_pair {
  static constexpr bool value = false;
};
// Op(square(a - mean(a, M)), M), Op a mean (var's or a user's), M without the last axis, a free
// of reductions, floating accumulators.
template <class Op, std::uint32_t M, class A>
struct column_pair<reduce_expr<Op, M, true, map_expr<fn::square, map_expr<fn::sub, A, reduce_expr<mean_op, M, true, A>>>>> {
  static constexpr column_pair_kind kind = column_pair_kind::moments;
  static constexpr bool finite_shift = false;  // (see the softmax kind's)
  using inner_type = reduce_expr<mean_op, M, true, A>;
  using self = reduce_expr<Op, M, true, map_expr<fn::square, map_expr<fn::sub, A, inner_type>>>;
  static constexpr bool value = std::is_base_of_v<mean_op, Op> && A::rank >= 2 && !((M >> (A::rank - 1)) & 1u) &&
                                reduction_count_v<A> == 0 && std::is_floating_point_v<typename self::acc_type> &&
                                std::is_floating_point_v<typename inner_type::acc_type>;
  static const A& operand(const self& e) { return get<0>(get<0>(e.child.args).args); }
  static const inner_type& inner(const self& e) { return get<1>(get<0>(e.child.args).args); }
};

// The shift of a sum of exponentials: max(a, M) itself (softmax), or logsumexp's
// finite_or_zero(max(a, M)) (0 where the max is infinite).
template <class S, class A, std::uint32_t M>
struct max_shift {
  static constexpr bool value = false;
  using inner_type = S;  // (unused: only where value holds)
  static const S& inner(const S& s) { return s; }
};
template <class Op, std::uint32_t M, class A>
struct max_shift<reduce_expr<Op, M, true, A>, A, M> {
  static constexpr bool value = std::is_base_of_v<max_op, Op>;
  using inner_type = reduce_expr<Op, M, true, A>;
  static const inner_type& inner(const inner_type& s) { return s; }
  template <class T>
  static T shift(T m) { return m; }
};
template <class Op, std::uint32_t M, class A>
struct max_shift<map_expr<fn::finite_or_zero, reduce_expr<Op, M, true, A>>, A, M> : max_shift<reduce_expr<Op, M, true, A>, A, M> {
  using inner_type = reduce_expr<Op, M, true, A>;
  static const inner_type& inner(const map_expr<fn::finite_or_zero, inner_type>& s) { return get<0>(s.args); }
  template <class T>
  static T shift(T m) { return fn::finite_or_zero{}(m); }
};

// sum(F(a - S), M), F exp (either form), S a max_shift of a over M; the rest as above.
template <std::uint32_t M, class F, class A, class S>
  requires(std::is_same_v<F, fn::exp> || std::is_same_v<F, fn::exp_nonpositive>)
struct column_pair<reduce_expr<sum_op, M, true, map_expr<F, map_expr<fn::sub, A, S>>>> {
  static constexpr column_pair_kind kind = column_pair_kind::softmax;
  using shift = max_shift<S, A, M>;
  using exp_fn = F;
  using self = reduce_expr<sum_op, M, true, map_expr<F, map_expr<fn::sub, A, S>>>;
  static constexpr bool value = [] {
    if constexpr (!shift::value) {
      return false;
    } else {
      using inner = typename shift::inner_type;
      return A::rank >= 2 && !((M >> (A::rank - 1)) & 1u) && reduction_count_v<A> == 0 &&
             std::is_floating_point_v<typename self::acc_type> && std::is_same_v<typename inner::acc_type, typename self::acc_type>;
    }
  }();
  using inner_type = typename shift::inner_type;
  // Is the shift logsumexp's finite_or_zero(max) rather than the max itself? (The plan's text.)
  static constexpr bool finite_shift = !std::is_same_v<S, inner_type>;
  static const A& operand(const self& e) { return get<0>(get<0>(e.child.args).args); }
  static const inner_type& inner(const self& e) { return shift::inner(get<1>(get<0>(e.child.args).args)); }
};
template <class E>
inline constexpr bool column_pair_v = column_pair<E>::value;

// Does E hold a column pair (through any nodes)? (A pair holds two reductions: most expressions
// stop at the first test.)
template <class E>
constexpr bool has_column_pair_f() {
  if constexpr (reduction_count_v<E> < 2) return false;
  else if constexpr (column_pair_v<E>) return true;
  else if constexpr (is_reduce_v<E>) return has_column_pair_f<typename E::child_type>();
  else if constexpr (is_squeezed_v<E>) return has_column_pair_f<typename E::inner_type>();
  else return []<class... A>(const tuple<A...>*) { return (has_column_pair_f<A>() || ...); }(static_cast<const decltype(E::args)*>(nullptr));
}
template <class E>
inline constexpr bool has_column_pair_v = has_column_pair_f<E>();

// Can the column kernel run pair e over these run-time shapes and layouts? The two operands are
// the same data, the last axis is long enough to fill vectors and short enough for a row of
// copies, and every leaf is read along it in memory order (contiguous, or of stride 0 through a
// row of copies). (The kernel checks overlap with its destination as well.)
template <class E>
bool column_pair_same_data(const E& e) {
  return same_node(column_pair<E>::operand(e), column_pair<E>::inner(e).child);
}
template <class E>
bool column_pair_shape_fits(const E& e) {
  const index_t n = column_pair<E>::operand(e).shape()[E::child_rank - 1];
  return column_pair_same_data(e) && n >= column_min_extent && n <= splat_max_row;
}
template <class E>
bool column_pair_fits(const E& e) {
  constexpr std::size_t R = E::child_rank;
  if (!column_pair_shape_fits(e)) return false;
  const auto& a = column_pair<E>::operand(e);
  const shape_t<R> shape = a.shape();
  auto ev = a.template evaluator<R, 0>(shape);
  bool in_order = true;
  ev.for_each_tracker([&](const tracker& t) { in_order = in_order && reading_along_row<R>(t) != along_row::strided; });
  return in_order;
}

}  // namespace fuse::detail
