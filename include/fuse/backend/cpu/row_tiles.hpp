// fuse/backend/cpu/row_tiles.hpp - a row kernel over rows of a few elements, a tile of rows at
// a time.
//
// softmax over a router's 8 experts: the row kernel runs each row's passes over its 8 elements,
// too few for one vector iteration, so each pass is scalar code (16 scalar exps a row) and runs
// at 0.11 x copy (docs/performance.md). Here a tile of rows that follow each other in memory (as
// tile.hpp's elementwise tiles) runs each pass flat over the whole tile, vectorised across rows:
//   for each phase k:  buf[i] = operand_k(i)              for every element i of the tile
//                      v[b] = reduce buf over row b        (a short in-order loop per row)
//                      spread_k[i] = v[row of i]           (the row value, once per element)
//   epilogue:          out[i] = epilogue(i)               for every element i of the tile
// where the operands and the epilogue read row values from the spread buffers (spread_eval, in
// place of slot_eval) instead of one slot per row. A phase whose operand the epilogue repeats
// (softmax's exp(x - max)) leaves its buffer for the epilogue (cached_eval, row_cache.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>

#include "fuse/backend/cpu/row_cache.hpp"
#include "fuse/backend/cpu/row_write.hpp"
#include "fuse/backend/cpu/scratch.hpp"
#include "fuse/backend/cpu/tile.hpp"
#include "fuse/core/row_iteration.hpp"
#include "fuse/core/shared_subtree.hpp"

namespace fuse::detail {

// Rows shorter than this run as tiles of about row_tile_elements elements, and at least
// row_tile_rows rows (the lanes of the reductions). Measured (docs/performance.md, "Short rows
// as tiles"): rows of 24 gain 1.1-1.75x, rows of 32 lose up to 25%.
#ifndef FUSE_ROW_TILE_MAX
#define FUSE_ROW_TILE_MAX 25
#endif
inline constexpr index_t row_tile_max = FUSE_ROW_TILE_MAX;
inline constexpr index_t row_tile_elements = 512;
inline constexpr index_t row_tile_rows = 32;
// A tile stops at the end of axis R - 2: tiles of fewer rows than this lose to the row kernel
// (softmax(x + c[a, 1, 8]) over [a, b, 8], one thread: b = 4 1.84 -> 1.20 GB/s, b = 8 1.84 -> 2.66).
inline constexpr index_t row_tile_min_rows = 8;
static_assert(row_tile_rows * row_tile_max <= tile_elements && row_tile_elements <= tile_elements,
              "fuse: FUSE_ROW_TILE_MAX at most 32: a tile of 32 rows must fit tile_rows' copies");

// Can E be read flat over a tile with its slots spread? Leaves that read memory or an index (a
// tile_read of `none` keeps them off at run time), constants, cached operands and holes, and the
// nodes built from them; not take (its row is looked up at seek).
template <class E>
inline constexpr bool spreadable_v = false;
template <class T, std::size_t R>
inline constexpr bool spreadable_v<load_eval<T, R>> = true;
template <std::size_t R>
inline constexpr bool spreadable_v<affine_eval<R>> = true;
template <class T>
inline constexpr bool spreadable_v<const_eval<T>> = true;
template <class T>
inline constexpr bool spreadable_v<cached_eval<T>> = true;
template <class T, std::size_t K>
inline constexpr bool spreadable_v<hole_eval<T, K>> = true;
template <class T, std::size_t K>
inline constexpr bool spreadable_v<slot_eval<T, K>> = true;
template <class T, class I>
inline constexpr bool spreadable_v<invariant_eval<T, I>> = spreadable_v<I>;
template <class R, class C, class F, class... A>
inline constexpr bool spreadable_v<map_eval<R, C, F, A...>> = (spreadable_v<A> && ...);
template <class Z, class B>
inline constexpr bool spreadable_v<let_eval<Z, B>> = spreadable_v<Z> && spreadable_v<B>;

// e with each slot K read from spread[K], and each row constant computed per element from them
// (invariant_eval computes its value at seek, once per row: a tile's rows differ).
template <class E>
auto spread_slots(const E& e, const void* const* spread) {
  if constexpr (requires { e.slots; }) {  // slot_eval<T, K>
    using T = typename E::value_type;
    return spread_eval<T, E::index>{static_cast<const T*>(spread[E::index])};
  } else if constexpr (requires { e.args; }) {  // map_eval
    return detail::apply(
        [&](const auto&... a) {
          using M = map_eval<typename E::value_type, typename E::convert, std::remove_cvref_t<decltype(e.f)>,
                             decltype(spread_slots(a, spread))...>;
          return M{e.f, make_tuple_of(spread_slots(a, spread)...)};
        },
        e.args);
  } else if constexpr (requires { e.inner; }) {  // invariant_eval
    return spread_slots(e.inner, spread);
  } else if constexpr (requires { e.z; e.body; }) {  // let_eval
    using L = let_eval<decltype(spread_slots(e.z, spread)), decltype(spread_slots(e.body, spread))>;
    return L{spread_slots(e.z, spread), spread_slots(e.body, spread)};
  } else {
    return e;
  }
}

// Does a row kernel's type allow tiles (compile time)? Its epilogue and every phase spreadable;
// rank 2 or more (a tile runs on from one row into the next along axis R - 2). Not compiled at
// all with FUSE_ROW_TILE_MAX 2 or less (no rows of 2 or more elements shorter than that).
template <class It>
constexpr bool row_tiles_compiled() {
  if constexpr (It::rank < 2 || It::phase_count == 0 || row_tile_max <= 2) {
    return false;
  } else {
    using Phases = decltype(std::declval<It&>().phases);
    return spreadable_v<decltype(std::declval<It&>().eval)> && [&]<std::size_t... K>(std::index_sequence<K...>) {
      return (spreadable_v<phase_child_t<Phases, K>> && ...);
    }(std::make_index_sequence<Phases::size>{});
  }
}

// Do the rows of it run as tiles (run time, once per kernel)? Contiguous rows of 2 to
// row_tile_max elements over the last axis alone, at least row_tile_min_rows of them along axis
// R - 2, written one after another or one value per row, every leaf of the
// epilogue and the phases running on from row to row or read through copies (tile_read_of); a
// reused phase operand only where the epilogue may read its buffer (may_cache).
template <class It>
bool tiles_row_kernel(const It& it, bool reuse) {
  if constexpr (!row_tiles_compiled<It>()) {
    (void)it, (void)reuse;
    return false;
  } else {
    constexpr std::size_t R = It::rank;
    const index_t n = it.shape[R - 1];
    if (!it.unit || it.inner_first != R - 1 || n < 2 || n >= row_tile_max || it.shape[R - 2] < row_tile_min_rows) return false;
    // Rows written one after another, or one value per row (a reduction root).
    if (it.root_reduction ? it.out_stride[R - 1] != 0 : it.out_stride[R - 1] != 1 || it.out_stride[R - 2] != n) return false;
    if (cached_phase<decltype(it.eval), decltype(it.phases)>() >= 0 && !reuse) return false;
    auto copy = it;  // for_each_tracker is not const
    bool ok = true;
    copy.for_each_tracker([&](const tracker& t) { ok = ok && tile_read_of<R>(t, n) != tile_read::none; });
    return ok;
  }
}

// The buffers of one thread's tiles, 64-byte aligned, of `elements` values each: each slot's
// spread values, a phase operand's values, and the reused phase operand's (kept for the epilogue).
template <class Phases>
class row_tile_buffers {
 public:
  static constexpr std::size_t P = Phases::size;
  explicit row_tile_buffers(index_t elements) {
    const std::size_t e = static_cast<std::size_t>(elements);
    std::size_t bytes = 0, operand_bytes = 0;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      auto one = [&]<std::size_t q>(std::integral_constant<std::size_t, q>) {
        using Q = phase_at_t<Phases, q>;
        static_assert(Q::slot == q, "fuse: a row kernel's phases are in slot order (collect_phases)");
        offsets_[q] = bytes;
        bytes += whole_lines(e * sizeof(typename Q::result_type));
        operand_bytes = std::max(operand_bytes, whole_lines(e * sizeof(typename Q::child_type::value_type)));
      };
      (one(std::integral_constant<std::size_t, K>{}), ...);
    }(std::make_index_sequence<P>{});
    base_ = storage_.reserve(bytes + 2 * operand_bytes);
    operand_ = base_ + bytes, cached_ = operand_ + operand_bytes;
  }
  void* spread(std::size_t slot) const { return base_ + offsets_[slot]; }
  void* operand() const { return operand_; }
  void* cached() const { return cached_; }

 private:
  scratch_buffer<16384> storage_;
  std::size_t offsets_[P] = {};
  unsigned char* base_ = nullptr;
  unsigned char* operand_ = nullptr;
  unsigned char* cached_ = nullptr;
};

// Phase k over a tile of `rows` rows of n elements: its operand into a buffer (a repeated
// subexpression once per element, as `shared` plans), each row reduced, its value spread into
// the slot's buffer. buf: where the operand goes (the reused phase's own buffer).
template <class P>
FUSE_INLINE void run_tile_phase(const P& p, const shared_plan& shared, index_t rows, index_t n, void* buf, void* spread) {
  using C = typename P::child_type;
  using CT = typename C::value_type;
  using Op = typename P::op;
  using Acc = typename P::acc_type;
  using Total = typename Op::template total_t<Acc>;
  using Result = typename P::result_type;
  CT* const values = static_cast<CT*>(buf);
  Result* const out = static_cast<Result*>(spread);
  const index_t e = rows * n;
  with_shared(p.child, shared, [&](const auto& c) {
    FUSE_SIMD_LOOP
    for (index_t i = 0; i < e; ++i) values[i] = c.template at<true>(i);
  });
  // Each row's elements in order, the rows side by side in lanes (the combine vectorised and
  // free of branches: max's NaN test as a blend).
  Acc acc[std::max(row_tile_elements / 2, row_tile_rows)];
  FUSE_SIMD_LOOP
  for (index_t b = 0; b < rows; ++b) acc[b] = static_cast<Acc>(values[b * n]);
  for (index_t j = 1; j < n; ++j) {
    FUSE_SIMD_LOOP
    for (index_t b = 0; b < rows; ++b) acc[b] = Op::combine(acc[b], static_cast<Acc>(values[b * n + j]));
  }
  for (index_t b = 0; b < rows; ++b) {
    const Total total = Op::combine(Op::template identity<Total>(), static_cast<Total>(acc[b]));
    const Result v = Op::template finalize<Result>(total, p.count);
    for (index_t j = 0; j < n; ++j) out[b * n + j] = v;
  }
}

// Rows [first, last) of it as tiles (tiles_row_kernel holds). stream: the epilogue's stores
// stream (streams(it)).
template <class It>
void run_row_tiles(const It& it, index_t first, index_t last, bool stream) {
  constexpr std::size_t R = It::rank;
  constexpr std::size_t P = It::phase_count;
  using Phases = decltype(it.phases);
  using T = std::remove_pointer_t<decltype(it.out)>;
  constexpr int cached = cached_phase<decltype(it.eval), Phases>();
  const index_t n = it.shape[R - 1];
  const index_t k = std::max(row_tile_elements / n, row_tile_rows);
  row_tile_buffers<Phases> bufs(k * n);
  // Each slot's spread values (phase q writes slot q); a repeated phase reads those of the
  // earlier phase it repeats.
  const void* spread[P] = {};
  for (std::size_t q = 0; q < P; ++q) spread[q] = it.alias[q] < 0 ? bufs.spread(q) : spread[it.alias[q]];
  // The epilogue reads the reused operand from its buffer (the whole tile's: it runs flat too).
  using C = phase_child_t<Phases, std::size_t(cached < 0 ? 0 : cached)>;
  using CT = typename C::value_type;
  const CT* const current = static_cast<const CT*>(bufs.cached());
  auto epilogue = [&] {
    if constexpr (cached >= 0) {
      return spread_slots(substitute<C>(it.eval, cached_eval<CT>{&current}), spread);
    } else {
      return spread_slots(it.eval, spread);
    }
  }();
  auto phases = detail::apply(
      [&](const auto&... p) {
        auto one = [&]<class Q>(const Q& q) {
          auto child = spread_slots(q.child, spread);
          using F = phase_eval<typename Q::op, typename Q::acc_type, typename Q::result_type, Q::slot, decltype(child)>;
          return F{child, q.count};
        };
        return make_tuple_of(one(p)...);
      },
      it.phases);
  auto flat = with_evaluators(it, epilogue, phases);
  tile_rows tiles(flat, true, n, std::integral_constant<std::size_t, R>{});
  // (Planned on the spread evaluators: a repeated phase's slot reads the same buffer.)
  const shared_plan epilogue_shared = plan_shared(flat.eval, nullptr);
  std::array<shared_plan, P> phase_shared;
  std::size_t s = 0;
  for_each(flat.phases, [&](const auto& p) { phase_shared[s++] = plan_shared(p.child, nullptr); });
  stream_prefetch<R> pf(it, false);
  index_t idx[R] = {};
  for (index_t o = first; o < last;) {
    unflatten(o, it.shape, 0, R - 1, idx);
    // A tile stops at the end of axis R - 2: leaves run on from row to row only within it.
    const index_t rows = std::min({k, last - o, it.shape[R - 2] - idx[R - 2]});
    flat.eval.seek(idx);
    for_each(flat.phases, [&](auto& p) { p.child.seek(idx); });
    tiles.fill(rows);
    std::size_t q = 0;
    for_each(flat.phases, [&](const auto& p) {
      const std::size_t k = q++;
      if (it.alias[k] >= 0) return;  // its spread values are the repeated phase's
      run_tile_phase(p, phase_shared[k], rows, n, int(k) == cached ? bufs.cached() : bufs.operand(), bufs.spread(k));
    });
    T* row = it.out + row_offset<R>(it.out_stride, idx);
    const index_t e = rows * n;
    if (it.root_reduction) {  // one value per row: the epilogue at each row's first element
      const index_t step = it.out_stride[R - 2];
      with_shared(flat.eval, epilogue_shared, [&](const auto& ev) {
        for (index_t b = 0; b < rows; ++b) row[b * step] = static_cast<T>(ev.template at<true>(b * n));
      });
      o += rows;
      continue;
    }
    with_shared(flat.eval, epilogue_shared, [&](const auto& ev) {
      // Streamed as the elementwise kernel streams (executor.hpp): large outputs of an epilogue
      // that is not arithmetic-bound.
      if constexpr (can_stream_v<T> && streams_by_flops<std::remove_cvref_t<decltype(ev)>>) {
        if (stream) return write_streaming(row, ev, 0, e, pf);
      }
      FUSE_SIMD_LOOP
      for (index_t i = 0; i < e; ++i) row[i] = ev.template at<true>(i);
    });
    o += rows;
  }
}

}  // namespace fuse::detail
