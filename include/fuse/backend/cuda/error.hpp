// fuse/backend/cuda/error.hpp - every CUDA status becomes fuse::cuda_error with its name and text.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "fuse/core/errors.hpp"

namespace fuse::detail {

// A failed call also leaves its status as the thread's "last error" (unless it is sticky): it is
// cleared here, so that the next launch check does not report this failure as its own.
inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw cuda_error(std::string("fuse::") + what + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
  }
}

// The calling thread's current device (pools and launch sizes are per device).
inline int current_device() {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cuda: cudaGetDevice");
  return device;
}

}  // namespace fuse::detail
