// fuse/core/pool.hpp - a caching allocator for host temporaries (eager mode; also the groups a
// fused assignment computes first, and in-place copies), as a framework keeps one: freed blocks
// are kept by size and handed out again, so repeated runs do not page-fault; the idle blocks it
// keeps are bounded. fuse::cuda's temporaries are stream-ordered instead (arena_for below).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "fuse/core/tensor.hpp"

// Idle bytes a pool keeps at most (FUSE_POOL_CACHE_BYTES; default 1 GiB; set it alike in every
// translation unit of a program): beyond it the oldest idle blocks go back to the allocator, and a
// block larger than the bound is never kept (0 turns caching off). (fuse::cuda's stream-ordered
// pool takes it as its release threshold: backend/cuda/memory.hpp.) Without a
// bound, eager runs over ever new sizes (varying batch or sequence lengths) grew the process by
// every size seen (1.6 GB after 200 sizes of 8 MB; a probe, 2026-12-02).
#ifndef FUSE_POOL_CACHE_BYTES
#define FUSE_POOL_CACHE_BYTES (std::size_t(1) << 30)
#endif

namespace fuse::detail {

template <class Alloc>
class buffer_pool {
  // (A block it handed out is free again when the arena ends, not when a stream reaches that
  // point; and it would keep one cache for every GPU.)
  static_assert(Alloc::space != memory_space::device,
                "fuse: device temporaries are stream-ordered (backend/cuda/memory.hpp), not pooled here");

 public:
  struct block {
    void* p = nullptr;
    std::size_t bytes = 0;  // the block's own size, at least what was asked for
  };
  static buffer_pool& instance() {
    static buffer_pool pool;
    return pool;
  }
  // The smallest idle block of at least `bytes` that wastes at most a quarter of it (a framework's
  // caching allocator reuses a larger block too), else a new one.
  block acquire(std::size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      auto it = idle_.lower_bound(bytes);
      if (it != idle_.end() && it->first - bytes <= bytes / 4) {
        const block b{it->second.p, it->first};
        idle_bytes_ -= it->first;
        idle_.erase(it);
        return b;
      }
    }
    return {Alloc::allocate(bytes), bytes};
  }
  void release(block b) {
    if (!b.p) return;
    if (b.bytes > FUSE_POOL_CACHE_BYTES) return Alloc::deallocate(b.p);
    std::vector<void*> evicted;
    {
      std::lock_guard lock(mutex_);
      idle_.emplace(b.bytes, entry{b.p, ++clock_});
      idle_bytes_ += b.bytes;
      while (idle_bytes_ > FUSE_POOL_CACHE_BYTES) {  // stops before the block just added: it fits alone
        auto oldest = idle_.begin();
        for (auto it = idle_.begin(); it != idle_.end(); ++it)
          if (it->second.stamp < oldest->second.stamp) oldest = it;
        evicted.push_back(oldest->second.p);
        idle_bytes_ -= oldest->first;
        idle_.erase(oldest);
      }
    }
    for (void* p : evicted) Alloc::deallocate(p);  // outside the lock (cudaFree synchronises)
  }
  std::size_t idle_bytes() {
    std::lock_guard lock(mutex_);
    return idle_bytes_;
  }
  ~buffer_pool() {
    for (auto& [bytes, e] : idle_) Alloc::deallocate(e.p);
  }

 private:
  struct entry {
    void* p;
    std::uint64_t stamp;  // release order: the oldest idle block goes first
  };
  std::mutex mutex_;
  std::multimap<std::size_t, entry> idle_;
  std::size_t idle_bytes_ = 0;
  std::uint64_t clock_ = 0;
};

// Blocks taken from the pool for the duration of one evaluation.
template <class Alloc>
class pool_arena {
 public:
  static constexpr memory_space space = Alloc::space;
  pool_arena() = default;
  template <class Exec>
    requires(Exec::space != memory_space::device)
  explicit pool_arena(const Exec&) {}  // an executor of host memory: nothing to wait for
  pool_arena(const pool_arena&) = delete;
  ~pool_arena() {
    if (!pool_) return;  // only empty blocks (no pool was needed)
    for (const auto& b : blocks_) pool_->release(b);
  }
  template <class T, std::size_t R>
  basic_view<T, dextents<R>, false, Alloc::space> make(const shape_t<R>& shape) {
    const std::size_t bytes = checked_bytes(shape, sizeof(T));
    if (bytes && !pool_) pool_ = &buffer_pool<Alloc>::instance();  // the blocks go back where they came from
    const auto b = bytes ? pool_->acquire(bytes) : typename buffer_pool<Alloc>::block{};
    blocks_.push_back(b);
    return basic_view<T, dextents<R>, false, Alloc::space>(static_cast<T*>(b.p), extents_from_shape<R, dextents<R>>(shape));
  }

 private:
  std::vector<typename buffer_pool<Alloc>::block> blocks_;
  buffer_pool<Alloc>* pool_ = nullptr;
};

// The allocator of memory space S (device memory: backend/cuda/memory.hpp).
template <memory_space S>
struct allocator_for;
template <>
struct allocator_for<memory_space::host> {
  using type = host_allocator;
};
template <>
struct allocator_for<memory_space::any> {
  using type = host_allocator;
};

// The temporaries of one assignment on executor Exec (constructed from it): blocks of the caching
// pool of Exec's memory; fuse::cuda takes stream-ordered ones instead (backend/cuda/memory.hpp).
template <class Exec>
struct arena_for {
  static_assert(Exec::space != memory_space::device,
                "fuse: an executor of device memory needs an arena_for of its own (stream-ordered temporaries)");
  using type = pool_arena<typename allocator_for<Exec::space>::type>;
};
template <class Exec>
using arena_t = typename arena_for<Exec>::type;

}  // namespace fuse::detail
