// fuse/backend/cpu/row_online.hpp - two phases of a long row in one pass (the pair:
// core/online_pair.hpp): softmax's max and sum(exp(x - max)), layer norm's mean and variance.
//
// A row longer than row_prefetch covers (prefetch_max_row_bytes) does not stay in L1 between
// phases, and nothing asks for it ahead while a phase computes: the max pass waits on memory and
// the exp pass on arithmetic, one after the other. Online, block by block: the block's first
// reduction (its max, its mean), then its second (exp(x - m) summed, squares about the mean)
// from L1 while the next block is asked for; the blocks' partial results are combined (the
// running sum rescaled when the running max rises; Chan et al.'s update for the variance). The
// epilogue then reads the row once more. Hand-written AVX2 loops, softmax on 2 threads (Zen 3),
// 2^24 floats in rows of 2^14 to 2^18: 10.6-11.1 GB/s with three passes, 12.0-12.3 online
// (docs/performance.md).
//
// softmax with the row buffer (row_cache.hpp): block b holds exp(x - m_b), m_b the running max
// when it was summed; the epilogue multiplies each block by exp(m_b - m) just before it writes it.
// A row split across threads (row_kernel.hpp) runs the pass per range and combines the ranges'
// parts as the blocks' (combine_softmax, combine_variance).
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "fuse/backend/cpu/prefetch.hpp"
#include "fuse/backend/cpu/row_reduce.hpp"
#include "fuse/core/online_pair.hpp"

namespace fuse::detail {

// Does the kernel run the pair online? Contiguous single rows longer than row_prefetch covers.
template <class It>
bool may_online(const It& it) {
  constexpr std::size_t R = It::rank;
  constexpr online_pair_t pair = online_pair<decltype(it.phases)>();
  if constexpr (!pair.found()) {
    return false;
  } else {
    using A = phase_child_t<decltype(it.phases), std::size_t(pair.max_phase)>;
    const std::size_t row_bytes = std::size_t(it.shape[R - 1]) * sizeof(typename A::value_type);
    return it.unit && it.inner_first == R - 1 && row_bytes > prefetch_max_row_bytes && online_pair_holds(it);
  }
}

// A thread's state for online rows: the running max of each block (softmax's buffer shifts) and
// a prefetch that asks for nothing (a block's first reduction reads lines that the previous
// block's second one asked for).
template <std::size_t R>
struct online_rows {
  std::vector<double> block_max;
  stream_prefetch<R> none;
  template <class It>
  explicit online_rows(const It& it)
      : block_max(std::size_t((it.shape[R - 1] + block_elements - 1) / block_elements)), none(it, false) {}
};

// A pair's partial result over a range of the row, before it is combined with other ranges'
// (one per thread on a row split across threads) and finalized. softmax: the running max and the
// sum of exp(x - max) below it; variance: the sum, the sum of squared deviations, the count.
struct online_part {
  bool ok = true;  // false: softmax met a NaN or +inf (its a, b, count are then not set)
  double a = 0, b = 0, count = 0;
};

// Two ranges' (sum, sum of squared deviations, count) as one (Chan, Golub and LeVeque).
inline online_part combine_variance(const online_part& x, const online_part& y) {
  if (!x.ok || !y.ok) return {false};
  if (x.count == 0) return y;
  if (y.count == 0) return x;
  const double delta = y.a / y.count - x.a / x.count;
  return {true, x.a + y.a, x.b + y.b + delta * delta * x.count * y.count / (x.count + y.count), x.count + y.count};
}

// Two ranges' (running max, sum of exp(x - max)) as one.
inline online_part combine_softmax(const online_part& x, const online_part& y) {
  if (!x.ok || !y.ok) return {false};
  if (x.count == 0) return y;
  if (y.count == 0) return x;
  const double m = std::max(x.a, y.a);
  if (m == -std::numeric_limits<double>::infinity()) return {true, m, 0, x.count + y.count};
  return {true, m, x.b * std::exp(x.a - m) + y.b * std::exp(y.a - m), x.count + y.count};
}

// softmax's pair over elements [begin, end) of the row: block by block, the block's max raises
// the running max m (the running sum is rescaled by exp(m_old - m)), then the block's exp(x - m)
// are summed (and stored in buf; state.block_max keeps each block's m for the epilogue's
// rescaling). Every element -inf: m = -inf, the sum 0.
// e is seeked again after each new shift (idx: the row): a row constant of it that reads the shift
// (logsumexp's finite_or_zero(m)) is computed when it is seeked.
template <class PK, class PJ, class A, class E, class SetShift, std::size_t R, class Buf>
online_part online_softmax_range(const A& a, E e, const index_t* idx, index_t begin, index_t end, SetShift set_shift,
                                 const stream_prefetch<R>& pf, online_rows<R>& state, row_copies<R>* copies, Buf buf) {
  using Max = typename PK::acc_type;
  constexpr Max inf = std::numeric_limits<Max>::infinity();
  Max m = -inf;
  typename sum_op::template total_t<typename PJ::acc_type> s = 0;
  for (index_t b = begin; b < end; b += block_elements) {
    const index_t stop = std::min(end, b + block_elements);
    const Max mb = PK::op::combine(m, reduce_range<typename PK::op, Max>(a, b, stop, state.none));
    if (!(mb < inf)) return {false};  // NaN or +inf
    if (mb != m) {
      if (m != -inf) s *= std::exp(double(m) - double(mb));  // (m = -inf: s is 0)
      m = mb;
    }
    // While every element so far is -inf, the shift is 0: exp(-inf - 0) = 0, so the block adds 0
    // and stores 0, which its factor exp(-inf - m) = 0 keeps 0.
    set_shift(typename PK::result_type(m == -inf ? Max(0) : m));
    seek_row(e, idx, copies);
    state.block_max[std::size_t((b - begin) / block_elements)] = double(m);
    s += reduce_range<sum_op, typename PJ::acc_type>(e, b, stop, pf, buf);
  }
  return {true, double(m), double(s), double(end - begin)};
}

// Layer norm's pair over elements [begin, end) of the row: block by block, the block's mean c,
// then its sum of squares about c (in L1); blocks combine by Chan et al.'s update in double. The
// mean is the sum of the same block sums as the two-pass kernel's, so it is the same value.
template <class PK, class PJ, class A, class E, class SetShift, std::size_t R>
online_part online_variance_range(const A& a, const E& e, index_t begin, index_t end, SetShift set_shift,
                                  const stream_prefetch<R>& pf, online_rows<R>& state) {
  online_part part;
  for (index_t b = begin; b < end; b += block_elements) {
    const index_t stop = std::min(end, b + block_elements);
    const double nb = double(stop - b);
    const double sb = double(reduce_range<typename PK::op, double>(a, b, stop, state.none));  // double lanes: Chan's update is first-order in the block means' error
    const double mean_b = sb / nb;
    const auto c = typename PK::result_type(mean_b);
    set_shift(c);
    const double s2 = double(reduce_range<typename PJ::op, typename PJ::acc_type>(e, b, stop, pf));
    // Squares about c, not about the block's exact mean: sum (x - c)^2 = m2_b + nb (mean_b - c)^2.
    const double m2_b = std::max(0.0, s2 - nb * (mean_b - double(c)) * (mean_b - double(c)));
    part = combine_variance(part, online_part{true, sb, m2_b, nb});
  }
  return part;  // finish_online checks that it is finite
}

// A whole row's pair result into the slots (set_shift: the max or the mean, where phases K0 and
// K2 read it). False when the row needs the exact two-phase path: NaN or infinity met, or, for
// softmax, every element -inf.
template <online_kind Kind, class PK, class PJ, class SetShift>
bool finish_online(const online_part& part, index_t n, SetShift set_shift, row_slot* slots) {
  if (!part.ok) return false;
  if constexpr (Kind == online_kind::softmax) {
    if (part.a == -std::numeric_limits<double>::infinity()) return false;
    set_shift(typename PK::result_type(part.a));
    write_slot(slots[PJ::slot], sum_op::template finalize<typename PJ::result_type>(part.b, n));
  } else {
    if (!std::isfinite(part.a) || !std::isfinite(part.b)) return false;
    set_shift(PK::op::template finalize<typename PK::result_type>(part.a, n));
    write_slot(slots[PJ::slot], PJ::op::template finalize<typename PJ::result_type>(part.b, n));
  }
  return true;
}

// Writes the value phases K0 and K2 read (K2: the one phase J's operand reads): the running max
// or the block's mean while a block is reduced, the row's at the end.
// (online_pair_v, a variable template, not a local constant: nvcc does not let a lambda read one.)
template <class Phases>
auto shift_writer(row_slot* slots) {
  using PK = phase_at_t<Phases, std::size_t(online_pair_v<Phases>.max_phase)>;
  return [slots](auto v) {
    write_slot(slots[PK::slot], v);
    write_slot(slots[std::size_t(online_pair_v<Phases>.read_phase)], v);
  };
}

// The pair's one pass over elements [begin, end) of the row at idx, the phases bound to slots
// (the running shift is written there); softmax with buf also stores each block's exp(x - m_b).
template <class Phases, std::size_t R, class Buf>
online_part online_pair_range(const Phases& phases, const phase_plan* plans, row_slot* slots, const index_t* idx,
                              index_t begin, index_t end, stream_prefetch<R>& pf, online_rows<R>& state,
                              std::type_identity_t<row_copies<R>>* copies, Buf buf) {
  constexpr online_pair_t pair = online_pair<Phases>();
  constexpr std::size_t k0 = std::size_t(pair.max_phase), j = std::size_t(pair.sum_phase);
  const auto& pk = get<k0>(phases);
  const auto& pj = get<j>(phases);
  using PK = std::remove_cvref_t<decltype(pk)>;
  using PJ = std::remove_cvref_t<decltype(pj)>;
  const auto set_shift = shift_writer<Phases>(slots);
  online_part part;
  with_shared(pk.child, plans[k0].shared, [&](const auto& first_operand) {
    with_shared(pj.child, plans[j].shared, [&](const auto& second_operand) {
      const auto a = seeked(first_operand, idx, copies);
      const auto e = seeked(second_operand, idx, copies);
      pf.seek(idx);
      pf.lead(block_elements);
      if constexpr (online_pair_v<Phases>.kind == online_kind::softmax)
        part = online_softmax_range<PK, PJ>(a, e, idx, begin, end, set_shift, pf, state, copies, buf);
      else part = online_variance_range<PK, PJ>(a, e, begin, end, set_shift, pf, state);
      pf.lead(-1);
    });
  });
  return part;
}

// The pair's one pass over the row at idx: writes the slots of K0, K2 and J. Returns false when a
// result is NaN or infinite (or, for softmax, every element is -inf): the caller then runs the
// two phases as usual (whose exact special values this pass would have to repeat).
// Not inlined: it runs once per long row, and inlined it would only add to run_row, whose other
// path serves short rows (layer norm [16384, 1024]: no difference measured either way).
template <class It, class Phases, class Buf>
FUSE_NOINLINE bool run_online_pair(const It& it, Phases& phases, const phase_plan* plans, row_slot* slots, const index_t* idx,
                                   stream_prefetch<It::rank>& pf, online_rows<It::rank>& state, row_copies<It::rank>* copies,
                                   Buf buf) {
  constexpr online_pair_t pair = online_pair<Phases>();
  using PK = phase_at_t<Phases, std::size_t(pair.max_phase)>;
  using PJ = phase_at_t<Phases, std::size_t(pair.sum_phase)>;
  const index_t n = it.shape[It::rank - 1];
  const online_part part = online_pair_range(phases, plans, slots, idx, 0, n, pf, state, copies, buf);
  return finish_online<pair.kind, PK, PJ>(part, n, shift_writer<Phases>(slots), slots);
}

// The repeated phases whose source comes before the pair's first phase k0, copied before the pair
// runs (their turn in slot order may come after it): the pair's second phase reads its operand's
// slots through such repeats (softmax(x * mean(y)): the sum's x * mean(y) reads a repeat of the
// mean numbered after the max).
template <class Phases>
void copy_aliases_before(const Phases& phases, row_slot* slots, const int* alias, int k0) {
  std::size_t k = 0;
  for_each(phases, [&](const auto& p) {
    if (alias[k] >= 0 && alias[k] < k0) copy_alias_slot<std::remove_cvref_t<decltype(p)>::slot>(phases, slots, alias[k]);
    ++k;
  });
}

// Before the epilogue writes block [b, e): its buffered exp(x - m_b) times exp(m_b - m).
template <class T>
void rescale_block(T* buf, index_t b, index_t e, double block_max, double m) {
  if (block_max == m) return;
  const T f = static_cast<T>(std::exp(block_max - m));
  FUSE_SIMD_LOOP
  for (index_t i = b; i < e; ++i) buf[i] *= f;
}

}  // namespace fuse::detail
