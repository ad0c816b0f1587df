// fuse/core/scalar.hpp - a plain arithmetic value as an operand: rank 0, weak for type promotion.
#pragma once

#include "fuse/core/evaluator.hpp"
#include "fuse/core/expression.hpp"

namespace fuse::detail {

template <class T>
struct scalar_expr : expr_tag {
  using value_type = T;
  static constexpr std::size_t rank = 0;
  static constexpr node_kind kind = node_kind::leaf;
  static constexpr memory_space space = memory_space::any;
  static constexpr shape_t<0> static_shape{};
  static constexpr bool weak = true;

  T value;

  constexpr shape_t<0> shape() const { return {}; }
  template <std::size_t R, std::size_t = 0>
  const_eval<T> evaluator(const shape_t<R>&) const { return {value}; }
  template <class F>
  void visit_leaves(F&&) const {}
};

template <class T>
inline constexpr bool row_invariant_v<scalar_expr<T>> = true;

template <class T>
inline constexpr bool is_scalar_expr_v = false;
template <class T>
inline constexpr bool is_scalar_expr_v<scalar_expr<T>> = true;

}  // namespace fuse::detail
