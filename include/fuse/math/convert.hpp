// fuse/math/convert.hpp - floating -> integer conversions with a defined result for every value.
//
// In C++ converting a float outside the target's range (or NaN) is undefined behaviour, and the
// results differed inside one array: clang's vector loop saturated -1.f to 0 in a uint8 tensor
// while its scalar tail wrapped it to 255. NumPy calls the result undefined too (with a warning),
// so fuse picks one: out-of-range values saturate to the target's nearest end and NaN gives 0
// (as CUDA's __float2int_rz and Rust's `as`). In-range values truncate toward zero as before.
#pragma once

#include <limits>
#include <type_traits>

#include "fuse/config.hpp"

namespace fuse::math {

// Floating types, __half and __nv_bfloat16 included (number classes that convert to float).
// Not detail::is_floating_v: a host-only translation unit does not specialise compute_type
// for the half types, and its half -> int conversions must saturate too.
template <class T>
inline constexpr bool floating_like_v =
    std::is_floating_point_v<T> || (std::is_class_v<T> && std::is_convertible_v<T, float>);

// True where convert<To>(From) needs the saturating form.
template <class To, class From>
inline constexpr bool saturating_conversion_v =
    std::is_integral_v<To> && !std::is_same_v<To, bool> && floating_like_v<From>;

template <class To, class From>
FUSE_HOST_DEVICE FUSE_INLINE constexpr To convert(From x) {
  if constexpr (saturating_conversion_v<To, From> && !std::is_floating_point_v<From>) {
    return convert<To>(static_cast<float>(x));  // half types: through float
  } else if constexpr (saturating_conversion_v<To, From>) {
    // The ends as From: min is 0 or -2^k (exact); max is 2^k - 1, which rounds up to 2^k or is
    // exact, so x >= hi is out of range or truncates to max anyway.
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From hi = static_cast<From>(std::numeric_limits<To>::max());
    if (!(x == x)) return To(0);
    if (x <= lo) return std::numeric_limits<To>::min();
    if (x >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace fuse::math
