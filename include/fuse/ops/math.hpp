// fuse/ops/math.hpp - elementwise math functions. Float arguments use fuse::math's branch-free
// implementations, which the compiler vectorises; integer arguments compute in double.
#pragma once

#include <cmath>

#include "fuse/core/map_expr.hpp"
#include "fuse/math/basic.hpp"
#include "fuse/math/scalar_math.hpp"
#include "fuse/math/wrapping.hpp"

namespace fuse {

namespace fn {
// A unary function on the floating compute type: NAME(x) = BODY, FLOPS arithmetic operations.
// Left defined: activation.hpp declares its functions with it too (and undefines it).
#define FUSE_FLOAT_FN(NAME, FLOPS, BODY)                                           \
  struct NAME {                                                                    \
    static constexpr const char* name = #NAME;                                     \
    static constexpr int flops = FLOPS;                                            \
    using promotion = fuse::promotion::floating;                                   \
    template <class T>                                                             \
    FUSE_HOST_DEVICE FUSE_INLINE T operator()(T x) const {                         \
      return BODY;                                                                 \
    }                                                                              \
  };
FUSE_FLOAT_FN(exp, 10, math::exp(x))
FUSE_FLOAT_FN(log, 10, math::log(x))
FUSE_FLOAT_FN(log1p, 12, math::log1p(x))
FUSE_FLOAT_FN(expm1, 12, math::expm1(x))
FUSE_FLOAT_FN(sqrt, 1, math::sqrt(x))
FUSE_FLOAT_FN(rsqrt, 2, T(1) / math::sqrt(x))
FUSE_FLOAT_FN(sin, 12, math::sin(x))
FUSE_FLOAT_FN(cos, 12, math::cos(x))
FUSE_FLOAT_FN(tanh, 12, math::tanh(x))
FUSE_FLOAT_FN(erf, 14, math::erf(x))

// exp of an argument that is never positive (softmax's x - max): cheaper on the host, see
// math::exp_nonpositive.  Only the library's own layers build it; it prints as exp.
struct exp_nonpositive {
  static constexpr const char* name = "exp";
  static constexpr int flops = 10;
  using promotion = fuse::promotion::floating;
  template <class T>
  FUSE_HOST_DEVICE FUSE_INLINE T operator()(T x) const { return math::exp_nonpositive(x); }
};

// abs and square keep integer types (np.abs, np.square).
struct abs {
  static constexpr const char* name = "abs";
  static constexpr int flops = 1;
  using promotion = fuse::promotion::arith;
  template <class T>
  FUSE_HOST_DEVICE FUSE_INLINE T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return math::fabs(x);
    else return x < T(0) ? T(math::wrapping_neg(x)) : x;  // abs(INT_MIN) == INT_MIN, as NumPy
  }
};
struct square {
  static constexpr const char* name = "square";
  static constexpr int flops = 1;
  using promotion = fuse::promotion::arith;
  template <class T>
  FUSE_HOST_DEVICE FUSE_INLINE T operator()(T x) const { return T(math::wrapping_mul(x, x)); }
};
}  // namespace fn

#define FUSE_UNARY_BUILDER(NAME) \
  template <expression A>        \
  auto NAME(A&& a) { return make_map(fn::NAME{}, std::forward<A>(a)); }
FUSE_UNARY_BUILDER(exp)
FUSE_UNARY_BUILDER(log)
FUSE_UNARY_BUILDER(log1p)
FUSE_UNARY_BUILDER(expm1)
FUSE_UNARY_BUILDER(sqrt)
FUSE_UNARY_BUILDER(rsqrt)
FUSE_UNARY_BUILDER(sin)
FUSE_UNARY_BUILDER(cos)
FUSE_UNARY_BUILDER(tanh)
FUSE_UNARY_BUILDER(erf)
FUSE_UNARY_BUILDER(abs)
FUSE_UNARY_BUILDER(square)

namespace detail {
// exp(a) where a <= 0 or NaN everywhere, e.g. x - max(x) along the same axis.
template <expression A>
auto exp_nonpositive(A&& a) { return make_map(fn::exp_nonpositive{}, std::forward<A>(a)); }
}  // namespace detail

}  // namespace fuse
