// fuse/backend/cpu/scratch.hpp - 64-byte aligned per-thread buffers of the CPU kernels (rows of
// copies, tiles, row buffers), in place when small.
//
// A small assign allocated each of them with an aligned operator new and freed it again, and
// glibc merges its fast bins before every request of a kilobyte or more: gelu(x + b) over [4, 16]
// spent a fifth of its time in malloc (perf, 2026-12-05), softmax over [4, 16] a tenth (the row
// buffer, on the stack since 2026-12-04).
#pragma once

#include <cstddef>
#include <memory>
#include <new>

#include "fuse/config.hpp"
#include "fuse/core/pool.hpp"

namespace fuse::detail {

// bytes rounded up to whole 64-byte lines: each buffer of a scratch area starts on a line.
constexpr std::size_t whole_lines(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

// Frees what ::operator new(size, align_val_t(64)) gave (row buffers, of trivial types).
struct aligned_delete {
  void operator()(void* p) const { ::operator delete(p, std::align_val_t(64)); }
};

// Buffers from this size on come from the caching pool (core/pool.hpp): a fresh block of
// megabytes page-faults on every call (a row of 2^22 floats split across 2 threads, its rows of
// copies 8 MiB a thread: 10.2-10.4 -> 2.2-2.5 ms).
inline constexpr std::size_t scratch_pool_bytes = std::size_t(1) << 20;

// The pool's side of a scratch buffer, out of line: inlined, the release grew every destructor
// of a scratch buffer (each kernel's) by a kilobyte.
FUSE_NOINLINE inline buffer_pool<host_allocator>::block acquire_scratch(std::size_t bytes) {
  return buffer_pool<host_allocator>::instance().acquire(bytes);
}
FUSE_NOINLINE inline void release_scratch(buffer_pool<host_allocator>::block b) {
  buffer_pool<host_allocator>::instance().release(b);
}

// Holds `bytes` (set once, by reserve) in place up to InPlace, on the heap beyond. Neither copied
// nor moved: data() may point into the object itself.
template <std::size_t InPlace>
class scratch_buffer {
 public:
  scratch_buffer() = default;
  scratch_buffer(const scratch_buffer&) = delete;
  scratch_buffer& operator=(const scratch_buffer&) = delete;
  ~scratch_buffer() {
    if (pooled_.p) release_scratch(pooled_);
  }

  unsigned char* reserve(std::size_t bytes) {
    if (bytes >= scratch_pool_bytes) {
      pooled_ = acquire_scratch(bytes);
      data_ = static_cast<unsigned char*>(pooled_.p);
    } else if (bytes > InPlace) {
      heap_.reset(static_cast<unsigned char*>(::operator new(bytes, std::align_val_t(64))));
      data_ = heap_.get();
    }
    return data_;
  }
  unsigned char* data() const { return data_; }

 private:
  alignas(64) unsigned char in_place_[InPlace];
  unsigned char* data_ = in_place_;
  std::unique_ptr<unsigned char[], aligned_delete> heap_;
  buffer_pool<host_allocator>::block pooled_;
};

}  // namespace fuse::detail
