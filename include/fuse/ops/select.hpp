// fuse/ops/select.hpp - min max clamp where pow cast, and fuse::map for user callables.
#pragma once

#include <cmath>

#include "fuse/math/convert.hpp"
#include "fuse/ops/arith.hpp"

namespace fuse {

namespace fn {
// NaN propagates (np.maximum / np.minimum): pick a when a is NaN, b when b is.
struct maximum {
  static constexpr const char* name = "max";
  static constexpr int flops = 1;
  using promotion = fuse::promotion::ordered;
  template <class T>
  FUSE_HOST_DEVICE FUSE_INLINE T operator()(T a, T b) const { return (a > b || a != a) ? a : b; }
};
struct minimum {
  static constexpr const char* name = "min";
  static constexpr int flops = 1;
  using promotion = fuse::promotion::ordered;
  template <class T>
  FUSE_HOST_DEVICE FUSE_INLINE T operator()(T a, T b) const { return (a < b || a != a) ? a : b; }
};
struct clamp {
  static constexpr const char* name = "clamp";
  static constexpr int flops = 2;
  using promotion = fuse::promotion::ordered;
  template <class T>
  FUSE_HOST_DEVICE FUSE_INLINE T operator()(T x, T lo, T hi) const { return minimum{}(maximum{}(x, lo), hi); }
};
struct where {
  static constexpr const char* name = "where";
  static constexpr int flops = 1;
  using promotion = fuse::promotion::select;
  template <class T>
  FUSE_HOST_DEVICE FUSE_INLINE T operator()(bool c, T a, T b) const { return c ? a : b; }
};
struct pow {
  static constexpr const char* name = "pow";
  static constexpr int flops = 20;
  using promotion = fuse::promotion::power;
  template <class T, class E>
  FUSE_HOST_DEVICE FUSE_INLINE T operator()(T a, E b) const {
    if constexpr (std::is_same_v<T, bool>) {  // 0^0 = 1^b = 1, 0^1 = 0 (and no -Wbool-compare below)
      return a || !b;
    } else if constexpr (std::is_integral_v<T>) {  // integer power by squaring, as NumPy; b in its own type
      if constexpr (std::is_signed_v<E>) {
        if (b < 0) {  // NumPy raises; fuse gives a^b truncated toward zero (0 for a = 0)
          if (a == T(1)) return T(1);
          if constexpr (std::is_signed_v<T>)
            if (a == T(-1)) return (b & 1) ? T(-1) : T(1);
          return T(0);
        }
      }
      T r = 1;
      for (E e = b; e > 0; e >>= 1) {
        if (e & 1) r = T(math::wrapping_mul(r, a));  // wraps, as NumPy
        if (e > 1) a = T(math::wrapping_mul(a, a));
      }
      return r;
    } else {
      using std::pow;
      return pow(a, b);
    }
  }
};
template <class U>
struct cast {
  static constexpr const char* name = "cast";
  static constexpr int flops = 0;
  using promotion = fuse::promotion::none;
  template <class T>
  FUSE_HOST_DEVICE FUSE_INLINE U operator()(T x) const { return math::convert<U>(x); }
};

// A user callable, applied elementwise with operands as they are.
template <class F>
struct user {
  static constexpr const char* name = "map";
  static constexpr int flops = 1;
  using promotion = fuse::promotion::none;
  [[no_unique_address]] F f;  // an empty callable stays empty: evaluator_match and the plan key compare no indeterminate byte
FUSE_EXEC_CHECK_DISABLE
  template <class... T>
  FUSE_HOST_DEVICE FUSE_INLINE auto operator()(T... x) const { return f(x...); }
};
}  // namespace fn

template <class A, class B> requires binary_operands<A, B>
auto max(A&& a, B&& b) { return make_map(fn::maximum{}, std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires binary_operands<A, B>
auto min(A&& a, B&& b) { return make_map(fn::minimum{}, std::forward<A>(a), std::forward<B>(b)); }
template <class A, class B> requires binary_operands<A, B>
auto pow(A&& a, B&& b) { return make_map(fn::pow{}, std::forward<A>(a), std::forward<B>(b)); }
template <expression X, operand L, operand H>
auto clamp(X&& x, L&& lo, H&& hi) {
  return make_map(fn::clamp{}, std::forward<X>(x), std::forward<L>(lo), std::forward<H>(hi));
}
// Two (three) const lvalues of one expression type: with `using namespace std`, std::max(const
// T&, const T&) is more specialised than max(A&&, B&&) and was chosen (an error inside <algorithm>);
// these have std's parameter form and are more constrained, so they win.
template <expression A>
auto max(const A& a, const A& b) { return make_map(fn::maximum{}, a, b); }
template <expression A>
auto min(const A& a, const A& b) { return make_map(fn::minimum{}, a, b); }
template <expression X>
auto clamp(const X& x, const X& lo, const X& hi) { return make_map(fn::clamp{}, x, lo, hi); }
template <operand C, operand A, operand B>
  requires(expression<C> || expression<A> || expression<B>)
auto where(C&& c, A&& a, B&& b) {
  return make_map(fn::where{}, std::forward<C>(c), std::forward<A>(a), std::forward<B>(b));
}
template <class U, expression X>
auto cast(X&& x) {
  static_assert(detail::is_element_v<U>,
                "fuse::cast<U>: U must be an arithmetic type other than long double (or a number class convertible to float, such as __half)");
  return make_map(fn::cast<U>{}, std::forward<X>(x));
}

// Applies f elementwise: map(f, e1, e2, ...)(i) = f(e1(i), e2(i), ...). For CUDA, f must be a
// __host__ __device__ callable.
template <class F, operand... E>
  requires((expression<E> || ...) && std::is_invocable_v<const F&, typename detail::held_t<E>::value_type...>)
auto map(F f, E&&... e) {
  static_assert(detail::is_element_v<std::remove_cvref_t<std::invoke_result_t<const F&, typename detail::held_t<E>::value_type...>>>,
                "fuse::map: the callable must return an arithmetic value other than long double (or a "
                "number class convertible to float, such as __half): tensors hold plain numbers");
  return make_map(fn::user<F>{f}, std::forward<E>(e)...);
}
// A callable that only a non-const object can call (a mutable lambda): a clear error, not "no
// matching function".
template <class F, operand... E>
  requires((expression<E> || ...) && !std::is_invocable_v<const F&, typename detail::held_t<E>::value_type...> &&
           std::is_invocable_v<F&, typename detail::held_t<E>::value_type...>)
auto map(F, E&&...) {
  static_assert(sizeof(F) == 0,
                "fuse::map: the callable must be callable as const (no mutable lambda, no non-const operator()): "
                "it is copied into the kernel and runs on several threads at once");
  return 0;
}

}  // namespace fuse
