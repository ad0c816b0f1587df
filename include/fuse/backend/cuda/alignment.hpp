// fuse/backend/cuda/alignment.hpp - may rows be read or written V elements at a time?
//
// A V-element access (16 bytes at most) needs the row's start aligned to its size: the base
// pointer and every outer stride, in bytes. Host code, no CUDA headers (tested on the CPU).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fuse/core/extents.hpp"

namespace fuse::detail {

// Every row of `p` (element size `elem`, strides stride[0..R-1) of the outer axes) starts on a
// multiple of min(16, elem * V) bytes.
template <std::size_t R>
bool rows_aligned(const void* p, std::size_t elem, int V, const index_t* stride) {
  const std::size_t a = std::min<std::size_t>(16, elem * std::size_t(V));
  if (reinterpret_cast<std::uintptr_t>(p) % a != 0) return false;
  for (std::size_t d = 0; d + 1 < R; ++d)
    if ((stride[d] * index_t(elem)) % index_t(a) != 0) return false;
  return true;
}

}  // namespace fuse::detail
