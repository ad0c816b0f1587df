// fuse/backend/cpu/row_reduce.hpp - the CPU row kernel's reductions: a phase over a range of the
// row, in SIMD lanes per block (several accumulators hide the combine's latency), float blocks
// combined in double; NaN and infinities handled exactly (reduce_block).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "fuse/backend/cpu/prefetch.hpp"
#include "fuse/backend/cpu/row_copies.hpp"
#include "fuse/backend/cpu/row_mask.hpp"
#include "fuse/core/row_iteration.hpp"
#include "fuse/core/shared_subtree.hpp"

namespace fuse::detail {

// Reductions accumulate blocks of this many elements in Acc, then blocks in the wider total type.
// (Overridable so that tests can cross block boundaries on short rows.)
#ifndef FUSE_ROW_BLOCK_ELEMENTS
#define FUSE_ROW_BLOCK_ELEMENTS 4096
#endif
inline constexpr index_t block_elements = FUSE_ROW_BLOCK_ELEMENTS;

// Ops with a cheaper combine that is right on NaN-free data (max, min: see reduce.hpp).
template <class Op, class Acc>
concept has_finite_combine = std::is_floating_point_v<Acc> && requires(Acc a) { Op::finite_combine(a, a); };

// f(a[0], a[1], ..., a[W-1]) combined pairwise, in place. Not in lane order: that would be a
// chain of W dependent scalar ops (the compiler may not reorder float adds), which cost softmax's
// max phase ~130 cycles per block. One level per instantiation, so that every trip count is a
// constant: written as a loop over the halving width, g++ 12 kept that loop and folded through
// the stack (a zmm store read back as ymm and scalars, the store-to-load forwarding failing at
// each level): rows of 64 floats, one thread in L2, rms_norm 0.86 -> 0.76 and softmax 1.70 ->
// 1.44 ns per element (Zen 4).
template <int W, class Acc, class F>
FUSE_INLINE Acc fold_pairwise(Acc* a, F f) {
  if constexpr (W == 1) {
    return a[0];
  } else {
    for (int l = 0; l < W / 2; ++l) a[l] = f(a[l], a[l + W / 2]);
    return fold_pairwise<W / 2>(a, f);
  }
}

// The value the lanes start from: Op's identity, but -0 for a float sum (x + -0 is x bit for bit,
// +0 included). g++ 12 tuned for Zen filled a block's 32 zero lanes with `rep stos` (~30 cycles,
// 6% of softmax's samples over rows of 1024 on Zen 3); -0 is no byte pattern: vector stores.
template <class Op, class Acc>
FUSE_INLINE constexpr Acc lane_identity() {
  if constexpr (std::is_floating_point_v<Acc> && std::is_base_of_v<sum_op, Op>) return Acc(-0.0);
  else return Op::template identity<Acc>();
}

// The lanes reduce_block folds (two 64-byte registers).
template <class Acc>
inline constexpr int block_lanes = sizeof(Acc) >= 8 ? 16 : 32;

// reduce_block of a range shorter than its lanes (softmax over 8 experts, rows of 3 coordinates):
// no vector iteration would run, and setting up and folding 3 * W lanes cost more than the row
// (layer norm of [16384, 8], one thread: ~90 ns a row against ~18 for a hand-written loop). One
// exact accumulator, in order; Finite as reduce_block (the exact combine is a branch on each
// element, which random data mispredicts: a router's softmax over 8 experts, 1.7x).
// A float sum of a costly operand (one that computes: !streams_by_itself, prefetch.hpp; softmax's
// exp over 8 experts) computes the values into a buffer, then adds them pairwise: the vectorised
// loop's values no longer wait on one in-order add each (Zen 3, one thread, softmax over rows of
// 8 / 16 / 24 floats: 64 -> 54, 76 -> 63, 90 -> 71 ns a row). Cheap operands keep the in-order
// add: buffered, layer norm and rms_norm over such rows lost 5-44%.
// Inline: reduce_range calls it directly for cheap operands (no call, nothing passed through
// memory; Zen 3, one thread, rows of 8 / 16 / 24 floats: layer norm 38 / 45 / 53 -> 31-35 / 40 /
// 47 ns a row, rms_norm 18 -> 16 over rows of 8, softmax, whose max phase is cheap, 40 / 47 / 57 ->
// 36 / 43 / 52); a costly operand's stays behind reduce_block's call (inlined too, softmax's sum
// of exp made the caller slower: 40 -> 47 ns a row over rows of 8).
template <class Op, class Acc, bool Finite, class Ev, class Store>
FUSE_INLINE Acc reduce_short_block(const Ev& ev, index_t b, index_t e, Store store, bool& clean) {
  constexpr int W = block_lanes<Acc>;
  if constexpr (std::is_floating_point_v<Acc> && std::is_base_of_v<sum_op, Op> && !streams_by_itself<Ev>) {
    Acc buf[W];
    FUSE_SIMD_LOOP
    for (int l = 0; l < W; ++l) buf[l] = lane_identity<Op, Acc>();
    for (index_t i = b; i < e; ++i) {
      const auto v = ev.template at<true>(i);
      if constexpr (!std::is_null_pointer_v<Store>) store[i] = v;
      buf[i - b] = static_cast<Acc>(v);
    }
    const auto add = [](Acc x, Acc y) { return x + y; };
    if (e - b <= 8) return fold_pairwise<8>(buf, add);
    if (e - b <= 16) return fold_pairwise<16>(buf, add);
    return fold_pairwise<W>(buf, add);
  }
  Acc a = Op::template identity<Acc>(), sum = Acc(0);
  for (index_t i = b; i < e; ++i) {
    const auto v = ev.template at<true>(i);
    if constexpr (!std::is_null_pointer_v<Store>) store[i] = v;
    if constexpr (Finite) a = Op::finite_combine(a, static_cast<Acc>(v)), sum += static_cast<Acc>(v);
    else a = Op::combine(a, static_cast<Acc>(v));
  }
  if constexpr (Finite) clean = sum == sum;  // false for NaN
  return a;
}

// The lanes set to the identity, and with Finite the NaN probe to 0 (only where it is used).
template <class Op, class Acc, bool Finite, int W>
FUSE_INLINE void start_lanes(Acc* lane, Acc* probe) {
  FUSE_SIMD_LOOP
  for (int l = 0; l < W; ++l) lane[l] = lane_identity<Op, Acc>();
  if constexpr (Finite) {
    FUSE_SIMD_LOOP
    for (int l = 0; l < W; ++l) probe[l] = lane_identity<sum_op, Acc>();
  }
}

// One value v into lane l; Finite: with the cheap combine, and into the NaN probe too.
template <class Op, class Acc, bool Finite>
FUSE_INLINE void take_lane(Acc& lane, Acc& probe, Acc v) {
  if constexpr (Finite) lane = Op::finite_combine(lane, v), probe += v;
  else lane = Op::combine(lane, v);
}

// The lanes folded into one value, with the combine they were taken with (take_lane).
template <class Op, class Acc, bool Finite, int W>
FUSE_INLINE Acc fold_combined(Acc* lane) {
  if constexpr (Finite) return fold_pairwise<W>(lane, [](Acc x, Acc y) { return Op::finite_combine(x, y); });
  else return fold_pairwise<W>(lane, [](Acc x, Acc y) { return Op::combine(x, y); });
}

// Whether the probe's lanes, the sum of every value taken, hold no NaN (any order finds one).
template <class Acc, int W>
FUSE_INLINE bool probe_clean(Acc* probe) {
  const Acc sum = fold_pairwise<W>(probe, [](Acc x, Acc y) { return x + y; });
  return sum == sum;  // false for NaN
}

// The lanes folded into one value; Finite: `clean` says whether every value was no NaN.
template <class Op, class Acc, bool Finite, int W>
FUSE_INLINE Acc fold_lanes(Acc* lane, Acc* probe, bool& clean) {
  if constexpr (Finite) clean = probe_clean<Acc, W>(probe);
  return fold_combined<Op, Acc, Finite, W>(lane);
}

// reduce_block of a range of at most small_block_max elements (rows of 32-256 floats: rms_norm
// over attention heads of 64 or 128): half its lanes (two AVX2 vectors of floats), at most 16
// additions a lane in the loop (as reduce_block's chunks), no chunks and no prefetch to set up
// (row_prefetch asks for short rows whole). reduce_range inlines it for cheap operands without
// a NaN probe (sums, means); the others reach it through reduce_block's call (inlined, softmax's
// max and sum of exp made every row kernel over rows of 8 floats slower: 35 -> 40 ns a row).
// Zen 3, one thread, rows in L2, ns a row before -> after (rms_norm / layer_norm / softmax):
// 32 floats 27 / 50 / 66 -> 24 / 44 / 53; 40: 44 / 78 / 123 -> 28 / 51 / 83; 64: 31 / 55 / 84
// -> 30 / 51 / 74; 100: 51 / 91 / 133 -> 39 / 67 / 111; 128: 43 / 73 / 116 -> 42 / 65 / 106;
// 256: 55 / 98 / 189 -> 55 / 95 / 178 (the loop's bookkeeping, the chunks' set-up and the
// serial tail of up to 31 elements were most of a short row's reduction).
inline constexpr int small_block_adds = 16;
template <class Acc>
inline constexpr index_t small_block_max = index_t(block_lanes<Acc> / 2) * small_block_adds;
template <class Op, class Acc, bool Finite, class Ev, class Store>
FUSE_INLINE Acc reduce_small_block(const Ev& ev, index_t b, index_t e, Store store, bool& clean) {
  constexpr int W = block_lanes<Acc> / 2;
  Acc lane[W], probe[W];
  start_lanes<Op, Acc, Finite, W>(lane, probe);
  const auto take = [&](int l, index_t i) {
    const auto v = ev.template at<true>(i);
    if constexpr (!std::is_null_pointer_v<Store>) store[i] = v;
    take_lane<Op, Acc, Finite>(lane[l], probe[l], static_cast<Acc>(v));
  };
  index_t i = b;
  for (; i + W <= e; i += W) {
    FUSE_SIMD_LOOP
    for (int l = 0; l < W; ++l) take(l, i + l);
  }
  // The tail in order into the first lane, as reduce_block's. (Into lane l each, the lanes are
  // indexed at run time and kept in memory; as one window of the last W elements, with those
  // already taken masked, g++ 12 branched per element: either was slower on rows of 40 and 100.)
  for (; i < e; ++i) take(0, i);
  return fold_lanes<Op, Acc, Finite, W>(lane, probe, clean);
}

// Elements [b, e) of the current row folded with Op (W lanes, so that the compiler vectorises and
// the latency of combine is hidden); with a buffer, also stores each element there (for the
// epilogue, see row_cache.hpp). Finite: combines with Op::finite_combine and sums v on the side
// (one add), which ends NaN when some v is NaN (or, rarely, when infinities of both signs meet);
// then `clean` says whether the result can be used (otherwise the caller repeats the block with
// Op::combine, exactly). Infinities alone leave it clean: max and min (the ops with a
// finite_combine) take them right, and a causal mask's -inf filled half its blocks, each then
// reduced twice. pf asks for the row's long inputs ahead (prefetch.hpp).
template <class Op, class Acc, bool Finite, class Ev, class Store, std::size_t R>
Acc reduce_block(const Ev& ev, index_t b, index_t e, Store store, bool& clean, const stream_prefetch<R>& pf) {
  constexpr int W = block_lanes<Acc>;
  // Float sums, means and products (the ops whose blocks combine in double): each lane's total of a
  // chunk of 8 * W elements moves into `chunks`, so that no accumulator takes more than 16
  // operations in a row (at the default block of 4096 floats: 8 per chunk, then 16 chunk totals;
  // before, 128). A float sum's rounding error
  // grows with the additions into one accumulator: on 2^25 equal terms it reached 1.9e-6 relative
  // (a probe, 2026-12-02) against the spec's 1e-6.
  constexpr bool by_chunks = !std::is_same_v<typename Op::template total_t<Acc>, Acc>;
  if (e - b < W) return reduce_short_block<Op, Acc, Finite>(ev, b, e, store, clean);
  if (e - b <= small_block_max<Acc>) return reduce_small_block<Op, Acc, Finite>(ev, b, e, store, clean);
  // Each array is set only where it is used, and `chunks` only once a second chunk starts: on a
  // row of 64 floats, setting all three took 61 of ~430 instructions a row (callgrind, AVX2).
  Acc lane[W], probe[W], chunks[W];
  start_lanes<Op, Acc, Finite, W>(lane, probe);
  bool chunked = false;  // chunks holds the lanes of the chunks before the current one
  index_t i = b;
  while (i + W <= e) {
    const index_t stop = std::min(e, i + 8 * W);
    pf.template ahead<streams_by_itself<Ev>>(i, stop - i);
    if constexpr (by_chunks) {
      if (i != b) {
        if (chunked) {
          FUSE_SIMD_LOOP
          for (int l = 0; l < W; ++l) chunks[l] = Op::combine(chunks[l], lane[l]);
        } else {
          FUSE_SIMD_LOOP
          for (int l = 0; l < W; ++l) chunks[l] = lane[l];
        }
        FUSE_SIMD_LOOP
        for (int l = 0; l < W; ++l) lane[l] = lane_identity<Op, Acc>();
        chunked = true;
      }
    }
    for (; i + W <= stop; i += W) {
      FUSE_SIMD_LOOP
      for (int l = 0; l < W; ++l) {
        const auto v = ev.template at<true>(i + l);
        if constexpr (!std::is_null_pointer_v<Store>) store[i + l] = v;
        if constexpr (Finite) {
          lane[l] = Op::finite_combine(lane[l], static_cast<Acc>(v));
          probe[l] += static_cast<Acc>(v);
        } else {
          lane[l] = Op::combine(lane[l], static_cast<Acc>(v));
        }
      }
    }
  }
  for (; i < e; ++i) {
    const auto v = ev.template at<true>(i);
    if constexpr (!std::is_null_pointer_v<Store>) store[i] = v;
    if constexpr (Finite) probe[0] += static_cast<Acc>(v);
    lane[0] = Op::combine(lane[0], static_cast<Acc>(v));
  }
  if constexpr (by_chunks) {
    if (chunked) {
      FUSE_SIMD_LOOP
      for (int l = 0; l < W; ++l) lane[l] = Op::combine(chunks[l], lane[l]);
    }
  }
  // A clean block holds no NaN (the tail above is probed too), so the lanes combine with the
  // cheap form as well; an unclean block's result is discarded (the caller repeats it).
  return fold_lanes<Op, Acc, Finite, W>(lane, probe, clean);
}

// ev seeked to the row idx; copies (if not null): its leaves that stay put along the row are
// pointed at rows of copies (row_copies.hpp), which every seek must be followed by.
template <class Ev, std::size_t R>
FUSE_INLINE void seek_row(Ev& ev, const index_t* idx, row_copies<R>* copies) {
  ev.seek(idx);
  if (copies != nullptr) copies->point(ev, idx);
}
// The same where no leaf is read through rows of copies, known at compile time.
template <class Ev>
FUSE_INLINE void seek_row(Ev& ev, const index_t* idx, std::nullptr_t) {
  ev.seek(idx);
}

// A copy of ev at the row idx: copied, then seeked, never the other way round. seek() stores the
// row's pointers and per-row constants into the evaluator; a copy made right after reads those
// bytes back with wide loads, which store-to-load forwarding cannot serve, so every row waited
// for its own stores (perf on rows of 64 floats: the two halves of that copy held 60% of the
// epilogue's samples).
template <class Ev, std::size_t R>
FUSE_INLINE Ev seeked(const Ev& ev, const index_t* idx, row_copies<R>* copies) {
  Ev e = ev;
  seek_row(e, idx, copies);
  return e;
}

// Reduces elements [begin, end) of the current row of ev (already seeked: a private copy, whose
// members cannot alias anything written) with Op, block by block (float sums in float lanes per
// block of block_elements, blocks combined in double).
template <class Op, class Acc, class Ev, std::size_t R, class Store = std::nullptr_t>
FUSE_INLINE typename Op::template total_t<Acc> reduce_range(const Ev& ev, index_t begin, index_t end,
                                                            const stream_prefetch<R>& pf, Store store = nullptr) {
  using Total = typename Op::template total_t<Acc>;
  Total total = Op::template identity<Total>();
  for (index_t b = begin; b < end; b += block_elements) {
    const index_t e = std::min(end, b + block_elements);
    bool clean = true;
    Acc block;
    if (streams_by_itself<Ev> && e - b < block_lanes<Acc>) {  // inline: see reduce_short_block
      if constexpr (has_finite_combine<Op, Acc>) {
        block = reduce_short_block<Op, Acc, true>(ev, b, e, store, clean);
        if (!clean) block = reduce_short_block<Op, Acc, false>(ev, b, e, nullptr, clean);
      } else {
        block = reduce_short_block<Op, Acc, false>(ev, b, e, store, clean);
      }
    } else if (!has_finite_combine<Op, Acc> && streams_by_itself<Ev> && e - b <= small_block_max<Acc>) {
      block = reduce_small_block<Op, Acc, false>(ev, b, e, store, clean);
    } else if constexpr (has_finite_combine<Op, Acc>) {
      block = reduce_block<Op, Acc, true>(ev, b, e, store, clean, pf);
      if (!clean) block = reduce_block<Op, Acc, false>(ev, b, e, nullptr, clean, pf);  // a NaN or inf: exact
    } else {
      block = reduce_block<Op, Acc, false>(ev, b, e, store, clean, pf);
    }
    total = Op::combine(total, static_cast<Total>(block));
  }
  return total;
}

// reduce_range over the row at idx of ev (unseeked, by value: the private copy is seeked here,
// in place). Passing seeked(ev, ...) by value instead made the caller copy the evaluator into the
// argument area right after seek() had stored its row pointer: wide loads of narrower stores,
// which store-to-load forwarding cannot serve (perf, softmax over rows of 8 floats on Zen 3: 59%
// of the max phase's own samples on that copy).
template <class Op, class Acc, class Ev, std::size_t R, class Store>
typename Op::template total_t<Acc> reduce_row_at(Ev ev, const index_t* idx, row_copies<R>* copies, index_t begin,
                                                 index_t end, const stream_prefetch<R>& pf, Store store) {
  seek_row(ev, idx, copies);
  return reduce_range<Op, Acc>(ev, begin, end, pf, store);
}

// Rows made of many short runs (a training batch norm's channel over 7 x 7 planes: N runs of 49
// elements, row_iteration's sub-rows): through reduce_row_at each run set up and folded
// reduce_block's 32 lanes for 49 elements, and its last 17 went through one accumulator in order.
// Here the lanes carry over from run to run, a run's tail into the first lanes, each its own. A
// float sum's lanes move into the (double) total once the first lane has taken 8 additions or
// more (at most 15: runs are at most 8 * W long), as reduce_block's chunks of 8 * W; counted by
// elements held instead, runs of 2 gave lanes 0 and 1 128 additions each (a review: a sum of
// 32768 runs of two equal floats 1.3e-6 off, against 0 before). Finite: as reduce_block (a probe
// for NaN; `clean` false asks the caller to repeat the row exactly).
template <class Op, class Acc, bool Finite, class Ev, std::size_t R>
typename Op::template total_t<Acc> reduce_runs(const Ev& operand, const index_t* shape, std::size_t inner_first,
                                               index_t* idx, index_t runs, index_t begin, index_t end,
                                               row_copies<R>* copies, bool& clean) {
  using Total = typename Op::template total_t<Acc>;
  constexpr int W = block_lanes<Acc>;
  Total total = Op::template identity<Total>();
  Acc lane[W], probe[W];  // (the probe set only where it is used, as in reduce_block)
  start_lanes<Op, Acc, Finite, W>(lane, probe);
  const auto take = [&](int l, Acc v) { take_lane<Op, Acc, Finite>(lane[l], probe[l], v); };
  // Float sums, means and products (the ops whose lanes combine in double): see above.
  constexpr bool by_chunks = !std::is_same_v<Total, Acc>;
  const int adds_per_run = int((end - begin + W - 1) / W);  // the first lane's, from each run
  int adds = 0;                                              // the first lane's since the last move
  Ev ev = operand;  // a private copy, seeked in place run by run (see seeked())
  for (index_t s = 0; s < runs; ++s) {
    unflatten(s, shape, inner_first, R - 1, idx);
    seek_row(ev, idx, copies);
    index_t i = begin;
    for (; i + W <= end; i += W) {
      FUSE_SIMD_LOOP
      for (int l = 0; l < W; ++l) take(l, static_cast<Acc>(ev.template at<true>(i + l)));
    }
    const int rest = int(end - i);
    for (int l = 0; l < rest; ++l) take(l, static_cast<Acc>(ev.template at<true>(i + l)));
    if (by_chunks && (adds += adds_per_run) >= 8) {
      total = Op::combine(total, static_cast<Total>(fold_combined<Op, Acc, Finite, W>(lane)));
      FUSE_SIMD_LOOP
      for (int l = 0; l < W; ++l) lane[l] = lane_identity<Op, Acc>();
      adds = 0;
    }
  }
  return Op::combine(total, static_cast<Total>(fold_lanes<Op, Acc, Finite, W>(lane, probe, clean)));
}

// Are a row's runs short enough for reduce_runs (see there)?
template <class Acc>
bool short_runs(index_t runs, index_t run_elements) {
  return runs > 1 && run_elements <= 8 * block_lanes<Acc>;
}

// What a row kernel decides once about each phase: its operand's shared subtrees
// (shared_subtree.hpp) and its mask (row_mask.hpp).
struct phase_plan {
  shared_plan shared;
  row_mask mask;
};

// reduce_row_at of operand over the row at idx with the mask's where replaced by its kept branch
// (kept_where: no comparison per element, the branch converted as the where converts it), or as
// it is where the where is not found in it (bound as a shared subtree).
template <class Op, class Acc, class W, class Ev, std::size_t R, class Store>
typename Op::template total_t<Acc> reduce_kept(const Ev& operand, bool keep_true, const index_t* idx, index_t lo,
                                               index_t hi, const stream_prefetch<R>& pf, row_copies<R>* copies, Store store) {
  if constexpr (occurrences<W, Ev>::value > 0) {
    const W& w = first_occurrence<W>(operand);
    if constexpr (may_keep_true_v<W>)
      if (keep_true) return reduce_row_at<Op, Acc>(substitute<W>(operand, kept_where<true>(w)), idx, copies, lo, hi, pf, store);
    if constexpr (may_keep_false_v<W>)
      if (!keep_true) return reduce_row_at<Op, Acc>(substitute<W>(operand, kept_where<false>(w)), idx, copies, lo, hi, pf, store);
  } else {
    (void)keep_true;
  }
  return reduce_row_at<Op, Acc>(operand, idx, copies, lo, hi, pf, store);  // (not reached with a where)
}

// reduce_row_at of operand (unseeked) over the row at idx, or over its kept interval when the mask
// m allows (row_mask.hpp): the masked elements' one value v combined once, and stored where the
// row buffer wants it. child: the phase's operand as written (operand may have shared subtrees
// bound, the where among them).
template <class Op, class Acc, class Child, class Ev, std::size_t R, class Store>
typename Op::template total_t<Acc> reduce_masked(const Child& child, const row_mask& m, const Ev& operand, const index_t* idx,
                                                 index_t begin, index_t end, const stream_prefetch<R>& pf,
                                                 row_copies<R>* copies, Store store) {
  using Total = typename Op::template total_t<Acc>;
  if constexpr (!std::is_void_v<index_where_t<Child>>) {
    const Child c = seeked(child, idx, copies);
    index_t lo = begin, hi = end;
    if (kept_interval(c, m, begin, end, lo, hi) && (lo > begin || hi < end)) {
      const auto v = c.template at<true>(lo > begin ? begin : hi);  // a masked element's value
      const Acc a = static_cast<Acc>(v);
      // Idempotent, bit for bit (-0 * -0 is +0): once stands for any number of times.
      const Acc twice = Op::combine(a, a);
      if (std::memcmp(&twice, &a, sizeof(Acc)) == 0) {
        if constexpr (!std::is_null_pointer_v<Store>) {
          for (index_t i = begin; i < lo; ++i) store[i] = v;
          for (index_t i = hi; i < end; ++i) store[i] = v;
        }
        const Total kept = lo < hi ? reduce_kept<Op, Acc, index_where_t<Child>>(operand, m.keep_true, idx, lo, hi, pf, copies, store)
                                   : Op::template identity<Total>();
        return Op::combine(kept, static_cast<Total>(a));
      }
    }
  }
  return reduce_row_at<Op, Acc>(operand, idx, copies, begin, end, pf, store);
}

// Does a phase run as a plain row (reduce_plain_row)? One row axis, no mask, no shared subtree.
inline bool plain_row(const phase_plan& plan, std::size_t inner_first, std::size_t rank) {
  return inner_first == rank - 1 && !plan.mask.on && plan.shared.pick[0] < 0;
}

// reduce_row of a phase for which plain_row holds: the operand seeked and reduced, inline. The
// short rows of a batch (row_batch.hpp) take it: through reduce_row (its shared-subtree and
// sub-row calls, the evaluator passed by value into reduce_row_at), rows of 8 and 64 floats took
// 1.3-1.6x as long (Zen 3, one thread: softmax 53 -> 40 and 106 -> 83 ns a row, layer norm 53 ->
// 38 and 86 -> 56, rms_norm 28 -> 18 and 45 -> 31).
// copies: as seeked() (a row_copies<R>*), or nullptr (a std::nullptr_t) where the kernel reads no
// leaf through them.
template <class Phase, std::size_t R, class Copies, class Store = std::nullptr_t>
FUSE_INLINE auto reduce_plain_row(const Phase& p, const index_t* idx, index_t n, stream_prefetch<R>& pf, Copies copies,
                                  Store store = nullptr) {
  using Op = typename Phase::op;
  using Acc = typename Phase::acc_type;
  if (n <= 0) return Op::template identity<typename Op::template total_t<Acc>>();  // (do not seek)
  auto e = p.child;  // a private copy, seeked after it is made (see seeked())
  seek_row(e, idx, copies);
  pf.seek(idx);
  return reduce_range<Op, Acc>(e, 0, n, pf, store);
}

// Phase p over elements [begin, end) of the row at idx; plan: its phase_plan; copies: as seeked().
template <class Phase, std::size_t R, class Store = std::nullptr_t>
auto reduce_row(const Phase& p, const phase_plan& plan, const index_t* shape, std::size_t inner_first, index_t* idx,
                index_t begin, index_t end, stream_prefetch<R>& pf, std::type_identity_t<row_copies<R>>* copies,
                Store store = nullptr) {
  using Op = typename Phase::op;
  using Acc = typename Phase::acc_type;
  auto total = Op::template identity<typename Op::template total_t<Acc>>();
  if (begin >= end) return total;  // an empty row (its operand may have no memory: do not seek)
  // Sub-rows: every combination of the row axes but the last.
  index_t sub = 1;
  for (std::size_t d = inner_first; d < R - 1; ++d) sub *= shape[d];
  with_shared(p.child, plan.shared, [&](const auto& operand) {
    if constexpr (std::is_null_pointer_v<Store>) {
      if (!plan.mask.on && short_runs<Acc>(sub, end - begin)) {
        bool clean = true;
        if constexpr (has_finite_combine<Op, Acc>) {
          total = reduce_runs<Op, Acc, true>(operand, shape, inner_first, idx, sub, begin, end, copies, clean);
          if (clean) return;
        }
        total = reduce_runs<Op, Acc, false>(operand, shape, inner_first, idx, sub, begin, end, copies, clean);
        return;
      }
    }
    for (index_t s = 0; s < sub; ++s) {
      unflatten(s, shape, inner_first, R - 1, idx);
      pf.seek(idx);
      // store: one sub-row
      if (plan.mask.on) total = Op::combine(total, reduce_masked<Op, Acc>(p.child, plan.mask, operand, idx, begin, end, pf, copies, store));
      else total = Op::combine(total, reduce_row_at<Op, Acc>(operand, idx, copies, begin, end, pf, store));
    }
  });
  return total;
}

}  // namespace fuse::detail
