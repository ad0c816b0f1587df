// fuse/core/broadcast.hpp - NumPy broadcasting of shapes, at compile time (static extents) and run time.
#pragma once

#include "fuse/core/errors.hpp"
#include "fuse/core/extents.hpp"

namespace fuse {

namespace error {
// Named in the first line of the compiler's error when two static shapes cannot broadcast.
template <class ShapeA, class ShapeB>
struct static_shapes_do_not_broadcast;
// The same for assign(y, e) with static extents on both sides.
template <class ExpressionShape, class DestinationShape>
struct static_shape_cannot_be_assigned_to;
}  // namespace error

namespace detail {

// Trailing-aligned broadcast of two static shapes; dyn where unknown. ok=false on a sure mismatch.
template <std::size_t A, std::size_t B>
struct static_broadcast_result {
  static constexpr std::size_t rank = A > B ? A : B;
  shape_t<rank> shape{};
  bool ok = true;
};

template <std::size_t A, std::size_t B>
constexpr static_broadcast_result<A, B> static_broadcast(const shape_t<A>& a, const shape_t<B>& b) {
  static_broadcast_result<A, B> r;
  constexpr std::size_t R = r.rank;
  for (std::size_t d = 0; d < R; ++d) {
    const index_t x = d + A >= R ? a[d + A - R] : 1;
    const index_t y = d + B >= R ? b[d + B - R] : 1;
    if (x == dyn && y == dyn) r.shape[d] = dyn;
    else if (x == dyn) r.shape[d] = y == 1 ? dyn : y;
    else if (y == dyn) r.shape[d] = x == 1 ? dyn : x;
    else if (x == y || y == 1) r.shape[d] = x;
    else if (x == 1) r.shape[d] = y;
    else r.ok = false;
  }
  return r;
}

template <auto Shape, class Seq = std::make_index_sequence<Shape.size()>>
struct to_extents;
template <auto Shape, std::size_t... I>
struct to_extents<Shape, std::index_sequence<I...>> {
  using type = extents<Shape[I]...>;
};

// Fails to compile, naming both shapes, when they surely do not broadcast.
template <auto ShapeA, auto ShapeB>
constexpr bool check_static_broadcast() {
  if constexpr (!static_broadcast(ShapeA, ShapeB).ok)
    return sizeof(error::static_shapes_do_not_broadcast<typename to_extents<ShapeA>::type,
                                                         typename to_extents<ShapeB>::type>) > 0;
  return true;
}

// Fails to compile, naming both shapes, when an expression of static shape Src surely cannot be
// assigned to a destination of static shape Dst (NumPy assignment: Src broadcasts to Dst).
template <auto Dst, auto Src>
constexpr bool check_static_assignable() {
  constexpr bool ok = [] {
    constexpr std::size_t D = Dst.size(), S = Src.size();
    for (std::size_t j = 0; j < S; ++j) {
      if (Src[j] == dyn || Src[j] == 1) continue;
      if (j + D < S) return false;  // a leading axis beyond the destination's rank, not 1
      const index_t d = Dst[j + D - S];
      if (d != dyn && d != Src[j]) return false;
    }
    return true;
  }();
  if constexpr (!ok)
    return sizeof(error::static_shape_cannot_be_assigned_to<typename to_extents<Src>::type, typename to_extents<Dst>::type>) > 0;
  return true;
}

// Run-time broadcast of two shapes; throws shape_error naming both.
template <std::size_t A, std::size_t B>
shape_t<(A > B ? A : B)> broadcast_shapes(const shape_t<A>& a, const shape_t<B>& b, const char* op) {
  constexpr std::size_t R = A > B ? A : B;
  shape_t<R> s{};
  for (std::size_t d = 0; d < R; ++d) {
    const index_t x = d + A >= R ? a[d + A - R] : 1;
    const index_t y = d + B >= R ? b[d + B - R] : 1;
    if (x == y || y == 1) s[d] = x;
    else if (x == 1) s[d] = y;
    else throw_shape_error(op, a, b);
  }
  return s;
}

// NumPy assignment: may `src` be written into `dst`? (src broadcasts to dst; extra leading 1s dropped)
template <std::size_t D, std::size_t S>
bool assignable(const shape_t<D>& dst, const shape_t<S>& src) {
  for (std::size_t j = 0; j < S; ++j) {
    const std::ptrdiff_t d = static_cast<std::ptrdiff_t>(j) + static_cast<std::ptrdiff_t>(D) - static_cast<std::ptrdiff_t>(S);
    if (d < 0) {
      if (src[j] != 1) return false;
    } else if (src[j] != 1 && src[j] != dst[d]) {
      return false;
    }
  }
  return true;
}

// Does an axis of e (shape `e`) stretch to fill the destination's (an extent of 1, or a missing
// leading axis, under a larger extent)?
template <std::size_t D, std::size_t R>
bool stretches(const shape_t<D>& dst, const shape_t<R>& e) {
  for (std::size_t i = 0; i < D; ++i)
    if (dst[D - 1 - i] != (i < R ? e[R - 1 - i] : 1)) return true;
  return false;
}

}  // namespace detail
}  // namespace fuse
