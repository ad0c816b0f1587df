// fuse/backend/cuda/row_registers.hpp - the row of a short-row kernel held in registers.
//
// softmax reads x three times per row (max, sum of exp, epilogue) and layer norm three times
// (mean, variance, epilogue). For rows up to 32 * row_lane_elements elements, one warp holds the
// row in registers: lane l loads elements l, l + 32, ... of the row's *source* - the first memory
// load in the first phase's operand - once, and every phase and the epilogue read those registers
// wherever the same load (same pointer and strides) occurs. Other loads (layer norm's gamma and
// beta) still read memory.
//
// The phase whose operand the epilogue repeats (softmax's exp(x - max), cpu/row_cache.hpp's
// choice) can keep its values in a second register array: the epilogue then reads them through a
// hole (shared_subtree.hpp) instead of computing the exponential again.
//
// The register value travels as the `env` argument of at(): an occurrence of the source becomes
// register_or_load, which returns it when the occurrence is the source and loads otherwise (decided
// once, on the host). The per-lane steps are host and device functions, so that the CPU tests run
// them lane by lane (tests/backend/test_row_registers.cpp); row_kernel.cuh adds the warp reduction.
#pragma once

#include <cstddef>
#include <type_traits>

#include "fuse/backend/cpu/row_cache.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/core/shared_subtree.hpp"
#include "fuse/core/evaluator_match.hpp"
#include "fuse/core/row_iteration.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse::detail {

// Elements per lane: rows up to 32 * 32 = 1024 elements. Each lane keeps 32 values in registers.
inline constexpr int row_lane_elements = 32;
inline constexpr int row_lanes = 32;

// The first load (pre-order) in E, through elementwise nodes; void if none.
template <class E>
struct first_load {
  using type = void;
};
template <class T, std::size_t R>
struct first_load<load_eval<T, R>> {
  using type = load_eval<T, R>;
};
template <class... L>
struct first_non_void {
  using type = void;
};
template <class L, class... Rest>
struct first_non_void<L, Rest...> {
  using type = std::conditional_t<std::is_void_v<L>, typename first_non_void<Rest...>::type, L>;
};
template <class R, class C, class F, class... A>
struct first_load<map_eval<R, C, F, A...>> {
  using type = typename first_non_void<typename first_load<A>::type...>::type;
};

// The source of a row iteration's registers: the first load of phase 0's operand.
template <class It>
using row_source_t = typename first_load<std::remove_cvref_t<decltype(get<0>(std::declval<It&>().phases).child)>>::type;

// An occurrence of the source's type: the register value when it is the source, else a load.
template <class L>
struct register_or_load {
  using value_type = typename L::value_type;
  L load;
  bool in_register;

  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t* outer) { load.seek(outer); }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot*) {}
  template <bool Unit, class V, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE value_type at(index_t i, const V& reg, const Env&...) const {
    return in_register ? reg : load.template at<Unit>(i);
  }
  template <class F>
  void for_each_tracker(F&& f) { load.for_each_tracker(f); }
};

// A reduction's value for the row, read (and converted from the slot's double) once per row at
// seek(), which the register kernel calls after the phases before it have run. slot_eval reads
// and converts per element: an F2F.F32.F64 per element in the sum phase's SASS on the H200.
template <class T, std::size_t K>
struct row_value_eval {
  using value_type = T;
  static constexpr std::size_t index = K;
  const row_slot* slots = nullptr;
  T value{};
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t*) { value = read_slot<T>(slots[K]); }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot* s) { slots = s; }
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE T at(index_t, const Env&...) const { return value; }
  template <class F>
  void for_each_tracker(F&&) {}
};

// Shaped alike up to the slot, as slot_eval (evaluator_match.hpp).
template <class T, std::size_t K1, std::size_t K2>
struct same_shape<row_value_eval<T, K1>, row_value_eval<T, K2>> : std::true_type {};

// e with every subtree of the source's type S wrapped in register_or_load, and every slot read
// once per row (row_value_eval).
template <class S, class E>
auto mark_registers(const E& e, const S& source) {
  if constexpr (std::is_same_v<E, S>) {
    return register_or_load<S>{e, same_value(e, source, nullptr)};
  } else if constexpr (requires { e.slots; }) {  // slot_eval<T, K>
    return row_value_eval<typename E::value_type, E::index>{};
  } else if constexpr (requires { e.args; }) {
    return apply(
        [&](const auto&... a) {
          using M = map_eval<typename E::value_type, typename E::convert, std::remove_cvref_t<decltype(e.f)>,
                             decltype(mark_registers<S>(a, source))...>;
          return M{e.f, make_tuple_of(mark_registers<S>(a, source)...)};
        },
        e.args);
  } else {
    return e;
  }
}

// The row iteration with its epilogue and phases reading the registers, and the source itself.
template <class T, std::size_t R, class Ev, class Ph>
auto registers_iteration(const row_iteration<T, R, Ev, Ph>& it) {
  using S = row_source_t<row_iteration<T, R, Ev, Ph>>;
  const S source = first_occurrence<S>(get<0>(it.phases).child);
  auto ev = mark_registers<S>(it.eval, source);
  auto phases = apply(
      [&](const auto&... p) {
        auto one = [&]<class P>(const P& q) {
          auto child = mark_registers<S>(q.child, source);
          using Q = phase_eval<typename P::op, typename P::acc_type, typename P::result_type, P::slot, decltype(child)>;
          return Q{child, q.count};
        };
        return make_tuple_of(one(p)...);
      },
      it.phases);
  row_iteration<T, R, decltype(ev), decltype(phases)> r{it.out, {}, {}, it.inner_first, ev, phases, {}, it.unit, it.root_reduction};
  for (std::size_t d = 0; d < R; ++d) r.out_stride[d] = it.out_stride[d], r.shape[d] = it.shape[d];
  for (std::size_t k = 0; k < (it.phase_count > 0 ? it.phase_count : 1); ++k) r.alias[k] = it.alias[k];
  struct result {
    decltype(r) it;
    S source;
  };
  return result{r, source};
}

// The phase whose operand values the register kernel keeps for the epilogue, or -1.
template <class It>
constexpr int register_cached_phase() {
  return cached_phase<decltype(std::declval<It&>().eval), decltype(std::declval<It&>().phases)>();
}

// Does every occurrence of cached phase K's operand in the epilogue hold its value (run time)?
template <int K, class It>
bool register_cache_fits(const It& it) {
  if constexpr (K < 0) {
    return false;
  } else {
    return it.alias[K] < 0 && all_occurrences_equal(it.eval, get<std::size_t(K)>(it.phases).child, it.alias);
  }
}

// The iteration with its epilogue reading phase K's operand from the second register array
// (the hole after the source register in at()'s environment).
template <int K, class T, std::size_t R, class Ev, class Ph>
auto register_cached_iteration(const row_iteration<T, R, Ev, Ph>& it) {
  using C = std::remove_cvref_t<decltype(get<std::size_t(K)>(it.phases).child)>;
  auto ev = substitute<C>(it.eval, hole_eval<typename C::value_type, 1>{});
  row_iteration<T, R, decltype(ev), Ph> r{it.out, {}, {}, it.inner_first, ev, it.phases, {}, it.unit, it.root_reduction};
  for (std::size_t d = 0; d < R; ++d) r.out_stride[d] = it.out_stride[d], r.shape[d] = it.shape[d];
  for (std::size_t k = 0; k < it.phase_count; ++k) r.alias[k] = it.alias[k];
  return r;
}

// May a row iteration use the register kernel? One unit-stride row axis of at most 1024 elements.
template <class It>
bool registers_fit(const It& it) {
  constexpr std::size_t R = It::rank;
  if constexpr (std::is_void_v<row_source_t<It>>) {
    return false;
  } else {
    return it.unit && it.inner_first + 1 == R && it.row_elements() <= index_t(row_lanes) * row_lane_elements;
  }
}

// How many of lane `lane`'s N slots hold elements of a row of `count`: the loops below test the
// slot number against it (one 32-bit compare) instead of the 64-bit element index against count.
template <int N>
FUSE_HOST_DEVICE FUSE_INLINE int lane_count(int lane, index_t count) {
  if (count <= lane) return 0;
  const index_t m = (count - lane + row_lanes - 1) / row_lanes;
  return m < N ? static_cast<int>(m) : N;
}

// Lane `lane`'s elements of the current row (the source seeked to it): element lane + 32 j in
// reg[j].
template <int N, class S>
FUSE_HOST_DEVICE FUSE_INLINE void load_lane(const S& source, int lane, index_t count, typename S::value_type (&reg)[N]) {
  const int m = lane_count<N>(lane, count);
FUSE_UNROLL
  for (int j = 0; j < N; ++j) {
    const index_t i = lane + index_t(row_lanes) * j;
    reg[j] = j < m ? source.template at<true>(i) : typename S::value_type{};
  }
}

// Op::combine, but a NaN-propagating float max / min is one instruction on the GPU (sm_80+)
// instead of two compares and a select.
template <class Op, class A>
FUSE_HOST_DEVICE FUSE_INLINE A lane_combine(A a, A b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<A, float> && std::is_base_of_v<max_op, Op>) {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  } else if constexpr (std::is_same_v<A, float> && std::is_base_of_v<min_op, Op>) {
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
#endif
  return Op::combine(a, b);
}

// Lane `lane`'s share of phase p (its operand seeked to the row), as the phase's total type. Four
// accumulators: one chain of 32 dependent adds left the warps waiting on each other's results.
template <int N, class P, class V>
FUSE_HOST_DEVICE FUSE_INLINE auto reduce_lane(const P& p, int lane, index_t count, const V (&reg)[N]) {
  const int m = lane_count<N>(lane, count);
  using Op = typename P::op;
  using Acc = typename P::acc_type;
  using Total = typename Op::template total_t<Acc>;
  constexpr int chains = N % 4 == 0 ? 4 : 1;
  Acc acc[chains];
  FUSE_UNROLL
  for (int c = 0; c < chains; ++c) acc[c] = Op::template identity<Acc>();
  FUSE_UNROLL
  for (int j = 0; j < N; ++j) {
    const index_t i = lane + index_t(row_lanes) * j;
    if (j < m) acc[j % chains] = lane_combine<Op>(acc[j % chains], static_cast<Acc>(p.child.template at<true>(i, reg[j])));
  }
  FUSE_UNROLL
  for (int c = 1; c < chains; ++c) acc[0] = lane_combine<Op>(acc[0], acc[c]);
  return Op::combine(Op::template identity<Total>(), static_cast<Total>(acc[0]));
}

// As reduce_lane, keeping each operand value in kept[j] for the epilogue.
template <int N, class P, class V, class K>
FUSE_HOST_DEVICE FUSE_INLINE auto reduce_lane_keeping(const P& p, int lane, index_t count, const V (&reg)[N], K (&kept)[N]) {
  const int m = lane_count<N>(lane, count);
  using Op = typename P::op;
  using Acc = typename P::acc_type;
  using Total = typename Op::template total_t<Acc>;
  Acc acc = Op::template identity<Acc>();
  FUSE_UNROLL
  for (int j = 0; j < N; ++j) {
    const index_t i = lane + index_t(row_lanes) * j;
    if (j < m) {
      kept[j] = p.child.template at<true>(i, reg[j]);
      acc = lane_combine<Op>(acc, static_cast<Acc>(kept[j]));
    }
  }
  return Op::combine(Op::template identity<Total>(), static_cast<Total>(acc));
}

// As write_lane, the epilogue also reading the kept values.
template <int N, class T, class Ev, class V, class K>
FUSE_HOST_DEVICE FUSE_INLINE void write_lane_kept(T* out, const Ev& ev, int lane, index_t count, const V (&reg)[N], const K (&kept)[N]) {
  const int m = lane_count<N>(lane, count);
  FUSE_UNROLL
  for (int j = 0; j < N; ++j) {
    const index_t i = lane + index_t(row_lanes) * j;
    if (j < m) out[i] = static_cast<T>(ev.template at<true>(i, reg[j], kept[j]));
  }
}

// Lane `lane`'s elements of the epilogue (seeked to the row) into the unit-stride row `out`.
template <int N, class T, class Ev, class V>
FUSE_HOST_DEVICE FUSE_INLINE void write_lane(T* out, const Ev& ev, int lane, index_t count, const V (&reg)[N]) {
  const int m = lane_count<N>(lane, count);
FUSE_UNROLL
  for (int j = 0; j < N; ++j) {
    const index_t i = lane + index_t(row_lanes) * j;
    if (j < m) out[i] = static_cast<T>(ev.template at<true>(i, reg[j]));
  }
}

}  // namespace fuse::detail
