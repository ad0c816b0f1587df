// fuse/core/map_expr.hpp - the elementwise node: a functor applied to broadcast operands.
//
// Every operator and math function of fuse is a map_expr over a small functor (ops/*.hpp), and so
// is fuse::map with a user callable. A functor states:
//   name        for the plan;
//   flops       arithmetic operations per element;
//   promotion   how operand types combine (see `signature` below).
#pragma once

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "fuse/core/broadcast.hpp"
#include "fuse/core/promote.hpp"
#include "fuse/core/scalar.hpp"
#include "fuse/core/tensor.hpp"

namespace fuse {

// Promotion policies a functor may name.
namespace promotion {
struct arith {};      // NumPy 2 promotion; result in that type
struct floating {};   // as arith, but an integer result becomes double (exp of an int tensor)
struct predicate {};  // compare in the promoted type, give bool
struct logical {};    // operands as bool, give bool
struct ordered {};    // min, max, clamp: as arith, but an integer outside the type saturates
struct select {};     // where(cond, a, b): cond as bool, a and b promoted
struct power {};      // pow: as arith, but an integer exponent keeps its own type (a negative one stays negative)
struct none {};       // user callables and casts: operands as they are, result as the callable gives
}  // namespace promotion

namespace detail {

template <class E>
using typed_of = typed<typename E::value_type, is_scalar_expr_v<E>>;

// Converts operand I's value to the type the functor computes in.
template <class Compute, class First = Compute>
struct convert_to {
  template <std::size_t I, class V>
  FUSE_HOST_DEVICE FUSE_INLINE static constexpr auto apply(V v) {
    if constexpr (I == 0) return static_cast<First>(v);
    else return static_cast<Compute>(v);
  }
};
struct convert_none {
  template <std::size_t I, class V>
  FUSE_HOST_DEVICE FUSE_INLINE static constexpr V apply(V v) { return v; }
};

// Integers whose comparison by value std::cmp_less and its kin take (not bool, not characters).
template <class T>
inline constexpr bool is_plain_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
                                           !std::is_same_v<T, wchar_t> && !std::is_same_v<T, char8_t> &&
                                           !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>;

// Integers other than bool, character types included (compared by value as the integers they are:
// std::cmp_less and its kin reject char, wchar_t, char8_t, char16_t and char32_t).
template <class T>
inline constexpr bool is_integer_like_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
FUSE_HOST_DEVICE FUSE_INLINE constexpr auto as_plain_integer(T v) {
  if constexpr (is_plain_integer_v<T>) return v;
  else if constexpr (std::is_signed_v<T>) return static_cast<std::make_signed_t<T>>(v);
  else return static_cast<std::make_unsigned_t<T>>(v);
}

// As convert_to, but an integer outside the compute type's range saturates to its nearest end
// instead of wrapping, so that min, max and clamp order values as NumPy 2 does:
// clamp(uint8, -1, 10) is clamp(x, 0, 10) (np.clip), min(int8, 300) is x; a weak scalar adopts the
// tensor's type, and converted by static_cast -1 would be 255.
template <class Compute>
struct convert_saturating {
  template <std::size_t I, class V>
  FUSE_HOST_DEVICE FUSE_INLINE static constexpr Compute apply(V v) {
    if constexpr (is_plain_integer_v<V> && is_plain_integer_v<Compute>) {
      using limits = std::numeric_limits<Compute>;
      if constexpr (!std::in_range<Compute>(std::numeric_limits<V>::lowest()))
        if (std::cmp_less(v, limits::lowest())) return limits::lowest();
      if constexpr (!std::in_range<Compute>(std::numeric_limits<V>::max()))
        if (std::cmp_greater(v, limits::max())) return limits::max();
    }
    return static_cast<Compute>(v);
  }
};

// As convert_to, but an integer exponent (operand 1) of an integer power keeps its own type:
// converted to an unsigned result type, -1 became 255 and pow(uint8, -1) computed x^255.
template <class Compute>
struct convert_power {
  template <std::size_t I, class V>
  FUSE_HOST_DEVICE FUSE_INLINE static constexpr auto apply(V v) {
    if constexpr (I == 1 && is_plain_integer_v<V> && is_plain_integer_v<Compute>) return v;
    else return static_cast<Compute>(v);
  }
};

// signature<Policy, F, Args...>: result type and operand conversion of a node.
template <class Policy, class F, class... A>
struct signature;
template <class F, class... A>
struct signature<promotion::arith, F, A...> {
  using result = promote_t<typed_of<A>...>;
  using convert = convert_to<compute_t<result>>;
};
template <class F, class... A>
struct signature<promotion::power, F, A...> {
  using result = promote_t<typed_of<A>...>;
  using convert = convert_power<compute_t<result>>;
};
template <class F, class... A>
struct signature<promotion::floating, F, A...> {
  using result = float_result_t<promote_t<typed_of<A>...>>;
  using convert = convert_to<compute_t<result>>;
};
template <class F, class... A>
struct signature<promotion::ordered, F, A...> {
  using result = promote_t<typed_of<A>...>;
  using convert = convert_saturating<compute_t<result>>;
};
// Integers are compared by value, each in its own type (NumPy 2: uint8 > -1 is true, where the
// scalar converted to uint8 would be 255); everything else in the promoted type.
template <class F, class... A>
struct signature<promotion::predicate, F, A...> {
  using result = bool;
  using convert = std::conditional_t<(is_integer_like_v<typename A::value_type> && ...), convert_none,
                                     convert_to<compute_t<promote_t<typed_of<A>...>>>>;
};
template <class F, class... A>
struct signature<promotion::logical, F, A...> {
  using result = bool;
  using convert = convert_to<bool>;
};
template <class F, class C, class... A>
struct signature<promotion::select, F, C, A...> {
  using result = promote_t<typed_of<A>...>;
  using convert = convert_to<compute_t<result>, bool>;
};
template <class F, class... A>
struct signature<promotion::none, F, A...> {
  using result = std::remove_cvref_t<std::invoke_result_t<const F&, typename A::value_type...>>;
  using convert = convert_none;
};

template <class F>
using promotion_of = typename F::promotion;

// Wraps an operand for storage in a node: lvalue tensors by reference (a view), rvalue tensors
// moved into shared ownership (owned_view), scalars as weak rank-0 leaves, everything else by
// value.
template <class A>
constexpr auto hold_operand(A&& a) {
  using D = std::remove_cvref_t<A>;
  if constexpr (scalar<D>) return scalar_expr<D>{{}, a};
  else if constexpr (is_tensor_v<D> && std::is_lvalue_reference_v<A>) return a.view();
  else if constexpr (is_tensor_v<D>) return own(std::move(a));
  else return D(std::forward<A>(a));
}
template <class A>
using held_t = decltype(hold_operand(std::declval<A>()));

// For composites that use their operand more than once: build(x) with the operand held once (an
// rvalue tensor then is shared by its uses, see owned_view; a node is copied into each).
template <class A, class Build>
auto with_operand(A&& a, Build&& build) {
  return build(hold_operand(std::forward<A>(a)));
}

template <class... A>
constexpr memory_space common_space() {
  memory_space s = memory_space::any;
  ((s = join_space(s, A::space)), ...);
  return s;
}
template <class... A>
constexpr bool spaces_agree() {
  bool ok = true;
  memory_space s = memory_space::any;
  ((ok = ok && spaces_compatible(s, A::space), s = join_space(s, A::space)), ...);
  return ok;
}

template <std::size_t... R>
constexpr std::size_t max_rank() {
  return std::max({std::size_t{0}, R...});
}

// Static shape of broadcasting all operands; fails to compile naming the first mismatching pair.
template <class First, class... Rest>
constexpr auto static_broadcast_all() {
  if constexpr (sizeof...(Rest) == 0) {
    return First::static_shape;
  } else {
    constexpr auto rest = static_broadcast_all<Rest...>();
    static_assert(check_static_broadcast<First::static_shape, rest>());
    return static_broadcast(First::static_shape, rest).shape;
  }
}

}  // namespace detail

// f applied elementwise to broadcast operands.
template <class F, class... Args>
struct map_expr : detail::expr_tag {
  static_assert(detail::spaces_agree<Args...>(),
                "fuse::expression: host and device leaves are mixed in one expression");

  using signature = detail::signature<detail::promotion_of<F>, F, Args...>;
  using value_type = typename signature::result;
  static constexpr std::size_t rank = detail::max_rank<Args::rank...>();
  static constexpr node_kind kind = node_kind::elementwise;
  static constexpr memory_space space = detail::common_space<Args...>();
  static constexpr shape_t<rank> static_shape = detail::static_broadcast_all<Args...>();
  // Instantiated with the class, so that static extents that cannot broadcast fail at compile time
  // (a static data member's initializer alone is instantiated only when something reads it).
  static_assert(static_shape.size() == rank);

  F f;
  detail::tuple<Args...> args;
  shape_t<rank> shape_;

#if defined(__CUDACC__)
  // nvcc infers the moved operands' implicit constructors as __host__ __device__ (the tuple's is)
  // and then warns that owned_view's shared_ptr is host-only; a node is only ever built on the host.
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20011
#endif
  template <class... A>
  explicit map_expr(F fn, A&&... a) : f(fn), args(std::forward<A>(a)...), shape_(broadcast_all()) {}
  FUSE_NODE_IS_A_VALUE(map_expr)
  FUSE_NODE_IS_NOT_A_DESTINATION(map_expr)
#if defined(__CUDACC__)
#pragma nv_diagnostic pop
#endif

  const shape_t<rank>& shape() const { return shape_; }
  index_t size() const { return shape_size(shape_); }

  // Operand k's reductions take the slots after those of operands 0..k-1 (post-order numbering).
  template <std::size_t R, std::size_t Base = 0>
  auto evaluator(const shape_t<R>& out) const {
    return evaluator_impl<R, Base>(out, std::index_sequence_for<Args...>{});
  }
  template <class G>
  void visit_leaves(G&& g) const {
    detail::for_each(args, [&](const auto& a) { a.visit_leaves(g); });
  }

  // Row-kernel slots taken by the reductions of operands 0..I-1.
  template <std::size_t I>
  static constexpr std::size_t slots_before = [] {
    constexpr std::size_t counts[] = {detail::reduction_count_v<Args>..., 0};
    std::size_t n = 0;
    for (std::size_t k = 0; k < I; ++k) n += counts[k];
    return n;
  }();

 private:
  template <std::size_t R, std::size_t Base, std::size_t... I>
  auto evaluator_impl(const shape_t<R>& out, std::index_sequence<I...>) const {
    using eval = detail::map_eval<value_type, typename signature::convert, F,
                                  decltype(detail::get<I>(args).template evaluator<R, Base + slots_before<I>>(out))...>;
    eval e{f, detail::make_tuple_of(detail::get<I>(args).template evaluator<R, Base + slots_before<I>>(out)...)};
    if constexpr ((detail::row_invariant_v<Args> && ...) && (detail::reduction_count_v<Args> + ...) > 0)
      return detail::invariant_eval<value_type, eval>{e};
    else
      return e;
  }

  shape_t<rank> broadcast_all() const {
    shape_t<rank> s{};
    s.fill(1);
    std::size_t bad = sizeof...(Args), k = 0;  // the first operand that does not broadcast
    detail::for_each(args, [&](const auto& a) {
      const auto as = a.shape();
      for (std::size_t d = 0; d < a.rank; ++d) {
        index_t& o = s[rank - a.rank + d];
        if (o == 1) o = as[d];
        else if (as[d] != 1 && as[d] != o && bad == sizeof...(Args)) bad = k;
      }
      ++k;
    });
    if (bad != sizeof...(Args)) broadcast_error(bad);
    return s;
  }
  // Names the first operand whose shape disagrees with operand `bad`'s, and bad itself. One
  // function per node formats it (detail::throw_broadcast_error), not one per operand type: that
  // was 7% of the code of a file of six softmax-like assigns (compile time).
  [[noreturn]] void broadcast_error(std::size_t bad) const {
    std::array<shape_t<rank>, sizeof...(Args)> shapes{};
    std::array<detail::extents_ref, sizeof...(Args)> refs{};
    std::size_t k = 0;
    detail::for_each(args, [&](const auto& a) {
      const auto as = a.shape();
      std::copy(as.begin(), as.end(), shapes[k].begin());
      refs[k] = {shapes[k].data(), a.rank};
      ++k;
    });
    detail::throw_broadcast_error(F::name, refs.data(), refs.size(), bad);
  }
};

namespace detail {
template <class F, class... A>
inline constexpr std::size_t reduction_count_v<map_expr<F, A...>> = (std::size_t{0} + ... + reduction_count_v<A>);
template <class F, class... A>
inline constexpr bool row_invariant_v<map_expr<F, A...>> = (row_invariant_v<A> && ...);
}

// Builds a map_expr, holding each operand as detail::hold_operand says.
template <class F, class... A>
auto make_map(F f, A&&... a) {
  return map_expr<F, detail::held_t<A>...>(f, detail::hold_operand(std::forward<A>(a))...);
}

}  // namespace fuse
