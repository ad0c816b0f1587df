// fuse/core/row_iteration.hpp - the iteration space of a row kernel: a kernel whose group holds
// reductions. Its axes are split into outer axes (parallel) and row axes (the reduced ones, moved
// last). For each outer index the kernel runs its phases - one per reduction, in dependency order
// (post-order numbering of slots) - and then the epilogue, the root with every reduction replaced
// by its row value:
//   for each row o:  slot[k] = reduce_i phase_k(o, i)   for k = 0, 1, ...
//                    out(o, i) = epilogue(o, i, slots)   (or out(o) = slot[root] for a reduction root)
#pragma once

#include <bit>
#include <cstring>
#include <iterator>

#include "fuse/core/evaluator_match.hpp"
#include "fuse/core/iteration.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse::detail {

// idx[first..last) = the row-major multi-index of q (< the product of shape[first..last)) over
// shape[first..last). The first axis takes what is left: no division (a row kernel over a matrix
// divides nothing per row).
FUSE_HOST_DEVICE FUSE_INLINE void unflatten(index_t q, const index_t* shape, std::size_t first, std::size_t last,
                                            index_t* idx) {
  if (last <= first) return;
  for (std::size_t d = last - 1; d > first; --d) {
    const index_t p = q / shape[d];
    idx[d] = q - p * shape[d];
    q = p;
  }
  idx[first] = q;
}

// unflatten over shape[0..N) with N known at compile time: every index is a constant after
// unrolling, so that a GPU kernel keeps idx in registers (a run-time bound puts it in local memory).
template <std::size_t N>
FUSE_HOST_DEVICE FUSE_INLINE void unflatten_leading(index_t q, const index_t* shape, index_t* idx) {
  if constexpr (N > 1) {
    const index_t p = q / shape[N - 1];
    idx[N - 1] = q - p * shape[N - 1];
    unflatten_leading<N - 1>(p, shape, idx);
  } else if constexpr (N == 1) {
    idx[0] = q;
  }
}

// One reduction of a row kernel: its operand's evaluator, reduced with Op into slot K.
template <class Op, class Acc, class Result, std::size_t K, class ChildEval>
struct phase_eval {
  using op = Op;
  using acc_type = Acc;
  using result_type = Result;
  using child_type = ChildEval;
  static constexpr std::size_t slot = K;
  ChildEval child;
  index_t count;  // elements reduced per row (the divisor of mean)

  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot* s) { child.bind(s); }
  template <class F>
  void for_each_tracker(F&& f) { child.for_each_tracker(f); }
};

// Phases P and Q compute the same kind of value from operands of the same shape (up to slot
// numbers): a repeat, if their operands also hold the same values (same_value).
template <class P, class Q>
inline constexpr bool same_phase_shape_v = std::is_same_v<typename P::op, typename Q::op> &&
                                           std::is_same_v<typename P::acc_type, typename Q::acc_type> &&
                                           std::is_same_v<typename P::result_type, typename Q::result_type> &&
                                           same_shape<typename P::child_type, typename Q::child_type>::value;

// Phase K repeats phase j: slots[K] = the slot phase j wrote. Every index is a constant after
// unrolling (j is compared, not used as an index), so that a GPU kernel keeps its slots in
// registers; a run-time index would put the array in local memory.
template <std::size_t K, class Phases>
FUSE_HOST_DEVICE FUSE_INLINE void copy_alias_slot(const Phases& phases, row_slot* slots, int j) {
  int q = 0;
  for_each(phases, [&](const auto& p) {
    if (q++ == j) slots[K] = slots[std::remove_cvref_t<decltype(p)>::slot];
  });
}

// One row's phases in slot order: a first occurrence gets slot = finalize(reduce(p)), its operand
// positioned at the row first; a repeated phase copies the slot of the phase it repeats, in place
// (a later phase may read it: layer norm's variance reads the mean it repeats). reduce(p) returns
// the phase's total over the row (a GPU kernel reduces across its threads there).
template <class Phases, class Reduce>
FUSE_HOST_DEVICE FUSE_INLINE void run_phases(Phases& phases, const int* alias, row_slot* slots, const index_t* idx,
                                             Reduce&& reduce) {
  int k = 0;
  for_each(phases, [&](auto& p) {
    using P = std::remove_cvref_t<decltype(p)>;
    if (alias[k] < 0) {
      p.child.seek(idx);
      write_slot(slots[P::slot], P::op::template finalize<typename P::result_type>(reduce(p), p.count));
    } else {
      copy_alias_slot<P::slot>(phases, slots, alias[k]);
    }
    ++k;
  });
}

template <class Acc>
auto fold_cat(const Acc& acc) { return acc; }
template <class Acc, class T, class... Rest>
auto fold_cat(const Acc& acc, const T& t, const Rest&... rest) { return fold_cat(tuple_cat(acc, t), rest...); }

// The phases of e in slot order.
template <std::size_t R, std::size_t Base, class E>
auto collect_phases(const E& e, const shape_t<R>& shape) {
  if constexpr (is_reduce_v<E>) {
    using C = typename E::child_type;
    auto child_eval = e.child.template evaluator<R, Base>(shape);
    using P = phase_eval<typename E::op, typename E::acc_type, typename E::value_type, Base + reduction_count_v<C>,
                         decltype(child_eval)>;
    return tuple_cat(collect_phases<R, Base>(e.child, shape), tuple<P>(P{child_eval, e.count()}));
  } else if constexpr (requires { e.args; }) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto cat = [](auto... t) {
        tuple<> acc;
        return fold_cat(acc, t...);
      };
      return cat(collect_phases<R, Base + E::template slots_before<I>>(get<I>(e.args), shape)...);
    }(std::make_index_sequence<decltype(e.args)::size>{});
  } else {
    return tuple<>{};
  }
}

template <class T, std::size_t R, class Eval, class Phases>
struct row_iteration {
  static constexpr std::size_t rank = R;
  static constexpr std::size_t phase_count = Phases::size;
  T* out;
  index_t out_stride[R];
  index_t shape[R];
  std::size_t inner_first;  // axes [inner_first, R) are the row (reduced) axes
  Eval eval;
  Phases phases;
  int alias[phase_count > 0 ? phase_count : 1];  // alias[k] = j: phase k repeats phase j (copy its slot)
  bool unit;             // every tracker has stride 1 along the last axis
  bool root_reduction;   // the output is one value per row

  FUSE_HOST_DEVICE index_t rows() const {
    index_t n = 1;
    for (std::size_t d = 0; d < inner_first; ++d) n *= shape[d];
    return n;
  }
  FUSE_HOST_DEVICE index_t row_elements() const {
    index_t n = 1;
    for (std::size_t d = inner_first; d < R; ++d) n *= shape[d];
    return n;
  }
  FUSE_HOST_DEVICE index_t size() const { return rows() * row_elements(); }
  // Nothing to write: no rows, or empty rows of an elementwise output. (A reduction over an empty
  // row still writes its identity.)
  bool empty() const { return rows() == 0 || (!root_reduction && row_elements() == 0); }
  template <class F>
  void for_each_tracker(F&& f) {
    eval.for_each_tracker(f);
    for_each(phases, [&](auto& p) { p.for_each_tracker(f); });
  }
};

// The same iteration (output, shape, aliases) with other evaluators for the epilogue and phases.
template <class T, std::size_t R, class Ev, class Ph, class Ev2, class Ph2>
row_iteration<T, R, Ev2, Ph2> with_evaluators(const row_iteration<T, R, Ev, Ph>& it, const Ev2& eval, const Ph2& phases) {
  static_assert(Ph2::size == Ph::size, "fuse: the phases keep their slots and aliases");
  row_iteration<T, R, Ev2, Ph2> r{it.out, {}, {}, it.inner_first, eval, phases, {}, it.unit, it.root_reduction};
  for (std::size_t d = 0; d < R; ++d) r.out_stride[d] = it.out_stride[d], r.shape[d] = it.shape[d];
  for (std::size_t k = 0; k < std::size(it.alias); ++k) r.alias[k] = it.alias[k];
  return r;
}

// Moves the axes in `mask` last (stable), for the shape and every stride set.
template <std::size_t R>
void move_axes_last(index_t* shape, const stride_sets& sets, std::uint32_t mask) {
  std::size_t order[R];
  std::size_t k = 0;
  for (std::size_t d = 0; d < R; ++d)
    if (!((mask >> d) & 1)) order[k++] = d;
  for (std::size_t d = 0; d < R; ++d)
    if ((mask >> d) & 1) order[k++] = d;
  auto permute = [&](index_t* a) {
    index_t tmp[R];
    for (std::size_t d = 0; d < R; ++d) tmp[d] = a[order[d]];
    std::copy(tmp, tmp + R, a);
  };
  permute(shape);
  for (auto* s : sets) permute(s);
}

// dst: the destination (for a reduction root, the reduced shape); shape: the group's shape (R axes);
// mask: the row axes of the group. one_per_row: an elementwise root written once per row, as a
// reduction root is (widen_to_rows, plan/fusion.hpp).
template <std::size_t R, class T, std::size_t RD, class E>
auto make_row_iteration(const destination<T, RD>& dst, const E& e, const shape_t<R>& shape, std::uint32_t mask,
                        bool one_per_row = false) {
  // Evaluator and phases built in place, not copied (see make_iteration).
  using Ev = decltype(e.template evaluator<R, 0>(shape));
  using Phases = decltype(collect_phases<R, 0>(e, shape));
  row_iteration<T, R, Ev, Phases> it{dst.data, {}, {}, 0, e.template evaluator<R, 0>(shape), collect_phases<R, 0>(e, shape), {},
                                     true, is_reduce_v<E> || one_per_row};
  std::copy(shape.begin(), shape.end(), it.shape);
  // The destination's axes, aligned on the trailing group axes; stride 0 where it has extent 1
  // (a reduction root writes one value per row).
  for (std::size_t d = 0; d < R; ++d) it.out_stride[d] = 0;
  for (std::size_t j = 0; j < RD; ++j)
    if (dst.shape[j] != 1) it.out_stride[R - RD + j] = dst.strides[j];

  // How each set reads where it stays put along the row: the contiguous loops read an affine
  // index (iota) right at a stride of 0 too (affine_eval), on the CPU and the GPU alike; the
  // CPU's other such leaves (along_row) are its own choice (cpu_reading, row_kernel.hpp).
  stride_sets sets{it.out_stride};
  small_vector<along_row, stride_sets_in_place> rest{along_row::strided};
  auto add = [&](const tracker& t) {
    sets.push_back(t.stride);
    rest.push_back(at_rest(t));
  };
  it.eval.for_each_tracker(add);
  for_each(it.phases, [&](auto& p) { p.for_each_tracker(add); });
  move_axes_last<R>(it.shape, sets, mask);
  it.inner_first = R - static_cast<std::size_t>(std::popcount(mask));
  collapse_axes(it.shape, 0, it.inner_first, sets.data(), sets.size());
  collapse_axes(it.shape, it.inner_first, R - it.inner_first, sets.data(), sets.size());
  // The collapse leaves merged row axes last and extent 1 before them (a contiguous operand's
  // row axes become one): those leading axes join the outer ones, so that such a row is one axis
  // for the kernels (one-axis and unit-stride paths; on the GPU no division per element).
  while (it.inner_first < R - 1 && it.shape[it.inner_first] == 1) ++it.inner_first;
  if (it.shape[R - 1] > 1)
    for (std::size_t k = it.root_reduction ? 1 : 0; k < sets.size(); ++k) {
      const along_row r = reading_along_row(sets[k][R - 1], rest[k]);
      it.unit = it.unit && (r == along_row::contiguous || r == along_row::index);
    }

  // A phase identical to an earlier one (the same reduction written twice, as softmax's max) is
  // computed once: the same reduction of the same operand (evaluator_match.hpp).
  std::fill(it.alias, it.alias + (it.phase_count > 0 ? it.phase_count : 1), -1);
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    auto check = [&]<std::size_t k>(std::integral_constant<std::size_t, k>) {
      const auto& pk = get<k>(it.phases);
      using PK = std::remove_cvref_t<decltype(pk)>;
      [&]<std::size_t... J>(std::index_sequence<J...>) {
        auto same = [&](const auto& pj) {
          using PJ = std::remove_cvref_t<decltype(pj)>;
          if constexpr (same_phase_shape_v<PJ, PK>)
            return pj.count == pk.count && same_value(pj.child, pk.child, it.alias);
          else
            return false;
        };
        (void)same;  // unused for the first phase (no earlier J)
        ((it.alias[k] < 0 && same(get<J>(it.phases)) ? (void)(it.alias[k] = int(J)) : (void)0), ...);
      }(std::make_index_sequence<k>{});
    };
    (check(std::integral_constant<std::size_t, K>{}), ...);
  }(std::make_index_sequence<Phases::size>{});
  return it;
}

}  // namespace fuse::detail
