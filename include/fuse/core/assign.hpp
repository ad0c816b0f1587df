// fuse/core/assign.hpp - fuse::assign and fuse::eval: checks, then one fused pass (or, for
// fuse::eager, one pass per node).
//
// assign(y, e) means: evaluate e into a fresh tensor, then copy into y. Shapes are checked and
// take() indices validated before anything is written; when y overlaps a leaf of e other than
// element-for-element, e is evaluated into a temporary first.
#pragma once

#include "fuse/backend/cpu/executor.hpp"
#include "fuse/backend/eager.hpp"
#include "fuse/core/iteration.hpp"
#include "fuse/core/map_expr.hpp"

namespace fuse {

namespace detail {

template <class E>
void validate(const E& e) {
  if constexpr (requires { e.validate(); }) e.validate();
  if constexpr (requires { e.args; }) for_each(e.args, [](const auto& a) { validate(a); });
}

template <class X>
concept host_executor = std::is_same_v<X, cpu>;

template <class It>
void run(const cpu& exec, const It& it) { run_cpu(exec, it); }

template <class Exec, class T, std::size_t R>
using tensor_for = basic_tensor<T, R, typename allocator_for<Exec::space>::type>;

// One fused pass of expression e (already held) into destination view/tensor d.
template <class Exec, class D, class E>
void assign_fused(const Exec& exec, D&& d, const E& e) {
  static_assert(spaces_compatible(Exec::space, E::space),
                "fuse::assign: the executor and the expression's memory are in different spaces "
                "(host leaves need fuse::cpu, device leaves fuse::cuda)");
  static_assert(spaces_compatible(std::remove_cvref_t<D>::space, Exec::space),
                "fuse::assign: the destination's memory is not in the executor's space");
  auto dst = destination_of(d);
  check_writable(dst);
  if (!assignable(dst.shape, e.shape()))
    throw shape_error("fuse::assign: cannot assign an expression of shape " + format_shape(e.shape()) +
                      " to a destination of shape " + format_shape(dst.shape));
  validate(e);
  auto it = make_iteration(dst, e);
  if (it.size() == 0) return;
  if (destination_overlaps(it)) {
    tensor_for<Exec, typename E::value_type, E::rank> tmp(e.shape());
    assign_fused(exec, tmp, e);
    assign_fused(exec, d, tmp.view());
    return;
  }
  run(exec, it);
}

template <class T>
T read_scalar(const tensor<T, 0>& t) { return *t.data(); }

// Device memory is served by fuse::cuda (backend/cuda), host memory by fuse::cpu.
template <memory_space S>
struct default_executor_for {
  using type = cpu;
};
template <class E>
constexpr auto default_executor() {
  return typename default_executor_for<E::space>::type{};
}

}  // namespace detail

// y = e, evaluated by `exec` (fuse::cpu, fuse::cuda, fuse::eager(...)).
template <class Exec, class D, class E>
  requires((expression<D>) && operand<E>)
void assign(const Exec& exec, D&& y, E&& e) {
  auto held = detail::hold_operand(std::forward<E>(e));
  if constexpr (detail::is_eager_v<Exec>) {
    detail::pool_arena<typename detail::allocator_for<Exec::space>::type> arena;
    detail::assign_fused(exec.exec, y, detail::with_materialised_children(exec.exec, arena, held));
  } else {
    detail::assign_fused(exec, y, held);
  }
}

// y = e on the executor of y's memory space.
template <class D, class E>
  requires((expression<D>) && operand<E>)
void assign(D&& y, E&& e) {
  assign(detail::default_executor<std::remove_cvref_t<D>>(), std::forward<D>(y), std::forward<E>(e));
}

// A new tensor holding e (a value for a rank-0 expression).
template <class Exec, expression E>
auto eval(const Exec& exec, E&& e) {
  using D = std::remove_cvref_t<E>;
  detail::tensor_for<Exec, typename D::value_type, D::rank> t(e.shape());
  assign(exec, t, std::forward<E>(e));
  if constexpr (D::rank == 0) return detail::read_scalar(t);
  else return t;
}

template <expression E>
auto eval(E&& e) {
  return eval(detail::default_executor<std::remove_cvref_t<E>>(), std::forward<E>(e));
}

}  // namespace fuse
