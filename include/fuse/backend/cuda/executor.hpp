// fuse/backend/cuda/executor.hpp - fuse::cuda{stream}: one kernel per fused group.
//
// Each thread handles V consecutive elements of a row. V = 16 bytes / sizeof(output) when the
// row is unit-stride and every pointer and row stride is aligned for it (16-byte loads and
// stores); V = 1 otherwise. Indices are 64-bit; an empty range launches nothing.
#pragma once

#include <algorithm>
#include <atomic>

#include "fuse/backend/cuda/alignment.hpp"
#include "fuse/backend/cuda/error.hpp"
#include "fuse/backend/cuda/fast_divide.hpp"
#include "fuse/core/iteration.hpp"

namespace fuse {

// Run on a CUDA stream (the default stream when none is given). Asynchronous like any launch.
struct cuda {
  cudaStream_t stream = nullptr;
  static constexpr memory_space space = memory_space::device;
};

namespace detail {

template <>
struct default_executor_for<memory_space::device> {
  using type = cuda;
};

inline constexpr int elementwise_block = 256;

// Bytes in flight (opt-in until timed on a GPU): FUSE_ELEMENTWISE_UNROLL=2 has a thread take
// 2 x 16 bytes of a row at a time where the rows allow it. One 16-byte load per input per thread
// (2048 threads per SM) is about the ~25 KiB per SM that HBM's latency x bandwidth asks for: on the
// H200 bias_gelu (one streamed input) stayed at 0.84 x copy while axpby_relu (two) reached
// 0.92-0.98. But ptxas (13.0) issues the second pair of loads only after the first element's
// math, to stay at 32 registers, so the gain is uncertain (docs/design.md §5).
#ifndef FUSE_ELEMENTWISE_UNROLL
#define FUSE_ELEMENTWISE_UNROLL 1
#endif
inline constexpr int elementwise_unroll = FUSE_ELEMENTWISE_UNROLL;
static_assert(elementwise_unroll >= 1, "fuse: FUSE_ELEMENTWISE_UNROLL must be at least 1");

template <int V, bool Unit, class It>
__global__ void __launch_bounds__(elementwise_block) elementwise_kernel(It it, index_t groups, fast_shape<It::rank> fs) {
  constexpr std::size_t R = It::rank;
  using T = std::remove_pointer_t<decltype(it.out)>;
  const index_t stride = index_t(gridDim.x) * blockDim.x;
  for (index_t g = index_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    index_t outer[R > 1 ? R - 1 : 1] = {};
    // The branch is the same for every thread; the fast form saves ~2 x 70 instructions per group.
    const index_t i = fs.usable ? split_index<R>(static_cast<std::uint32_t>(g * V), fs, outer) : split_index<R>(g * V, it.shape, outer);
    auto ev = it.eval;
    ev.seek(outer);
    T* row = it.out + row_offset<R>(it.out_stride, outer);
    if constexpr (V > 1) {
      const auto v = ev.template at_vec<V>(i);
      lanes<T, V> o;
      for (int l = 0; l < V; ++l) o.v[l] = static_cast<T>(v.v[l]);
      *reinterpret_cast<lanes<T, V>*>(row + i) = o;
    } else if constexpr (Unit) {
      row[i] = ev.template at<true>(i);
    } else {
      row[i * it.out_stride[R - 1]] = ev.template at<false>(i);
    }
  }
}

// May every tracker and the output be read V lanes at a time (aligned, rows a multiple of V)?
template <int V, class It>
bool vector_ok(It& it) {
  constexpr std::size_t R = It::rank;
  using T = std::remove_pointer_t<decltype(it.out)>;
  if (!it.unit || it.shape[R - 1] % V != 0) return false;
  bool ok = rows_aligned<R>(it.out, sizeof(T), V, it.out_stride);
  it.eval.for_each_tracker([&](const tracker& t) {
    if (t.base && t.span == 0) ok = ok && rows_aligned<R>(t.base, t.elem_bytes, V, t.stride);
    if (t.base == nullptr && t.span == 0) {  // an affine index: only its row offset matters
      for (std::size_t d = 0; d + 1 < R; ++d) ok = ok && t.stride[d] % V == 0;
    }
  });
  return ok;
}

// The current device's SM count, asked once per device (devices may differ).
inline int multiprocessor_count() {
  constexpr int cached_devices = 64;
  static std::atomic<int> counts[cached_devices] = {};
  const int dev = current_device();
  const bool cached = dev >= 0 && dev < cached_devices;
  int n = cached ? counts[dev].load(std::memory_order_relaxed) : 0;
  if (n > 0) return n;
  cuda_check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev), "cuda: device attribute");
  if (cached) counts[dev].store(n, std::memory_order_relaxed);
  return n;
}

template <int V, bool Unit, class It>
void launch_elementwise(const cuda& exec, const It& it, index_t n) {
  const index_t groups = n / V;
  const index_t wanted = (groups + elementwise_block - 1) / elementwise_block;
  const index_t cap = index_t(multiprocessor_count()) * 16;  // enough blocks in flight to saturate HBM
  const unsigned blocks = static_cast<unsigned>(std::max<index_t>(1, std::min(wanted, cap)));
  elementwise_kernel<V, Unit><<<blocks, elementwise_block, 0, exec.stream>>>(it, groups, prepare_fast_shape<It::rank>(it.shape, n));
  cuda_check(cudaGetLastError(), "cuda: elementwise kernel launch");
}

template <class It>
void run(const cuda& exec, It it) {
  using T = std::remove_pointer_t<decltype(it.out)>;
  const index_t n = it.size();
  if (n == 0) return;
  constexpr int V = sizeof(T) >= 16 ? 1 : int(16 / sizeof(T));
  constexpr int VU = V * elementwise_unroll;
  if constexpr (VU > V) {
    if (vector_ok<VU>(it)) return launch_elementwise<VU, true>(exec, it, n);
  }
  if constexpr (V > 1) {
    if (vector_ok<V>(it)) return launch_elementwise<V, true>(exec, it, n);
  }
  if (it.unit) launch_elementwise<1, true>(exec, it, n);
  else launch_elementwise<1, false>(exec, it, n);
}

}  // namespace detail
}  // namespace fuse
