// fuse/backend/cpu/row_online.hpp - softmax's max and sum(exp(x - max)) in one pass over a long
// row (the pair: core/online_pair.hpp).
//
// A row longer than row_prefetch covers (prefetch_max_row_bytes) does not stay in L1 between
// phases, and nothing asks for it ahead while a phase computes: the max pass waits on memory and
// the exp pass on arithmetic, one after the other. Online, block by block: the block's max raises
// the running max m (the running sum is rescaled by exp(m_old - m)), then the block's
// exp(x - m) are summed from L1 while the next block is asked for. The epilogue then reads the
// row once more. Hand-written AVX2 loops, softmax on 2 threads (Zen 3), 2^24 floats in rows of
// 2^14 to 2^18: 10.6-11.1 GB/s with three passes, 12.0-12.3 online (docs/performance.md).
//
// With the row buffer (row_cache.hpp), block b holds exp(x - m_b), m_b the running max when it was
// summed; the epilogue multiplies each block by exp(m_b - m) just before it writes that block.
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

// A thread's state for online rows: the running max of each block (the buffer's shifts) and a
// prefetch that asks for nothing (the max reads a block the sum pass before asked for).
template <std::size_t R>
struct online_rows {
  std::vector<double> block_max;
  stream_prefetch<R> none;
  template <class It>
  explicit online_rows(const It& it)
      : block_max(std::size_t((it.shape[R - 1] + block_elements - 1) / block_elements)), none(it, false) {}
};

// The pair's one pass over the row at idx: writes the slots of the max (K0, and K2 which the sum's
// operand reads) and of the sum (J); with buf, stores the block's exp(x - m_b) there. Returns false
// when the max is NaN or infinite, or every element is -inf: the caller then runs the two phases
// as usual (whose exact special values this pass would have to repeat).
template <bool Unit, class It, class Phases, class Buf>
bool run_online_pair(const It& it, Phases& phases, const shared_plan* shared, row_slot* slots, const index_t* idx,
                     stream_prefetch<It::rank>& pf, online_rows<It::rank>& state, Buf buf) {
  constexpr online_pair_t pair = online_pair<Phases>();
  constexpr std::size_t k0 = std::size_t(pair.max_phase), k2 = std::size_t(pair.read_phase), j = std::size_t(pair.sum_phase);
  const auto& pk = get<k0>(phases);
  const auto& pj = get<j>(phases);
  using PK = std::remove_cvref_t<decltype(pk)>;
  using PJ = std::remove_cvref_t<decltype(pj)>;
  using Max = typename PK::acc_type;
  using Sum = typename sum_op::template total_t<typename PJ::acc_type>;
  constexpr Max inf = std::numeric_limits<Max>::infinity();
  const index_t n = it.shape[It::rank - 1];
  Max m = -inf;
  Sum s = 0;
  bool ok = true;
  auto set_shift = [&](Max shift) {
    const auto v = PK::op::template finalize<typename PK::result_type>(shift, pk.count);
    write_slot(slots[PK::slot], v);
    write_slot(slots[k2], v);
  };
  with_shared(pk.child, shared[k0], [&](const auto& max_operand) {
    with_shared(pj.child, shared[j], [&](const auto& sum_operand) {
      auto a = max_operand;
      auto e = sum_operand;
      a.seek(idx);
      e.seek(idx);
      pf.seek(idx);
      pf.lead(block_elements);
      for (index_t b = 0; b < n; b += block_elements) {
        const index_t end = std::min(n, b + block_elements);
        const Max mb = PK::op::combine(m, reduce_range<typename PK::op, Max, Unit>(a, b, end, state.none));
        if (!(mb < inf)) {  // NaN or +inf
          ok = false;
          break;
        }
        if (mb != m) {
          if (m != -inf) s *= std::exp(double(m) - double(mb));  // (m = -inf: s is 0)
          m = mb;
        }
        // While every element so far is -inf, the shift is 0: exp(-inf - 0) = 0, so the block
        // adds 0 and stores 0, which its factor exp(-inf - m) = 0 keeps 0.
        set_shift(m == -inf ? Max(0) : m);
        state.block_max[std::size_t(b / block_elements)] = double(m);
        s += reduce_range<sum_op, typename PJ::acc_type, Unit>(e, b, end, pf, buf);
      }
      pf.lead(-1);
    });
  });
  if (!ok || m == -inf) return false;
  set_shift(m);
  write_slot(slots[PJ::slot], sum_op::template finalize<typename PJ::result_type>(s, pj.count));
  return true;
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
