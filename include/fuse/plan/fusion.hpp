// fuse/plan/fusion.hpp - the compile-time planner: which nodes share a kernel.
//
// Read top to bottom:
//  1. every node states its kind (node_kind, TVM's op-pattern lattice);
//  2. a kernel (a *group*) starts at the root and grows downwards through elementwise nodes,
//     views, generators and leaves, which always join;
//  3. a group has row axes: those of a reduction root, or else those of the first reduction met
//     (pre-order) whose axes include the last one and are not all of the group's (a full
//     reduction's only where there is no other). A reduction joins the group as a *phase* when
//     it reduces exactly the group's row axes and those include the last axis (its result is then
//     constant along the row and broadcast back: softmax, layer norm, a training batch norm over
//     N, H, W of NCHW). Any other reduction starts a group of its own, whose small result the
//     consumer reads as a leaf;
//  4. kernels_v is the number of groups. The eager plan instead counts every interior node.
// The executor (core/assign.hpp) follows the same rules; run-time shapes that break a group
// (a joined reduction over an extent other than the group's) split it, and the plan says so.
#pragma once

#include <algorithm>
#include <cstddef>

#include "fuse/core/column_pair.hpp"
#include "fuse/core/map_expr.hpp"
#include "fuse/core/node_identity.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse {

namespace detail {

// Do the axes in mask m, of a group of rank R, include the last one (so that a row is made of
// contiguous runs)?
template <std::size_t R>
constexpr bool includes_last_axis(std::uint32_t m) {
  return ((m >> (R - 1)) & 1u) != 0;
}

// The row axes of reduction C seen from a group of rank R (operands align on trailing axes).
template <class C, std::size_t R>
constexpr std::uint32_t group_mask_of() {
  if constexpr (C::child_rank > R) return 0;
  else return C::mask << (R - C::child_rank);
}

// Pre-order search, through elementwise nodes only, for the first reduction whose axes include the
// last one (as joins_group asks of a phase): trailing axes (softmax), or runs of the last axes
// (NCHW batch norm over axes<0, 2, 3>, whose rows are N runs of H * W). Until 2026-12-05 trailing
// axes only: a training batch norm was three kernels (the mean, the variance, the normalisation),
// x read three times; as one its channel is read from memory once ([16, 64, 112, 112], 2 threads:
// 11 -> 20-21 GB/s, design.md §3).
// Full: whether a reduction over every axis of the group counts.
template <std::size_t R, class E, bool Full>
constexpr std::uint32_t first_row_mask_of() {
  if constexpr (is_reduce_v<E>) {
    constexpr std::uint32_t m = group_mask_of<E, R>();
    return includes_last_axis<R>(m) && (Full || m != all_axes_mask<R>) ? m : 0;
  } else if constexpr (E::kind == node_kind::elementwise) {
    return []<class... A>(const tuple<A...>*) {
      std::uint32_t m = 0;
      ((m = m ? m : first_row_mask_of<R, A, Full>()), ...);
      return m;
    }(static_cast<const decltype(E::args)*>(nullptr));
  } else {
    return 0;
  }
}
// A reduction over some axes first; one over all of them only where there is none. A full
// reduction is one value however large its operand, often a different array's
// (`softmax(x + sum(w))`): taking its axes made the softmax's own max and sum over the last axis
// "differ from the group's" extents at run time, and the group ran as the fallback's five kernels.
template <std::size_t R, class E>
constexpr std::uint32_t first_row_mask() {
  constexpr std::uint32_t partial = first_row_mask_of<R, E, false>();
  return partial != 0 ? partial : first_row_mask_of<R, E, true>();
}

// The operand rank of the first reduction over every axis of its operand met below E (pre-order,
// through elementwise nodes), or 0 if none.
template <class E>
constexpr std::size_t first_full_reduction_rank() {
  if constexpr (is_reduce_v<E>) {
    return E::mask == all_axes_mask<E::child_rank> ? E::child_rank : 0;
  } else if constexpr (E::kind == node_kind::elementwise) {
    return []<class... A>(const tuple<A...>*) {
      std::size_t r = 0;
      ((r = r ? r : first_full_reduction_rank<A>()), ...);
      return r;
    }(static_cast<const decltype(E::args)*>(nullptr));
  } else {
    return 0;
  }
}

// The rank and row axes of the group rooted at E. A rank-0 elementwise root over full reductions
// (logsumexp(x): m + log(sum(exp(x - m))), m = max(x)) takes the rank of the first one's operand,
// so that they join as phases over one row, the whole operand, and the root is written once
// (widen_to_rows), as over one axis; it was three kernels. So does a full reduction lifted to
// rank 1 (unsqueeze<0>(sum(x))), which was two.
template <class E>
struct group_of {
  static constexpr bool reduction_root = is_reduce_v<E>;
  static constexpr std::size_t rank = [] {
    if constexpr (is_reduce_v<E>) return E::child_rank;
    else if constexpr (E::rank == 0 || is_rank_lift_v<E>) return std::max<std::size_t>(1, first_full_reduction_rank<E>());
    else return E::rank;
  }();
  static constexpr std::uint32_t mask = [] {
    if constexpr (is_reduce_v<E>) return E::mask;
    else return first_row_mask<rank, E>();
  }();
};

// The iteration shape of the group rooted at e, whose output has shape `out` (of at most the
// group's rank): a reduction root iterates over its operand, an elementwise root over its output
// with leading axes of extent 1.
template <class E, std::size_t N>
shape_t<group_of<E>::rank> group_shape(const E& e, const shape_t<N>& out) {
  constexpr std::size_t R = group_of<E>::rank;
  static_assert(N <= R, "fuse: group_shape: an output of higher rank than its group");
  shape_t<R> shape{};
  if constexpr (group_of<E>::reduction_root) {
    shape = e.child.shape();
  } else {
    shape.fill(1);
    for (std::size_t j = 0; j < N; ++j) shape[R - N + j] = out[j];
  }
  return shape;
}

// Does reduction C run as a phase of a group of rank R with row axes M? Only where the row axes
// include the last one, so that a row is made of contiguous runs (NCHW statistics over
// axes<0, 2, 3>: runs of H * W). Over leading axes alone (var(x, axis<0>), batch-norm statistics
// over N, H, W of NHWC) the phases would read each column as a strided row, page by page
// (21-60x a hand loop, a probe, 2026-12-04); there each inner reduction is a group of its own,
// which the CPU runs in memory order (column_reduce.hpp), and the root reads its small result.
template <class C, std::size_t R, std::uint32_t M>
constexpr bool joins_group_f() {
  if constexpr (!is_reduce_v<C>) return false;
  else return group_mask_of<C, R>() == M && includes_last_axis<R>(M);
}
template <class C, std::size_t R, std::uint32_t M>
inline constexpr bool joins_group = joins_group_f<C, R, M>();

// Does every reduction below E, through elementwise nodes and nested, join the group (R, M)?
template <std::size_t R, std::uint32_t M, class E>
constexpr bool phases_only() {
  if constexpr (is_reduce_v<E>) {
    return joins_group<E, R, M> && phases_only<R, M, typename E::child_type>();
  } else if constexpr (is_squeezed_v<E>) {
    return false;
  } else if constexpr (E::kind == node_kind::elementwise) {
    return []<class... A>(const tuple<A...>*) { return (phases_only<R, M, A>() && ...); }(static_cast<const decltype(E::args)*>(nullptr));
  } else {
    return true;
  }
}

// Does a reduction directly below E (through elementwise nodes) join the group (R, M)?
template <std::size_t R, std::uint32_t M, class E>
constexpr bool any_joins() {
  if constexpr (is_reduce_v<E>) {
    return joins_group<E, R, M>;
  } else if constexpr (E::kind == node_kind::elementwise) {
    return []<class... A>(const tuple<A...>*) { return (any_joins<R, M, A>() || ...); }(static_cast<const decltype(E::args)*>(nullptr));
  } else {
    return false;
  }
}

// Is E made of reductions and constants (rank 0) alone, through elementwise nodes?
template <class E>
constexpr bool over_reductions_only() {
  if constexpr (is_reduce_v<E> || E::rank == 0) {
    return true;
  } else if constexpr (E::kind == node_kind::elementwise && !is_rank_lift_v<E>) {
    return []<class... A>(const tuple<A...>*) { return (over_reductions_only<A>() && ...); }(static_cast<const decltype(E::args)*>(nullptr));
  } else {
    return false;
  }
}

// A value per row: an elementwise node over reductions that all join its own group as phases,
// with nothing but constants outside them (logsumexp(x, axis<-1>), a per-row loss
// logsumexp(z) - sum(where(iota == label, z, 0))). Its extent along its row axes is 1, so as a
// group of its own it is one row kernel that writes one value per row (widen_to_rows).
template <class E>
constexpr bool is_row_value_f() {
  if constexpr (E::kind != node_kind::elementwise || reduction_count_v<E> == 0) {
    return false;
  } else {
    using G = group_of<E>;
    return G::mask != 0 && over_reductions_only<E>() && phases_only<G::rank, G::mask, E>();
  }
}
template <class E>
inline constexpr bool is_row_value = is_row_value_f<E>();

// Does operand A of a node in the group (R, M) stay in the group? Everything but a reduction that
// does not join it (which becomes a group of its own, read back as a small leaf; a reduction
// without a reduced axis, squeezed_reduce, never joins), and a value per row none of whose
// reductions join it (mean of a per-row loss: one row kernel for the loss, not a kernel for each
// of its reductions, with the max of a logsumexp computed twice).
template <class A, std::size_t R, std::uint32_t M>
inline constexpr bool stays_in_group = [] {
  if constexpr (is_reduce_v<A> || is_squeezed_v<A>) return joins_group<A, R, M>;
  else if constexpr (is_row_value<A>) return any_joins<R, M, A>();
  else return true;
}();

// An array in memory (a view, also of a tensor named in the expression; a tensor moved into it is
// copied): the run-time fallback reduces it as it is; any other operand it writes to a temporary
// first (core/assign.hpp).
template <class C>
inline constexpr bool is_array_leaf_v = C::kind == node_kind::leaf && requires(const C& c) {
  c.data();
  c.strides();
};
// Is operand C of a reduction in a broken group (R, M) an array once the fallback has split the
// group (each reduction, and what leaves the group, replaced by a view of its result)?
template <class C, std::size_t R, std::uint32_t M>
inline constexpr bool fallback_reads_array = is_array_leaf_v<C> || is_reduce_v<C> || !stays_in_group<C, R, M>;

// f(axis, extent) for each row axis of the group (rank R, row axes M) and the extent that a
// reduction joining the group reduces along it, every joining reduction in pre-order. (A reduction
// that does not join is a group of its own, visited there.)
template <std::size_t R, std::uint32_t M, class E, class F>
void for_each_row_extent(const E& e, F&& f) {
  if constexpr (is_reduce_v<E> && joins_group<E, R, M>) {
    constexpr std::size_t rc = E::child_rank;
    const auto cs = e.child.shape();
    for (std::size_t d = 0; d < rc; ++d)
      if ((M >> (d + R - rc)) & 1) f(d + R - rc, cs[d]);
    for_each_row_extent<R, M>(e.child, f);
  } else if constexpr (requires { e.args; }) {
    for_each(e.args, [&](const auto& a) { for_each_row_extent<R, M>(a, f); });
  }
}

// A squeezed reduction is its reduction's group, written through a view without the axis.
template <class E>
struct unsqueezed {
  using type = E;
};
template <std::size_t K, class I>
struct unsqueezed<squeezed_reduce<K, I>> {
  using type = I;
};

// The node of that reduction.
template <class A>
const auto& unsqueezed_node(const A& a) {
  if constexpr (is_squeezed_v<A>) return a.inner;
  else return a;
}

// Does every reduction that joins the group reduce exactly the group's extents along its row
// axes? (Otherwise the run-time shapes force a split.)
template <std::size_t R, std::uint32_t M, class E>
bool fits_group(const E& e, const shape_t<R>& shape) {
  bool ok = true;
  for_each_row_extent<R, M>(e, [&](std::size_t d, index_t extent) { ok = ok && extent == shape[d]; });
  return ok;
}

// An elementwise root of extent 1 along every row axis over reductions of longer rows
// (logsumexp: m + log(sum(exp(x - m))) with m the max, reduced axes kept): one value per row. Its
// group runs over the reductions' extents (`shape` widened to them) and writes the root once per
// row, as a reduction root does; every leaf of the root outside the reductions has extent 1
// along the row axes (else the root would not), so evaluating it at the row's first element is
// exact. False (shape unchanged) where that does not hold; the group then splits.
template <std::size_t R, std::uint32_t M, class E>
bool widen_to_rows(const E& e, shape_t<R>& shape) {
  if constexpr (is_reduce_v<E> || M == 0) {
    return false;
  } else {
    for (std::size_t d = 0; d < R; ++d)
      if (((M >> d) & 1) && shape[d] != 1) return false;
    shape_t<R> wide = shape;
    bool any = false;
    for_each_row_extent<R, M>(e, [&](std::size_t d, index_t extent) { wide[d] = extent, any = true; });
    if (!any || !fits_group<R, M>(e, wide)) return false;
    shape = wide;
    return true;
  }
}

// The groups that the nodes below E need beyond the group (R, M) that E belongs to, in the
// executor's order: each reduction that does not join (also directly under another reduction:
// var(var(x, axis<0>), axis<1>)), then the groups below it. keys[n] names each by its type
// (type_key); covers[n] names the inner reduction that a column pair computes with it (else null).
template <std::size_t R, std::uint32_t M, class E>
constexpr void groups_below(const void** keys, const void** covers, std::size_t& n);

template <std::size_t R, std::uint32_t M, class A>
constexpr void operand_groups(const void** keys, const void** covers, std::size_t& n) {
  if constexpr (stays_in_group<A, R, M>) {
    groups_below<R, M, A>(keys, covers, n);
  } else {
    using G = typename unsqueezed<A>::type;  // the reduction whose group it is
    keys[n] = &type_key<A>;
    if constexpr (column_pair_v<G>) {
      covers[n++] = &type_key<typename column_pair<G>::inner_type>;  // its operand has no reductions
    } else {
      covers[n++] = nullptr;
      groups_below<group_of<G>::rank, group_of<G>::mask, G>(keys, covers, n);
    }
  }
}

template <std::size_t R, std::uint32_t M, class E>
constexpr void groups_below(const void** keys, const void** covers, std::size_t& n) {
  if constexpr (is_reduce_v<E>) {
    operand_groups<R, M, typename E::child_type>(keys, covers, n);
  } else if constexpr (E::kind == node_kind::elementwise) {
    [&]<class... A>(const tuple<A...>*) {
      (operand_groups<R, M, A>(keys, covers, n), ...);
    }(static_cast<const decltype(E::args)*>(nullptr));
  }
}

// The plan of E: its root's group, and one group for each reduction below that does not join
// it, counted once where the same reduction occurs again (core/computed_reductions.hpp reads the
// first result back: batch-norm statistics hold mean(x) twice). The same type stands for the
// same data here; where it is not (mean(x, axis<0>) + mean(y, axis<0>), x and y of one type), the
// run-time plan (plan/report.hpp) lists one kernel more and says why. A column pair
// (core/column_pair.hpp: var(x, axis<0>), the sum in softmax(x, axis<0>)) is one kernel with its
// inner mean or max, which then counts nowhere else (the CPU's plan; the CUDA executor runs the
// two as kernels of their own).
template <class E>
struct fusion {
  using group = group_of<typename unsqueezed<E>::type>;
  static constexpr std::size_t kernels = [] {
    using G = typename unsqueezed<E>::type;
    if constexpr (column_pair_v<G>) {
      return std::size_t{1};
    } else {
      const void* keys[reduction_count_v<G> + 1] = {};
      const void* covers[reduction_count_v<G> + 1] = {};
      std::size_t n = 0;
      groups_below<group::rank, group::mask, G>(keys, covers, n);
      std::size_t distinct = 0;
      for (std::size_t i = 0; i < n; ++i) {
        bool seen = false;
        for (std::size_t j = 0; j < i; ++j) seen = seen || keys[j] == keys[i];
        for (std::size_t j = 0; j < n; ++j) seen = seen || covers[j] == keys[i];
        distinct += seen ? 0 : 1;
      }
      return 1 + distinct;
    }
  }();
};

// Interior nodes: those an unfused framework runs as a kernel each.
template <class E>
constexpr std::size_t interior_nodes() {
  if constexpr (is_eager_unit_v<E>) {
    return 1 + interior_nodes<unit_operand_t<E>>();  // var, logsumexp: one node (spec section 5)
  } else if constexpr (is_squeezed_v<E>) {
    return interior_nodes<typename E::inner_type>();
  } else if constexpr (is_rank_lift_v<E>) {
    return interior_nodes<std::remove_cvref_t<decltype(get<0>(std::declval<const E&>().args))>>();  // index arithmetic
  } else if constexpr (is_reduce_v<E>) {
    return 1 + interior_nodes<typename E::child_type>();
  } else if constexpr (E::kind == node_kind::elementwise) {
    return []<class... A>(const tuple<A...>*) {
      return (std::size_t{1} + ... + interior_nodes<A>());
    }(static_cast<const decltype(E::args)*>(nullptr));
  } else {
    return 0;
  }
}

}  // namespace detail

// Fused kernels in the plan of E (a lone leaf is one copy kernel), from its type alone. The
// run-time plan (fuse::plan) lists more where run-time shapes break a group or the CPU row
// kernel cannot read its rows (each of the group's reductions a kernel then, plan/report.hpp).
template <class E>
inline constexpr std::size_t kernels_v = detail::fusion<std::remove_cvref_t<E>>::kernels;

// Kernels in the eager plan of E: one per interior node (at least one: a copy).
template <class E>
inline constexpr std::size_t eager_kernels_v = std::max<std::size_t>(1, detail::interior_nodes<std::remove_cvref_t<E>>());

}  // namespace fuse
