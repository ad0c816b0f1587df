// fuse/core/pool.hpp - a caching allocator for temporaries (eager mode), as a framework keeps one:
// freed blocks are kept by size and handed out again, so repeated runs do not page-fault.
#pragma once

#include <map>
#include <mutex>

#include "fuse/core/tensor.hpp"

namespace fuse::detail {

template <class Alloc>
class buffer_pool {
 public:
  static buffer_pool& instance() {
    static buffer_pool pool;
    return pool;
  }
  void* acquire(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(bytes);
    if (it != free_.end()) {
      void* p = it->second;
      free_.erase(it);
      return p;
    }
    return Alloc::allocate(bytes);
  }
  void release(void* p, std::size_t bytes) {
    if (!p) return;
    std::lock_guard lock(mutex_);
    free_.emplace(bytes, p);
  }
  ~buffer_pool() {
    for (auto& [bytes, p] : free_) Alloc::deallocate(p);
  }

 private:
  std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
};

// Blocks taken from the pool for the duration of one evaluation.
template <class Alloc>
class pool_arena {
 public:
  pool_arena() = default;
  pool_arena(const pool_arena&) = delete;
  ~pool_arena() {
    for (auto& [p, bytes] : blocks_) buffer_pool<Alloc>::instance().release(p, bytes);
  }
  template <class T, std::size_t R>
  basic_view<T, dextents<R>, false, Alloc::space> make(const shape_t<R>& shape) {
    const std::size_t bytes = static_cast<std::size_t>(shape_size(shape)) * sizeof(T);
    void* p = bytes ? buffer_pool<Alloc>::instance().acquire(bytes) : nullptr;
    blocks_.emplace_back(p, bytes);
    return basic_view<T, dextents<R>, false, Alloc::space>(static_cast<T*>(p), extents_from_shape<R, dextents<R>>(shape));
  }

 private:
  std::vector<std::pair<void*, std::size_t>> blocks_;
};

}  // namespace fuse::detail
