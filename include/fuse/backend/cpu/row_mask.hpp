// fuse/backend/cpu/row_mask.hpp - a phase over a masked row reduces only the part the mask keeps.
//
// A causal or padding mask, `where(iota<2>(s) <= iota<1>(s), x, -inf)` under a softmax, keeps an
// interval of each row and puts a row constant (-inf) everywhere else. There the phase's operand
// is one value v per row (the max phase's -inf, the sum phase's exp(-inf - max) = 0), and when v
// is idempotent under the reduction, bit for bit (0 + 0 = 0, max(v, v) = v, NaN + NaN = NaN), the
// masked elements together contribute what one does. So the phase reduces the kept interval, then
// combines v once: a causal softmax reads and exponentiates half its rows, and the gather of a
// cross-entropy, `sum(where(iota == label, z, 0))`, reads one element a row. (A v that is not
// idempotent, as 1 under a sum or -0 under a product, reduces the whole row as before.)
//
// Which phases qualify is decided per kernel (row_mask_of): the condition compares an index that
// grows along the row with a value constant along it (`<`, `<=`, `>`, `>=`, `==`, or `!=` where
// the mask keeps its false side), or is a conjunction of such comparisons kept where it holds; the
// masked branch and everything else in the operand outside the where are constant along the row.
// Per row the interval comes from a guess (the index's first two values) or a binary search, and
// is checked against the condition itself at both sides of both edges; a row where that check
// fails is reduced whole. Rows of 256 elements or fewer are not narrowed.
#pragma once

#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "fuse/backend/cpu/prefetch.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/core/evaluator_match.hpp"
#include "fuse/ops/compare.hpp"
#include "fuse/ops/select.hpp"

namespace fuse::detail {

// FUSE_ROW_MASK=0 turns the narrowing off (to measure it).
#ifndef FUSE_ROW_MASK
#define FUSE_ROW_MASK 1
#endif

template <class E>
inline constexpr bool is_affine_eval_v = false;
template <std::size_t R>
inline constexpr bool is_affine_eval_v<affine_eval<R>> = true;

template <class F>
inline constexpr bool is_index_compare_fn_v =
    std::is_same_v<F, fn::less> || std::is_same_v<F, fn::less_equal> || std::is_same_v<F, fn::greater> ||
    std::is_same_v<F, fn::greater_equal> || std::is_same_v<F, fn::equal> || std::is_same_v<F, fn::not_equal>;

// cmp(a, b) with cmp a comparison and a or b an index (iota); an index condition is one, or a
// conjunction of index conditions (a sliding window, a causal mask and a padding length).
template <class E>
inline constexpr bool is_index_compare_v = false;
template <class Cv, class F, class X, class Y>
inline constexpr bool is_index_compare_v<map_eval<bool, Cv, F, X, Y>> =
    is_index_compare_fn_v<F> && (is_affine_eval_v<X> || is_affine_eval_v<Y>);
template <class E>
inline constexpr bool is_index_condition_v = is_index_compare_v<E>;
template <class Cv, class X, class Y>
inline constexpr bool is_index_condition_v<map_eval<bool, Cv, fn::logical_and, X, Y>> =
    is_index_condition_v<X> && is_index_condition_v<Y>;

// Does an index condition hold a not_equal (whose set is not an interval)?
template <class E>
inline constexpr bool any_not_equal_v = false;
template <class Cv, class X, class Y>
inline constexpr bool any_not_equal_v<map_eval<bool, Cv, fn::not_equal, X, Y>> = true;
template <class Cv, class X, class Y>
inline constexpr bool any_not_equal_v<map_eval<bool, Cv, fn::logical_and, X, Y>> = any_not_equal_v<X> || any_not_equal_v<Y>;

// where(c, ...) with c an index condition.
template <class E>
inline constexpr bool is_index_where_v = false;
template <class R, class C, class Cond, class A, class B>
inline constexpr bool is_index_where_v<map_eval<R, C, fn::where, Cond, A, B>> = is_index_condition_v<Cond>;

// The first such where in E (pre-order, through elementwise nodes), or void.
template <class E>
struct index_where {
  using type = void;
};
template <class R, class C, class F, class... A>
struct index_where<map_eval<R, C, F, A...>> {
  using type = std::conditional_t<is_index_where_v<map_eval<R, C, F, A...>>, map_eval<R, C, F, A...>,
                                  typename first_non_void<typename index_where<A>::type...>::type>;
};
template <class E>
using index_where_t = typename index_where<E>::type;

// A where's branch chosen at compile time (Keep: the true one), as the where gives it: its map_eval
// converts the branches first and the result after. The condition and the other branch go unused,
// and the compiler drops them (arithmetic and loads). (A where deciding by a run-time bool kept
// them: a causal softmax ran 4x slower, its exp loop no longer vectorised.)
template <bool Keep>
struct kept_branch {
  static constexpr const char* name = "kept_branch";
  static constexpr int flops = 0;
  template <class C, class A, class B>
  FUSE_HOST_DEVICE FUSE_INLINE constexpr auto operator()(C, A a, B b) const {
    if constexpr (Keep) return a;
    else return b;
  }
};
template <bool Keep, class R, class C, class Cond, class A, class B>
auto kept_where(const map_eval<R, C, fn::where, Cond, A, B>& w) {
  return map_eval<R, C, kept_branch<Keep>, Cond, A, B>{kept_branch<Keep>{}, w.args};
}

// Is E constant along any row by its type (constants, row values, computations of them)?
template <class E>
inline constexpr bool row_constant_type_v = false;
template <class T>
inline constexpr bool row_constant_type_v<const_eval<T>> = true;
template <class T, std::size_t K>
inline constexpr bool row_constant_type_v<slot_eval<T, K>> = true;
template <class T, class I>
inline constexpr bool row_constant_type_v<invariant_eval<T, I>> = true;
template <class R, class C, class F, class... A>
inline constexpr bool row_constant_type_v<map_eval<R, C, F, A...>> = (row_constant_type_v<A> && ...);

// Which side a where W may keep: its true side unless only the true branch is constant by type,
// its false side unless the false branch is (so that a kernel compiles the kept loop once where
// the types tell, twice where strides must).
template <class W>
inline constexpr bool may_keep_true_v = !row_constant_type_v<std::remove_cvref_t<decltype(get<1>(std::declval<const W&>().args))>> ||
                                        row_constant_type_v<std::remove_cvref_t<decltype(get<2>(std::declval<const W&>().args))>>;
template <class W>
inline constexpr bool may_keep_false_v = !row_constant_type_v<std::remove_cvref_t<decltype(get<2>(std::declval<const W&>().args))>>;

// Rows of at most this many elements are not narrowed: finding the interval, the masked value
// and the evaluators with the where replaced cost ~50 ns a row (two phases), which a causal
// softmax over rows of 64 paid as 2.0 -> 2.9 ns per element (one thread, in cache); rows of 256
// came out even, of 512 won (0.77 -> 0.57).
inline constexpr index_t row_mask_min_elements = 256;

// How a phase's rows are narrowed, decided once per kernel.
struct row_mask {
  bool on = false;
  unsigned index_first = 0;  // bit k: the index is the first operand of comparison k (pre-order)
  bool keep_true = false;    // the kept elements are where the condition holds
};

// At most this many comparisons in a condition (index_first's bits).
inline constexpr int max_mask_compares = 16;

// Is every tracker of ev constant along the row (stride 0 along axis R - 1)?
template <std::size_t R, class Ev>
bool constant_along_row(Ev ev) {  // a copy: for_each_tracker is not const
  bool constant = true;
  ev.for_each_tracker([&](const tracker& t) { constant = constant && t.stride[R - 1] == 0; });
  return constant;
}

// The stride along the row of an affine index (0 for anything else).
template <std::size_t R, class Ev>
index_t index_stride(Ev ev) {
  index_t s = 0;
  if constexpr (is_affine_eval_v<Ev>) ev.for_each_tracker([&](const tracker& t) { s = t.stride[R - 1]; });
  else (void)ev;
  return s;
}

// For each comparison of the index condition c (pre-order, k counting them): which operand is the
// index growing along the row (bit k of first), the other one staying put; false if neither.
template <std::size_t R, class C>
bool index_sides(const C& c, unsigned& first, int& k) {
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(c.f)>, fn::logical_and>) {
    return index_sides<R>(get<0>(c.args), first, k) && index_sides<R>(get<1>(c.args), first, k);
  } else {
    if (k >= max_mask_compares) return false;
    const int bit = k++;
    if (index_stride<R>(get<0>(c.args)) > 0 && constant_along_row<R>(get<1>(c.args))) return first |= 1u << bit, true;
    return index_stride<R>(get<1>(c.args)) > 0 && constant_along_row<R>(get<0>(c.args));
  }
}

// The narrowing of a phase whose operand is ev (alias: the kernel's repeated phases).
template <std::size_t R, class Ev>
row_mask row_mask_of(const Ev& ev, const int* alias) {
  using W = index_where_t<Ev>;
  if constexpr (std::is_void_v<W> || !FUSE_ROW_MASK) {
    (void)ev, (void)alias;
    return {};
  } else {
    const W& w = first_occurrence<W>(ev);
    if (!all_occurrences_equal(ev, w, alias)) return {};  // two masks of one shape, other values
    row_mask m;
    int k = 0;
    if (!index_sides<R>(get<0>(w.args), m.index_first, k)) return {};
    // The masked branch, and the operand with the where replaced by it, constant along the row.
    if (may_keep_true_v<W> && constant_along_row<R>(substitute<W>(ev, get<2>(w.args)))) m.keep_true = true;
    else if (!may_keep_false_v<W> || !constant_along_row<R>(substitute<W>(ev, get<1>(w.args)))) return {};
    // The kept elements an interval: not the complement of an equality or of a conjunction.
    using F = std::remove_cvref_t<decltype(get<0>(w.args).f)>;
    if ((std::is_same_v<F, fn::equal> || std::is_same_v<F, fn::logical_and>) && !m.keep_true) return {};
    if (any_not_equal_v<std::remove_cvref_t<decltype(get<0>(w.args))>> && m.keep_true) return {};
    m.on = true;
    return m;
  }
}

// First i in [b, e) with p(i), p false then true along [b, e); e if none. hint: a guess, taken
// when p says it is the edge (two evaluations), else a binary search.
template <class P>
index_t first_where(index_t b, index_t e, index_t hint, P p) {
  if (hint >= b && hint <= e && (hint == b || !p(hint - 1)) && (hint == e || p(hint))) return hint;
  while (b < e) {
    const index_t mid = b + (e - b) / 2;
    if (p(mid)) e = mid;
    else b = mid + 1;
  }
  return b;
}

// Where along the row an affine index first reaches c (at: 0) or passes it (at: 1), computed in
// double from its first two values: a guess for first_where (the conversions may round).
template <class Index, class C>
index_t index_guess(index_t b, index_t e, Index index, C c, int at) {
  if constexpr (std::is_arithmetic_v<C>) {
    const double g0 = double(index(b)), slope = e - b > 1 ? double(index(b + 1)) - g0 : 1.0;
    const double steps = slope == 1.0 ? double(c) - g0 : (double(c) - g0) / slope;  // (a division's latency per row)
    if (!(steps > -1.0)) return b;  // also NaN
    if (!(steps < double(e - b))) return e;
    return b + index_t(at == 0 ? std::ceil(steps) : std::floor(steps) + 1);
  } else {
    (void)e, (void)index, (void)c, (void)at;
    return b;
  }
}

// Where a comparison holds along [b, e): [lo, hi), or for not_equal everywhere else.
struct compare_span {
  index_t lo, hi;
  bool outside = false;  // not_equal: it holds outside [lo, hi) (where the equality does not)
};

// The span of the comparison cond with the index as its operand I.
template <std::size_t I, class Cond>
compare_span condition_span(const Cond& cond, index_t b, index_t e) {
  using Cv = typename Cond::convert;
  using F = std::remove_cvref_t<decltype(cond.f)>;
  // g(i), the index, and c, the value it is compared with, as the comparison converts them.
  const auto& index = get<I>(cond.args);
  const auto c = Cv::template apply<1 - I>(get<1 - I>(cond.args).template at<true>(b));
  auto raw = [&](index_t i) { return index.template at<true>(i); };
  auto g = [&](index_t i) { return Cv::template apply<I>(raw(i)); };
  // g does not decrease along the row: g < c on [b, below), g > c on [above, e).
  const index_t below = first_where(b, e, index_guess(b, e, raw, c, 0), [&](index_t i) { return !fn::less{}(g(i), c); });
  const index_t above = first_where(below, e, index_guess(below, e, raw, c, 1), [&](index_t i) { return fn::less{}(c, g(i)); });
  constexpr bool lt = std::is_same_v<F, fn::less>, le = std::is_same_v<F, fn::less_equal>;
  constexpr bool gt = std::is_same_v<F, fn::greater>, ge = std::is_same_v<F, fn::greater_equal>;
  if constexpr (lt || le || gt || ge) {
    // Index first: g < c holds on [b, below), g <= c on [b, above), g > c on [above, e), g >= c on
    // [below, e). Index second: c < g is g > c, c <= g is g >= c, and so on.
    const bool prefix = I == 0 ? (lt || le) : (gt || ge);
    const index_t t = prefix == (lt || gt) ? below : above;
    return prefix ? compare_span{b, t} : compare_span{t, e};
  } else {
    return {below, above, std::is_same_v<F, fn::not_equal>};
  }
}

// condition_span with the index first or second (index_first), compiled only for the sides whose
// type is an index.
template <class C>
compare_span compare_span_of(const C& c, bool index_first, index_t b, index_t e) {
  constexpr bool x_index = is_affine_eval_v<std::remove_cvref_t<decltype(get<0>(c.args))>>;
  constexpr bool y_index = is_affine_eval_v<std::remove_cvref_t<decltype(get<1>(c.args))>>;
  if constexpr (x_index) {
    if (index_first || !y_index) return condition_span<0>(c, b, e);
  }
  if constexpr (y_index) return condition_span<1>(c, b, e);
  else return (void)index_first, compare_span{b, e};  // not reached (is_index_compare_v)
}

// The set where the index condition c holds (kept where true: no not_equal in it), intersected
// into [lo, hi) (k: as index_sides).
template <class C>
void intersect_condition(const C& c, const row_mask& m, int& k, index_t b, index_t e, index_t& lo, index_t& hi) {
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(c.f)>, fn::logical_and>) {
    intersect_condition(get<0>(c.args), m, k, b, e, lo, hi);
    intersect_condition(get<1>(c.args), m, k, b, e, lo, hi);
  } else {
    const compare_span s = compare_span_of(c, (m.index_first >> k++) & 1u, b, e);
    lo = std::max(lo, s.lo);
    hi = std::max(lo, std::min(hi, s.hi));
  }
}

// The kept interval [lo, hi) of the row ev is seeked to, within [b, e); false if it cannot be
// trusted (the condition disagrees at an edge: a NaN bound), and the whole row is reduced.
template <class Ev>
bool kept_interval(const Ev& ev, const row_mask& m, index_t b, index_t e, index_t& lo, index_t& hi) {
  using W = index_where_t<Ev>;
  const auto& cond = get<0>(first_occurrence<W>(ev).args);
  using C = std::remove_cvref_t<decltype(cond)>;
  lo = b, hi = e;
  if (m.keep_true) {
    int k = 0;
    intersect_condition(cond, m, k, b, e, lo, hi);
  } else if constexpr (is_index_compare_v<C>) {  // one comparison (row_mask_of): where it does not hold
    const compare_span s = compare_span_of(cond, m.index_first & 1u, b, e);
    if (s.outside) lo = s.lo, hi = s.hi;  // not_equal: where equal
    else if (s.lo == b) lo = s.hi;        // a prefix (row_mask_of excludes equal): the rest
    else hi = s.lo;                       // a suffix
  } else {
    return false;
  }
  // The edges, checked against the condition itself.
  auto kept = [&](index_t i) { return bool(cond.template at<true>(i)) == m.keep_true; };
  if (lo < hi && !(kept(lo) && kept(hi - 1))) return false;
  if (lo > b && kept(lo - 1)) return false;
  if (hi < e && kept(hi)) return false;
  return true;
}

}  // namespace fuse::detail
