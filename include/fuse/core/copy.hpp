// fuse/core/copy.hpp - fuse::copy(dst, src): the same shape, between any memory spaces. Host to
// host is an assignment; anything touching device memory goes through backend/cuda.
#pragma once

#include "fuse/core/assign.hpp"

namespace fuse {

namespace detail {
template <class Exec, class D, class S>
void copy_device(const Exec& exec, D&& dst, const S& src, bool synchronous);  // backend/cuda

template <class D, class S>
void check_copy_shapes(const D& dst, const S& src) {
  static_assert(D::rank == S::rank, "fuse::copy: dst and src have different ranks (copy needs equal shapes)");
  if constexpr (D::rank == S::rank) {
    if (dst.shape() != src.shape())
      throw shape_error("fuse::copy: shapes " + format_shape(dst.shape()) + " and " + format_shape(src.shape()) +
                        " differ");
  }
}

// What assign checks of its destination, in copy's words. (D keeps its const: a const tensor's
// data() is const.)
template <class D>
void check_copy_destination(D& dst) {
  static_assert(!is_owned_view_v<std::remove_const_t<D>>, "fuse::copy: " FUSE_READ_ONLY_DESTINATION);
  static_assert(requires { dst.data(); dst.strides(); }, "fuse::copy: " FUSE_NOT_A_DESTINATION);
  if constexpr (requires { dst.data(); dst.strides(); }) {
    constexpr bool writable = !std::is_const_v<std::remove_reference_t<decltype(*dst.data())>>;
    static_assert(writable, "fuse::copy: the destination is read-only (a view of const data)");
    if constexpr (writable) check_writable(destination_of(dst), "fuse::copy");
  }
}
}  // namespace detail

template <class D, class S>
  requires(expression<D> && expression<S>)
void copy(D&& dst, const S& src) {
  using DD = std::remove_cvref_t<D>;
  detail::check_copy_destination(dst);
  detail::check_copy_shapes(dst, src);
  if constexpr (DD::space != memory_space::device && S::space != memory_space::device)
    assign(cpu{}, dst, src);
  else
    detail::copy_device(typename detail::default_executor_for<memory_space(std::max(int(DD::space), int(S::space)))>::type{}, dst, src, true);
}

// The same, asynchronous on exec's stream (exec is fuse::cuda{stream}).
template <class Exec, class D, class S>
  requires(expression<D> && expression<S> && requires { Exec::space; })
void copy(const Exec& exec, D&& dst, const S& src) {
  detail::check_copy_destination(dst);
  detail::check_copy_shapes(dst, src);
  if constexpr (Exec::space == memory_space::device) detail::copy_device(exec, dst, src, false);
  else assign(exec, dst, src);
}

}  // namespace fuse
