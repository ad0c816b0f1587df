// fuse/config.hpp - portability macros and feature detection. Included by every header.
#pragma once

#include <cstddef>
#include <cstdint>

// Device code uses std::array shapes and <limits>, whose constexpr functions nvcc compiles for the
// device only with --expt-relaxed-constexpr (the fuse::fuse CMake target adds it). Without it,
// reductions failed with ten errors deep in the row kernel and elementwise code drew warnings.
#if defined(__CUDACC__) && !defined(__CUDACC_RELAXED_CONSTEXPR__)
#error "fuse: compile CUDA translation units with --expt-relaxed-constexpr (nvcc -std=c++20 --extended-lambda --expt-relaxed-constexpr); the fuse::fuse CMake target adds it"
#endif

// FUSE_HOST_DEVICE marks code that runs on the CPU and, when compiled by nvcc, on the GPU.
#if defined(__CUDACC__)
#define FUSE_HOST_DEVICE __host__ __device__
#define FUSE_DEVICE __device__
#define FUSE_HAS_CUDA 1
#else
#define FUSE_HOST_DEVICE
#define FUSE_DEVICE
#define FUSE_HAS_CUDA 0
#endif

// True only inside the device compilation pass of nvcc.
#if defined(__CUDA_ARCH__)
#define FUSE_DEVICE_PASS 1
#else
#define FUSE_DEVICE_PASS 0
#endif

#if defined(__GNUC__) || defined(__clang__)
// Inlining is forced only where the compiler optimises (and in device code): the kernels' small
// steps are inlined for speed, each measured; unoptimised (debug builds, the sanitizer tests) the
// force only copied every step into every caller: a softmax assign 8.7 -> 6.6 s of g++ -O0, and
// 20% less code and time under clang -O0 with ASan + UBSan.
#if defined(__OPTIMIZE__) || defined(__CUDA_ARCH__)
#define FUSE_INLINE inline __attribute__((always_inline))
#else
#define FUSE_INLINE inline
#endif
#define FUSE_NOINLINE __attribute__((noinline))
#define FUSE_RESTRICT __restrict__
// A type that may alias any other: reading a float's bytes through an integer word is defined.
#define FUSE_MAY_ALIAS __attribute__((__may_alias__))
#else
#define FUSE_INLINE inline
#define FUSE_NOINLINE
#define FUSE_RESTRICT
#define FUSE_MAY_ALIAS
#endif

#define FUSE_PRAGMA(x) _Pragma(#x)

// Before a __host__ __device__ template that calls a callable which may be host-only (a user's
// lambda on the CPU path): nvcc checks the call only where it is instantiated for the device.
#if defined(__CUDACC__)
#define FUSE_EXEC_CHECK_DISABLE FUSE_PRAGMA(nv_exec_check_disable)
#else
#define FUSE_EXEC_CHECK_DISABLE
#endif
// Unroll the next loop fully (CUDA: an array indexed by its counter then stays in registers).
// Device pass only: the host compiler does not know the pragma (-Wunknown-pragmas under -Wall).
#if FUSE_DEVICE_PASS
#define FUSE_UNROLL FUSE_PRAGMA(unroll)
#else
#define FUSE_UNROLL
#endif
// Ask the compiler to vectorise the next loop; OpenMP SIMD needs only -fopenmp-simd.
#if defined(_OPENMP) || defined(FUSE_OPENMP_SIMD)
#define FUSE_SIMD_LOOP FUSE_PRAGMA(omp simd)
#else
#define FUSE_SIMD_LOOP
#endif

namespace fuse {

using index_t = std::int64_t;
inline constexpr index_t dyn = -1;

}  // namespace fuse
