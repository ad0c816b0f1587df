// fuse/core/computed_reductions.hpp - the reductions that one fused assignment computed as groups
// of their own, kept for the rest of it: a later occurrence of the same reduction over the same
// data (same_node) reads the first result instead of computing it again. Batch-norm statistics
// written by hand, (x - mean(x)) * rsqrt(var(x) + eps), hold mean(x) twice (once inside var);
// over N, H, W of NHWC both are groups of their own, and x was read four times, now three.
// plan/fusion.hpp counts such a reduction once (by type), plan/report.hpp lists it once.
#pragma once

#include <cstddef>
#include <optional>

#include "fuse/core/node_identity.hpp"
#include "fuse/core/pool.hpp"
#include "fuse/detail/small_vector.hpp"

namespace fuse::detail {

template <class Arena>
class computed_reductions {
 public:
  template <class T, std::size_t R>
  using result_view = basic_view<T, dextents<R>, false, Arena::space>;

  Arena arena;  // the assignment's temporaries (core/pool.hpp arena_for): they live as long as the table

  template <class Exec>
  explicit computed_reductions(const Exec& exec) : arena(exec) {}

  // The result of a reduction equal to a, computed before, if any. (A view is never rebound by
  // `=`, so it comes in an optional.)
  template <class A>
  std::optional<result_view<typename A::value_type, A::rank>> find(const A& a) const {
    using V = result_view<typename A::value_type, A::rank>;
    for (const entry& e : entries_)
      if (same_as(e.ref, a))
        return V(static_cast<typename A::value_type*>(e.data), extents_from_shape<A::rank, dextents<A::rank>>(a.shape()));
    return std::nullopt;
  }
  // a's result is at data (a must outlive the table: a node of the expression being assigned).
  template <class A>
  void add(const A& a, typename A::value_type* data) {
    entries_.push_back(entry{ref_of(a), data});
  }

 private:
  struct entry {
    node_ref ref;
    void* data;
  };
  small_vector<entry, 4> entries_;
};

}  // namespace fuse::detail
