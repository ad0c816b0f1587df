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
