// fuse/ops/arith.hpp - + - * / and unary minus, with NumPy broadcasting and promotion.
#pragma once

#include "fuse/core/map_expr.hpp"
#include "fuse/math/wrapping.hpp"

namespace fuse {

namespace fn {
// Integer + - * wrap as NumPy's (math/wrapping.hpp); true division, as NumPy: int / int gives
// double.
#define FUSE_BINARY_FN(NAME, EXPR, POLICY)                                         \
  struct NAME {                                                                    \
    static constexpr const char* name = #NAME;                                     \
    static constexpr int flops = 1;                                                \
    using promotion = fuse::promotion::POLICY;                                     \
    template <class A, class B>                                                    \
    FUSE_HOST_DEVICE FUSE_INLINE constexpr auto operator()(A a, B b) const {       \
      return EXPR;                                                                 \
    }                                                                              \
  };
FUSE_BINARY_FN(add, math::wrapping_add(a, b), arith)
FUSE_BINARY_FN(sub, math::wrapping_sub(a, b), arith)
FUSE_BINARY_FN(mul, math::wrapping_mul(a, b), arith)
FUSE_BINARY_FN(div, a / b, floating)
#undef FUSE_BINARY_FN

struct neg {
  static constexpr const char* name = "neg";
  static constexpr int flops = 1;
  using promotion = fuse::promotion::arith;
  template <class A>
  FUSE_HOST_DEVICE FUSE_INLINE constexpr auto operator()(A a) const { return math::wrapping_neg(a); }
};
}  // namespace fn

// At least one side must be an expression; the other may be a plain scalar.
template <class A, class B>
concept binary_operands = operand<A> && operand<B> && (expression<A> || expression<B>);

template <class A, class B> requires binary_operands<A, B>
auto operator+(A&& a, B&& b) { return make_map(fn::add{}, std::forward<A>(a), std::forward<B>(b)); }
// bool - bool and -bool are errors, as in NumPy: modulo-2 arithmetic is rarely what was meant.
template <class A>
inline constexpr bool bool_operand_v = std::is_same_v<typename detail::held_t<A>::value_type, bool>;

template <class A, class B> requires binary_operands<A, B>
auto operator-(A&& a, B&& b) {
  static_assert(!(bool_operand_v<A> && bool_operand_v<B>),
                "fuse::operator-: bool - bool is not supported (as NumPy); write a != b (xor) or a && !b");
  return make_map(fn::sub{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B> requires binary_operands<A, B>
auto operator*(A&& a, B&& b) { return make_map(fn::mul{}, std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires binary_operands<A, B>
auto operator/(A&& a, B&& b) { return make_map(fn::div{}, std::forward<A>(a), std::forward<B>(b)); }
template <expression A>
auto operator-(A&& a) {
  static_assert(!bool_operand_v<A>, "fuse::operator-: negating a bool expression is not supported (as NumPy); write !a");
  return make_map(fn::neg{}, std::forward<A>(a));
}

}  // namespace fuse
