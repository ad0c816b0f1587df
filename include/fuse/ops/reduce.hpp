// fuse/ops/reduce.hpp - reductions: sum max min prod mean (monoids) over axis<k>, axes<...> or all
// axes, plus var and logsumexp written with the same nodes. A reduction is a node the planner
// sees: when its result is broadcast back over the rows it reduced, it runs as a phase of the
// consumer's kernel (see plan/fusion.hpp, backend/cpu/row_kernel.hpp).
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

#include "fuse/core/generators.hpp"
#include "fuse/core/map_expr.hpp"
#include "fuse/ops/activation.hpp"
#include "fuse/ops/select.hpp"

namespace fuse {

// axis<k> and axes<k...> name reduced axes (negative counts from the end). They do not convert to
// numbers, so max(x, axis<1>) never meets elementwise max(a, b).
template <int K>
struct axis_t {};
template <int... K>
struct axes_t {};
template <int K>
inline constexpr axis_t<K> axis{};
template <int... K>
inline constexpr axes_t<K...> axes{};

namespace detail {
// axis_t<k> or axes_t<k...>: var(x, 1) and logsumexp(x, 1) are "no matching function", as sum(x, 1)
// is, not an error deep inside the reduction.
template <class A>
inline constexpr bool is_axes_v = false;
template <int K>
inline constexpr bool is_axes_v<axis_t<K>> = true;
template <int... K>
inline constexpr bool is_axes_v<axes_t<K...>> = true;
}  // namespace detail

namespace fn {
// Its first operand; the second, a one-element full, only gives the node rank 1 (broadcasting).
struct first_of {
  static constexpr const char* name = "as_rank1";
  static constexpr int flops = 0;
  using promotion = fuse::promotion::none;
  template <class A, class B>
  FUSE_HOST_DEVICE FUSE_INLINE A operator()(A a, B) const { return a; }
};
}  // namespace fn

namespace detail {

template <class T>
using sum_result_t = std::conditional_t<std::is_integral_v<T>,
                                        std::conditional_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool>, std::uint64_t, index_t>, T>;

template <class T>
inline constexpr bool is_float_acc_v = std::is_floating_point_v<T>;

// A reduction monoid: identity, combine (lane by lane, so the compiler vectorises it), and a
// finalize from the cross-block total and the element count. Float sums accumulate in float lanes
// per block of block_size elements and combine blocks in double (accurate and as fast).
struct sum_op {
  static constexpr const char* name = "sum";
  static constexpr int flops = 1;
  static constexpr bool needs_elements = false;
  template <class T> using result_t = sum_result_t<T>;
  template <class T> using acc_t = std::conditional_t<std::is_integral_v<T>, result_t<T>, compute_t<T>>;
  template <class A> using total_t = std::conditional_t<is_float_acc_v<A>, double, A>;
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A identity() { return A(0); }
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A combine(A a, A b) { return A(math::wrapping_add(a, b)); }
  template <class R, class Total> FUSE_HOST_DEVICE FUSE_INLINE static R finalize(Total t, index_t) { return static_cast<R>(t); }
};
struct mean_op : sum_op {
  static constexpr const char* name = "mean";
  template <class T> using result_t = float_result_t<T>;
  template <class T> using acc_t = std::conditional_t<std::is_integral_v<T>, double, compute_t<T>>;
  template <class R, class Total> FUSE_HOST_DEVICE FUSE_INLINE static R finalize(Total t, index_t n) {
    return static_cast<R>(static_cast<double>(t) / static_cast<double>(n));  // 0/0 = NaN for empty
  }
};
struct prod_op {
  static constexpr const char* name = "prod";
  static constexpr int flops = 1;
  static constexpr bool needs_elements = false;
  template <class T> using result_t = sum_result_t<T>;
  template <class T> using acc_t = std::conditional_t<std::is_integral_v<T>, result_t<T>, compute_t<T>>;
  template <class A> using total_t = std::conditional_t<is_float_acc_v<A>, double, A>;
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A identity() { return A(1); }
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A combine(A a, A b) { return A(math::wrapping_mul(a, b)); }
  template <class R, class Total> FUSE_HOST_DEVICE FUSE_INLINE static R finalize(Total t, index_t) { return static_cast<R>(t); }
};
// NaN propagates (np.max): a NaN lane wins every combine.
struct max_op {
  static constexpr const char* name = "max";
  static constexpr int flops = 1;
  static constexpr bool needs_elements = true;  // max of nothing is an error
  template <class T> using result_t = T;
  template <class T> using acc_t = compute_t<T>;
  template <class A> using total_t = A;
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A identity() {
    if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A combine(A a, A b) { return (a > b || a != a) ? a : b; }
  // Right when neither is NaN: a single vmaxps instead of two compares and a blend. The CPU row
  // kernel uses it over blocks it has checked to hold no NaN (reduce_block).
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A finite_combine(A a, A b) { return a > b ? a : b; }
  template <class R, class Total> FUSE_HOST_DEVICE FUSE_INLINE static R finalize(Total t, index_t) { return static_cast<R>(t); }
};
// As max_op, but an empty reduction gives -inf instead of an error (logsumexp's shift).
struct max_or_empty_op : max_op {
  static constexpr bool needs_elements = false;
};
struct min_op {
  static constexpr const char* name = "min";
  static constexpr int flops = 1;
  static constexpr bool needs_elements = true;
  template <class T> using result_t = T;
  template <class T> using acc_t = compute_t<T>;
  template <class A> using total_t = A;
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A identity() {
    if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A combine(A a, A b) { return (a < b || a != a) ? a : b; }
  template <class A> FUSE_HOST_DEVICE FUSE_INLINE static constexpr A finite_combine(A a, A b) { return a < b ? a : b; }
  template <class R, class Total> FUSE_HOST_DEVICE FUSE_INLINE static R finalize(Total t, index_t) { return static_cast<R>(t); }
};

template <std::size_t R, int K>
constexpr std::uint32_t axis_bit() {
  static_assert(K >= -static_cast<int>(R) && K < static_cast<int>(R), "fuse::reduce: axis out of range for this rank");
  return std::uint32_t(1) << (K < 0 ? K + static_cast<int>(R) : K);
}
template <std::size_t R>
inline constexpr std::uint32_t all_axes_mask = R == 0 ? 0 : (R >= 32 ? ~0u : (std::uint32_t(1) << R) - 1);

template <std::size_t R, class Axes>
struct mask_of;
template <std::size_t R, int K>
struct mask_of<R, axis_t<K>> {
  static constexpr std::uint32_t value = axis_bit<R, K>();
};
template <std::size_t R, int... K>
struct mask_of<R, axes_t<K...>> {
  static_assert(sizeof...(K) > 0, "fuse::reduce: axes<> names no axis (to reduce over every axis, give no axis argument)");
  static constexpr std::uint32_t value = (0u | ... | axis_bit<R, K>());
  static_assert(std::popcount(value) == sizeof...(K), "fuse::reduce: an axis is named twice");
};

}  // namespace detail

// op reduced over the axes in Mask (bits over Child's axes). KeepDims: reduced axes stay with
// extent 1 (axis<k>, axes<...>); otherwise the result has rank 0 (all axes).
template <class Op, std::uint32_t Mask, bool KeepDims, class Child>
struct reduce_expr : detail::expr_tag {
  using op = Op;
  using child_type = Child;
  using input_type = typename Child::value_type;
  using value_type = typename Op::template result_t<input_type>;
  using acc_type = typename Op::template acc_t<input_type>;
  static constexpr std::size_t child_rank = Child::rank;
  static constexpr std::size_t rank = KeepDims ? Child::rank : 0;
  static constexpr std::uint32_t mask = Mask;
  static constexpr bool keepdims = KeepDims;
  static constexpr node_kind kind = node_kind::reduction;
  static constexpr memory_space space = Child::space;
  static constexpr shape_t<rank> static_shape = [] {
    shape_t<rank> s{};
    if constexpr (KeepDims)
      for (std::size_t d = 0; d < rank; ++d) s[d] = (Mask >> d) & 1 ? 1 : Child::static_shape[d];
    return s;
  }();

  Child child;
  shape_t<rank> shape_;

  explicit reduce_expr(Child c) : child(std::move(c)), shape_(reduced_shape(child.shape())) {}
  FUSE_NODE_IS_A_VALUE(reduce_expr)
  FUSE_NODE_IS_NOT_A_DESTINATION(reduce_expr)

  const shape_t<rank>& shape() const { return shape_; }

  // Elements combined into each result.
  index_t count() const {
    index_t n = 1;
    const auto cs = child.shape();
    for (std::size_t d = 0; d < child_rank; ++d)
      if ((Mask >> d) & 1) n *= cs[d];
    return n;
  }

  // max/min of nothing has no value (NumPy raises).
  void validate() const {
    if constexpr (Op::needs_elements)
      if (count() == 0 && shape_size(shape_) != 0)
        throw shape_error(std::string("fuse::") + Op::name + ": reduction of an empty extent in " +
                          detail::format_shape(child.shape()) + " has no identity");
  }

  // Inside a kernel the value is the current row's slot, numbered after the child's reductions.
  template <std::size_t R, std::size_t Base = 0>
  detail::slot_eval<value_type, Base + detail::reduction_count_v<Child>> evaluator(const shape_t<R>&) const {
    return {};
  }
  template <class F>
  void visit_leaves(F&& f) const { child.visit_leaves(f); }

 private:
  static shape_t<rank> reduced_shape(const shape_t<child_rank>& cs) {
    shape_t<rank> s{};
    if constexpr (KeepDims)
      for (std::size_t d = 0; d < rank; ++d) s[d] = (Mask >> d) & 1 ? 1 : cs[d];
    return s;
  }
};

// A reduction without one of the axes it reduces, K: squeeze<K>(sum(x, axis<K>)), NumPy's
// keepdims=False. Inner is the reduction, an elementwise node over reductions of that axis
// (logsumexp), or another squeezed_reduce. No kernel reads it in place, since its rank differs
// from its operands': the planner computes Inner first, as a group of its own, into a temporary
// with the axis (plan/fusion.hpp, core/assign.hpp), and the consumer reads that.
template <std::size_t K, class Inner>
struct squeezed_reduce : detail::expr_tag {
  using inner_type = Inner;
  using value_type = typename Inner::value_type;
  static constexpr std::size_t axis = K;
  static constexpr std::size_t rank = Inner::rank - 1;
  static constexpr node_kind kind = node_kind::reduction;
  static constexpr memory_space space = Inner::space;
  static constexpr shape_t<rank> static_shape = detail::remove_at(Inner::static_shape, K);

  Inner inner;

  explicit squeezed_reduce(Inner i) : inner(std::move(i)) {}
  FUSE_NODE_IS_A_VALUE(squeezed_reduce)
  FUSE_NODE_IS_NOT_A_DESTINATION(squeezed_reduce)

  shape_t<rank> shape() const { return detail::remove_at(inner.shape(), K); }
  template <class F>
  void visit_leaves(F&& f) const { inner.visit_leaves(f); }
};

namespace detail {
template <class Op, std::uint32_t M, bool K, class C>
inline constexpr std::size_t reduction_count_v<reduce_expr<Op, M, K, C>> = 1 + reduction_count_v<C>;
template <std::size_t K, class I>
inline constexpr std::size_t reduction_count_v<squeezed_reduce<K, I>> = reduction_count_v<I>;

template <class E>
inline constexpr bool is_squeezed_v = false;
template <std::size_t K, class I>
inline constexpr bool is_squeezed_v<squeezed_reduce<K, I>> = true;

template <class Op, std::uint32_t M, bool K, class C>
inline constexpr bool row_invariant_v<reduce_expr<Op, M, K, C>> = true;  // a slot of the row kernel

template <class E>
inline constexpr bool is_reduce_v = false;
template <class Op, std::uint32_t M, bool K, class C>
inline constexpr bool is_reduce_v<reduce_expr<Op, M, K, C>> = true;

template <class Op, class Axes, class E>
auto make_reduce(E&& e) {
  using H = held_t<E>;
  static_assert(H::rank <= 32, "fuse::reduce: at most 32 axes");
  return reduce_expr<Op, mask_of<H::rank, Axes>::value, true, H>(hold_operand(std::forward<E>(e)));
}
template <class Op, class E>
auto make_reduce_all(E&& e) {
  using H = held_t<E>;
  if constexpr (H::rank == 0) {
    // No axis to reduce: the value is read as the one element of a rank-1 operand, so that the
    // kernels see an ordinary reduction (NumPy: np.sum(np.float64(5)) is 5, np.var of it 0).
    return make_reduce_all<Op>(make_map(fn::first_of{}, std::forward<E>(e), full_expr<bool, 1>{{}, shape_t<1>{1}, false}));
  } else {
    return reduce_expr<Op, all_axes_mask<H::rank>, false, H>(hold_operand(std::forward<E>(e)));
  }
}
}  // namespace detail

#define FUSE_REDUCTION_BUILDER(NAME, OP)                                                              \
  template <expression E, int K>                                                                      \
  auto NAME(E&& e, axis_t<K>) { return detail::make_reduce<detail::OP, axis_t<K>>(std::forward<E>(e)); } \
  template <expression E, int... K>                                                                   \
  auto NAME(E&& e, axes_t<K...>) { return detail::make_reduce<detail::OP, axes_t<K...>>(std::forward<E>(e)); } \
  template <expression E>                                                                             \
  auto NAME(E&& e) { return detail::make_reduce_all<detail::OP>(std::forward<E>(e)); }
FUSE_REDUCTION_BUILDER(sum, sum_op)
FUSE_REDUCTION_BUILDER(mean, mean_op)
FUSE_REDUCTION_BUILDER(prod, prod_op)
FUSE_REDUCTION_BUILDER(max, max_op)
FUSE_REDUCTION_BUILDER(min, min_op)
#undef FUSE_REDUCTION_BUILDER

namespace detail {
// var's outer mean. Only its name differs from mean_op: it marks var(x) as one node for the eager
// executor and its plan (spec section 5), see eager_unit below.
struct var_op : mean_op {
  static constexpr const char* name = "var";
};

template <class Op, class E, class... Axes>
auto reduce_by(E&& e, Axes...) {
  if constexpr (sizeof...(Axes) == 0) return make_reduce_all<Op>(std::forward<E>(e));
  else return make_reduce<Op, Axes...>(std::forward<E>(e));
}
}  // namespace detail

// Population variance, two-pass: mean of squared deviations from the mean (never negative).
template <expression E, class... Axes>
  requires(sizeof...(Axes) <= 1 && (detail::is_axes_v<Axes> && ...))
auto var(E&& e, Axes... ax) {
  return detail::with_operand(std::forward<E>(e), [=](const auto& x) {
    return detail::reduce_by<detail::var_op>(square(x - mean(x, ax...)), ax...);
  });
}

namespace fn {
// as_floating's conversion: a cast that is part of the composite (an eager logsumexp of an int
// tensor is one node, as of a float one), where a user's cast<double>(x) is a node of its own.
template <class U>
struct to_floating : cast<U> {};
}  // namespace fn

namespace detail {
// The operand of a floating-point composite: integers converted first (NumPy computes softmax of
// an int array in float64), so that x - max(x) or x * x cannot wrap or overflow in the integer type.
template <class E>
decltype(auto) as_floating(E&& e) {
  using T = typename std::remove_cvref_t<E>::value_type;
  if constexpr (is_floating_v<T>) return std::forward<E>(e);
  else return make_map(fn::to_floating<float_result_t<T>>{}, std::forward<E>(e));
}
}  // namespace detail

namespace fn {
// logsumexp's shift: m, or 0 where m is infinite (NaN stays NaN); what where(abs(m) == inf, 0, m)
// computes, as one node, so that the row kernel recognises the shift of an online pair
// (core/online_pair.hpp).
struct finite_or_zero {
  static constexpr const char* name = "finite_or_zero";
  static constexpr int flops = 2;
  using promotion = fuse::promotion::arith;
  template <class T>
  FUSE_HOST_DEVICE FUSE_INLINE T operator()(T m) const {
    if constexpr (std::numeric_limits<T>::has_infinity) return math::fabs(m) == std::numeric_limits<T>::infinity() ? T(0) : m;
    else return m;
  }
};
}  // namespace fn

namespace detail {
// The max used to shift logsumexp: an infinite (or empty) max shifts by 0, so that all -inf gives
// -inf and a +inf element gives +inf rather than NaN.
template <class E, class... Axes>
auto safe_shift(const E& x, Axes... ax) {
  return make_map(fn::finite_or_zero{}, reduce_by<max_or_empty_op>(x, ax...));
}
}  // namespace detail

namespace fn {
// logsumexp's final m + log(s). Only its name differs from add: it marks logsumexp(x) as one node
// for the eager executor and its plan (spec section 5), see eager_unit below.
struct logsumexp_add : add {
  static constexpr const char* name = "logsumexp";
};
}  // namespace fn

// log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the (finite) max.
template <expression E, class... Axes>
  requires(sizeof...(Axes) <= 1 && (detail::is_axes_v<Axes> && ...))
auto logsumexp(E&& e, Axes... ax) {
  return detail::with_operand(detail::as_floating(std::forward<E>(e)), [=](const auto& x) {
    auto m = detail::safe_shift(x, ax...);
    return make_map(fn::logsumexp_add{}, m, log(sum(exp(x - m), ax...)));
  });
}

namespace detail {
// var(x) and logsumexp(x) are written with the nodes users have, so that they fuse like any
// expression; but spec section 5 counts each section-3 reduction as one eager node. Their root's
// functor marks them (an eager unit), and unit_operand finds x in them: the eager executor
// materialises x alone and runs the rest as one fused kernel (backend/eager.hpp).
template <class E>
inline constexpr bool is_eager_unit_v = false;
template <std::uint32_t M, bool K, class C>
inline constexpr bool is_eager_unit_v<reduce_expr<var_op, M, K, C>> = true;
template <class... A>
inline constexpr bool is_eager_unit_v<map_expr<fn::logsumexp_add, A...>> = true;

// Is E a node whose functor is F?
template <class E, class F>
inline constexpr bool has_functor_v = false;
template <class F, class... A>
inline constexpr bool has_functor_v<map_expr<F, A...>, F> = true;
template <class E>
inline constexpr bool is_rank_lift_v = has_functor_v<E, fn::first_of>;  // rank 0 read as rank 1
template <class E>
inline constexpr bool is_floating_cast_v = false;
template <class U, class A>
inline constexpr bool is_floating_cast_v<map_expr<fn::to_floating<U>, A>> = true;

// e without rank lifts: they are index arithmetic, no node of their own in the eager plan.
template <class E>
const auto& unlifted(const E& e) {
  if constexpr (is_rank_lift_v<E>) return unlifted(get<0>(e.args));
  else return e;
}
// The lift of x, as e lifts its operand.
template <class E, class X>
auto relift(const E& e, X x) {
  return map_expr<fn::first_of, X, std::remove_cvref_t<decltype(get<1>(e.args))>>{e.f, std::move(x), get<1>(e.args)};
}

// e without make_reduce_all's rank-0 lift (first_of(x, full)) and as_floating's cast: the operand
// x as the user gave it to var or logsumexp.
template <class E>
const auto& unwrapped(const E& e) {
  if constexpr (is_rank_lift_v<E> || is_floating_cast_v<E>) return unwrapped(get<0>(e.args));
  else return e;
}

template <class E>
  requires is_eager_unit_v<E>
const auto& unit_operand(const E& e) {
  if constexpr (is_reduce_v<E>) return unwrapped(get<0>(get<0>(unwrapped(e.child).args).args));  // var: mean(square(x - mean(x)))
  else return unwrapped(get<0>(get<0>(e.args).args).child);  // logsumexp: m + ..., m = f(max(x))
}
template <class E>
using unit_operand_t = std::remove_cvref_t<decltype(unit_operand(std::declval<const E&>()))>;

// Node e (an elementwise node or a reduction) rebuilt over f(a) for each operand a. Braces: f
// runs on the operands left to right, in the order fuse::plan lists them (a call's arguments are
// evaluated in no set order; GCC goes right to left).
template <class E, class F>
auto rebuild_over(const E& e, F&& f) {
  if constexpr (is_reduce_v<E>) {
    auto child = f(e.child);
    return reduce_expr<typename E::op, E::mask, E::keepdims, decltype(child)>(child);
  } else {
    return detail::apply([&](const auto&... a) { return map_expr<std::remove_cvref_t<decltype(e.f)>, decltype(f(a))...>{e.f, f(a)...}; },
                 e.args);
  }
}
}  // namespace detail

}  // namespace fuse
