// fuse/backend/cuda/memory.hpp - device_tensor (plain cudaMalloc), device_view, and copies between
// memory spaces.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "fuse/backend/cuda/error.hpp"
#include "fuse/backend/cuda/executor.hpp"
#include "fuse/core/assign.hpp"
#include "fuse/core/pool.hpp"

namespace fuse {

namespace detail {
struct device_allocator {
  static constexpr memory_space space = memory_space::device;
  static void* allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, bytes), "device_tensor: cudaMalloc");
    return p;
  }
  static void deallocate(void* p) noexcept { cudaFree(p); }
  static void copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes) cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "device_tensor: copy");
  }
  static void copy_to_host(void* dst, const void* src, std::size_t bytes) {
    if (bytes) cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "eval: reading the value");
  }
};

template <>
struct allocator_for<memory_space::device> {
  using type = device_allocator;
};

// fuse's stream-ordered memory pool on the current device, made on first use; null where the
// device has none. Its idle memory is kept up to FUSE_POOL_CACHE_BYTES (the release threshold: the
// default pool's 0 hands it back at every synchronisation, and an eager benchmark would map fresh
// memory each run). Never destroyed: the driver frees it with the context.
inline cudaMemPool_t stream_ordered_pool() {
  static std::mutex m;
  static std::map<int, cudaMemPool_t> pools;
  const int device = current_device();
  std::lock_guard lock(m);
  if (auto it = pools.find(device); it != pools.end()) return it->second;
  int supported = 0;
  cuda_check(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device), "cuda: memory pool attribute");
  cudaMemPool_t pool = nullptr;
  if (supported) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cuda_check(cudaMemPoolCreate(&pool, &props), "cuda: cudaMemPoolCreate");
    std::uint64_t keep = FUSE_POOL_CACHE_BYTES;  // (the attribute is a cuuint64_t)
    cuda_check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cuda: memory pool threshold");
  }
  pools.emplace(device, pool);
  return pool;
}

// The device temporaries of one assignment on fuse::cuda{stream} (eager nodes, groups computed
// first, split-reduction partials, in-place copies): allocated on the stream and freed on it when
// the assignment returns, in stream order. Work on another stream never receives a block still in
// use (the pool orders reuse after the free), nothing waits on the host, and under CUDA-graph
// capture they become the graph's allocation and free nodes. Without memory pools: cudaMalloc and
// cudaFree (which waits for the device).
class stream_arena {
 public:
  static constexpr memory_space space = memory_space::device;
  explicit stream_arena(const cuda& exec) : stream_(exec.stream) {}
  stream_arena(const stream_arena&) = delete;
  ~stream_arena() {
    for (void* p : blocks_) (void)(pool_ ? cudaFreeAsync(p, stream_) : cudaFree(p));
  }
  template <class T, std::size_t R>
  basic_view<T, dextents<R>, false, memory_space::device> make(const shape_t<R>& shape) {
    const std::size_t bytes = checked_bytes(shape, sizeof(T));
    void* p = nullptr;
    if (bytes) {
      if (blocks_.empty()) pool_ = stream_ordered_pool();  // (the device is the stream's: current)
      if (pool_) cuda_check(cudaMallocFromPoolAsync(&p, bytes, pool_, stream_), "cuda: temporary (cudaMallocFromPoolAsync)");
      else cuda_check(cudaMalloc(&p, bytes), "cuda: temporary (cudaMalloc)");
      blocks_.push_back(p);
    }
    return basic_view<T, dextents<R>, false, memory_space::device>(static_cast<T*>(p), extents_from_shape<R, dextents<R>>(shape));
  }

 private:
  cudaStream_t stream_;
  cudaMemPool_t pool_ = nullptr;
  std::vector<void*> blocks_;
};

template <>
struct arena_for<cuda> {
  using type = stream_arena;
};
}  // namespace detail

template <class T, std::size_t Rank>
using device_tensor = basic_tensor<T, Rank, detail::device_allocator>;

template <class T, std::integral... I>
constexpr auto device_view(T* data, I... e) {
  constexpr std::size_t R = sizeof...(I);
  return basic_view<T, dextents<R>, false, memory_space::device>(
      data, detail::extents_from_shape<R, dextents<R>>(detail::checked_view_shape(shape_t<R>{static_cast<index_t>(e)...})));
}
template <class T, index_t... E>
constexpr auto device_view(T* data, const extents<E...>& ext) {
  detail::checked_view_shape(ext.shape());
  return basic_view<T, extents<E...>, false, memory_space::device>(data, ext);
}
template <class T, std::size_t R>
constexpr auto device_view(T* data, const shape_t<R>& shape, const shape_t<R>& strides) {
  return strided_view<T, R, memory_space::device>(data, detail::extents_from_shape<R, dextents<R>>(detail::checked_view_shape(shape)), strides);
}

namespace detail {

template <class V>
bool is_contiguous(const V& v) {
  return is_row_major(v.shape(), v.strides());
}

// The executor for memory in space S, on exec's stream when S is device memory.
template <memory_space S, class Exec>
auto executor_in(const Exec& exec) {
  if constexpr (S == memory_space::device) return exec;
  else return cpu{};
}

// dst and src have the same shape. Contiguous on both sides: one cudaMemcpy(Async); otherwise the
// strided side is made contiguous in its own space first.
template <class Exec, class D, class S>
void copy_device(const Exec& exec, D&& dst, const S& src, bool synchronous) {
  using DD = std::remove_cvref_t<D>;
  using T = typename DD::value_type;
  static_assert(std::is_same_v<T, typename S::value_type>, "fuse::copy: source and destination types differ");
  constexpr bool same_space = DD::space == S::space;
  if constexpr (same_space) {
    assign(executor_in<S::space>(exec), dst, src);  // a strided device copy is an elementwise kernel
    if constexpr (S::space == memory_space::device)  // copy(dst, src) returns when the data is in place
      if (synchronous) cuda_check(cudaStreamSynchronize(exec.stream), "copy");
  } else {
    if (!is_contiguous(src)) {
      auto tmp = eval(executor_in<S::space>(exec), src);
      copy_device(exec, dst, tmp.view(), synchronous);
      return;
    }
    if (!is_contiguous(dst)) {
      basic_tensor<T, DD::rank, typename allocator_for<DD::space>::type> staged(dst.shape());
      copy_device(exec, staged, src, true);
      assign(executor_in<DD::space>(exec), dst, staged.view());
      // (The staging buffer's cudaFree waits for the kernel reading it; copy(dst, src) also says
      // it returns when the data is in place, so wait here rather than rely on that.)
      if constexpr (DD::space == memory_space::device)
        if (synchronous) cuda_check(cudaStreamSynchronize(exec.stream), "copy");
      return;
    }
    const std::size_t bytes = static_cast<std::size_t>(shape_size(src.shape())) * sizeof(T);
    if (bytes == 0) return;
    // On exec's stream also when synchronous: a plain cudaMemcpy runs on the legacy default stream,
    // which does not wait for work on a non-blocking stream (or under --default-stream per-thread).
    cuda_check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDefault, exec.stream), "copy");
    if (synchronous) cuda_check(cudaStreamSynchronize(exec.stream), "copy");
  }
}

// take() with device indices: the indices are copied back and checked on the host.
template <class Take>
void validate_device(const Take& t) {
  using I = typename decltype(t.indices)::value_type;
  tensor<I, decltype(t.indices)::rank> host(t.indices.shape());
  // validate() does not know the executor: the indices may still be written on any stream.
  cuda_check(cudaDeviceSynchronize(), "take: waiting for the indices");
  copy_device(cuda{}, host, t.indices, true);
  const index_t rows = t.table.extent(0);
  for (index_t k = 0; k < host.size(); ++k) {
    const auto v = static_cast<index_t>(host.data()[k]);
    if (v < 0 || v >= rows)
      throw index_error("fuse::take: index " + std::to_string(v) + " is outside [0, " + std::to_string(rows) + ")");
  }
}

// A rank-0 result of eval(fuse::cuda{stream}, e): read on that stream, after its kernels.
template <class T>
T read_scalar(const cuda& exec, const basic_tensor<T, 0, device_allocator>& t) {
  T v{};
  cuda_check(cudaMemcpyAsync(&v, t.data(), sizeof(T), cudaMemcpyDeviceToHost, exec.stream), "eval: reading the value");
  cuda_check(cudaStreamSynchronize(exec.stream), "eval: reading the value");
  return v;
}
// eager(cuda{stream}): on the stream its kernels ran on.
template <class T>
T read_scalar(const eager<cuda>& exec, const basic_tensor<T, 0, device_allocator>& t) {
  return read_scalar(exec.exec, t);
}

}  // namespace detail
}  // namespace fuse
