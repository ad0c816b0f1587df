// fuse/ops/nn.hpp - composite layers, written with the nodes users have: the planner makes each a
// single row kernel because every reduction's result is broadcast back over the rows it reduced.
#pragma once

#include "fuse/ops/reduce.hpp"

namespace fuse {

namespace detail {
// build(), its shape errors prefixed with the composite's name: layer_norm(x[3, 4], gamma[5], ...)
// reports "fuse::layer_norm: fuse::mul: shapes [3, 4] and [5] do not broadcast", not only the
// inner node the user did not write.
template <class F>
auto naming_shape_errors(const char* name, F&& build) {
  try {
    return build();
  } catch (const shape_error& e) {
    throw shape_error(std::string("fuse::") + name + ": " + e.what());
  }
}
}  // namespace detail

// exp(x - max) / sum(exp(x - max)) along axis K; a row of all -inf gives NaN (as NumPy, PyTorch).
template <expression E, int K = -1>
auto softmax(E&& e, axis_t<K> ax = {}) {
  return detail::with_operand(detail::as_floating(std::forward<E>(e)), [=](const auto& x) {
    // One division per row, not per element.  x - max is never positive (or is NaN), which
    // allows the cheaper exp.
    return detail::exp_nonpositive(x - max(x, ax)) *
           (1 / sum(detail::exp_nonpositive(x - max(x, ax)), ax));
  });
}

// (x - max) - log(sum(exp(x - max))) along axis K.
template <expression E, int K = -1>
auto log_softmax(E&& e, axis_t<K> ax = {}) {
  return detail::with_operand(detail::as_floating(std::forward<E>(e)), [=](const auto& x) {
    return (x - max(x, ax)) - log(sum(detail::exp_nonpositive(x - max(x, ax)), ax));
  });
}

// (x - mean) / sqrt(var + eps) * gamma + beta over the last axis.
template <expression E, operand G, operand B>
auto layer_norm(E&& e, G&& gamma, B&& beta, double eps = 1e-5) {
  using T = detail::float_result_t<typename std::remove_cvref_t<E>::value_type>;  // eps in int would be 0
  return detail::naming_shape_errors("layer_norm", [&] {
    return detail::with_operand(std::forward<E>(e), [&](const auto& x) {
      auto inv_std = rsqrt(mean(square(x - mean(x, axis<-1>)), axis<-1>) + detail::compute_t<T>(eps));
      return (x - mean(x, axis<-1>)) * inv_std * std::forward<G>(gamma) + std::forward<B>(beta);
    });
  });
}

// x / sqrt(mean(x * x) + eps) * gamma over the last axis.
template <expression E, operand G>
auto rms_norm(E&& e, G&& gamma, double eps = 1e-6) {
  using T = detail::float_result_t<typename std::remove_cvref_t<E>::value_type>;
  return detail::naming_shape_errors("rms_norm", [&] {
    return detail::with_operand(detail::as_floating(std::forward<E>(e)), [&](const auto& x) {
      return x * rsqrt(mean(square(x), axis<-1>) + detail::compute_t<T>(eps)) * std::forward<G>(gamma);
    });
  });
}

}  // namespace fuse
