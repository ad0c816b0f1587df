// fuse/backend/cpu/column_softmax.hpp - a column pair of the softmax kind (core/column_pair.hpp):
// each column's max and its sum of exp(x - max) over leading axes in one pass, the operand's rows
// read in memory order (online softmax by columns).
//
// A tile of columns is read a block of 16 rows at a time, four rows a pass: the block's max per
// column, then its rows again (from L2: 16 rows of a 1024-column tile are 64 KiB) for the sum of
// exp(x - max). Each block then joins its column's running max and sum, the sum rescaled to the
// higher max and kept in double (a column of many rows adds many terms near 1). One exponential
// an element, and x read once from memory instead of twice (a max kernel, then a sum kernel);
// the operand is evaluated twice, as those two kernels did. Variants, one thread, logsumexp /
// softmax, GB/s (Zen 4, 2026-12-05, old -> variant, alternating; noisy): [8192, 4096] the two
// kernels 4.4-5.0 / 6.5-6.7; one pass rescaling the block's sum at each four rows (five
// exponentials for four elements) 5.1-5.3 / 7.0; the block's values held in a buffer (the
// operand evaluated once) 5.6-5.8 / 7.0-7.1, but over [200704, 64] 5.2-6.6 / 5.7-6.2 against the
// two kernels' 4.8-5.1 / 7.0-7.7 (its stores stalled); the block read twice 5.7-6.0 / 7.2-7.4,
// over [200704, 64] 6.4-6.5 / 8.3; tiles of 256 columns (a block in L1) 3.9-4.0 / 5.8.
//
// The sum is relative to the final max as the expression's shift reads it. Where the max is not
// finite, the sum is what the expression gives: NaN for a NaN max, and for an infinite max m
// with shift S (m itself, or logsumexp's 0): NaN where S = m (inf - inf), else inf for m = +inf
// and 0 for m = -inf (every element -inf, or none). While a column's max is -inf its sum is 0.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>

#include "fuse/backend/cpu/column_pair_kernel.hpp"

namespace fuse::detail {

// sum(exp(x - shift)) of a column from its running max m and sum s relative to m (see above).
template <class Shift>
double column_exp_sum(double m, double s) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (m != m) return m;
  if (m == inf || m == -inf) {
    if (Shift::shift(m) == m) return std::numeric_limits<double>::quiet_NaN();
    return m == inf ? inf : 0.0;
  }
  return s;
}

// Runs column pair e (column_pair_v, kind softmax), writing its sum into sum_dst and its inner
// max into max_dst; as run_column_pair_kernel.
template <class TM, std::size_t RM, class TS, std::size_t RS, class E>
bool run_column_softmax(const cpu& exec, const destination<TM, RM>& max_dst, const destination<TS, RS>& sum_dst, const E& e) {
  using P = column_pair<E>;
  using Acc = typename E::acc_type;
  using F = typename P::exp_fn;
  using MaxOp = typename P::inner_type::op;
  constexpr Acc inf = std::numeric_limits<Acc>::infinity();
  // The shift for a max m': m' itself, or 0 while m' is -inf (every element so far -inf): then
  // exp(x - 0) = 0 for each of them, and a running sum of 0 rescaled by exp(-inf - 0) stays 0, where
  // -inf - -inf would be NaN. (Selects, not branches: the loops vectorise.)
  auto shift_of = [](Acc top) { return top == -inf ? Acc(0) : top; };
  // A column's state: its running max and its sum of exp(x - max).
  auto make_pass = [shift_of](index_t tile) {
    // Per column of the tile: the block's max and sum.
    std::array<std::unique_ptr<Acc[]>, 2> block;
    for (auto& p : block) p.reset(new Acc[std::size_t(tile)]);
    return [shift_of, block = std::move(block)](auto& rows, auto cursor, index_t count, column_state<2> state) {
      const index_t j0 = cursor.j0, w = cursor.w;
      Acc* const bm = block[0].get();
      Acc* const bs = block[1].get();
      double* const m = state[0];
      double* const s = state[1];
      std::fill_n(m, w, -double(inf));
      std::fill_n(s, w, 0.0);
      auto at = [&](int k, index_t j) { return rows.template at<Acc>(k, j0 + j); };
      for (index_t r0 = 0; r0 < count; r0 += pair_block_rows) {
        const index_t b = std::min(pair_block_rows, count - r0);
        std::fill_n(bm, w, -inf);
        std::fill_n(bs, w, Acc(0));
        // The block's max, then its exponentials: its rows read again (from L2).
        cursor.mark();
        index_t i = 0;
        for (; i + 4 <= b; i += 4) {
          for (int k = 0; k < 4; ++k) cursor.next(k);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j)
            bm[j] = MaxOp::combine(bm[j], MaxOp::combine(MaxOp::combine(at(0, j), at(1, j)), MaxOp::combine(at(2, j), at(3, j))));
        }
        for (; i < b; ++i) {
          cursor.next(0);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j) bm[j] = MaxOp::combine(bm[j], at(0, j));
        }
        cursor.rewind();
        for (i = 0; i + 4 <= b; i += 4) {
          for (int k = 0; k < 4; ++k) cursor.next(k);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j) {
            const Acc h = shift_of(bm[j]);
            bs[j] += (F{}(at(0, j) - h) + F{}(at(1, j) - h)) + (F{}(at(2, j) - h) + F{}(at(3, j) - h));
          }
        }
        for (; i < b; ++i) {
          cursor.next(0);
          FUSE_SIMD_LOOP
          for (index_t j = 0; j < w; ++j) bs[j] += F{}(at(0, j) - shift_of(bm[j]));
        }
        // The block joins its column: both sums rescaled to the higher max. (A block of -inf: its
        // sum is 0, and so is its factor exp(-inf - h).)
        FUSE_SIMD_LOOP
        for (index_t j = 0; j < w; ++j) {
          const Acc old = Acc(m[j]), top = MaxOp::combine(old, bm[j]), h = shift_of(top);
          s[j] = s[j] * double(F{}(old - h)) + double(bs[j] * F{}(bm[j] - h));
          m[j] = double(top);
        }
      }
    };
  };
  auto join = [&](std::array<double, 2>& acc, const std::array<double, 2>& part, double, double) {
    const Acc old = Acc(acc[0]), theirs = Acc(part[0]), top = MaxOp::combine(old, theirs), h = shift_of(top);
    acc[1] = acc[1] * double(F{}(old - h)) + part[1] * double(F{}(theirs - h));
    acc[0] = double(top);
  };
  auto write = [&](index_t at_max, index_t at_sum, const std::array<double, 2>& v, index_t reduced) {
    max_dst.data[at_max] = MaxOp::template finalize<TM>(Acc(v[0]), reduced);
    // (Rounded to the expression's type first, as every other path writes it.)
    sum_dst.data[at_sum] = static_cast<TS>(sum_op::template finalize<typename E::value_type>(column_exp_sum<typename P::shift>(v[0], v[1]), reduced));
  };
  return run_column_pair_kernel<2>(exec, max_dst, sum_dst, e, make_pass, join, write);
}

}  // namespace fuse::detail
