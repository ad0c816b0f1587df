// fuse/backend/cpu/stream_store.hpp - non-temporal (streaming) stores of whole SIMD registers.
//
// Written with the compilers' vector extensions and their own builtins rather than
// <immintrin.h>: that header costs about 1.2 s of parsing in every translation unit that includes
// fuse (measured: `#include <fuse/fuse.hpp>` 3.2-3.4 s with it, 2.2 s without), for the two
// instructions used here. Registers stay as wide as the target allows: 16-byte stores instead of
// 32-byte ones cost axpby_relu about 10% on an AVX2 machine (18.1-19.8 against 20.0-24.7 GB/s).
#pragma once

#include <cstdint>
#include <type_traits>

#include "fuse/config.hpp"

#if defined(__SSE2__)
#include <xmmintrin.h>  // _mm_sfence (5 000 lines, against 47 000 for <immintrin.h>)
#endif

namespace fuse::detail {

#if defined(__AVX512F__)
#define FUSE_STREAM_BYTES 64
#elif defined(__AVX__)
#define FUSE_STREAM_BYTES 32
#elif defined(__SSE2__)
#define FUSE_STREAM_BYTES 16
#else
#define FUSE_STREAM_BYTES 0
#endif

template <class T>
inline constexpr bool can_stream_v = FUSE_STREAM_BYTES > 0 && (std::is_same_v<T, float> || std::is_same_v<T, double>);

#if FUSE_STREAM_BYTES > 0
typedef float stream_floats __attribute__((vector_size(FUSE_STREAM_BYTES), may_alias));
typedef double stream_doubles __attribute__((vector_size(FUSE_STREAM_BYTES), may_alias));

// One register's worth from aligned src to aligned dst, stored around the caches.
FUSE_INLINE void stream_register(float* dst, const float* src) {
  const stream_floats v = *reinterpret_cast<const stream_floats*>(src);
#if defined(__clang__)
  __builtin_nontemporal_store(v, reinterpret_cast<stream_floats*>(dst));
#elif FUSE_STREAM_BYTES == 64
  __builtin_ia32_movntps512(dst, v);
#elif FUSE_STREAM_BYTES == 32
  __builtin_ia32_movntps256(dst, v);
#else
  __builtin_ia32_movntps(dst, v);
#endif
}

FUSE_INLINE void stream_register(double* dst, const double* src) {
  const stream_doubles v = *reinterpret_cast<const stream_doubles*>(src);
#if defined(__clang__)
  __builtin_nontemporal_store(v, reinterpret_cast<stream_doubles*>(dst));
#elif FUSE_STREAM_BYTES == 64
  __builtin_ia32_movntpd512(dst, v);
#elif FUSE_STREAM_BYTES == 32
  __builtin_ia32_movntpd256(dst, v);
#else
  __builtin_ia32_movntpd(dst, v);
#endif
}

// 4- and 8-byte words of any value type (copy_strided moves values as such): streamed as floats or
// doubles, whose vector types may alias anything; a move leaves the bits as they are.
FUSE_INLINE void stream_register(std::uint32_t* dst, const std::uint32_t* src) {
  stream_register(reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(src));
}
FUSE_INLINE void stream_register(std::uint64_t* dst, const std::uint64_t* src) {
  stream_register(reinterpret_cast<double*>(dst), reinterpret_cast<const double*>(src));
}
#endif

template <class T>
inline constexpr bool can_stream_words_v =
    can_stream_v<T> || (FUSE_STREAM_BYTES > 0 && (std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::uint64_t>));

// Copies n values (n a multiple of 64 bytes' worth) from an aligned buffer to 64-byte aligned dst.
template <class T>
FUSE_INLINE void stream_out(T* dst, const T* src, index_t n) {
#if FUSE_STREAM_BYTES > 0
  constexpr index_t step = FUSE_STREAM_BYTES / sizeof(T);
  for (index_t k = 0; k < n; k += step) stream_register(dst + k, src + k);
#else
  (void)dst, (void)src, (void)n;
#endif
}

// Streaming stores are weakly ordered: publish them before another thread reads the output.
FUSE_INLINE void stream_fence() {
#if FUSE_STREAM_BYTES > 0
  _mm_sfence();
#endif
}

}  // namespace fuse::detail
