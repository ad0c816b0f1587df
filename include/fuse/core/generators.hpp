// fuse/core/generators.hpp - expressions computed from indices, with no memory of their own:
// full (a constant), iota (an axis index, for masks) and take (a gather of table rows).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fuse/core/views.hpp"

namespace fuse {

namespace detail {
template <class Take>
void validate_device(const Take& t);  // backend/cuda: copies the indices back and checks them
}

// Every element is `value`.
template <class T, std::size_t R>
struct full_expr : detail::expr_tag {
  using value_type = T;
  static constexpr std::size_t rank = R;
  static constexpr node_kind kind = node_kind::generator;
  static constexpr memory_space space = memory_space::any;
  static constexpr shape_t<R> static_shape = dextents<R>::static_shape;
  static constexpr const char* name = "full";

  shape_t<R> shape_;
  T value;
  FUSE_NODE_IS_NOT_A_DESTINATION(full_expr)

  const shape_t<R>& shape() const { return shape_; }
  template <std::size_t E, std::size_t = 0>
  detail::const_eval<T> evaluator(const shape_t<E>&) const { return {value}; }
  template <class F>
  void visit_leaves(F&&) const {}
};

template <class T, std::size_t R>
  requires scalar<T>
auto full(const shape_t<R>& shape, T value) { return full_expr<T, R>{{}, shape, value}; }

// The index along axis K (an index_t).
template <std::size_t K, std::size_t R>
struct iota_expr : detail::expr_tag {
  using value_type = index_t;
  static constexpr std::size_t rank = R;
  static constexpr node_kind kind = node_kind::generator;
  static constexpr memory_space space = memory_space::any;
  static constexpr shape_t<R> static_shape = dextents<R>::static_shape;
  static constexpr const char* name = "iota";

  shape_t<R> shape_;
  FUSE_NODE_IS_NOT_A_DESTINATION(iota_expr)

  const shape_t<R>& shape() const { return shape_; }
  template <std::size_t E, std::size_t = 0>
  detail::affine_eval<E> evaluator(const shape_t<E>&) const {
    shape_t<R> unit{};
    unit[K] = 1;
    detail::affine_eval<E> e{};
    detail::place_strides<E, R>(e.stride, shape_, unit);
    return e;
  }
  template <class F>
  void visit_leaves(F&&) const {}
};

template <int K, std::size_t R>
auto iota(const shape_t<R>& shape) {
  return iota_expr<detail::normalize_axis<K, R>(), R>{{}, shape};
}

// table[indices[...], :] (numpy.take along axis 0): shape indices.shape + table.shape[1:].
template <class Table, class Indices>
struct take_expr : detail::expr_tag {
  using value_type = typename Table::value_type;
  using index_type = typename Indices::value_type;
  static constexpr std::size_t table_rank = Table::rank;
  static constexpr std::size_t index_rank = Indices::rank;
  static constexpr std::size_t rank = index_rank + table_rank - 1;
  static constexpr node_kind kind = node_kind::generator;
  static constexpr memory_space space = Table::space;
  static constexpr shape_t<rank> static_shape = dextents<rank>::static_shape;
  static constexpr const char* name = "take";
  static_assert(table_rank >= 1, "fuse::take: the table must have rank >= 1");
  static_assert(std::is_integral_v<index_type> && !std::is_same_v<index_type, bool>,
                "fuse::take: indices must have an integer type");
  static_assert(detail::spaces_compatible(Table::space, Indices::space),
                "fuse::expression: host and device leaves are mixed in one expression");

  Table table;
  Indices indices;
  // Tensors moved into take (take(t, fuse::eval(ids))), shared by the node's copies (as owned_view).
  detail::keep_alive table_owner{}, indices_owner{};

  take_expr(Table t, Indices i, detail::keep_alive to = {}, detail::keep_alive io = {})
      : table(t), indices(i), table_owner(to), indices_owner(io) {}
  FUSE_NODE_IS_A_VALUE(take_expr)
  FUSE_NODE_IS_NOT_A_DESTINATION(take_expr)

  shape_t<rank> shape() const {
    shape_t<rank> s{};
    const auto is = indices.shape();
    const auto ts = table.shape();
    for (std::size_t i = 0; i < index_rank; ++i) s[i] = is[i];
    for (std::size_t i = 1; i < table_rank; ++i) s[index_rank + i - 1] = ts[i];
    return s;
  }

  // Every index must lie in [0, table.extent(0)): checked before anything is written.
  void validate() const {
    if constexpr (Indices::space != memory_space::device) {
      const index_t rows = table.extent(0);
      const auto is = indices.shape();
      const auto st = indices.strides();
      shape_t<index_rank> idx{};
      for (index_t n = shape_size(is), k = 0; k < n; ++k) {
        index_t off = 0;
        for (std::size_t d = 0; d < index_rank; ++d) off += idx[d] * st[d];
        const auto v = +indices.data()[off];  // in its own type: a uint64 index above 2^63 is not -1
        if (std::cmp_less(v, 0) || std::cmp_greater_equal(v, rows))
          throw index_error("fuse::take: index " + std::to_string(v) + " is outside [0, " + std::to_string(rows) + ")");
        for (std::size_t d = index_rank; d-- > 0;)
          if (++idx[d] < is[d]) break;
          else idx[d] = 0;
      }
    } else {
      detail::validate_device(*this);
    }
  }

  template <std::size_t E, std::size_t = 0>
  auto evaluator(const shape_t<E>&) const {
    // The indices occupy the leading output axes, the table's axes 1.. the trailing ones.
    constexpr std::size_t trailing = table_rank - 1;
    using ievalt = detail::load_eval<typename Indices::element_type, E>;
    ievalt ie{indices.data(), {}};
    index_t lead[E > trailing ? E - trailing : 1] = {};
    if constexpr (E >= trailing) {
      detail::place_strides<E - trailing, index_rank>(lead, indices.shape(), indices.strides());
      for (std::size_t d = 0; d < E - trailing; ++d) ie.stride[d] = lead[d];
    }
    // The table's whole footprint [lo, hi] (negative strides reach below data()), for overlap checks.
    const auto range = detail::offset_range(table.shape(), table.strides());
    detail::take_eval<typename Table::element_type, E, ievalt> e{table.data(), table.strides()[0], {}, ie,
                                                                 range[1] - range[0] + 1, 0, range[0]};
    const auto ts = table.shape();
    const auto tst = table.strides();
    for (std::size_t d = 0; d < E; ++d) e.stride[d] = 0;
    for (std::size_t i = 1; i < table_rank; ++i)
      if (ts[i] != 1) e.stride[E - trailing + i - 1] = tst[i];
    return e;
  }
  template <class F>
  void visit_leaves(F&& f) const {
    // take reads indices.size() rows of the table.
    const index_t row_bytes = shape_size(table.shape()) / std::max<index_t>(table.extent(0), 1) *
                              index_t(sizeof(value_type));
    detail::leaf_info rows{table.data(), shape_size(indices.shape()) * row_bytes, Table::space};
    rows.picked_by = indices.data();  // two takes of one table with other indices add their rows
    f(rows);
    indices.visit_leaves(f);
  }
};

namespace detail {
// A view of take's operand and, for an rvalue tensor, the shared owner that keeps it alive.
template <class L>
auto take_operand(L&& l) {
  if constexpr (viewable<L>) {
    return std::pair{as_view(l), keep_alive{}};
  } else {
    auto held = own(std::move(l));
    return std::pair{held.view(), keep_alive(held.owner())};
  }
}
template <class L>
concept takeable = viewable<L> || is_tensor_v<std::remove_cvref_t<L>>;
}  // namespace detail

template <class Table, class Indices>
  requires detail::takeable<Table> && detail::takeable<Indices>
auto take(Table&& table, Indices&& indices) {
  auto [t, t_owner] = detail::take_operand(std::forward<Table>(table));
  auto [i, i_owner] = detail::take_operand(std::forward<Indices>(indices));
  return take_expr<decltype(t), decltype(i)>(t, i, t_owner, i_owner);
}

}  // namespace fuse
