// fuse/backend/cpu/fallback_reduce.hpp - a reduction of an array in memory, compiled small: the
// reductions of assign_fused's run-time fallback (a group broken by its run-time shapes).
//
// The fallback writes each reduction's operand to a temporary first (core/assign.hpp), so what is
// left to reduce is an array: this loop is instantiated per op, value types and rank (the axes
// are a run-time mask), shared by every broken group of a translation unit, instead of a row
// kernel with its SIMD variants per operand expression. The fallback's row kernels were 28% of
// test_layers.cpp's compile time and a third of a layer norm's code (docs/performance.md).
// Contiguous runs are combined in blocks of 256 elements, the rest one element at a time in four
// chains; totals are kept in the op's total type (double for float sums); threads take whole results, or equal parts of each result's reduced elements when
// the results are fewer than the threads (a full reduction), joined in thread order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "fuse/backend/cpu/executor.hpp"
#include "fuse/backend/cpu/row_reduce.hpp"
#include "fuse/core/iteration.hpp"

namespace fuse::detail {

// 256 contiguous elements combined in the accumulator type: 16 lanes of 16 elements each (which
// the compiler vectorises), then the lanes pairwise; as the row kernel's blocks, no float lane takes
// more than 16 additions.
inline constexpr int fallback_block = 256;
template <class Op, class Acc, class S>
Acc fold_fallback_block(const S* p) {
  Acc lane[16];
  for (int c = 0; c < 16; ++c) lane[c] = static_cast<Acc>(p[c]);
  for (int k = 16; k < fallback_block; k += 16) {
    FUSE_SIMD_LOOP
    for (int c = 0; c < 16; ++c) lane[c] = Op::combine(lane[c], static_cast<Acc>(p[k + c]));
  }
  return fold_combined<Op, Acc, false, 16>(lane);
}

template <class Op, class Acc, class Result, class S, class T, std::size_t R, std::size_t RD>
void run_fallback_reduction(const cpu& exec, const destination<T, RD>& dst, const S* src, const shape_t<R>& shape,
                            const shape_t<R>& strides, std::uint32_t mask) {
  using Total = typename Op::template total_t<Acc>;
  std::size_t kept[R > 0 ? R : 1], reduced[R > 0 ? R : 1];
  std::size_t nk = 0, nr = 0;
  index_t results = 1, count = 1;
  for (std::size_t d = 0; d < R; ++d) {
    if ((mask >> d) & 1u) reduced[nr++] = d, count *= shape[d];
    else kept[nk++] = d, results *= shape[d];
  }
  if (results == 0) return;
  // The reduced range as runs along its innermost axis.
  const index_t run = nr ? shape[reduced[nr - 1]] : 1;
  const index_t step = nr ? strides[reduced[nr - 1]] : 0;
  auto value = [&](index_t at) { return static_cast<Total>(static_cast<Acc>(src[at])); };
  // Elements [first, last) of the reduced range (in row-major order of the reduced axes), from
  // `base` (the result's operand offset).
  auto reduce_elements = [&](index_t base, index_t first, index_t last) {
    Total t[4] = {Op::template identity<Total>(), Op::template identity<Total>(), Op::template identity<Total>(),
                  Op::template identity<Total>()};
    if (first >= last) return t[0];
    index_t idx[R > 0 ? R : 1] = {};
    index_t i = first % run;
    for (index_t q = first / run, j = index_t(nr) - 2; j >= 0; --j) idx[j] = q % shape[reduced[j]], q /= shape[reduced[j]];
    while (first < last) {
      index_t at = base;
      for (std::size_t j = 0; j + 1 < nr; ++j) at += idx[j] * strides[reduced[j]];
      const index_t from = i, end = std::min(run, i + (last - first));
      if (step == 1)
        for (; i + fallback_block <= end; i += fallback_block)
          t[0] = Op::combine(t[0], static_cast<Total>(fold_fallback_block<Op, Acc>(src + at + i)));
      for (; i + 4 <= end; i += 4)
        for (int c = 0; c < 4; ++c) t[c] = Op::combine(t[c], value(at + (i + c) * step));
      for (; i < end; ++i) t[0] = Op::combine(t[0], value(at + i * step));
      first += end - from;
      i = 0;
      for (index_t j = index_t(nr) - 2; j >= 0; --j) {  // the next run
        if (++idx[j] < shape[reduced[j]]) break;
        idx[j] = 0;
      }
    }
    return Op::combine(Op::combine(t[0], t[1]), Op::combine(t[2], t[3]));
  };
  // Result o: its operand offset and its offset in dst (of the result's shape, leading extents of
  // 1 possibly dropped).
  auto offsets = [&](index_t o, index_t& base, index_t& at) {
    base = 0, at = 0;
    for (index_t j = index_t(nk) - 1; j >= 0; --j) {
      const std::size_t d = kept[j];
      const index_t i = o % shape[d];
      o /= shape[d];
      base += i * strides[d];
      if (d + RD >= R) at += i * dst.strides[d + RD - R];
    }
  };
  auto write = [&](index_t at, Total t) { dst.data[at] = static_cast<T>(Op::template finalize<Result>(t, count)); };
  const int threads = threads_for(exec, results * std::max<index_t>(count, 1));
  if (results >= threads) {
    run_threads(threads, [&](index_t th, index_t nt) {
      for (index_t o = results * th / nt, end = results * (th + 1) / nt; o < end; ++o) {
        index_t base, at;
        offsets(o, base, at);
        write(at, reduce_elements(base, 0, count));
      }
    });
    return;
  }
  // (Not a std::vector: of bool, max(b > 0) across threads, its packed bits would be written by
  // two threads at once.)
  const auto parts = std::make_unique<Total[]>(std::size_t(results) * std::size_t(threads));
  std::fill_n(parts.get(), std::size_t(results) * std::size_t(threads), Op::template identity<Total>());
  run_threads(threads, [&](index_t th, index_t nt) {
    for (index_t o = 0; o < results; ++o) {
      index_t base, at;
      offsets(o, base, at);
      parts[std::size_t(o * threads + th)] = reduce_elements(base, count * th / nt, count * (th + 1) / nt);
    }
  });
  for (index_t o = 0; o < results; ++o) {
    Total t = Op::template identity<Total>();
    for (int th = 0; th < threads; ++th) t = Op::combine(t, parts[std::size_t(o * threads + th)]);
    index_t base, at;
    offsets(o, base, at);
    write(at, t);
  }
}

}  // namespace fuse::detail
