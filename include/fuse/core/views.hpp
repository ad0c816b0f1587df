// fuse/core/views.hpp - strided views of a leaf: transpose, permute, slice, reshape.
// They are index arithmetic over the same memory: no copy, no kernel.
#pragma once

#include <algorithm>

#include "fuse/core/tensor.hpp"

namespace fuse {

namespace detail {
template <class L>
concept viewable = is_view_v<std::remove_cvref_t<L>> || (is_tensor_v<std::remove_cvref_t<L>> && std::is_lvalue_reference_v<L>);

// The view of a tensor lvalue, or the view itself.
template <class L>
constexpr auto as_view(L&& l) {
  if constexpr (is_tensor_v<std::remove_cvref_t<L>>) return l.view();
  else return l;
}

template <class V>
using element_of = typename std::remove_cvref_t<decltype(as_view(std::declval<V>()))>::element_type;
template <class V>
inline constexpr memory_space space_of = std::remove_cvref_t<V>::space;

template <class V, std::size_t R>
constexpr auto make_strided(V&& v, index_t offset, const shape_t<R>& shape, const shape_t<R>& strides) {
  auto base = as_view(v);
  using T = typename decltype(base)::element_type;
  return strided_view<T, R, decltype(base)::space>(base.data() + offset, extents_from_shape<R, dextents<R>>(shape), strides);
}

template <std::size_t... P>
constexpr bool is_permutation() {
  constexpr std::array<std::size_t, sizeof...(P)> p{P...};
  for (std::size_t i = 0; i < sizeof...(P); ++i)
    if (std::count(p.begin(), p.end(), i) != 1) return false;
  return true;
}

template <int K, std::size_t R>
constexpr std::size_t normalize_axis() {
  static_assert(K >= -static_cast<int>(R) && K < static_cast<int>(R), "fuse::axis: axis out of range for this rank");
  return static_cast<std::size_t>(K < 0 ? K + static_cast<int>(R) : K);
}
}  // namespace detail

// Axes reordered: result axis i is source axis P[i] (numpy.transpose(v, P)).
template <std::size_t... P, class V>
  requires detail::viewable<V>
constexpr auto permute(V&& v) {
  constexpr std::size_t R = std::remove_cvref_t<V>::rank;
  static_assert(sizeof...(P) == R, "fuse::permute: give one axis per dimension");
  static_assert(detail::is_permutation<P...>(), "fuse::permute: the axes must be a permutation of 0..rank-1");
  constexpr std::array<std::size_t, sizeof...(P)> p{P...};
  const auto shape = v.shape();
  const auto strides = v.strides();
  shape_t<R> s{}, st{};
  for (std::size_t i = 0; i < R; ++i) s[i] = shape[p[i]], st[i] = strides[p[i]];
  return detail::make_strided(std::forward<V>(v), 0, s, st);
}

// All axes reversed, like numpy.transpose(v).
template <class V>
  requires detail::viewable<V>
constexpr auto transpose(V&& v) {
  constexpr std::size_t R = std::remove_cvref_t<V>::rank;
  const auto shape = v.shape();
  const auto strides = v.strides();
  shape_t<R> s{}, st{};
  for (std::size_t i = 0; i < R; ++i) s[i] = shape[R - 1 - i], st[i] = strides[R - 1 - i];
  return detail::make_strided(std::forward<V>(v), 0, s, st);
}

// Part of axis K: [begin, end) with step, as Python slicing (negatives count from the end, clamped).
template <int K, class V>
  requires detail::viewable<V>
constexpr auto slice(V&& v, index_t begin, index_t end, index_t step = 1) {
  constexpr std::size_t R = std::remove_cvref_t<V>::rank;
  constexpr std::size_t k = detail::normalize_axis<K, R>();
  if (step < 1) throw shape_error("fuse::slice: step must be >= 1, got " + std::to_string(step));
  auto shape = v.shape();
  auto strides = v.strides();
  const index_t n = shape[k];
  auto clampi = [n](index_t i) { return std::clamp<index_t>(i < 0 ? i + n : i, 0, n); };
  const index_t b = clampi(begin), e = std::max(clampi(end), clampi(begin));
  shape[k] = e > b ? 1 + (e - b - 1) / step : 0;  // not (e - b + step - 1) / step: overflows for huge steps
  const index_t offset = shape[k] > 0 ? b * strides[k] : 0;
  if (shape[k] > 1) strides[k] *= step;  // then step < n: no overflow (one element: stride unused)
  return detail::make_strided(std::forward<V>(v), offset, shape, strides);
}

// New extents over a contiguous leaf; one extent may be fuse::dyn (inferred).
template <class V, std::integral... I>
  requires detail::viewable<V>
constexpr auto reshape(V&& v, I... e) {
  constexpr std::size_t N = sizeof...(I);
  const auto shape = v.shape();
  const index_t total = shape_size(shape);
  // An empty source is contiguous whatever its strides (NumPy: x[:, 3:3].reshape(0)).
  if (total != 0 && !detail::is_row_major(shape, v.strides()))
    throw shape_error("fuse::reshape: the source " + detail::format_shape(shape) + " is not contiguous");
  shape_t<N> s{static_cast<index_t>(e)...};
  index_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < N; ++i) {
    if (s[i] == dyn) {
      if (inferred >= 0) throw shape_error("fuse::reshape: only one extent may be fuse::dyn");
      inferred = static_cast<int>(i);
    } else if (s[i] < 0) {
      throw shape_error("fuse::reshape: negative extent in " + detail::format_shape(s) + " (only fuse::dyn, -1, is inferred)");
    } else {
      known *= s[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0)  // NumPy: "the unspecified dimension size -1 can be any value and is ambiguous"
      throw shape_error("fuse::reshape: fuse::dyn (-1) in " + detail::format_shape(s) + " is ambiguous beside an extent of 0");
    if (total % known != 0)  // the shape as asked for: the truncated quotient would be an extent nobody wrote
      throw shape_error("fuse::reshape: cannot view " + detail::format_shape(shape) + " as " + detail::format_shape(s) +
                        " (fuse::dyn at axis " + std::to_string(inferred) + "): " + std::to_string(total) +
                        " elements are not a multiple of " + std::to_string(known));
    s[inferred] = total / known;
  }
  if (shape_size(s) != total)
    throw shape_error("fuse::reshape: cannot view " + detail::format_shape(shape) + " as " + detail::format_shape(s));
  auto base = detail::as_view(v);
  using T = typename decltype(base)::element_type;
  return basic_view<T, dextents<N>, false, decltype(base)::space>(base.data(), detail::extents_from_shape<N, dextents<N>>(s));
}

// The same views of a temporary tensor (transpose(fuse::eval(x * 2.f)), NumPy's (x * 2).T) or of
// a view that shares one: the tensor moves into shared ownership (detail::own, as an operand's
// does) and the result, a read-only leaf, keeps it alive.
namespace detail {
template <class L>
concept owned_source = is_owned_view_v<std::remove_cvref_t<L>> ||
                       (is_tensor_v<std::remove_cvref_t<L>> && !std::is_lvalue_reference_v<L>);

template <class L, class F>
auto view_of_owned(L&& l, F&& make_view) {
  if constexpr (is_tensor_v<std::remove_cvref_t<L>>) {
    return view_of_owned(own(std::move(l)), make_view);
  } else {
    auto v = make_view(l.view());
    return owned_view<decltype(v)>(v, l.owner());
  }
}
}  // namespace detail

template <std::size_t... P, class V>
  requires detail::owned_source<V>
auto permute(V&& v) {
  return detail::view_of_owned(std::forward<V>(v), [](const auto& w) { return permute<P...>(w); });
}
template <class V>
  requires detail::owned_source<V>
auto transpose(V&& v) {
  return detail::view_of_owned(std::forward<V>(v), [](const auto& w) { return transpose(w); });
}
template <int K, class V>
  requires detail::owned_source<V>
auto slice(V&& v, index_t begin, index_t end, index_t step = 1) {
  return detail::view_of_owned(std::forward<V>(v), [&](const auto& w) { return slice<K>(w, begin, end, step); });
}
template <class V, std::integral... I>
  requires detail::owned_source<V>
auto reshape(V&& v, I... e) {
  return detail::view_of_owned(std::forward<V>(v), [&](const auto& w) { return reshape(w, e...); });
}

// A view of an expression is misuse: the views are index arithmetic over memory, and an
// expression has none until it is evaluated. Without these the compiler's first line was "no
// matching function for call to transpose(...)". Each returns the expression (reshape an empty
// view of the new rank), so that the caller's use of the result is no second error.
namespace detail {
template <class E>
concept unviewable_expression = expression<E> && !viewable<E> && !owned_source<E>;
#define FUSE_NOT_A_VIEW_MESSAGE(NAME, FIX) \
  "fuse::" NAME ": " FUSE_EXPRESSION_KINDS " has no memory to view; evaluate it first: " FIX
}  // namespace detail

template <std::size_t... P, class E>
  requires detail::unviewable_expression<E>
auto permute(E&& e) {
  static_assert(sizeof(E) == 0, FUSE_NOT_A_VIEW_MESSAGE("permute", "permute<...>(fuse::eval(e))"));
  return std::forward<E>(e);
}
template <class E>
  requires detail::unviewable_expression<E>
auto transpose(E&& e) {
  static_assert(sizeof(E) == 0, FUSE_NOT_A_VIEW_MESSAGE("transpose", "transpose(fuse::eval(e))"));
  return std::forward<E>(e);
}
template <int K, class E>
  requires detail::unviewable_expression<E>
auto slice(E&& e, index_t, index_t, index_t = 1) {
  static_assert(sizeof(E) == 0, FUSE_NOT_A_VIEW_MESSAGE("slice", "slice<k>(fuse::eval(e), begin, end)"));
  return std::forward<E>(e);
}
template <class E, std::integral... I>
  requires detail::unviewable_expression<E>
auto reshape(E&&, I...) {
  static_assert(sizeof(E) == 0, FUSE_NOT_A_VIEW_MESSAGE("reshape", "reshape(fuse::eval(e), extents...)"));
  // (Of the new rank, so that a use that depends on it is no second error either.)
  using T = typename std::remove_cvref_t<E>::value_type;
  return basic_view<const T, dextents<sizeof...(I)>, false, memory_space::host>(nullptr, dextents<sizeof...(I)>{});
}
#undef FUSE_NOT_A_VIEW_MESSAGE

}  // namespace fuse
