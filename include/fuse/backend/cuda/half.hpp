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
