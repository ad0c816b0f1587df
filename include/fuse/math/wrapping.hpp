// fuse/math/wrapping.hpp - integer + - * that wrap modulo 2^N, as NumPy's integer arithmetic does.
//
// In C++ a signed overflow is undefined behaviour, and optimisers rely on it: a fused
// `(x + 1) > x` over int32 folded to true where NumPy (and fuse's own eager executor) gave false
// for INT32_MAX. Signed operands are therefore computed in the unsigned type of their promoted
// type, where wrapping is defined; the conversion back is modular (C++20). Unsigned arithmetic
// compiles to the same instructions and vectorises the same. Everything else is left alone.
#pragma once

#include <type_traits>

#include "fuse/config.hpp"

namespace fuse::math {

// Both integers (bool included) whose arithmetic happens in a signed type: `int` for uint16 *
// uint16 too, after the usual promotions.
template <class A, class B>
inline constexpr bool signed_integer_arith_v =
    std::is_integral_v<A> && std::is_integral_v<B> && std::is_signed_v<decltype(A() + B())>;

#define FUSE_WRAPPING_FN(NAME, OP)                                                        \
  template <class A, class B>                                                             \
  FUSE_HOST_DEVICE FUSE_INLINE constexpr auto NAME(A a, B b) {                            \
    if constexpr (signed_integer_arith_v<A, B>) {                                         \
      using P = decltype(a OP b);                                                         \
      using U = std::make_unsigned_t<P>;                                                  \
      return static_cast<P>(static_cast<U>(static_cast<U>(a) OP static_cast<U>(b)));     \
    } else {                                                                              \
      return a OP b;                                                                      \
    }                                                                                     \
  }
FUSE_WRAPPING_FN(wrapping_add, +)
FUSE_WRAPPING_FN(wrapping_sub, -)
FUSE_WRAPPING_FN(wrapping_mul, *)
#undef FUSE_WRAPPING_FN

// -a; -INT_MIN is INT_MIN, as NumPy.
template <class A>
FUSE_HOST_DEVICE FUSE_INLINE constexpr auto wrapping_neg(A a) {
  if constexpr (std::is_integral_v<A>) return wrapping_sub(decltype(+a)(0), a);
  else return -a;
}

}  // namespace fuse::math
