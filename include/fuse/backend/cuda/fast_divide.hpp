// fuse/backend/cuda/fast_divide.hpp - a flat element number split into its row and position, with
// division by a run-time constant as a multiply-high, an add and a shift (Granlund and
// Montgomery's round-up method).
//
// The elementwise kernel turns each flat element number into a row and a position (one division
// per axis). A 64-bit integer division is a subroutine of about 70 instructions on the GPU, as
// much as GELU's arithmetic; with the divisors prepared on the host it costs three. Exact for
// dividends and divisors below 2^31, which covers every tensor of fewer than 2^31 elements;
// larger ones keep the plain division.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fuse/config.hpp"
#include "fuse/core/extents.hpp"

namespace fuse::detail {

struct fast_divider {
  std::uint32_t divisor = 1;
  std::uint32_t multiplier = 1;  // floor(2^32 (2^shift - divisor) / divisor) + 1
  std::uint32_t shift = 0;       // ceil(log2(divisor))

  fast_divider() = default;
  // divisor in [1, 2^31].
  explicit fast_divider(std::uint32_t d) : divisor(d) {
    while ((std::uint64_t(1) << shift) < d) ++shift;
    multiplier = static_cast<std::uint32_t>(((std::uint64_t(1) << 32) * ((std::uint64_t(1) << shift) - d)) / d + 1);
  }

  // n / divisor for n < 2^31 (the sum below is formed in 64 bits, so any n < 2^32 works).
  FUSE_HOST_DEVICE FUSE_INLINE std::uint32_t divide(std::uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t high = __umulhi(n, multiplier);
#else
    const std::uint32_t high = static_cast<std::uint32_t>((std::uint64_t(n) * multiplier) >> 32);
#endif
    return static_cast<std::uint32_t>((std::uint64_t(high) + n) >> shift);
  }
};

// The flat index's position along each axis, for a shape whose size is below 2^31.
template <std::size_t R>
struct fast_shape {
  fast_divider axis[R];
  bool usable = false;  // size < 2^31 (else the kernel divides in 64 bits)
};

// Position `outer` (the leading axes) and the element within the row of flat element g.
template <std::size_t R>
FUSE_HOST_DEVICE FUSE_INLINE index_t split_index(index_t g, const index_t* shape, index_t* outer) {
  const index_t inner = shape[R - 1];
  index_t o = g / inner;
  const index_t i = g - o * inner;
  for (std::size_t d = R - 1; d-- > 0;) {
    const index_t q = o / shape[d];
    outer[d] = o - q * shape[d];
    o = q;
  }
  return i;
}

// The same with 32-bit dividends and the divisors prepared: for a flat index below 2^31.
template <std::size_t R>
FUSE_HOST_DEVICE FUSE_INLINE index_t split_index(std::uint32_t g, const fast_shape<R>& fs, index_t* outer) {
  std::uint32_t o = fs.axis[R - 1].divide(g);
  const index_t i = g - o * fs.axis[R - 1].divisor;
  for (std::size_t d = R - 1; d-- > 0;) {
    const std::uint32_t q = fs.axis[d].divide(o);
    outer[d] = o - q * fs.axis[d].divisor;
    o = q;
  }
  return i;
}

// The divisors of `shape` (R extents, `size` elements); unusable from 2^31 elements on.
template <std::size_t R>
fast_shape<R> prepare_fast_shape(const index_t* shape, index_t size) {
  fast_shape<R> fs;
  fs.usable = size < (index_t(1) << 31);
  if (fs.usable)
    for (std::size_t d = 0; d < R; ++d) fs.axis[d] = fast_divider(static_cast<std::uint32_t>(std::max<index_t>(shape[d], 1)));
  return fs;
}

}  // namespace fuse::detail
