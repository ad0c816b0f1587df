// fuse/ops/nn.hpp - composite layers, written with the nodes users have: the planner makes each a
// single row kernel because every reduction's result is broadcast back over the rows it reduced.
#pragma once

#include "fuse/ops/reduce.hpp"

namespace fuse {

// exp(x - max) / sum(exp(x - max)) along axis K; a row of all -inf gives NaN (as NumPy, PyTorch).
template <expression E, int K = -1>
auto softmax(E&& e, axis_t<K> ax = {}) {
  auto x = detail::hold_operand(std::forward<E>(e));
  auto z = exp(x - max(x, ax));
  return z * (1 / sum(z, ax));  // one division per row, not per element
}

// (x - max) - log(sum(exp(x - max))) along axis K.
template <expression E, int K = -1>
auto log_softmax(E&& e, axis_t<K> ax = {}) {
  auto x = detail::hold_operand(std::forward<E>(e));
  auto shifted = x - max(x, ax);
  return shifted - log(sum(exp(shifted), ax));
}

// (x - mean) / sqrt(var + eps) * gamma + beta over the last axis.
template <expression E, operand G, operand B>
auto layer_norm(E&& e, G&& gamma, B&& beta, double eps = 1e-5) {
  auto x = detail::hold_operand(std::forward<E>(e));
  using T = typename decltype(x)::value_type;
  auto centred = x - mean(x, axis<-1>);
  return centred * rsqrt(mean(square(centred), axis<-1>) + detail::compute_t<T>(eps)) * std::forward<G>(gamma) + std::forward<B>(beta);
}

// x / sqrt(mean(x * x) + eps) * gamma over the last axis.
template <expression E, operand G>
auto rms_norm(E&& e, G&& gamma, double eps = 1e-6) {
  auto x = detail::hold_operand(std::forward<E>(e));
  using T = typename decltype(x)::value_type;
  return x * rsqrt(mean(square(x), axis<-1>) + detail::compute_t<T>(eps)) * std::forward<G>(gamma);
}

}  // namespace fuse
