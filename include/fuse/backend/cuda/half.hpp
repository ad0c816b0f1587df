// fuse/backend/cuda/half.hpp - __half and __nv_bfloat16 are stored in 16 bits and computed in fp32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fuse/core/promote.hpp"

namespace fuse::detail {

template <>
struct compute_type<__half> {
  using type = float;
};
template <>
struct compute_type<__nv_bfloat16> {
  using type = float;
};

}  // namespace fuse::detail

// Mixed with a wider float type, a 16-bit float promotes to it (NumPy: float16 + float32 -> float32);
// __half with __nv_bfloat16 gives float.
#define FUSE_HALF_COMMON(A, B, R)          \
  template <>                              \
  struct std::common_type<A, B> {          \
    using type = R;                        \
  };                                       \
  template <>                              \
  struct std::common_type<B, A> {          \
    using type = R;                        \
  };
FUSE_HALF_COMMON(__half, float, float)
FUSE_HALF_COMMON(__half, double, double)
FUSE_HALF_COMMON(__nv_bfloat16, float, float)
FUSE_HALF_COMMON(__nv_bfloat16, double, double)
FUSE_HALF_COMMON(__half, __nv_bfloat16, float)
#undef FUSE_HALF_COMMON

// With an integer or bool tensor (NumPy: float16 with bool and 8-bit integers stays float16, with
// 16-bit integers gives float32, with wider ones float64); bfloat16 alike.
namespace fuse::detail {
template <class H, class I>
using half_with_integer_t = std::conditional_t<sizeof(I) == 1, H, std::conditional_t<sizeof(I) == 2, float, double>>;
}  // namespace fuse::detail
#define FUSE_HALF_WITH_INTEGER(H)                                 \
  template <class I>                                              \
    requires std::is_integral_v<I>                                \
  struct std::common_type<H, I> {                                 \
    using type = fuse::detail::half_with_integer_t<H, I>;         \
  };                                                              \
  template <class I>                                              \
    requires std::is_integral_v<I>                                \
  struct std::common_type<I, H> {                                 \
    using type = fuse::detail::half_with_integer_t<H, I>;         \
  };
FUSE_HALF_WITH_INTEGER(__half)
FUSE_HALF_WITH_INTEGER(__nv_bfloat16)
#undef FUSE_HALF_WITH_INTEGER
