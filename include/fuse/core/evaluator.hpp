// fuse/core/evaluator.hpp - the kernel-side form of an expression.
//
// An expression node is a host object (shapes, owned tensors). To run it, the executor asks the
// root for an *evaluator*: a small trivially-copyable tree of pointers, strides and functors that
// can be passed by value to a CPU thread or a CUDA kernel. Iteration is row by row:
//   seek(outer)  positions every memory tracker at the row given by the outer multi-index
//                (all axes but the last);
//   at<Unit>(i)  gives element i of that row; Unit = every tracker has stride 1 along the row,
//                so the compiler sees contiguous loads and vectorises.
// Every "tracker" (a pointer into memory, or an affine index such as iota) exposes its strides
// over the execution axes through for_each_tracker, so the executor can merge axes (collapse)
// for all of them at once.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "fuse/config.hpp"
#include "fuse/detail/tuple.hpp"

namespace fuse::detail {

// A fixed-size vector of lanes, for 16-byte loads and stores on CUDA.
// Aligned to the whole vector, at most 16 bytes (the widest load a CUDA thread issues).
template <class T, int V>
struct alignas(sizeof(T) * V < 16 ? sizeof(T) * V : 16) lanes {
  T v[V];
};

// Every lane `value` (a constant or a row's reduced value read by a vector load path).
template <int V, class T>
FUSE_HOST_DEVICE FUSE_INLINE lanes<T, V> splat(T value) {
  lanes<T, V> r;
  for (int l = 0; l < V; ++l) r.v[l] = value;
  return r;
}

// Offset of the row at `outer` (R-1 leading indices) for one set of strides.
template <std::size_t R>
FUSE_HOST_DEVICE FUSE_INLINE index_t row_offset(const index_t* stride, const index_t* outer) {
  index_t off = 0;
  for (std::size_t d = 0; d + 1 < R; ++d) off += outer[d] * stride[d];
  return off;
}

// What the executor sees of each pointer or affine index in an evaluator: its strides over the
// execution axes (which it may rewrite when merging axes), and for memory the base address.
struct tracker {
  index_t* stride;
  const void* base;        // nullptr for an affine index
  std::size_t elem_bytes;
  index_t span;            // 0: affine in the indices (stride applies); > 0: reads anywhere in [base, base + span)
  // A memory leaf that can be read through a row of copies: splat(self, buffer, n) fills
  // buffer[0, n) with the element its row pointer points at and points the row there (the CPU
  // executor's contiguous loop over a leaf of stride 0 along the row: backend/cpu/splat.hpp).
  void* self = nullptr;
  void (*splat)(void* self, void* buffer, index_t from, index_t count) = nullptr;
  // The splat of a leaf that the unit loop does not read (take's indices): no copies needed.
  static void no_copies(void*, void*, index_t, index_t) {}
  // A memory leaf that can be read through a row repeated: tile(self, buffer, n, count, last)
  // fills buffer[0, count) with its row's elements [0, n) over and over (a leaf of stride 0 along
  // the row: with each row's element n times) and points the row there
  // (the CPU executor's rows of a few elements, several at a time: backend/cpu/tile.hpp). It
  // returns the row it copied; when that is `last`, the buffer holds it already and is not filled.
  const void* (*tile)(void* self, void* buffer, index_t n, index_t count, const void* last) = nullptr;
  // A memory leaf read in place at base + sum(idx[d] * stride[d]): rebase(self, copy) reads a
  // copy of it instead, laid out by `stride` as changed by the caller (the CPU row kernel's
  // contiguous copies of strided rows: backend/cpu/strided_rows.hpp).
  void (*rebase)(void* self, const void* copy) = nullptr;
};

// How a kernel's loop along a row can read a tracker: the one rule behind the elementwise
// kernel's contiguous and copies paths (iteration.hpp), the row kernel's unit variant
// (row_iteration.hpp: CPU and GPU), the CPU row kernel's copies (row_kernel.hpp) and the column
// reduction (column_reduce.hpp).
enum class along_row : unsigned char {
  contiguous,  // stride 1
  index,       // stride 0, an affine index (iota of another axis): computed, no memory read
  row_index,   // stride 0, take's index: the CPU's unit loop reads the table row found at seek
               // and never the index (the GPU's reads it per element)
  copied,      // stride 0, read through a row of copies of its element (CPU: splat.hpp; a memory
               // leaf, or in an elementwise kernel a hoisted row value, hoist.hpp)
  strided,     // anything else: the strided loops (the CPU row kernel reads such a leaf through a
               // copy instead: backend/cpu/strided_rows.hpp)
};

// The same for a tracker that stays put along the row (its stride there is 0).
inline along_row at_rest(const tracker& t) {
  if (t.splat == &tracker::no_copies) return t.base == nullptr ? along_row::index : along_row::row_index;
  return t.splat != nullptr ? along_row::copied : along_row::strided;
}

// ... and for one whose stride along the row is s (rest: at_rest of it).
inline along_row reading_along_row(index_t s, along_row rest) {
  return s == 1 ? along_row::contiguous : s == 0 ? rest : along_row::strided;
}
template <std::size_t R>
along_row reading_along_row(const tracker& t) {
  return reading_along_row(t.stride[R - 1], at_rest(t));
}

// The per-row value of a reduction that runs inside the same kernel (a phase of a row kernel):
// integers keep 64 bits, floating values are held in double.
struct row_slot {
  union {
    double f;
    index_t i;
  };
};
template <class T>
FUSE_HOST_DEVICE FUSE_INLINE T read_slot(const row_slot& s) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(s.i);
  else return static_cast<T>(s.f);
}
template <class T>
FUSE_HOST_DEVICE FUSE_INLINE void write_slot(row_slot& s, T v) {
  if constexpr (std::is_integral_v<T>) s.i = static_cast<index_t>(v);
  else s.f = static_cast<double>(v);
}

// copies[k] = row[k * s] for k in [from, from + count), elements of B bytes: one vectorised loop
// per element size (vector gathers; as scalar code a strided row kernel in memory lost a fifth),
// not one per evaluator type. Through memcpy: the bytes of any value type.
template <std::size_t B>
FUSE_NOINLINE void gather_elements(void* copies, const void* row, index_t s, index_t from, index_t count) {
  using word = std::conditional_t<B == 1, std::uint8_t, std::conditional_t<B == 2, std::uint16_t, std::conditional_t<B == 4, std::uint32_t, std::uint64_t>>>;
  auto* to = static_cast<unsigned char*>(copies);
  const auto* in = static_cast<const unsigned char*>(row);
  if constexpr (sizeof(word) == B) {
    FUSE_SIMD_LOOP
    for (index_t k = from; k < from + count; ++k) {
      word w;
      std::memcpy(&w, in + k * s * index_t(B), B);
      std::memcpy(to + k * index_t(B), &w, B);
    }
  } else {
    for (index_t k = from; k < from + count; ++k) std::memcpy(to + k * index_t(B), in + k * s * index_t(B), B);
  }
}

// Reads T from memory at base + sum(idx[d] * stride[d]).
template <class T, std::size_t R>
struct load_eval {
  using value_type = std::remove_const_t<T>;
  const value_type* base;
  index_t stride[R];
  const value_type* row = nullptr;

  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t* outer) { row = base + row_offset<R>(stride, outer); }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot*) {}
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE value_type at(index_t i, const Env&...) const {
    if constexpr (Unit) return row[i];
    else return row[i * stride[R - 1]];
  }
  template <int V>
  FUSE_HOST_DEVICE FUSE_INLINE lanes<value_type, V> at_vec(index_t i) const {
    return *reinterpret_cast<const lanes<value_type, V>*>(row + i);
  }
  template <class F>
  void for_each_tracker(F&& f) { f(tracker{stride, base, sizeof(value_type), 0, this, &splat_row, &tile_row, &rebase_to}); }
  static void rebase_to(void* self, const void* copy) { static_cast<load_eval*>(self)->base = static_cast<const value_type*>(copy); }
  // Its element repeated (stride 0 along the row), or its row gathered (strided along it: the
  // CPU row kernel, backend/cpu/row_copies.hpp).
  static void splat_row(void* self, void* buffer, index_t from, index_t count) {
    auto& ev = *static_cast<load_eval*>(self);
    auto* copies = static_cast<value_type*>(buffer);
    if (count > 0) {  // (0: only points; ev.row may be a window's pointer, not the element)
      if (const index_t s = ev.stride[R - 1]; s != 0) {
        gather_elements<sizeof(value_type)>(copies, ev.row, s, from, count);
      } else {
        const value_type v = *ev.row;
        for (index_t k = from; k < from + count; ++k) copies[k] = v;
      }
    }
    ev.row = copies;
  }
  static const void* tile_row(void* self, void* buffer, index_t n, index_t count, const void* last) {
    auto& ev = *static_cast<load_eval*>(self);
    const value_type* const source = ev.row;
    auto* copies = static_cast<value_type*>(buffer);
    if (source != last) {
      if constexpr (R >= 2) {
        if (ev.stride[R - 1] == 0) {
          // Constant along the row (s[M, 1]): each row's element, n times.
          const index_t across = ev.stride[R - 2];
          for (index_t k = 0, r = 0; k < count; k += n, ++r) {
            const value_type v = source[r * across];
            const index_t stop = std::min(n, count - k);
            for (index_t j = 0; j < stop; ++j) copies[k + j] = v;
          }
          ev.row = copies;
          return source;
        }
      }
      for (index_t k = 0; k < count; k += n) std::copy_n(source, std::min(n, count - k), copies + k);
    }
    ev.row = copies;
    return source;
  }
};

// The index itself: sum(idx[d] * stride[d]) (iota is an affine index with one unit stride). Its
// stride along the row is 1 (iota<k> along the last axis) or 0 (iota<k> of another axis, as the
// query index of a causal mask), and the contiguous loops read it as either: it reads no memory,
// so a stride of 0 needs no copies (tracker::no_copies), and the kernel stays contiguous for
// its memory leaves (a causal softmax ran the strided row kernel: 2.0 -> 1.1 ns per element).
template <std::size_t R>
struct affine_eval {
  using value_type = index_t;
  index_t stride[R];
  index_t row = 0;

  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t* outer) { row = row_offset<R>(stride, outer); }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot*) {}
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE index_t at(index_t i, const Env&...) const {
    // (Contiguous loops see a stride of 1 or 0 only: an AND, cheaper than a 64-bit multiply.)
    if constexpr (Unit) return row + (i & -stride[R - 1]);
    else return row + i * stride[R - 1];
  }
  template <int V>
  FUSE_HOST_DEVICE FUSE_INLINE lanes<index_t, V> at_vec(index_t i) const {
    lanes<index_t, V> r;
    for (int l = 0; l < V; ++l) r.v[l] = row + ((i + l) & -stride[R - 1]);
    return r;
  }
  template <class F>
  void for_each_tracker(F&& f) {
    tracker t{stride, nullptr, 0, 0};
    t.splat = &tracker::no_copies;
    f(t);
  }
};

// One value everywhere (scalars and fuse::full).
template <class T>
struct const_eval {
  using value_type = T;
  T value;
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t*) {}
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot*) {}
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE T at(index_t, const Env&...) const { return value; }
  template <int V>
  FUSE_HOST_DEVICE FUSE_INLINE lanes<T, V> at_vec(index_t) const { return splat<V>(value); }
  template <class F>
  void for_each_tracker(F&&) {}
};

// Applies F to its children's values, each first converted by Convert (the node's promotion).
template <class Result, class Convert, class F, class... E>
struct map_eval {
  using value_type = Result;
  using convert = Convert;
  F f;
  tuple<E...> args;

  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t* outer) {
    for_each(args, [&](auto& a) { a.seek(outer); });
  }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot* slots) {
    for_each(args, [&](auto& a) { a.bind(slots); });
  }
FUSE_EXEC_CHECK_DISABLE
  // env: the values of shared subexpressions (shared_subtree.hpp), passed down to their holes.
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE Result at(index_t i, const Env&... env) const {
    return at_impl<Unit>(i, std::index_sequence_for<E...>{}, env...);
  }
  // V consecutive elements of the row (unit stride): each child's lanes, then f lane by lane.
  template <int V>
  FUSE_HOST_DEVICE FUSE_INLINE lanes<Result, V> at_vec(index_t i) const {
    return at_vec_impl<V>(i, std::index_sequence_for<E...>{});
  }
  template <class G>
  void for_each_tracker(G&& g) {
    for_each(args, [&](auto& a) { a.for_each_tracker(g); });
  }

 private:
FUSE_EXEC_CHECK_DISABLE
  template <int V, std::size_t... I>
  FUSE_HOST_DEVICE FUSE_INLINE lanes<Result, V> at_vec_impl(index_t i, std::index_sequence<I...>) const {
    const auto in = make_tuple_of(get<I>(args).template at_vec<V>(i)...);
    lanes<Result, V> r;
    for (int l = 0; l < V; ++l) r.v[l] = static_cast<Result>(f(Convert::template apply<I>(get<I>(in).v[l])...));
    return r;
  }
FUSE_EXEC_CHECK_DISABLE
  template <bool Unit, std::size_t... I, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE Result at_impl(index_t i, std::index_sequence<I...>, const Env&... env) const {
    return static_cast<Result>(f(Convert::template apply<I>(get<I>(args).template at<Unit>(i, env...))...));
  }
};

// Arithmetic operations per element of an evaluator (the ops' own counts; leaves, constants and
// per-row values cost nothing per element).
template <class E>
struct flops_of : std::integral_constant<int, 0> {};
template <class R, class C, class F, class... A>
struct flops_of<map_eval<R, C, F, A...>> : std::integral_constant<int, (F::flops + ... + flops_of<A>::value)> {};

// The first of L that is not void; void if all are (a search over an evaluator's children).
template <class... L>
struct first_non_void {
  using type = void;
};
template <class L, class... Rest>
struct first_non_void<L, Rest...> {
  using type = std::conditional_t<std::is_void_v<L>, typename first_non_void<Rest...>::type, L>;
};

// A subexpression of row constants only (reduction values, scalars): evaluated once per row at
// seek(), so that rsqrt(var + eps) costs one square root per row, not one per element.
template <class T, class Inner>
struct invariant_eval {
  using value_type = T;
  Inner inner;
  T value{};
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t* outer) {
    inner.seek(outer);
    value = inner.template at<true>(0);
  }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot* s) { inner.bind(s); }
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE T at(index_t, const Env&...) const { return value; }
  template <int V>
  FUSE_HOST_DEVICE FUSE_INLINE lanes<T, V> at_vec(index_t) const { return splat<V>(value); }
  template <class F>
  void for_each_tracker(F&& f) { inner.for_each_tracker(f); }
};

// A reduction's value for the current row, computed by an earlier phase into slot K.
template <class T, std::size_t K>
struct slot_eval {
  using value_type = T;
  static constexpr std::size_t index = K;
  const row_slot* slots = nullptr;
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t*) {}
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot* s) { slots = s; }
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE T at(index_t, const Env&...) const { return read_slot<T>(slots[K]); }
  template <int V>
  FUSE_HOST_DEVICE FUSE_INLINE lanes<T, V> at_vec(index_t) const { return splat<V>(read_slot<T>(slots[K])); }
  template <class F>
  void for_each_tracker(F&&) {}
};

// Slot K's value at element i of a tile of rows read flat (backend/cpu/row_tiles.hpp): its row's
// value, spread along the row into a buffer.
template <class T, std::size_t K>
struct spread_eval {
  using value_type = T;
  static constexpr std::size_t index = K;
  const T* values = nullptr;
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t*) {}
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot*) {}
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE T at(index_t i, const Env&...) const { return values[i]; }
  template <class F>
  void for_each_tracker(F&&) {}
};
template <class E>
inline constexpr bool is_spread_eval_v = false;
template <class T, std::size_t K>
inline constexpr bool is_spread_eval_v<spread_eval<T, K>> = true;

// Gather: table[indices[outer axes], inner axes]. The index comes from a child evaluator; the
// table offset is index * row_stride plus an affine offset over the trailing (table) axes.
//
// A unit-stride row reads one table row: the index is the same along it. (Along every output axis
// the index or the table has stride 0: the indices own the leading axes, the table the trailing
// ones. So a row with stride 1 in the table has stride 0 in the index, and a row along an index
// axis has stride 0 in the table and never runs as unit, unless it is one element long.) On the
// CPU, seek therefore looks the row's index up once, and the unit loop is a contiguous copy of
// that table row, not a gather per element (an embedding lookup ran 9x a hand-written loop). The
// CPU kernels seek only rows that have elements, so the index at 0 exists; CUDA's row kernels seek
// empty rows too (a root reduction of no indices), where there may be no index to read, and
// device code reads the index per element as before.
template <class T, std::size_t R, class IndexEval>
struct take_eval {
  using value_type = std::remove_const_t<T>;
  const value_type* base;
  index_t row_stride;   // table's stride along its axis 0
  index_t stride[R];    // table's other axes, placed on the output's trailing axes
  IndexEval index;
  index_t table_elements;  // the span of the table in elements, for overlap checks
  index_t row = 0;
  index_t table_low = 0;   // offset of the table's lowest element from base (<= 0: negative strides)
  index_t row_start = 0;   // offset of the row's first element: its index * row_stride + row

  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t* outer) {
    row = row_offset<R>(stride, outer);
    index.seek(outer);
#if !defined(__CUDA_ARCH__)
    row_start = static_cast<index_t>(index.template at<true>(0)) * row_stride + row;
#endif
  }
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot* slots) { index.bind(slots); }
  template <bool Unit, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE value_type at(index_t i, const Env&...) const {
    if constexpr (Unit) {
#if defined(__CUDA_ARCH__)
      return base[static_cast<index_t>(index.template at<true>(i)) * row_stride + row + i];
#else
      return base[row_start + i];
#endif
    } else {
      const index_t k = static_cast<index_t>(index.template at<false>(i));
      return base[k * row_stride + row + i * stride[R - 1]];
    }
  }
  template <int V>
  FUSE_HOST_DEVICE FUSE_INLINE lanes<value_type, V> at_vec(index_t i) const {
    lanes<value_type, V> r;
    for (int l = 0; l < V; ++l) r.v[l] = at<true>(i + l);
    return r;
  }
  template <class F>
  void for_each_tracker(F&& f) {
    f(tracker{stride, base + table_low, sizeof(value_type), table_elements});  // read through an index: not affine
    // The indices have stride 0 along a table row: the CPU executor may run such a row as unit
    // stride (backend/cpu/splat.hpp), and the unit loop never reads the index, so there is nothing
    // to copy along the row.
    index.for_each_tracker([&](tracker t) {
      t.splat = &tracker::no_copies;
      f(t);
    });
  }
};

}  // namespace fuse::detail
