// fuse/core/assign.hpp - fuse::assign and fuse::eval: checks, then one fused pass (or, for
// fuse::eager, one pass per node).
//
// assign(y, e) means: evaluate e into a fresh tensor, then copy into y. Shapes are checked and
// take() indices validated before anything is written; when y overlaps a leaf of e other than
// element-for-element, e is evaluated into a temporary first.
#pragma once

#include "fuse/backend/cpu/column_moments.hpp"
#include "fuse/backend/cpu/column_softmax.hpp"
#include "fuse/backend/cpu/column_reduce.hpp"
#include "fuse/backend/cpu/short_rows.hpp"
#include "fuse/backend/cpu/executor.hpp"
#include "fuse/backend/cpu/fallback_reduce.hpp"
#include "fuse/backend/cpu/row_kernel.hpp"
#include "fuse/backend/eager.hpp"
#include "fuse/core/computed_reductions.hpp"
#include "fuse/core/iteration.hpp"
#include "fuse/core/map_expr.hpp"
#include "fuse/core/row_iteration.hpp"
#include "fuse/core/squeeze.hpp"
#include "fuse/ops/select.hpp"
#include "fuse/plan/fusion.hpp"

namespace fuse {

namespace detail {

// What must hold before anything runs: take's indices are in range, and (Reductions) max/min
// have elements to reduce. An empty result reads nothing, so it checks the indices alone.
template <bool Reductions, class E>
void validate(const E& e) {
  if constexpr (requires { e.validate(); })
    if constexpr (Reductions || !is_reduce_v<E>) e.validate();
  if constexpr (requires { e.args; }) for_each(e.args, [](const auto& a) { validate<Reductions>(a); });
  if constexpr (is_reduce_v<E>) validate<Reductions>(e.child);
  if constexpr (is_squeezed_v<E>) validate<Reductions>(e.inner);
}

template <class X>
concept host_executor = std::is_same_v<X, cpu>;

template <class T, std::size_t R, class Ev>
void run(const cpu& exec, const iteration<T, R, Ev>& it) { run_cpu(exec, it); }
// False where the CPU row kernel declines (rows it cannot read contiguously, even through copies:
// backend/cpu/strided_rows.hpp), having written nothing.
template <class T, std::size_t R, class Ev, class Ph>
bool run(const cpu& exec, const row_iteration<T, R, Ev, Ph>& it) { return run_row_kernel(exec, it); }

// An elementwise kernel of the run-time fallback: on the host one generic variant (executor.hpp),
// elsewhere as any kernel.
template <class Exec, class It>
void run_fallback(const Exec& exec, const It& it) {
  if constexpr (!host_executor<Exec>) run(exec, it);
  else run_cpu_generic(exec, it);
}

// Reduction r, whose operand has no reductions, into dst (r's shape, leading extents of 1 possibly
// dropped, not overlapping r's operand), for the run-time fallback: the operand is written to a
// temporary of the arena first unless it is an array (is_array_leaf_v), then reduced as such, by
// backend/cpu/fallback_reduce.hpp on the host (one small loop per op, value types and rank,
// whatever the operand expression was), by the row kernel elsewhere.
template <class Exec, class Arena, class T, std::size_t RD, class RE>
void run_fallback_reduction_of(const Exec& exec, Arena& arena, const destination<T, RD>& dst, const RE& r) {
  using C = typename RE::child_type;
  if constexpr (!is_array_leaf_v<C>) {
    auto operand = arena.template make<typename C::value_type>(r.child.shape());
    auto it = make_iteration(destination_of(operand), r.child);
    if (!it.empty()) run_fallback(exec, it);
    run_fallback_reduction_of(exec, arena, dst, reduce_expr<typename RE::op, RE::mask, RE::keepdims, decltype(operand)>(operand));
  } else if constexpr (host_executor<Exec>) {
    run_fallback_reduction<typename RE::op, typename RE::acc_type, typename RE::value_type>(exec, dst, r.child.data(), r.child.shape(),
                                                                                            r.child.strides(), RE::mask);
  } else {
    const auto it = make_row_iteration<RE::child_rank>(dst, r, r.child.shape(), RE::mask);
    if (!it.empty()) run(exec, it);
  }
}

template <class Exec, class T, std::size_t R>
using tensor_for = basic_tensor<T, R, typename allocator_for<Exec::space>::type>;
template <class Exec>
using computed_for = computed_reductions<arena_t<Exec>>;

template <class Exec, class D, class E>
void assign_fused_with(const Exec& exec, D&& d, const E& e, computed_for<Exec>* computed);

// A group of its own (a reduction, or one without a reduced axis), computed into a temporary,
// unless the same over the same data was computed before: then that result is read back.
template <class Exec, class E>
auto materialise_group(const Exec& exec, computed_for<Exec>& computed, const E& e) {
  if (auto done = computed.find(e)) return *done;
  auto tmp = computed.arena.template make<typename E::value_type>(e.shape());
  assign_fused_with(exec, tmp, e, &computed);
  computed.add(e, tmp.data());
  return tmp;
}

// Column pair e (core/column_pair.hpp) into dst as one kernel on the CPU, its inner reduction (the
// mean, the max) into a temporary of the table, kept there for the same reduction elsewhere in
// the assignment. False where the pair cannot run so (then its reductions are kernels of their
// own), or the inner one was computed before (then the outer one alone is one pass as well).
// (The CUDA executor runs the two as kernels of their own; the plan says so.)
template <class T, std::size_t RD, class E>
bool run_column_pair(const cpu& exec, computed_for<cpu>& computed, const destination<T, RD>& dst, const E& e) {
  const auto& m = column_pair<E>::inner(e);
  if (computed.find(m)) return false;
  auto inner = computed.arena.template make<typename std::remove_cvref_t<decltype(m)>::value_type>(m.shape());
  const bool ran = [&] {
    if constexpr (column_pair<E>::kind == column_pair_kind::moments) return run_column_moments(exec, destination_of(inner), dst, e);
    else return run_column_softmax(exec, destination_of(inner), dst, e);
  }();
  if (!ran) return false;
  computed.add(m, inner.data());
  return true;
}

// Computes first each column pair below e (in the group (R, M) of e, or in the groups of its own
// below it), so that a mean(x) met before its var(x) (x - mean(x), then var(x), in a batch norm
// over NHWC; or in another group) reads the pair's mean rather than running a kernel of its own.
// (plan/fusion.hpp counts a pair's mean nowhere else; plan/report.hpp lists the pairs first.)
template <std::size_t R, std::uint32_t M, class Exec, class E>
void compute_column_pairs(const Exec& exec, computed_for<Exec>& computed, const E& e);

template <std::size_t R, std::uint32_t M, class Exec, class A>
void compute_column_pairs_of(const Exec& exec, computed_for<Exec>& computed, const A& a) {
  using G = typename unsqueezed<A>::type;
  if constexpr (stays_in_group<A, R, M>) compute_column_pairs<R, M>(exec, computed, a);
  else if constexpr (column_pair_v<G>) materialise_group(exec, computed, a);
  else compute_column_pairs<group_of<G>::rank, group_of<G>::mask>(exec, computed, unsqueezed_node(a));
}

template <std::size_t R, std::uint32_t M, class Exec, class E>
void compute_column_pairs(const Exec& exec, computed_for<Exec>& computed, const E& e) {
  if constexpr (has_column_pair_v<E>) {
    if constexpr (is_reduce_v<E>) compute_column_pairs_of<R, M>(exec, computed, e.child);
    else if constexpr (requires { e.args; }) for_each(e.args, [&](const auto& a) { compute_column_pairs_of<R, M>(exec, computed, a); });
  }
}

// Would split_group<R, M, false> give e back unchanged (every reduction it meets joins the group,
// as in softmax, layer norm, rms norm)? Then it returns e itself: the rebuild copies each subtree
// once per level above it and recomputes every node's broadcast shape (softmax over [4, 16], one
// thread: a third of the assign's time).
template <std::size_t R, std::uint32_t M, class E>
constexpr bool splits_nothing() {
  auto kept = []<class A>(std::type_identity<A>) { return stays_in_group<A, R, M> && splits_nothing<R, M, A>(); };
  if constexpr (is_reduce_v<E>) {
    return kept(std::type_identity<std::remove_cvref_t<decltype(std::declval<const E&>().child)>>{});
  } else if constexpr (E::kind == node_kind::elementwise && reduction_count_v<E> > 0) {
    return [&]<class... A>(std::type_identity<tuple<A...>>) {
      return (kept(std::type_identity<A>{}) && ...);
    }(std::type_identity<std::remove_cvref_t<decltype(std::declval<const E&>().args)>>{});
  } else {
    return true;
  }
}

// e with each node below it that leaves the group (rank R, row axes M) replaced by leave(node):
// the reductions that do not join it, and with Every every reduction. (split_group computes them;
// fuse::plan rebuilds the same type over views of no data: planned_group, plan/report.hpp.)
// Returns e itself (a reference) where nothing is replaced.
template <std::size_t R, std::uint32_t M, bool Every, class E, class Leave>
decltype(auto) replace_leaving(const E& e, const Leave& leave) {
  constexpr bool rebuilt = is_reduce_v<E> || (E::kind == node_kind::elementwise && reduction_count_v<E> > 0);
  if constexpr (!rebuilt || (!Every && splits_nothing<R, M, E>())) return (e);
  else return rebuild_over(e, [&]<class A>(const A& x) {
    if constexpr ((Every && is_reduce_v<A>) || !stays_in_group<A, R, M>) return leave(x);
    else return replace_leaving<R, M, Every>(x, leave);
  });  // the operands' kernels run left to right, as the plan lists them
}

// e with reductions replaced by views of their results, each computed first as a group of its own:
// - Every = false: the reductions that do not join the group (rank R, row axes M) (as
//   plan/fusion.hpp);
// - Every = true, when run-time shapes broke the group: every reduction below the root, innermost
//   first, so that each is a one-phase kernel over a reduction-free operand. (Materialising a
//   whole nested reduction instead would compile another multi-phase kernel for a rare path.)
// Returns e itself (a reference) where nothing splits or there is no reduction to replace.
template <std::size_t R, std::uint32_t M, bool Every, class Exec, class E>
decltype(auto) split_group(const Exec& exec, computed_for<Exec>& computed, const E& e) {
  return replace_leaving<R, M, Every>(e, [&]<class A>(const A& x) {
    if constexpr (Every && is_reduce_v<A>) {
      // Its operand is reduction-free now: fallback kernels, no fresh assign_fused (whose checks
      // the whole expression has passed, and whose fast paths a rare path does not need). A
      // reduction met again (softmax's max, written twice) reads the first result.
      if (auto done = computed.find(x)) return *done;
      const auto r = split_group<R, M, Every>(exec, computed, x);
      auto tmp = computed.arena.template make<typename std::remove_cvref_t<decltype(r)>::value_type>(r.shape());
      run_fallback_reduction_of(exec, computed.arena, destination_of(tmp), r);
      computed.add(x, tmp.data());
      return tmp;
    } else {
      return materialise_group(exec, computed, x);
    }
  });
}

// `otherwise` runs where the kernel declines (run's result false).
template <bool Fallback = false, class Exec, class It>
void run_checked(const Exec& exec, It& it, const auto& rerun_via_temporary, const auto& otherwise) {
  if (it.empty()) return;
  if (destination_overlaps(it)) return rerun_via_temporary();
  if constexpr (Fallback) {
    run_fallback(exec, it);
  } else if constexpr (std::is_same_v<decltype(run(exec, it)), bool>) {
    if (!run(exec, it)) otherwise();
  } else {
    run(exec, it);
  }
}
template <bool Fallback = false, class Exec, class It>
void run_checked(const Exec& exec, It& it, const auto& rerun_via_temporary) {
  run_checked<Fallback>(exec, it, rerun_via_temporary, [] {});
}

// Throws unless e can be written into dst; true if there is nothing to write. Then nothing is read
// either, so a reduction inside without an identity (softmax of [3, 0], whose max is
// [3, 1]) is no error (PyTorch gives the empty result too). take's indices are checked all the
// same (NumPy raises for an index out of range when the result is empty too).
template <class Dst, class E>
bool checked_empty(const Dst& dst, const E& e) {
  check_writable(dst);
  if (!assignable(dst.shape, e.shape()))
    throw shape_error("fuse::assign: cannot assign an expression of shape " + format_shape(e.shape()) +
                      " to a destination of shape " + format_shape(dst.shape));
  const bool empty = shape_size(dst.shape) == 0;
  if (empty) validate<false>(e);
  else validate<true>(e);
  return empty;
}

template <class Exec, class D, class E>
void assign_fused_as_is(const Exec& exec, D&& d, const E& e, computed_for<Exec>* computed);

// One fused group of expression e (already held) into destination view/tensor d. A floating
// expression into an integer destination is converted as fuse::cast converts (saturating, NaN to
// 0: math/convert.hpp), not by the store's plain conversion, which is undefined out of range.
template <class Exec, class D, class E>
void assign_fused(const Exec& exec, D&& d, const E& e) {
  assign_fused_with(exec, std::forward<D>(d), e, nullptr);
}

// The same, within an assignment whose reductions computed so far are `computed` (null: none; the
// groups of e are then computed with a table of their own).
template <class Exec, class D, class E>
void assign_fused_with(const Exec& exec, D&& d, const E& e, computed_for<Exec>* computed) {
  using Out = std::remove_cvref_t<decltype(*d.data())>;
  // (The cast is a temporary: the table must not keep its nodes, so it gets a table of its own.)
  if constexpr (math::saturating_conversion_v<Out, typename E::value_type>)
    assign_fused_as_is(exec, std::forward<D>(d), fuse::cast<Out>(e), nullptr);
  else
    assign_fused_as_is(exec, std::forward<D>(d), e, computed);
}

template <class Exec, class D, class E>
void assign_fused_as_is(const Exec& exec, D&& d, const E& e, computed_for<Exec>* computed) {
  static_assert(spaces_compatible(Exec::space, E::space),
                "fuse::assign: the executor and the expression's memory are in different spaces "
                "(host leaves need fuse::cpu, device leaves fuse::cuda)");
  static_assert(spaces_compatible(std::remove_cvref_t<D>::space, Exec::space),
                "fuse::assign: the destination's memory is not in the executor's space");
  auto dst = destination_of(d);
  if (checked_empty(dst, e)) return;
  auto via_temporary = [&] {
    arena_t<Exec> arena(exec);
    auto tmp = arena.template make<typename E::value_type>(e.shape());
    assign_fused_with(exec, tmp, e, computed);
    assign_fused(exec, d, tmp);
  };
  constexpr std::size_t dst_rank = std::tuple_size_v<decltype(dst.shape)>;
  if constexpr (is_squeezed_v<E>) {
    // A reduction without one of its axes: the reduction, into the destination with that axis
    // (of extent 1) put back. A destination of lower rank (leading 1s dropped) takes a copy.
    if constexpr (dst_rank >= E::rank) {
      auto with_axis = reshape_axis<true, E::axis + (dst_rank - E::rank)>(hold_operand(d));  // a view of d
      assign_fused_with(exec, with_axis, e.inner, computed);
    } else {
      via_temporary();
    }
  } else if constexpr (reduction_count_v<E> == 0) {
    auto it = make_iteration(dst, e);
    run_checked(exec, it, via_temporary);
  } else if constexpr (dst_rank > group_of<E>::rank) {
    // A destination of higher rank than the group (e broadcast into it, as NumPy): the row kernel
    // runs over the group's axes, so e is evaluated at its own shape first, then copied.
    via_temporary();
  } else if (stretches(dst.shape, e.shape())) {
    // The same where an axis of e stretches (y[3, 4] = sum(z, axes<0, 1>), y[5] = max(z)): a
    // root reduction would write once per row.
    via_temporary();
  } else {
    using group = group_of<E>;
    constexpr std::size_t R = group::rank;
    computed_for<Exec> own(exec);
    computed_for<Exec>& table = computed ? *computed : own;
    if constexpr (std::is_same_v<Exec, cpu> && column_pair_v<E>) {
      if (run_column_pair(exec, table, dst, e)) return;
    } else if constexpr (std::is_same_v<Exec, cpu>) {
      compute_column_pairs<R, group::mask>(exec, table, e);
    }
    const auto& g = split_group<R, group::mask, false>(exec, table, e);
    const shape_t<R> shape = group_shape(e, dst.shape);
    using G = std::remove_cvref_t<decltype(g)>;
    // Root reductions that the row kernel reads badly: over leading axes (by columns; with their
    // inner reductions already computed by split_group: var(x, axis<0>)) and over rows shorter
    // than a vector (backend/cpu/column_reduce.hpp, short_rows.hpp).
    if constexpr (std::is_same_v<Exec, cpu> && column_reducible_v<G>)
      if (run_columns(exec, dst, g)) return;
    if constexpr (std::is_same_v<Exec, cpu> && short_row_reducible_v<G>)
      if (run_short_rows(exec, dst, g)) return;
    // Every reduction below the root its own kernel: where run-time shapes break the group, or
    // the CPU row kernel declines its rows.
    // (Generic: compiled only where called, in the branches with a reduction.)
    auto split_fallback = [&](auto...) {
      // (A table of its own: g is a local expression, whose nodes the outer table must not keep.)
      computed_for<Exec> fallback(exec);
      const auto split = split_group<R, group::mask, true>(exec, fallback, g);
      using S = std::remove_cvref_t<decltype(split)>;
      if constexpr (reduction_count_v<S> == 0) {
        auto it = make_iteration(dst, split);
        run_checked<true>(exec, it, via_temporary);
      } else {
        // A reduction root over a reduction-free operand. It reads no leaf while it writes dst:
        // its operand is either written to a temporary first or is itself a temporary (a leaf
        // directly under the root would break no group).
        static_assert(is_reduce_v<S>, "fuse: the fallback leaves no reduction below the root");
        run_fallback_reduction_of(exec, fallback.arena, dst, split);
      }
    };
    if constexpr (reduction_count_v<G> == 0) {
      auto it = make_iteration(dst, g);
      run_checked(exec, it, via_temporary);
    } else if (fits_group<R, group::mask>(g, shape)) {
      auto it = make_row_iteration<R>(dst, g, shape, group::mask);
      run_checked(exec, it, via_temporary, split_fallback);
    } else if (shape_t<R> rows = shape; widen_to_rows<R, group::mask>(g, rows)) {
      auto it = make_row_iteration<R>(dst, g, rows, group::mask, true);  // one value per row
      run_checked(exec, it, via_temporary, split_fallback);
    } else {
      split_fallback();  // run-time shapes break the group
    }
  }
}

// Device memory is served by fuse::cuda (backend/cuda), host memory by fuse::cpu.
template <memory_space S>
struct default_executor_for {
  using type = cpu;
};
template <class E>
constexpr auto default_executor() {
  return typename default_executor_for<E::space>::type{};
}

}  // namespace detail

// y = e, evaluated by `exec` (fuse::cpu, fuse::cuda, fuse::eager(...)).
template <class Exec, class D, class E>
  requires((expression<D>) && operand<E>)
void assign(const Exec& exec, D&& y, E&& e) {
  static_assert(!detail::is_owned_view_v<std::remove_cvref_t<D>>, "fuse::assign: " FUSE_READ_ONLY_DESTINATION);
  static_assert(requires { y.data(); y.strides(); }, "fuse::assign: " FUSE_NOT_A_DESTINATION);
  if constexpr (expression<E>)
    static_assert(detail::check_static_assignable<std::remove_cvref_t<D>::static_shape, std::remove_cvref_t<E>::static_shape>());
  auto held = detail::hold_operand(std::forward<E>(e));
  if constexpr (detail::is_eager_v<Exec>) {
    if (detail::checked_empty(detail::destination_of(y), held)) return;  // before any node runs
    detail::arena_t<std::remove_cvref_t<decltype(exec.exec)>> arena(exec.exec);
    detail::assign_fused(exec.exec, y, detail::with_materialised_children(exec.exec, arena, held));
  } else {
    detail::assign_fused(exec, y, held);
  }
}

// y = e on the executor of y's memory space.
template <class D, class E>
  requires((expression<D>) && operand<E>)
void assign(D&& y, E&& e) {
  assign(detail::default_executor<std::remove_cvref_t<D>>(), std::forward<D>(y), std::forward<E>(e));
}

// x += e, x -= e, x *= e, x /= e on a tensor or view (a temporary view too): x = x op e, in place
// (the in-place rule of assign: the result of a fresh evaluation). NumPy's augmented assignment,
// except that a result of another type converts into x's as assign converts (NumPy raises for
// int_array += 1.5).
#define FUSE_COMPOUND_ASSIGN(OP)                                                              \
  template <expression D, operand E>                                                          \
  decltype(auto) operator OP##=(D&& x, E&& e) {                                               \
    constexpr bool read_only = detail::is_owned_view_v<std::remove_cvref_t<D>>;               \
    static_assert(!read_only, "fuse::operator" #OP "=: " FUSE_READ_ONLY_DESTINATION);          \
    constexpr bool writable = requires(std::remove_cvref_t<D>& d) { d.data(); d.strides(); }; \
    static_assert(writable || read_only, "fuse::operator" #OP "=: " FUSE_NOT_A_DESTINATION);   \
    static_assert(!(#OP[0] == '/' && std::is_integral_v<typename std::remove_cvref_t<D>::value_type>), \
                  "fuse::operator/=: an integer x: true division runs in double (int64 values above " \
                  "2^53 would change) and NumPy raises for it; write x = fuse::cast<...>(x / e)");  \
    if constexpr (writable && !read_only) { /* (one error, not two) */                       \
      assign(x, x OP std::forward<E>(e));                                                     \
      if constexpr (std::is_lvalue_reference_v<D>) return (x);                                \
      else return std::remove_cvref_t<D>(std::move(x)); /* a temporary view: by value, not D&& */ \
    }                                                                                         \
  }
FUSE_COMPOUND_ASSIGN(+)
FUSE_COMPOUND_ASSIGN(-)
FUSE_COMPOUND_ASSIGN(*)
FUSE_COMPOUND_ASSIGN(/)
#undef FUSE_COMPOUND_ASSIGN

// A new tensor holding e (a value for a rank-0 expression).
template <class Exec, expression E>
auto eval(const Exec& exec, E&& e) {
  using D = std::remove_cvref_t<E>;
  detail::tensor_for<Exec, typename D::value_type, D::rank> t(e.shape());
  assign(exec, t, std::forward<E>(e));
  if constexpr (D::rank == 0) {
    using detail::read_scalar;
    return read_scalar(exec, t);  // unqualified: the CUDA overload waits on exec's stream
  } else {
    return t;
  }
}

template <expression E>
auto eval(E&& e) {
  return eval(detail::default_executor<std::remove_cvref_t<E>>(), std::forward<E>(e));
}

}  // namespace fuse
