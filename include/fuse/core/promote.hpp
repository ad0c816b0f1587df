// fuse/core/promote.hpp - NumPy 2 type promotion: strong operands combine by std::common_type, weak
// (plain scalar) operands adopt the strong type of their kind; a float scalar with an integer tensor
// gives double. Half and bfloat16 are computed in float and stored in their own type.
#pragma once

#include <type_traits>

#include "fuse/config.hpp"

namespace fuse::detail {

// Types stored in 16 bits but computed in fp32 (specialised for __half / __nv_bfloat16 in CUDA builds).
template <class T>
struct compute_type {
  using type = T;
};
template <class T>
using compute_t = typename compute_type<T>::type;

template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<compute_t<T>>;

// What tensors hold and expressions compute: arithmetic types (bool included) and trivially
// copyable number classes such as __half and __nv_bfloat16 (also in a host-only translation unit,
// where fuse does not specialise compute_type for them: host code fills half tensors for a .cu
// file). Storage is raw memory copied with memcpy, so a class such as std::string (a
// cast<std::string>, a map returning a vector) would be used unconstructed.
// long double is not one: reductions carry their per-row values in double (row_slot) and the
// math functions exist for float and double only, so sum/max of a long double tensor silently
// rounded to double and exp(x) failed deep inside fuse::math.
// A class must also convert to float (__half and __nv_bfloat16 do): std::complex<float> and plain
// structs passed the trivially-copyable test and failed deep inside the nodes.
template <class T>
inline constexpr bool is_element_v = (std::is_arithmetic_v<T> && !std::is_same_v<std::remove_cv_t<T>, long double>) ||
                                     (std::is_class_v<T> && std::is_trivially_copyable_v<T> &&
                                      // 16-bit number classes: __half / __nv_bfloat16 have no float
                                      // conversion under -D__CUDA_NO_HALF_CONVERSIONS__ (PyTorch's flags)
                                      (std::is_convertible_v<T, float> || sizeof(T) == 2));

// Value type and weakness of an operand.
template <class V, bool Weak>
struct typed {
  using type = V;
  static constexpr bool weak = Weak;
};

template <class A, class B>
struct common_or_void {
  using type = std::common_type_t<A, B>;
};
template <class B>
struct common_or_void<void, B> {
  using type = B;
};
template <class A>
struct common_or_void<A, void> {
  using type = A;
};
template <>
struct common_or_void<void, void> {
  using type = void;
};

// The common type of the strong (non-scalar) operands; void when there are none.
template <class... T>
struct strong_common {
  using type = void;
};
template <class T, class... Rest>
struct strong_common<T, Rest...> {
  using type = typename common_or_void<std::conditional_t<T::weak, void, typename T::type>,
                                       typename strong_common<Rest...>::type>::type;
};

// Applies one weak scalar of type S to a strong type P.
template <class P, class S>
using adopt_weak_t = std::conditional_t<
    std::is_floating_point_v<S> && !is_floating_v<P>, double,
    std::conditional_t<std::is_integral_v<S> && std::is_same_v<P, bool> && !std::is_same_v<S, bool>, long long, P>>;

template <class P, class... T>
struct apply_weak {
  using type = P;
};
template <class P, class T, class... Rest>
struct apply_weak<P, T, Rest...> {
  using next = std::conditional_t<T::weak, adopt_weak_t<P, typename T::type>, P>;
  using type = typename apply_weak<next, Rest...>::type;
};

// promote_t<typed<V, weak>...>: the NumPy 2 result type of combining these operands.
template <class Strong, class... T>
struct promote_impl {  // some strong operand: weak scalars adapt to it
  using type = typename apply_weak<Strong, T...>::type;
};
template <class... T>
struct promote_impl<void, T...> {  // scalars only
  using type = std::common_type_t<typename T::type...>;
};
template <class... T>
struct promote {
  using type = typename promote_impl<typename strong_common<T...>::type, T...>::type;
};
template <class... T>
using promote_t = typename promote<T...>::type;

// A floating-point function of an integer gives double.
template <class T>
using float_result_t = std::conditional_t<is_floating_v<T>, T, double>;

}  // namespace fuse::detail
