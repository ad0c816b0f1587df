// fuse/backend/cpu/row_cache.hpp - the CPU row kernel's buffer for a reused phase operand.
//
// The phase chosen by cached_phase (core/reused_phase.hpp: softmax's exp(x - max)) stores its
// values in a per-thread row buffer (L1/L2 resident); the epilogue reads them back through
// cached_eval instead of computing them again.
#pragma once

#include <cstddef>

#include "fuse/core/reused_phase.hpp"

namespace fuse::detail {

// Longest row whose operand is buffered (bytes, per thread: stays in L2).
inline constexpr std::size_t cache_max_bytes = std::size_t(1) << 20;

// Element i of the current row from the buffer a phase filled. The row kernel points *source at
// the row's buffer before it positions the epilogue on that row (rows run in batches of
// row_batch.hpp each have their own); seek() reads it once per row.
template <class T>
struct cached_eval {
  using value_type = T;
  const T* const* source = nullptr;
  const T* buf = nullptr;
  // Host and device only because map_eval's members are (nvcc checks the call); runs on the CPU.
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t*) { buf = *source; }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot*) {}
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE T at(index_t i, const Env&...) const { return buf[i]; }
  template <class F>
  void for_each_tracker(F&&) {}
};

}  // namespace fuse::detail
