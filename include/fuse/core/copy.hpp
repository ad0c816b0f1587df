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
}  // namespace detail

template <class D, class S>
  requires(expression<D> && expression<S>)
void copy(D&& dst, const S& src) {
  using DD = std::remove_cvref_t<D>;
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
  detail::check_copy_shapes(dst, src);
  if constexpr (Exec::space == memory_space::device) detail::copy_device(exec, dst, src, false);
  else assign(exec, dst, src);
}

}  // namespace fuse
