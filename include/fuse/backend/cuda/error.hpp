// fuse/backend/cuda/error.hpp - every CUDA status becomes fuse::cuda_error with its name and text.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "fuse/core/errors.hpp"

namespace fuse::detail {

inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw cuda_error(std::string("fuse::") + what + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace fuse::detail
