// fuse/core/iteration.hpp - turning (destination, expression) into an iteration space that any
// backend can run: the evaluator, merged axes, the unit-stride test, and the overlap check.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fuse/core/errors.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/core/leaf.hpp"
#include "fuse/detail/small_vector.hpp"

namespace fuse::detail {

// A writable destination: pointer, shape and strides (in elements).
template <class T, std::size_t R>
struct destination {
  T* data;
  shape_t<R> shape;
  shape_t<R> strides;
};

template <class D>
auto destination_of(D& d) {
  using T = std::remove_reference_t<decltype(*d.data())>;
  static_assert(!std::is_const_v<T>, "fuse::assign: the destination is read-only (a view of const data)");
  return destination<T, std::remove_cvref_t<D>::rank>{d.data(), d.shape(), d.strides()};
}

// True if two elements of a (non-empty) strided array share an address.
template <std::size_t R>
bool self_overlapping(const shape_t<R>& shape, const shape_t<R>& strides) {
  // Row-major contiguous (most destinations) cannot: answered here, not by offsets_collide's call
  // (a sixth of assigning x * 2.f + 1.f to a [4, 16] tensor, perf).
  if (is_row_major(shape, strides)) return false;
  std::array<std::array<index_t, 2>, R> axes{};  // {extent, stride} of the axes of extent > 1
  std::size_t n = 0;
  for (std::size_t i = 0; i < R; ++i)
    if (shape[i] > 1) axes[n++] = {shape[i], strides[i]};
  return offsets_collide(axes.data(), n);
}

// Several elements on one address cannot be written: a stride of 0 on an axis of extent > 1, or
// strides that make two elements meet (a sliding window view(p, {6, 3}, {1, 1})). `who` names
// the public function in the message.
template <class T, std::size_t R>
void check_writable(const destination<T, R>& d, const char* who = "fuse::assign") {
  for (std::size_t i = 0; i < R; ++i)
    if (d.shape[i] == 0) return;  // nothing is written (a [3, 0] tensor has stride 0 on axis 0)
  for (std::size_t i = 0; i < R; ++i)
    if (d.strides[i] == 0 && d.shape[i] > 1)
      throw shape_error(std::string(who) + ": the destination " + format_shape(d.shape) +
                        " has stride 0 on axis " + std::to_string(i) + " (several elements on one address)");
  if (self_overlapping(d.shape, d.strides))
    throw shape_error(std::string(who) + ": the destination " + format_shape(d.shape) + " with strides " +
                      format_shape(d.strides) + " puts several elements on one address");
}

// The longest row that the CPU executor reads through rows of copies (iteration::splat): 256 KiB
// of floats per such leaf and thread, so that [N, C, 224, 224] * scale[C, 1, 1] (rows of 50176)
// qualifies.
inline constexpr index_t splat_max_row = index_t(1) << 16;

// The execution rank: at least 1, so a rank-0 destination is one row of one element.
template <std::size_t R>
inline constexpr std::size_t exec_rank = R == 0 ? 1 : R;

// An evaluator over a destination, with axes merged where every tracker allows it.
template <class T, std::size_t R, class Eval>
struct iteration {
  static constexpr std::size_t rank = R;
  T* out;
  index_t out_stride[R];
  index_t shape[R];
  Eval eval;
  bool unit;  // every tracker and the output have stride 1 along the last axis
  // Not unit, but would be if the memory leaves of stride 0 along the last axis were read from a
  // row of copies of their element (backend/cpu/splat.hpp; the CPU executor does, CUDA does not).
  bool splat = false;

  index_t size() const {
    index_t n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
  bool empty() const { return size() == 0; }
  template <class F>
  void for_each_tracker(F&& f) { eval.for_each_tracker(f); }
};

// Merges neighbouring axes among [first, first + n) that every stride set (trackers and output)
// traverses as one, and drops axes of extent 1. The merged axes are right-aligned within the
// range; freed axes at its front get extent 1 (and stride 0). In place: going from the last axis
// down, an axis is read before any merged axis is written over it.
inline void collapse_axes(index_t* shape, std::size_t first, std::size_t n, index_t* const* sets, std::size_t count) {
  shape += first;
  int w = -1;  // the group being merged into, -1: none yet
  int pos = static_cast<int>(n);
  for (int d = static_cast<int>(n) - 1; d >= 0; --d) {
    const index_t e = shape[d];
    if (e == 1) continue;
    bool merge = w >= 0;
    for (std::size_t k = 0; merge && k < count; ++k) merge = sets[k][first + d] == sets[k][first + w] * shape[w];
    if (merge) {
      shape[w] *= e;
    } else {
      w = --pos;
      shape[w] = e;
      for (std::size_t k = 0; k < count; ++k) sets[k][first + w] = sets[k][first + d];
    }
  }
  for (int d = 0; d < pos; ++d) {
    shape[d] = 1;
    for (std::size_t k = 0; k < count; ++k) sets[k][first + d] = 0;
  }
}

// Room for this many stride sets (output and trackers) before the lists below allocate.
inline constexpr std::size_t stride_sets_in_place = 16;
using stride_sets = small_vector<index_t*, stride_sets_in_place>;

template <class T, std::size_t RD, class E>
auto make_iteration(const destination<T, RD>& dst, const E& e) {
  constexpr std::size_t R = exec_rank<RD>;
  shape_t<R> shape{}, ostride{};
  shape.fill(1);
  for (std::size_t d = 0; d < RD; ++d) shape[R - RD + d] = dst.shape[d], ostride[R - RD + d] = dst.strides[d];
  // Built in place (a prvalue member initialiser): a copy of a freshly written evaluator is read
  // back before its stores retire, and cost ~10 ns a call in store-to-load forwarding stalls.
  using Ev = decltype(e.template evaluator<R>(shape));
  iteration<T, R, Ev> it{dst.data, {}, {}, e.template evaluator<R>(shape), false};
  std::copy(shape.begin(), shape.end(), it.shape);
  std::copy(ostride.begin(), ostride.end(), it.out_stride);

  // How each set's leaf reads where it stays put along the row (the output: strided).
  stride_sets sets{it.out_stride};
  small_vector<along_row, stride_sets_in_place> rest{along_row::strided};
  it.eval.for_each_tracker([&](const tracker& t) {
    sets.push_back(t.stride);
    rest.push_back(at_rest(t));
  });
  collapse_axes(it.shape, 0, R, sets.data(), sets.size());
  it.unit = true;
  if (it.shape[R - 1] > 1) {
    bool splat = true, copies = false;
    for (std::size_t k = 0; k < sets.size(); ++k) {
      const along_row r = reading_along_row(sets[k][R - 1], rest[k]);
      it.unit = it.unit && r == along_row::contiguous;
      splat = splat && r != along_row::strided;
      copies = copies || r == along_row::copied;
    }
    // Short rows lose more to a fill per row (a call per leaf) than the strided loop costs:
    // x[M, 2] * s[M, 1] ran 2x slower through the copies than strided (probe round 10 review).
    // Rows that need no copies (take's rows) run unit at any length.
    it.splat = !it.unit && splat && (!copies || (it.shape[R - 1] >= 16 && it.shape[R - 1] <= splat_max_row));
  }
  return it;
}

// Byte range [lo, hi] an array touches; lo > hi when empty.
template <std::size_t R>
std::array<std::uintptr_t, 2> byte_range(const void* base, std::size_t elem, const index_t* shape, const index_t* stride) {
  std::intptr_t lo = 0, hi = 0;
  for (std::size_t d = 0; d < R; ++d) {
    if (shape[d] == 0) return {1, 0};
    const std::intptr_t span = static_cast<std::intptr_t>((shape[d] - 1) * stride[d]) * static_cast<std::intptr_t>(elem);
    (span < 0 ? lo : hi) += span;
  }
  const auto b = reinterpret_cast<std::uintptr_t>(base);
  return {b + lo, b + hi + elem - 1};
}

// True when evaluating in place could read an element after it was overwritten: some tracker
// overlaps the destination other than by reading exactly the element being written.
template <class It>
bool destination_overlaps(It& it) {
  constexpr std::size_t R = It::rank;
  using T = std::remove_pointer_t<decltype(it.out)>;
  const auto out = byte_range<R>(it.out, sizeof(T), it.shape, it.out_stride);
  if (out[0] > out[1]) return false;
  bool overlap = false;
  it.for_each_tracker([&](const tracker& t) {
    if (!t.base || overlap) return;
    std::array<std::uintptr_t, 2> in;
    if (t.span > 0) {
      const auto b = reinterpret_cast<std::uintptr_t>(t.base);
      in = {b, b + static_cast<std::uintptr_t>(t.span) * t.elem_bytes - 1};
    } else {
      in = byte_range<R>(t.base, t.elem_bytes, it.shape, t.stride);
    }
    if (in[0] > out[1] || out[0] > in[1]) return;
    bool same = t.span == 0 && t.base == static_cast<const void*>(it.out) && t.elem_bytes == sizeof(T);
    for (std::size_t d = 0; same && d < R; ++d) same = it.shape[d] == 1 || t.stride[d] == it.out_stride[d];
    overlap = !same;
  });
  return overlap;
}

}  // namespace fuse::detail
