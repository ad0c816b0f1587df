// fuse/backend/cuda/row_registers.hpp - the row of a short-row kernel held in registers.
//
// softmax reads x three times per row (max, sum of exp, epilogue) and layer norm three times
// (mean, variance, epilogue). For rows up to 32 * row_lane_elements elements, one warp holds the
// row in registers; for rows up to 256 * row_lane_elements, one block. Lane l of the L threads
// loads elements l, l + L, ... of the row's *source* - the first memory load in the first phase's
// operand - once, and every phase and the epilogue read those registers wherever the same load
// (same pointer and strides) occurs. Other loads (layer norm's gamma and beta) still read memory.
//
// The phase whose operand the epilogue repeats (softmax's exp(x - max), core/reused_phase.hpp's
// choice) can keep its values in a second register array: the epilogue then reads them through a
// hole (shared_subtree.hpp) instead of computing the exponential again.
//
// The register value travels as the `env` argument of at(): an occurrence of the source becomes
// register_or_load, which returns it when the occurrence is the source and loads otherwise (decided
// once, on the host). The per-lane steps are host and device functions, so that the CPU tests run
// them lane by lane (tests/backend/test_cuda_logic.cpp); row_kernel.cuh adds the warp reduction.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "fuse/backend/cuda/alignment.hpp"
#include "fuse/core/evaluator.hpp"
#include "fuse/core/shared_subtree.hpp"
#include "fuse/core/evaluator_match.hpp"
#include "fuse/core/reused_phase.hpp"
#include "fuse/core/row_iteration.hpp"
#include "fuse/ops/reduce.hpp"

namespace fuse::detail {

// Elements per lane: each thread keeps 32 values of its row in registers. A warp holds rows up to
// 32 * 32 = 1024 elements; a block of 256 threads (one row per block, block-wide reductions) rows
// up to 8192.
inline constexpr int row_lane_elements = 32;
inline constexpr int row_lanes = 32;
inline constexpr int register_block_lanes = 256;

// The first load (pre-order) in E, through elementwise nodes; void if none.
template <class E>
struct first_load {
  using type = void;
};
template <class T, std::size_t R>
struct first_load<load_eval<T, R>> {
  using type = load_eval<T, R>;
};
template <class R, class C, class F, class... A>
struct first_load<map_eval<R, C, F, A...>> {
  using type = typename first_non_void<typename first_load<A>::type...>::type;
};

// The source of a row iteration's registers: the first load of phase 0's operand.
template <class It>
using row_source_t = typename first_load<std::remove_cvref_t<decltype(get<0>(std::declval<It&>().phases).child)>>::type;

// FUSE_ROW_SLOT_TESTS=1: the register kernel as timed on the H200 up to 2026-11-30 (a test per
// slot; see for_each_slot), to compare the two in one GPU run.
#ifndef FUSE_ROW_SLOT_TESTS
#define FUSE_ROW_SLOT_TESTS 0
#endif

#ifdef __CUDA_ARCH__
// *p, or v where `keep`: one predicated load instruction. Written as `keep ? v : *p`, the load
// was a branch of its own per slot, and the compiler gathered the 32 slots' loads into one
// region whose values stayed live (spills in the softmax kernel: 16-20 -> 156 bytes).
// Neither volatile nor with a "memory" clobber: the compiler takes it for a computation that reads
// no memory, free to move across any store or barrier (only the stores that use its result come
// after it). That is safe here: a kernel reads no element that it or another thread of it writes
// before the read, since a destination read in place is read at the element it writes, only by
// the thread that writes it, and other overlaps go through a temporary. A clobber would keep the
// epilogue's loads of gamma / beta behind the previous element's store, a latency per element.
template <class T>
__device__ FUSE_INLINE T load_unless(bool keep, T v, const T* p) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  if constexpr (sizeof(T) == 2) {
    unsigned short r;
    std::memcpy(&r, &v, 2);
    asm("{\n\t.reg .pred q;\n\tsetp.eq.u32 q, %2, 0;\n\t@q ld.global.b16 %0, [%1];\n\t}" : "+h"(r) : "l"(p), "r"(unsigned(keep)));
    std::memcpy(&v, &r, 2);
  } else if constexpr (sizeof(T) == 4) {
    unsigned r;
    std::memcpy(&r, &v, 4);
    asm("{\n\t.reg .pred q;\n\tsetp.eq.u32 q, %2, 0;\n\t@q ld.global.b32 %0, [%1];\n\t}" : "+r"(r) : "l"(p), "r"(unsigned(keep)));
    std::memcpy(&v, &r, 4);
  } else {
    unsigned long long r;
    std::memcpy(&r, &v, 8);
    asm("{\n\t.reg .pred q;\n\tsetp.eq.u32 q, %2, 0;\n\t@q ld.global.b64 %0, [%1];\n\t}" : "+l"(r) : "l"(p), "r"(unsigned(keep)));
    std::memcpy(&v, &r, 8);
  }
  return v;
}
#endif

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
#if defined(__CUDA_ARCH__) && !FUSE_ROW_SLOT_TESTS
    if constexpr (Unit && (sizeof(value_type) == 2 || sizeof(value_type) == 4 || sizeof(value_type) == 8))
      return load_unless<value_type>(in_register, reg, load.row + i);
#endif
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
    return detail::apply(
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

// The phases (a tuple of phase_eval) with each operand e replaced by f(e).
template <class... P, class F>
auto with_phase_operands(const tuple<P...>& phases, F&& f) {
  return detail::apply(
      [&](const auto&... p) {
        auto one = [&]<class Q>(const Q& q) {
          auto child = f(q.child);
          using Out = phase_eval<typename Q::op, typename Q::acc_type, typename Q::result_type, Q::slot, decltype(child)>;
          return Out{child, q.count};
        };
        return make_tuple_of(one(p)...);
      },
      phases);
}

// The row iteration with its epilogue and phases reading the registers, and the source itself.
template <class T, std::size_t R, class Ev, class Ph>
auto registers_iteration(const row_iteration<T, R, Ev, Ph>& it) {
  using S = row_source_t<row_iteration<T, R, Ev, Ph>>;
  const S source = first_occurrence<S>(get<0>(it.phases).child);
  auto mark = [&](const auto& e) { return mark_registers<S>(e, source); };
  auto marked = with_evaluators(it, mark(it.eval), with_phase_operands(it.phases, mark));
  struct result {
    decltype(marked) it;
    S source;
  };
  return result{marked, source};
}

// FUSE_ROW_EXACT_REGISTERS=0: every register kernel tests each occurrence of the source's type
// at run time, as before 2026-12-07 (to compare the two in one GPU run).
#ifndef FUSE_ROW_EXACT_REGISTERS
#define FUSE_ROW_EXACT_REGISTERS 1
#endif

// An occurrence of the source's type that the host found to be the source: the register value.
// register_or_load's predicated load needs the element's address whether it loads or not: ptxas
// computed a lane's 32 addresses per occurrence and kept them in registers (fp32 softmax: 128
// registers, 2 blocks per multiprocessor; docs/design.md §5). Where the host finds that every
// occurrence in the phases is the source (softmax, layer norm, rms norm: their reductions read x
// alone), the kernel runs with these in place of register_or_load in the phases, and in the
// epilogue too where every occurrence there is the source as well (softmax, not layer norm,
// whose gamma and beta are loads of x's type).
template <class L>
struct register_value {
  using value_type = typename L::value_type;
  FUSE_HOST_DEVICE FUSE_INLINE void seek(const index_t*) {}
  FUSE_HOST_DEVICE FUSE_INLINE void bind(const row_slot*) {}
  template <bool Unit, class V, class... Env>
  FUSE_HOST_DEVICE FUSE_INLINE value_type at(index_t, const V& reg, const Env&...) const {
    return static_cast<value_type>(reg);
  }
  template <class F>
  void for_each_tracker(F&&) {}
};

// Is every register_or_load in e the source (in_register)?
template <class E>
bool all_in_registers(const E& e) {
  if constexpr (requires { e.load; e.in_register; }) {
    return e.in_register;
  } else if constexpr (requires { e.args; }) {
    bool all = true;
    for_each(e.args, [&](const auto& a) { all = all && all_in_registers(a); });
    return all;
  } else {
    return true;
  }
}

// Where a marked iteration's occurrences of the source's type are all the source: nowhere, in
// the phases, or everywhere (the phases and the epilogue).
enum class register_reads { tested, phases, all };
template <class T, std::size_t R, class Ev, class Ph>
register_reads register_reads_of(const row_iteration<T, R, Ev, Ph>& it) {
  bool phases = true;
  for_each(it.phases, [&](const auto& p) { phases = phases && all_in_registers(p.child); });
  if (!phases) return register_reads::tested;
  return all_in_registers(it.eval) ? register_reads::all : register_reads::phases;
}

// The marked iteration (registers_iteration) with every register_or_load<S> of the phases a
// register_value<S>, and of the epilogue too where Epilogue.
template <class S, bool Epilogue, class T, std::size_t R, class Ev, class Ph>
auto only_registers(const row_iteration<T, R, Ev, Ph>& it) {
  auto replace = [](const auto& e) { return substitute<register_or_load<S>>(e, register_value<S>{}); };
  if constexpr (Epilogue) return with_evaluators(it, replace(it.eval), with_phase_operands(it.phases, replace));
  else return with_evaluators(it, it.eval, with_phase_operands(it.phases, replace));
}

// f(run, how) with `run` the iteration the register kernel runs: `it` (marked, after any hole)
// with the source's occurrences read without loads where `reads` (register_reads_of, decided
// before the hole) allows, in the phases and, where every occurrence left there is the source,
// the epilogue; `how` says which. The CUDA launcher and the CPU tests' simulation both choose here.
template <class S, class It, class F>
void with_register_reads(const It& it, register_reads reads, F&& f) {
  if constexpr (FUSE_ROW_EXACT_REGISTERS) {
    constexpr bool epilogue_reads = occurrences<register_or_load<S>, decltype(it.eval)>::value > 0;
    if (reads == register_reads::all || (reads == register_reads::phases && !epilogue_reads))
      return f(only_registers<S, true>(it), register_reads::all);
    if constexpr (epilogue_reads) {
      if (reads == register_reads::phases) return f(only_registers<S, false>(it), register_reads::phases);
    }
  }
  f(it, register_reads::tested);
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
  return with_evaluators(it, substitute<C>(it.eval, hole_eval<typename C::value_type, 1>{}), it.phases);
}

// The threads that hold one row in registers (row_lanes: a warp; register_block_lanes: a block),
// or 0 when the register kernel does not apply: it needs one unit-stride row axis of at most
// register_block_lanes * row_lane_elements elements.
template <class It>
int register_lanes(const It& it) {
  constexpr std::size_t R = It::rank;
  if constexpr (std::is_void_v<row_source_t<It>>) {
    return 0;
  } else {
    if (!it.unit || it.inner_first + 1 != R) return 0;
    const index_t count = it.row_elements();
    if (count <= index_t(row_lanes) * row_lane_elements) return row_lanes;
    if (count <= index_t(register_block_lanes) * row_lane_elements) return register_block_lanes;
    return 0;
  }
}

// Where a lane's values are. The row is read and written in chunks of P consecutive elements:
// chunk c of the row belongs to lane c % Lanes, so consecutive lanes touch consecutive chunks
// (coalesced). Slot j of a lane holds element lane_element(lane, j): chunk j / P, position j % P.
// P = 1 (FUSE_ROW_CHUNK_BYTES=0, the default): one element per access, as measured on the H200
// (docs/performance.md). FUSE_ROW_CHUNK_BYTES=16: P elements of the wider of the source and
// output types fill 16 bytes, and a chunk is one 16-byte load or store where the rows are aligned
// for it (row_vectors); bf16 rows then take one access per 8 elements instead of 8. Not yet timed
// on a GPU; ptxas reports more spills with it (fp32 softmax 32-36 bytes instead of 16-20, bf16
// layer norm up to 236 instead of 12-28), so it stays opt-in until a GPU run decides.
#ifndef FUSE_ROW_CHUNK_BYTES
#define FUSE_ROW_CHUNK_BYTES 0
#endif
inline constexpr int row_chunk_bytes = FUSE_ROW_CHUNK_BYTES;

template <class S, class T, int Bytes = row_chunk_bytes>
FUSE_HOST_DEVICE constexpr int row_chunk_elements() {
  constexpr int wider = int(sizeof(S) > sizeof(T) ? sizeof(S) : sizeof(T));
  constexpr int p = Bytes >= 2 * wider && Bytes % wider == 0 ? Bytes / wider : 1;
  static_assert(row_lane_elements % p == 0, "fuse: a lane holds whole chunks");
  return p;
}

template <int Lanes, int P>
FUSE_HOST_DEVICE FUSE_INLINE index_t lane_element(int lane, int j) {
  return (index_t(j / P) * Lanes + lane) * P + j % P;
}

// How many of lane `lane`'s N slots hold elements of a row of `count`: its full chunks, then at
// most one partial one (the row's last), so the valid slots are a prefix. The loops below test the
// slot number against it (one 32-bit compare) instead of the 64-bit element index against count.
template <int N, int Lanes, int P>
FUSE_HOST_DEVICE FUSE_INLINE int lane_count(int lane, index_t count) {
  const index_t first = index_t(lane) * P, span = index_t(Lanes) * P;
  if (count <= first) return 0;
  const index_t full = count - first >= P ? (count - first - P) / span + 1 : 0;
  if (full >= N / P) return N;
  const index_t rest = count - (first + full * span);  // < P: the partial chunk, if any
  return static_cast<int>(full * P + (rest > 0 ? rest : 0));
}

// Every slot of lane `lane` (m of them valid): f(j, i, valid) with i slot j's element, or for a
// slot past the row's end the row's first element (count > 0). Every slot is evaluated and what
// an extra one gives is dropped: a test per slot made each slot's work a branch region of its
// own, and the H200 ran a lane's 32 exponentials one after another, each waiting on its own
// chain (ncu: a fixed-latency dependency the top stall). Evaluated at an element of the row, an
// extra slot reads only what the row's own elements read. A full lane (every lane of a row of
// Lanes * N elements, most lanes of any long row) runs a copy of the loop with constant indices:
// immediate address offsets and no selects.
template <int N, int Lanes, int P, class F>
FUSE_HOST_DEVICE FUSE_INLINE void for_each_slot(int lane, int m, F&& f) {
  if constexpr (FUSE_ROW_SLOT_TESTS) {
    FUSE_UNROLL
    for (int j = 0; j < N; ++j)
      if (j < m) f(j, lane_element<Lanes, P>(lane, j), std::true_type{});
  } else if (m == N) {
    FUSE_UNROLL
    for (int j = 0; j < N; ++j) f(j, lane_element<Lanes, P>(lane, j), std::true_type{});
  } else {
    FUSE_UNROLL
    for (int j = 0; j < N; ++j) f(j, j < m ? lane_element<Lanes, P>(lane, j) : index_t(0), j < m);
  }
}

// Lane `lane`'s elements of the current row (the source seeked to it) into reg; an extra slot
// holds the row's first element (for_each_slot).
template <int N, int Lanes, int P, class S>
FUSE_HOST_DEVICE FUSE_INLINE void load_lane(const S& source, int lane, index_t count, bool vector,
                                            typename S::value_type (&reg)[N]) {
  using V = typename S::value_type;
  if (count == 0) {  // nothing to read; a reduction root's epilogue still passes reg[0] along
    FUSE_UNROLL
    for (int j = 0; j < N; ++j) reg[j] = V{};
    return;
  }
  const int m = lane_count<N, Lanes, P>(lane, count);
  const V first = FUSE_ROW_SLOT_TESTS ? V{} : source.template at<true>(0);
  FUSE_UNROLL
  for (int c = 0; c < N / P; ++c) {
    const index_t e = lane_element<Lanes, P>(lane, c * P);
    if constexpr (P > 1) {
      if (vector && (c + 1) * P <= m) {
        const auto v = source.template at_vec<P>(e);
        FUSE_UNROLL
        for (int p = 0; p < P; ++p) reg[c * P + p] = v.v[p];
        continue;
      }
    }
    FUSE_UNROLL  // predicated loads at immediate offsets
    for (int p = 0; p < P; ++p) reg[c * P + p] = c * P + p < m ? source.template at<true>(e + p) : first;
  }
}

// Lane `lane`'s elements of the unit-stride row `out`: value(j, i) for slot j, element i.
template <int N, int Lanes, int P, class T, class F>
FUSE_HOST_DEVICE FUSE_INLINE void write_lane(T* out, int lane, index_t count, bool vector, F&& value) {
  if (count == 0) return;
  const int m = lane_count<N, Lanes, P>(lane, count);
  if constexpr (P > 1) {
    if (vector) {  // whole chunks as 16-byte stores, the rest element by element
      FUSE_UNROLL
      for (int c = 0; c < N / P; ++c) {
        const index_t e = lane_element<Lanes, P>(lane, c * P);
        if ((c + 1) * P <= m) {
          lanes<T, P> o;
          FUSE_UNROLL
          for (int p = 0; p < P; ++p) o.v[p] = static_cast<T>(value(c * P + p, e + p));
          *reinterpret_cast<lanes<T, P>*>(out + e) = o;
        } else {
          FUSE_UNROLL
          for (int p = 0; p < P; ++p)
            if (c * P + p < m) out[e + p] = static_cast<T>(value(c * P + p, e + p));
        }
      }
      return;
    }
  }
  for_each_slot<N, Lanes, P>(lane, m, [&](int j, index_t i, auto valid) {
    const T v = static_cast<T>(value(j, i));
    if (valid) out[lane_element<Lanes, P>(lane, j)] = v;  // a predicated store
  });
}

// May the register kernel read the source's rows (load) and write the output's rows (store) P
// elements at a time?
struct row_vectors {
  bool load = false;
  bool store = false;
};
template <int P, class T, std::size_t R, class S>
row_vectors row_vectors_for(const T* out, const index_t* out_stride, const S& source) {
  if constexpr (P == 1) {
    return {};
  } else {
    return {rows_aligned<R>(source.base, sizeof(typename S::value_type), P, source.stride),
            rows_aligned<R>(out, sizeof(T), P, out_stride)};
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
template <int N, int Lanes, int P, class Ph, class V>
FUSE_HOST_DEVICE FUSE_INLINE auto reduce_lane(const Ph& p, int lane, index_t count, const V (&reg)[N]) {
  using Op = typename Ph::op;
  using Acc = typename Ph::acc_type;
  using Total = typename Op::template total_t<Acc>;
  constexpr int chains = N % 4 == 0 ? 4 : 1;
  Acc acc[chains];
  FUSE_UNROLL
  for (int c = 0; c < chains; ++c) acc[c] = Op::template identity<Acc>();
  if (count > 0) {
    for_each_slot<N, Lanes, P>(lane, lane_count<N, Lanes, P>(lane, count), [&](int j, index_t i, auto valid) {
      const Acc next = lane_combine<Op>(acc[j % chains], static_cast<Acc>(p.child.template at<true>(i, reg[j])));
      acc[j % chains] = valid ? next : acc[j % chains];
    });
  }
  FUSE_UNROLL
  for (int c = 1; c < chains; ++c) acc[0] = lane_combine<Op>(acc[0], acc[c]);
  return Op::combine(Op::template identity<Total>(), static_cast<Total>(acc[0]));
}

// As reduce_lane, keeping each operand value in kept[j] for the epilogue.
template <int N, int Lanes, int P, class Ph, class V, class K>
FUSE_HOST_DEVICE FUSE_INLINE auto reduce_lane_keeping(const Ph& p, int lane, index_t count, const V (&reg)[N], K (&kept)[N]) {
  using Op = typename Ph::op;
  using Acc = typename Ph::acc_type;
  using Total = typename Op::template total_t<Acc>;
  Acc acc = Op::template identity<Acc>();
  if (count > 0) {
    for_each_slot<N, Lanes, P>(lane, lane_count<N, Lanes, P>(lane, count), [&](int j, index_t i, auto valid) {
      kept[j] = p.child.template at<true>(i, reg[j]);
      const Acc next = lane_combine<Op>(acc, static_cast<Acc>(kept[j]));
      acc = valid ? next : acc;
    });
  }
  return Op::combine(Op::template identity<Total>(), static_cast<Total>(acc));
}

}  // namespace fuse::detail
