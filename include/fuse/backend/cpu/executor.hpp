// fuse/backend/cpu/executor.hpp - fuse::cpu: one fused pass over the iteration space, rows split
// across threads, the contiguous inner loop vectorised by the compiler.
#pragma once

#include <algorithm>
#include <thread>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "fuse/core/iteration.hpp"

namespace fuse {

// Run on the host: SIMD and `threads` threads (0: all hardware threads).
struct cpu {
  int threads = 0;
  static constexpr memory_space space = memory_space::host;

  int thread_count() const {
    if (threads > 0) return threads;
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
  }
};

namespace detail {

// Below this many elements a second thread costs more than it saves.
inline constexpr index_t min_elements_per_thread = 1 << 15;

// Elements [begin, end) in row-major order of the iteration space `it`.
template <bool Unit, class It>
void run_range(const It& it, index_t begin, index_t end) {
  constexpr std::size_t R = It::rank;
  const index_t inner = it.shape[R - 1];
  auto ev = it.eval;  // a private copy: its row pointers are this thread's
  auto* const out = it.out;
  const index_t os = it.out_stride[R - 1];
  index_t outer[R] = {};
  index_t o = begin / inner;
  for (std::size_t d = R - 1; d-- > 0;) outer[d] = o % it.shape[d], o /= it.shape[d];
  index_t i = begin % inner;
  while (begin < end) {
    const index_t stop = std::min(inner, i + (end - begin));
    ev.seek(outer);
    auto* const row = out + row_offset<R>(it.out_stride, outer);
    if constexpr (Unit) {
      FUSE_SIMD_LOOP
      for (index_t j = i; j < stop; ++j) row[j] = ev.template at<true>(j);
    } else {
      for (index_t j = i; j < stop; ++j) row[j * os] = ev.template at<false>(j);
    }
    begin += stop - i;
    i = 0;
    for (std::size_t d = R - 1; d-- > 0;) {
      if (++outer[d] < it.shape[d]) break;
      outer[d] = 0;
    }
  }
}

template <class It>
void run_cpu(const cpu& exec, const It& it) {
  const index_t n = it.size();
  if (n == 0) return;
  [[maybe_unused]] const int threads = static_cast<int>(std::clamp<index_t>(n / min_elements_per_thread, 1, exec.thread_count()));
  auto body = [&](index_t t, index_t nt) {
    // Chunks on 16-element boundaries so that threads do not share cache lines.
    const index_t chunk = ((n + nt - 1) / nt + 15) & ~index_t(15);
    const index_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    if (it.unit) run_range<true>(it, b, e);
    else run_range<false>(it, b, e);
  };
#if defined(_OPENMP)
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    body(omp_get_thread_num(), omp_get_num_threads());
    return;
  }
#endif
  body(0, 1);
}

}  // namespace detail
}  // namespace fuse
