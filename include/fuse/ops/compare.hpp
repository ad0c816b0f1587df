// fuse/ops/compare.hpp - comparisons (giving bool) and logical && || !.
#pragma once

#include <utility>

#include "fuse/ops/arith.hpp"

namespace fuse {

namespace fn {
// Two plain integers (signature<predicate> leaves them in their own types) compare by value.
#define FUSE_COMPARE_FN(NAME, OP, BY_VALUE)                                                   \
  struct NAME {                                                                               \
    static constexpr const char* name = #NAME;                                                \
    static constexpr int flops = 1;                                                           \
    using promotion = fuse::promotion::predicate;                                             \
    template <class A, class B>                                                               \
    FUSE_HOST_DEVICE FUSE_INLINE constexpr bool operator()(A a, B b) const {                  \
      if constexpr (detail::is_integer_like_v<A> && detail::is_integer_like_v<B>)                        \
        return BY_VALUE(detail::as_plain_integer(a), detail::as_plain_integer(b));                           \
      else return a OP b;                                                                     \
    }                                                                                         \
  };
FUSE_COMPARE_FN(less, <, std::cmp_less)
FUSE_COMPARE_FN(less_equal, <=, std::cmp_less_equal)
FUSE_COMPARE_FN(greater, >, std::cmp_greater)
FUSE_COMPARE_FN(greater_equal, >=, std::cmp_greater_equal)
FUSE_COMPARE_FN(equal, ==, std::cmp_equal)
FUSE_COMPARE_FN(not_equal, !=, std::cmp_not_equal)
#undef FUSE_COMPARE_FN

#define FUSE_LOGICAL_FN(NAME, OP)                                                  \
  struct NAME {                                                                    \
    static constexpr const char* name = #NAME;                                     \
    static constexpr int flops = 1;                                                \
    using promotion = fuse::promotion::logical;                                    \
    template <class A, class B>                                                    \
    FUSE_HOST_DEVICE FUSE_INLINE constexpr bool operator()(A a, B b) const {       \
      return a OP b;                                                               \
    }                                                                              \
  };
FUSE_LOGICAL_FN(logical_and, &&)
FUSE_LOGICAL_FN(logical_or, ||)
#undef FUSE_LOGICAL_FN

struct logical_not {
  static constexpr const char* name = "logical_not";
  static constexpr int flops = 1;
  using promotion = fuse::promotion::logical;
  FUSE_HOST_DEVICE FUSE_INLINE constexpr bool operator()(bool a) const { return !a; }
};
}  // namespace fn

#define FUSE_BINARY_OPERATOR(OP, FN)                                               \
  template <class A, class B> requires binary_operands<A, B>                       \
  auto operator OP(A&& a, B&& b) {                                                 \
    return make_map(fn::FN{}, std::forward<A>(a), std::forward<B>(b));             \
  }
FUSE_BINARY_OPERATOR(<, less)
FUSE_BINARY_OPERATOR(<=, less_equal)
FUSE_BINARY_OPERATOR(>, greater)
FUSE_BINARY_OPERATOR(>=, greater_equal)
FUSE_BINARY_OPERATOR(==, equal)
FUSE_BINARY_OPERATOR(!=, not_equal)
FUSE_BINARY_OPERATOR(&&, logical_and)
FUSE_BINARY_OPERATOR(||, logical_or)
#undef FUSE_BINARY_OPERATOR

template <expression A>
auto operator!(A&& a) { return make_map(fn::logical_not{}, std::forward<A>(a)); }

}  // namespace fuse
