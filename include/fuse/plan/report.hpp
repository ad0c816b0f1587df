// fuse/plan/report.hpp - fuse::plan: the kernels an executor will run for an expression, and the
// traffic and arithmetic the cost model predicts for its run-time shapes. Nothing is executed.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <iomanip>
#include <map>
#include <numeric>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "fuse/backend/eager.hpp"
#include "fuse/core/assign.hpp"
#include "fuse/core/generators.hpp"
#include "fuse/core/node_identity.hpp"
#include "fuse/core/row_iteration.hpp"
#include "fuse/plan/fusion.hpp"

namespace fuse {

// One kernel of a plan.
struct kernel_report {
  std::string what;  // e.g. "elementwise gelu(add(x0, x1))"
  index_t bytes_read = 0;
  index_t bytes_written = 0;
  index_t flops = 0;
};

struct plan_report {
  std::string executor;  // "fused" or "eager"
  std::size_t kernels = 0;
  index_t bytes_read = 0;
  index_t bytes_written = 0;
  index_t flops = 0;
  std::vector<kernel_report> lines;

  void add(kernel_report k) {
    ++kernels;
    bytes_read += k.bytes_read;
    bytes_written += k.bytes_written;
    flops += k.flops;
    lines.push_back(std::move(k));
  }
};

namespace detail {

inline std::string format_bytes(index_t b) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1);
  if (b >= (index_t(1) << 30)) s << double(b) / double(index_t(1) << 30) << " GiB";
  else if (b >= (index_t(1) << 20)) s << double(b) / double(index_t(1) << 20) << " MiB";
  else if (b >= 1024) s << double(b) / 1024.0 << " KiB";
  else s << b << " B";
  return s.str();
}

// Names leaves x0, x1, ... by their memory, and sums the distinct bytes they occupy.
struct leaf_table {
  // One way of reading a buffer: the bytes [lo, hi) that hold it, and its layout.
  struct footprint {
    std::uintptr_t lo, hi;
    index_t bytes;
    std::uintptr_t base;
    index_t element_bytes;
    std::vector<std::array<index_t, 2>> axes;
    bool overlapping;  // two elements on one address (view(p, {3, 3}, {2, 2})): bytes over-counts
    bool dense() const { return !overlapping && bytes == index_t(hi - lo); }
    bool operator==(const footprint&) const = default;
  };
  struct entry {
    std::size_t number;
    index_t bytes = 0;  // the largest footprint (what an entry read without a bound counts)
    std::map<const void*, index_t> gathers;  // take: rows once per index, by the indices' memory
    std::vector<footprint> ways;
  };
  std::map<const void*, entry> seen;

  std::string name(const leaf_info& l) {
    const auto at = reinterpret_cast<std::uintptr_t>(l.data);
    auto [it, fresh] = seen.try_emplace(l.data, entry{seen.size(), 0, {}, {}});
    auto& e = it->second;
    e.bytes = std::max(e.bytes, l.bytes);
    if (l.lo == l.hi) {
      auto& g = e.gathers[l.picked_by];
      g = std::max(g, l.bytes);
    } else {
      auto axes = l.axes;
      const bool overlapping = offsets_collide(axes.data(), axes.size());
      footprint f{at + l.lo, at + l.hi, l.bytes, at, l.element_bytes, l.axes, overlapping};
      if (std::find(e.ways.begin(), e.ways.end(), f) == e.ways.end()) e.ways.push_back(std::move(f));
    }
    std::string n(1, 'x');  // not "x" + to_string(...): GCC 12 -O3 warns (false -Wrestrict, PR 105329)
    n += std::to_string(e.number);
    return n;
  }

  // Footprints whose byte ranges overlap (x and transpose(x), two slices of x) count their union.
  index_t bytes() const {
    std::vector<const footprint*> ranged;
    index_t b = 0;
    for (auto& [p, e] : seen) {
      // take's rows, once per index of each distinct indices array (no bound is known), plus
      // the views of the same table, whose union is counted below with the other views.
      for (auto& [indices, bytes] : e.gathers) b += bytes;
      for (auto& f : e.ways) ranged.push_back(&f);
    }
    std::sort(ranged.begin(), ranged.end(), [](const footprint* a, const footprint* c) { return a->lo < c->lo; });
    for (std::size_t i = 0; i < ranged.size();) {
      const std::size_t first = i;
      std::uintptr_t hi = ranged[i]->hi;
      for (++i; i < ranged.size() && ranged[i]->lo < hi; ++i) hi = std::max(hi, ranged[i]->hi);
      b += union_bytes({ranged.begin() + std::ptrdiff_t(first), ranged.begin() + std::ptrdiff_t(i)}, ranged[first]->lo, hi);
    }
    return b;
  }

 private:
  // Above this many elements, overlapping sparse footprints are bounded, not counted.
  static constexpr index_t counting_limit = index_t(1) << 24;

  // The distinct bytes of footprints whose ranges chain into [lo, hi).
  static index_t union_bytes(const std::vector<const footprint*>& g, std::uintptr_t lo, std::uintptr_t hi) {
    const index_t span = index_t(hi - lo);
    index_t sum = 0, elements = 0;
    bool all_dense = true;
    for (auto* f : g) {
      sum += f->bytes;
      elements += f->bytes / f->element_bytes;
      all_dense = all_dense && f->dense();
    }
    // Dense ranges that chain cover the span; one sparse footprint is its own bytes.
    if (all_dense) return span;
    if (g.size() == 1 && !g[0]->overlapping && sum <= span) return sum;
    if (elements > counting_limit) return std::min(sum, span);
    // On a grid of `unit` bytes (the gcd of every offset, stride and element size) a bitmap of
    // the span marks each element: linear in the elements, no sort (two interleaved slices of a
    // [4096, 4096] matrix at -O1: 3 s sorted, 0.18 s marked). Where the span is sparse (two
    // columns of a wide matrix), the elements' intervals are sorted and merged instead.
    index_t unit = 0;
    for (auto* f : g) {
      unit = std::gcd(unit, std::gcd(index_t(f->base - lo), f->element_bytes));
      for (auto& a : f->axes) unit = std::gcd(unit, a[1]);
    }
    if (const index_t cells = span / unit; cells <= cell_bitmap::cells_per_element_limit * elements) {
      cell_bitmap marked(cells);
      for (auto* f : g) {
        const index_t base = index_t(f->base - lo);
        for_each_offset(f->axes.data(), f->axes.size(), [&](index_t off) {
          for (index_t c = (base + off) / unit, z = c + f->element_bytes / unit; c < z; ++c) marked.mark(c);
        });
      }
      return marked.count() * unit;
    }
    std::vector<std::array<std::ptrdiff_t, 2>> pieces;
    pieces.reserve(std::size_t(elements));
    for (auto* f : g) {
      const std::ptrdiff_t base = std::ptrdiff_t(f->base - lo);
      for_each_offset(f->axes.data(), f->axes.size(),
                      [&](index_t off) { pieces.push_back({base + off, base + off + f->element_bytes}); });
    }
    std::sort(pieces.begin(), pieces.end());
    index_t covered = 0;
    std::ptrdiff_t end = pieces.front()[0];
    for (auto& [a, z] : pieces) {
      if (z > end) covered += index_t(z - std::max(a, end)), end = z;
    }
    return covered;
  }
};

template <class E>
std::string describe(const E& e, leaf_table& leaves) {
  if constexpr (requires { e.args; }) {
    std::string s = std::string(decltype(e.f)::name) + "(";
    bool first = true;
    for_each(e.args, [&](const auto& a) {
      s += (first ? "" : ", ") + describe(a, leaves);
      first = false;
    });
    return s + ")";
  } else if constexpr (requires { e.value; E::weak; }) {
    std::ostringstream o;
    o << +e.value;
    return o.str();
  } else if constexpr (E::kind == node_kind::generator) {
    std::string s = std::string(E::name) + "(";
    e.visit_leaves([&](const leaf_info& l) { s += (s.back() == '(' ? "" : ", ") + leaves.name(l); });
    return s + ")";
  } else {
    std::string s;
    e.visit_leaves([&](const leaf_info& l) { s = leaves.name(l); });
    return s;
  }
}


// Results of kernels computed before a group, named t<n>, by the node they stand for.
using computed_map = std::map<const void*, std::string>;

// A fused plan being built: its kernels, and its leaves' names, shared by all its kernels (a
// kernel's bytes are counted in a table of its own).
struct plan_builder {
  plan_report& report;
  leaf_table names{};
  // Reductions computed as groups of their own so far, and their results' names: a later equal
  // one reads the result (as core/computed_reductions.hpp).
  struct computed {
    node_ref ref;
    std::string name;
  };
  std::vector<computed> reductions{};
  bool column_pairs = false;  // the executor runs a column pair as one kernel (fuse::cpu)
  bool row_copies = false;    // its row kernel copies strided leaves contiguous first (fuse::cpu)

  template <class A>
  const std::string* computed_before(const A& a) const {
    return find(reductions, a);
  }
  // The name of a's result in `list`, if a reduction equal to a is there.
  template <class A>
  static const std::string* find(const std::vector<computed>& list, const A& a) {
    for (const computed& c : list)
      if (same_as(c.ref, a)) return &c.name;
    return nullptr;
  }
};

// The group rooted at one kernel, walked as the executor splits it (core/assign.hpp).
struct group_walk {
  plan_builder& plan;
  const computed_map& before;  // the group's reductions that do not join it, computed first
  leaf_table leaves{};         // this kernel's distinct inputs
  index_t temp_bytes = 0;      // results of earlier kernels it reads
  index_t flops = 0;
  std::vector<std::string> phases{};
  std::vector<node_ref> nodes{};  // each phase's node (what the dedupe compares, same_node)
  bool split = false;  // run-time shapes broke the group: each of its reductions is a kernel
  index_t copy_bytes = 0;  // the row kernel's contiguous copies of strided leaves (written, read back)
  // In a broken group, the reductions computed so far (each once, as split_group<R, M, true>).
  std::vector<plan_builder::computed>* split_done = nullptr;
};

template <class E>
std::string emit_group(const E& e, plan_builder& p);

template <std::size_t R, std::uint32_t M, class E>
std::string walk_group(const E& e, group_walk& g);

template <std::size_t R, std::uint32_t M, class E>
std::string emit_split_reduction(const E& e, plan_builder& p, const computed_map& before,
                                 std::vector<plan_builder::computed>& done);

// Reduction a (not computed before) as a group of its own, recorded among the computed ones;
// returns its result's name. kernels_v counts a reduction of one form once, taking it for the
// same data: where an earlier one of the same type was of other data, its line says so.
template <class A>
std::string emit_own_group(const A& a, plan_builder& p) {
  const bool same_form = std::any_of(p.reductions.begin(), p.reductions.end(), [](const auto& c) { return c.ref.type == &type_key<A>; });
  p.reductions.push_back({ref_of(a), emit_group(a, p)});
  if (same_form) p.report.lines.back().what += " (of the same form as an earlier kernel, over other data)";
  return p.reductions.back().name;
}

// The reductions below e that do not join the group (R, M), each emitted as its own group, in the
// order split_group<R, M, false> computes them (pre-order, also inside joining reductions).
template <std::size_t R, std::uint32_t M, class E>
void emit_leaving(const E& e, plan_builder& p, computed_map& out) {
  auto operand = [&]<class A>(const A& a) {
    if constexpr (!stays_in_group<A, R, M>) {
      if (const std::string* name = p.computed_before(a)) return void(out.emplace(&a, *name));
      out.emplace(&a, emit_own_group(a, p));
    } else {
      emit_leaving<R, M>(a, p, out);
    }
  };
  if constexpr (is_reduce_v<E>) operand(e.child);
  else if constexpr (requires { e.args; }) for_each(e.args, operand);
}

// An operand of a node in the group (R, M): a reduction that does not join was computed before
// the group and is read back as a small leaf (as plan/fusion.hpp); in a broken group, a joining
// one is its own kernel too.
template <std::size_t R, std::uint32_t M, class A>
std::string walk_operand(const A& a, group_walk& g) {
  if constexpr (is_squeezed_v<A> || (!is_reduce_v<A> && !stays_in_group<A, R, M>)) {  // (a value per row)
    g.temp_bytes += shape_size(a.shape()) * index_t(sizeof(typename A::value_type));
    return g.before.at(&a);
  } else if constexpr (!is_reduce_v<A>) {
    return walk_group<R, M>(a, g);
  } else {
    if (joins_group<A, R, M> && !g.split) return walk_group<R, M>(a, g);
    g.temp_bytes += shape_size(a.shape()) * index_t(sizeof(typename A::value_type));
    if constexpr (joins_group<A, R, M>) {
      if (const std::string* done = plan_builder::find(*g.split_done, a)) return *done;
      std::string name = emit_split_reduction<R, M>(a, g.plan, g.before, *g.split_done);
      g.split_done->push_back({ref_of(a), name});
      return name;
    } else {
      return g.before.at(&a);
    }
  }
}

template <std::size_t R, std::uint32_t M, class E>
std::string walk_group(const E& e, group_walk& g) {
  if constexpr (is_reduce_v<E>) {
    const std::size_t before = g.phases.size();
    const index_t flops_before = g.flops;
    std::string self = std::string(E::op::name) + "(" + walk_operand<R, M>(e.child, g) + ")";
    // A repeated reduction (softmax's max, written twice) is computed once by the kernel, with
    // its operand. Compared by identity (same_node), not by the printed text.
    if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const node_ref& r) { return same_as(r, e); })) {
      g.phases.push_back(self);
      g.nodes.push_back(ref_of(e));
      g.flops += index_t(E::op::flops) * shape_size(e.child.shape());
    } else {
      g.phases.resize(before);
      g.nodes.resize(before);
      g.flops = flops_before;
    }
    return self;
  } else if constexpr (is_rank_lift_v<E>) {
    return walk_operand<R, M>(get<0>(e.args), g);  // index arithmetic, shown as its operand
  } else if constexpr (requires { e.args; }) {
    std::string s = std::string(decltype(e.f)::name) + "(";
    bool first = true;
    for_each(e.args, [&](const auto& a) {
      s += (first ? "" : ", ") + walk_operand<R, M>(a, g);
      first = false;
    });
    g.flops += index_t(decltype(e.f)::flops) * shape_size(e.shape());
    return s + ")";
  } else {
    describe(e, g.leaves);  // its bytes, in this kernel's table
    return describe(e, g.plan.names);
  }
}

// Adds the kernel that walk g describes, rooted at e; returns its result's name.
template <class E>
std::string emit_kernel(const E& e, group_walk& g, const std::string& what, const std::string& note) {
  kernel_report k;
  if (g.phases.empty()) {
    k.what = std::string(E::kind == node_kind::elementwise ? "elementwise " : "copy ") + what + note;
  } else {
    std::string ph;
    for (auto& n : g.phases) ph += (ph.empty() ? "" : ", ") + n.substr(0, n.find('('));
    k.what = std::string("row kernel, ") + std::to_string(g.phases.size()) + (g.phases.size() == 1 ? " phase [" : " phases [") +
             ph + "]: " + what + note;
  }
  k.bytes_read = g.leaves.bytes() + g.temp_bytes + g.copy_bytes;
  k.bytes_written = shape_size(e.shape()) * index_t(sizeof(typename E::value_type)) + g.copy_bytes;
  k.flops = g.flops;
  g.plan.report.add(std::move(k));
  return "t" + std::to_string(g.plan.report.kernels - 1);
}

// Reduction e of a broken group (R, M) (g.split), as the fallback runs it (core/assign.hpp,
// run_fallback_reduction_of): its operand's own reductions first, then, unless the operand is an
// array, an elementwise kernel that writes it to a temporary, then the reduction over the array.
template <std::size_t R, std::uint32_t M, class E>
std::string emit_fallback_reduction(const E& e, group_walk& g, const std::string& note) {
  using C = typename E::child_type;
  if constexpr (fallback_reads_array<C, R, M>) {
    const std::string what = walk_group<R, M>(e, g);
    return emit_kernel(e, g, what, note);
  } else {
    const std::string what = walk_operand<R, M>(e.child, g);
    const std::string operand = emit_kernel(e.child, g, what, "");
    group_walk r{.plan = g.plan, .before = g.before, .split = true, .split_done = g.split_done};
    r.temp_bytes = shape_size(e.child.shape()) * index_t(sizeof(typename C::value_type));
    r.flops = index_t(E::op::flops) * shape_size(e.child.shape());
    r.phases.push_back(std::string(E::op::name) + "(" + operand + ")");
    return emit_kernel(e, r, r.phases.back(), note);
  }
}

// A reduction of a broken group (R, M), computed alone over its operand's own reductions, which
// come first (as split_group<R, M, true> in core/assign.hpp).
template <std::size_t R, std::uint32_t M, class E>
std::string emit_split_reduction(const E& e, plan_builder& p, const computed_map& before,
                                 std::vector<plan_builder::computed>& done) {
  group_walk g{.plan = p, .before = before, .split = true, .split_done = &done};
  return emit_fallback_reduction<R, M>(e, g, "");
}

template <class E>
std::string emit_plain_group(const E& e, plan_builder& p);

// Adds the kernels of the group rooted at e (split-off reductions first, in the executor's order);
// returns its result's name.
template <class E>
std::string emit_group(const E& e, plan_builder& p) {
  if constexpr (is_squeezed_v<E>) return emit_group(e.inner, p);  // written without the axis
  else return emit_plain_group(e, p);
}

// Column pair e (core/column_pair.hpp) as one kernel, as core/assign.hpp runs it on the CPU: its
// outer reduction is t<k>, its inner one t<k>.mean or t<k>.max.
template <class E>
std::string emit_column_pair(const E& e, plan_builder& p) {
  using P = column_pair<E>;
  using Inner = typename P::inner_type;
  constexpr bool moments = P::kind == column_pair_kind::moments;
  const auto& a = P::operand(e);
  const computed_map none;
  group_walk g{.plan = p, .before = none};
  const std::string x = walk_group<E::child_rank, E::mask>(a, g);  // its leaves and flops
  constexpr int fn_flops = [] {
    if constexpr (moments) return fn::square::flops;
    else return P::exp_fn::flops;
  }();
  g.flops += index_t(Inner::op::flops + fn::sub::flops + fn_flops + E::op::flops) * shape_size(a.shape());
  if constexpr (P::finite_shift) g.flops += index_t(fn::finite_or_zero::flops) * shape_size(e.shape());  // once a column
  const std::string inner = Inner::op::name, outer = E::op::name;
  const std::string shift = P::finite_shift ? std::string(fn::finite_or_zero::name) + "(" + inner + "(" + x + "))" : inner + "(" + x + ")";
  kernel_report k;
  k.what = "column kernel, 2 phases [" + inner + ", " + outer + "]: " + outer + (moments ? "(square(sub(" : "(exp(sub(") + x + ", " +
           shift + ")))";
  k.bytes_read = g.leaves.bytes();
  k.bytes_written = 2 * shape_size(e.shape()) * index_t(sizeof(typename E::value_type));
  k.flops = g.flops;
  p.report.add(std::move(k));
  const std::string name = "t" + std::to_string(p.report.kernels - 1);
  p.reductions.push_back({ref_of(P::inner(e)), name + "." + inner});
  return name;
}

// The column pairs below e (in its group (R, M) or in the groups below it), emitted first (as
// compute_column_pairs in core/assign.hpp), so that a mean(x) met before its var(x) reads the
// pair's mean.
template <std::size_t R, std::uint32_t M, class E>
void emit_column_pairs_first(const E& e, plan_builder& p) {
  auto operand = [&]<class A>(const A& a) {
    using G = typename unsqueezed<A>::type;
    if constexpr (stays_in_group<A, R, M>) {
      emit_column_pairs_first<R, M>(a, p);
    } else if constexpr (column_pair_v<G>) {
      if (!p.computed_before(a)) emit_own_group(a, p);
    } else {
      emit_column_pairs_first<group_of<G>::rank, group_of<G>::mask>(unsqueezed_node(a), p);
    }
  };
  if constexpr (has_column_pair_v<E>) {
    if constexpr (is_reduce_v<E>) operand(e.child);
    else if constexpr (requires { e.args; }) for_each(e.args, operand);
  }
}

// Group e (rank R, row axes M) as the CPU executor runs it: each reduction that leaves the group
// replaced by a view of its result (replace_leaving, as split_group<R, M, false> in
// core/assign.hpp), here a contiguous view of no data: nothing reads it, and a result is never
// copied or overlapped.
template <std::size_t R, std::uint32_t M, class E>
auto planned_group(const E& e) {
  return replace_leaving<R, M, false>(e, []<class A>(const A& a) {
    using V = basic_view<typename A::value_type, dextents<A::rank>, false, memory_space::host>;
    return V(static_cast<typename A::value_type*>(nullptr), extents_from_shape<A::rank, dextents<A::rank>>(a.shape()));
  });
}

// The bytes that fuse::cpu's row kernel for group e (rank R, row axes M; over `shape`, one value
// per row where `one_per_row`) copies before it runs: strided leaves made contiguous
// (row_copy_bytes, backend/cpu/row_kernel.hpp); -1 where the kernel declines (its rows strided
// otherwise than a copy mends: the fallback runs the group). 0 where no row kernel runs: an
// elementwise group, or a root reduction that runs by columns or as short rows (their own
// checks, over a fresh contiguous destination).
template <std::size_t R, std::uint32_t M, class E>
index_t planned_row_copies(const E& e, const shape_t<R>& shape, bool one_per_row) {
  if constexpr (E::space == memory_space::device || reduction_count_v<E> == 0) {
    (void)e, (void)shape, (void)one_per_row;
    return 0;
  } else {
    const auto g = planned_group<R, M>(e);
    using G = std::remove_cvref_t<decltype(g)>;
    if constexpr (reduction_count_v<G> == 0) {
      return 0;
    } else {
      const shape_t<E::rank> out = e.shape();
      const destination<typename E::value_type, E::rank> dst{nullptr, out, contiguous_strides(out)};
      bool splats = false;
      if constexpr (column_reducible_v<G>) {
        auto ev = g.child.template evaluator<G::child_rank, 0>(g.child.shape());
        if (columns_accept(dst, g, ev, splats)) return 0;
      }
      if constexpr (short_row_reducible_v<G>) {
        auto ev = g.child.template evaluator<G::child_rank, 0>(g.child.shape());
        if (short_rows_accept(dst, g, ev, splats)) return 0;
      }
      return row_copy_bytes(make_row_iteration<R>(dst, g, shape, M, one_per_row));
    }
  }
}

template <class E>
std::string emit_plain_group(const E& e, plan_builder& p) {
  using G = group_of<E>;
  constexpr std::size_t R = G::rank;
  std::string note;
  if constexpr (column_pair_v<E>) {
    // (On CUDA the note stands also where the inner reduction was listed before: softmax reads
    // its max first.)
    const std::string its = std::string(" (its ") + column_pair<E>::inner_type::op::name + " a kernel of its own: ";
    if (!p.column_pairs) {
      note = its + "the CUDA executor runs no column pairs)";
    } else if (!p.computed_before(column_pair<E>::inner(e))) {
      if (column_pair_fits(e)) return emit_column_pair(e, p);
      note = its + (!column_pair_same_data(e) ? "the two reduce different data)"
                                              : "a last axis under 16 or over 65536 elements, or not read in memory order)");
    }
  } else if (p.column_pairs) {
    emit_column_pairs_first<R, G::mask>(e, p);
  }
  const shape_t<R> shape = group_shape(e, e.shape());
  computed_map before;
  emit_leaving<R, G::mask>(e, p, before);
  // Run-time shapes that break the group make each reduction below its root a kernel.
  shape_t<R> rows = shape;
  const bool fits = fits_group<R, G::mask>(e, shape);
  const bool broken = !fits && !widen_to_rows<R, G::mask>(e, rows);
  const index_t copies = !broken && p.row_copies ? planned_row_copies<R, G::mask>(e, rows, !fits) : 0;
  std::vector<plan_builder::computed> split_done;
  group_walk g{.plan = p, .before = before, .split = broken || copies < 0, .copy_bytes = std::max<index_t>(copies, 0),
               .split_done = &split_done};
  if (broken) note += " (split at run time: a reduction's extent differs from the group's)";
  else if (copies < 0) note += " (split at run time: the row kernel cannot read its strided rows)";
  else if (copies > 0) note += " (strided leaves copied contiguous first: " + format_bytes(copies) + ")";
  if constexpr (is_reduce_v<E>)
    if (g.split) return emit_fallback_reduction<R, G::mask>(e, g, note);
  const std::string what = walk_group<R, G::mask>(e, g);
  return emit_kernel(e, g, what, note);
}

// The flops of an eager unit's kernel (var, logsumexp) as the fused walk counts them: each
// elementwise node, each distinct reduction once with its operand; nothing below its operand x
// (of type X).
template <class X, class E>
index_t unit_flops(const E& e, std::vector<const void*>& reductions) {
  if constexpr (std::is_same_v<E, X>) {
    return 0;
  } else if constexpr (is_reduce_v<E>) {
    if (std::find(reductions.begin(), reductions.end(), &type_key<E>) != reductions.end()) return 0;
    reductions.push_back(&type_key<E>);
    return unit_flops<X>(e.child, reductions) + index_t(E::op::flops) * shape_size(e.child.shape());
  } else if constexpr (requires { e.args; }) {
    index_t f = index_t(decltype(e.f)::flops) * shape_size(e.shape());
    for_each(e.args, [&](const auto& a) { f += unit_flops<X>(a, reductions); });
    return f;
  } else {
    return 0;
  }
}

// Eager: one kernel per interior node, children first; each writes a temporary t<n>. var and
// logsumexp are one node each (spec section 5).
template <class E>
std::string eager_kernels(const E& e, plan_report& p, leaf_table& names) {
  constexpr bool interior = E::kind == node_kind::elementwise || E::kind == node_kind::reduction;
  if constexpr (is_squeezed_v<E>) {
    return eager_kernels(e.inner, p, names);  // written without the axis
  } else if constexpr (is_rank_lift_v<E>) {
    return eager_kernels(get<0>(e.args), p, names);  // index arithmetic
  } else if constexpr (interior) {
    leaf_table reads;  // this kernel's own distinct inputs
    index_t temp_bytes = 0;
    std::string args;
    auto operand = [&](const auto& lifted) {
      const auto& a = unlifted(lifted);  // a rank lift is index arithmetic
      using A = std::remove_cvref_t<decltype(a)>;
      std::string n;
      if constexpr (A::kind == node_kind::elementwise || A::kind == node_kind::reduction) {
        n = eager_kernels(a, p, names);
        temp_bytes += shape_size(a.shape()) * index_t(sizeof(typename A::value_type));
      } else {
        n = describe(a, names);
        describe(a, reads);
      }
      args += (args.empty() ? "" : ", ") + n;
    };
    std::string name;
    index_t flops = 0;
    if constexpr (is_eager_unit_v<E>) {
      operand(unit_operand(e));
      if constexpr (is_reduce_v<E>) name = E::op::name;
      else name = decltype(e.f)::name;
      std::vector<const void*> reductions;
      flops = unit_flops<unit_operand_t<E>>(e, reductions);
    } else if constexpr (is_reduce_v<E>) {
      operand(e.child);
      name = E::op::name;
      flops = index_t(E::op::flops) * shape_size(e.child.shape());
    } else {
      for_each(e.args, operand);
      name = decltype(e.f)::name;
      flops = index_t(decltype(e.f)::flops) * shape_size(e.shape());
    }
    kernel_report k;
    const std::string out = "t" + std::to_string(p.kernels);
    k.what = name + "(" + args + ") -> " + out;
    k.bytes_read = reads.bytes() + temp_bytes;
    k.bytes_written = shape_size(e.shape()) * index_t(sizeof(typename E::value_type));
    k.flops = flops;
    p.add(std::move(k));
    return out;
  } else {
    return describe(e, names);
  }
}

}  // namespace detail

// The plan `exec` would run for `e` (fuse::eager(exec): one kernel per interior node).
template <class Exec, class E>
  requires expression<E> || scalar<E>
plan_report plan(const Exec&, const E& expr) {
  if constexpr (expression<E>)
    static_assert(detail::spaces_compatible(Exec::space, E::space),
                  "fuse::plan: the executor and the expression's memory are in different spaces "
                  "(host leaves need fuse::cpu, device leaves fuse::cuda)");
  const auto e = detail::hold_operand(expr);
  plan_report p;
  if constexpr (detail::is_eager_v<Exec>) {
    p.executor = "eager";
    detail::leaf_table names;
    detail::eager_kernels(e, p, names);
    if (p.kernels == 0) {  // a lone leaf: one copy
      detail::plan_builder b{p};
      detail::emit_group(e, b);
    }
  } else {
    p.executor = "fused";
    detail::plan_builder b{p};
    b.column_pairs = std::is_same_v<Exec, cpu>;
    b.row_copies = std::is_same_v<Exec, cpu>;
    detail::emit_group(e, b);
  }
  return p;
}

// The plan of the executor for e's memory (fuse::cpu or fuse::cuda).
template <expression E>
plan_report plan(const E& e) {
  return plan(detail::default_executor<E>(), e);
}

inline std::ostream& operator<<(std::ostream& os, const plan_report& p) {
  os << p.executor << " plan: " << p.kernels << (p.kernels == 1 ? " kernel" : " kernels") << ", read "
     << detail::format_bytes(p.bytes_read) << ", write " << detail::format_bytes(p.bytes_written) << ", "
     << p.flops << " flops\n";
  for (std::size_t i = 0; i < p.lines.size(); ++i) {
    const auto& k = p.lines[i];
    os << "  kernel " << i << ": " << k.what << "  [read " << detail::format_bytes(k.bytes_read) << ", write "
       << detail::format_bytes(k.bytes_written) << ", " << k.flops << " flops]\n";
  }
  return os;
}

}  // namespace fuse
