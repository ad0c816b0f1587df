// fuse/core/expression.hpp - the expression concept, node kinds, memory spaces, and how operands are held.
#pragma once

#include <array>
#include <concepts>
#include <memory>
#include <type_traits>

#include "fuse/core/extents.hpp"

namespace fuse {

// What a node is, for the planner (TVM's op-pattern lattice, in order).
enum class node_kind { leaf, elementwise, view, generator, reduction, anchor, opaque };

// Where a leaf's memory lives. `any` is for scalars and generators (full, iota).
enum class memory_space { any, host, device };

// A node is a value: `e1 = e2` rebinds e1 to e2's operands, as for any value type. The implicit
// member-wise assignment assigned the views a node holds, and a view's `=` writes elements
// (spec section 1): `auto e = a + 1.f; e = b + 1.f;` copied b into a.
#define FUSE_NODE_IS_A_VALUE(Self)                                                                   \
  Self(const Self&) = default;                                                                       \
  Self(Self&&) = default;                                                                            \
  Self& operator=(const Self& o) {                                                                   \
    static_assert(std::is_nothrow_move_constructible_v<Self>,                                        \
                  "fuse: a node whose callable may throw when moved cannot be reassigned");          \
    if (this != &o) {                                                                                \
      Self copy(o);                                                                                  \
      std::destroy_at(this);                                                                         \
      std::construct_at(this, std::move(copy));                                                      \
    }                                                                                                \
    return *this;                                                                                    \
  }                                                                                                  \
  Self& operator=(Self&& o) noexcept {                                                               \
    static_assert(std::is_nothrow_move_constructible_v<Self>,                                        \
                  "fuse: a node whose callable may throw when moved cannot be reassigned");          \
    if (this != &o) {                                                                                \
      std::destroy_at(this);                                                                         \
      std::construct_at(this, std::move(o));                                                         \
    }                                                                                                \
    return *this;                                                                                    \
  }

// The words of the misuse messages that several functions share (static_assert texts; string
// literals, so that "fuse::copy: " FUSE_NOT_A_DESTINATION concatenates).
#define FUSE_EXPRESSION_KINDS "an expression (x + y, exp(x), a reduction, full, iota, take)"
#define FUSE_NOT_A_DESTINATION "the destination must be a tensor or a view; " FUSE_EXPRESSION_KINDS " cannot be written"
#define FUSE_READ_ONLY_DESTINATION \
  "the destination is read-only (a view of a temporary tensor, such as transpose(fuse::eval(e)))"

// `expr = value` on a node (`sum(x, axis<0>) = b`, `(x + y) = 0.f`) is misuse: only tensors and
// views are destinations. Without this the compiler's first line is "no match for operator=".
// (So is rebinding `auto e = x + 1.f;` to an expression of another type, `e = x * 2.f`.)
#define FUSE_NODE_IS_NOT_A_DESTINATION(Self)                                                         \
  template <class Value_>                                                                            \
    requires(!std::is_same_v<std::remove_cvref_t<Value_>, Self>)                                     \
  Self& operator=(Value_&&) {                                                                        \
    static_assert(sizeof(Value_) == 0, "fuse::assign: " FUSE_NOT_A_DESTINATION                       \
                  ", nor rebound to an expression of another type");                                 \
    return *this;                                                                                    \
  }

namespace detail {
// Every node and leaf derives from this tag; scalars do not.
struct expr_tag {};

constexpr memory_space join_space(memory_space a, memory_space b) {
  if (a == memory_space::any) return b;
  if (b == memory_space::any) return a;
  return a == b ? a : memory_space::any;  // mixing is caught by spaces_compatible
}
constexpr bool spaces_compatible(memory_space a, memory_space b) {
  return a == memory_space::any || b == memory_space::any || a == b;
}
}  // namespace detail

// A lazy tensor expression: a tensor, a view, or a node over them.
template <class E>
concept expression = std::derived_from<std::remove_cvref_t<E>, detail::expr_tag> && requires(const std::remove_cvref_t<E>& e) {
  typename std::remove_cvref_t<E>::value_type;
  { std::remove_cvref_t<E>::rank } -> std::convertible_to<std::size_t>;
  e.shape();
};

// A plain arithmetic value used as an operand (a "weak" scalar in NumPy 2's promotion rules).
template <class T>
concept scalar = std::is_arithmetic_v<std::remove_cvref_t<T>>;

template <class T>
concept operand = expression<T> || scalar<T>;

namespace detail {

// Is E constant along every row of a kernel (scalars, generators of one value, reduction values)?
template <class E>
inline constexpr bool row_invariant_v = false;

// Reduction nodes in E (each gets a slot of the row kernel, numbered in post-order).
template <class E>
inline constexpr std::size_t reduction_count_v = 0;

}  // namespace detail
}  // namespace fuse
