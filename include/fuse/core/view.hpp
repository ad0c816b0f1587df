// fuse/core/view.hpp - non-owning views of host (and device) memory: contiguous or strided.
#pragma once

#include <span>
#include <vector>

#include "fuse/core/errors.hpp"
#include "fuse/core/leaf.hpp"
#include "fuse/core/promote.hpp"

namespace fuse {

// A view of memory in `Space`, with extents `Ext` (static or dynamic) and, when `Strided`, arbitrary
// strides in elements. Views are held by value in expressions; `v = e` writes elements, never rebinds.
template <class T, class Ext, bool Strided = false, memory_space Space = memory_space::host>
class basic_view : public detail::expr_tag {
  static_assert(detail::is_element_v<std::remove_const_t<T>>,
                "fuse::view: the element type must be an arithmetic type other than long double (or a number class convertible to float, such as __half)");

 public:
  using value_type = std::remove_const_t<T>;
  using element_type = T;
  using extents_type = Ext;
  static constexpr std::size_t rank = Ext::rank;
  static constexpr node_kind kind = node_kind::leaf;
  static constexpr memory_space space = Space;
  static constexpr shape_t<rank> static_shape = Ext::static_shape;
  static constexpr bool is_strided = Strided;

  constexpr basic_view() = default;
  constexpr basic_view(T* data, const Ext& ext) requires(!Strided) : data_(data), ext_(ext) {}
  constexpr basic_view(T* data, const Ext& ext, const shape_t<rank>& strides) requires(Strided)
      : data_(data), ext_(ext), strides_(strides) {}
  constexpr basic_view(const basic_view&) = default;

  // Writes elements (fuse::assign); a view is never rebound.
  basic_view& operator=(const basic_view& other) {
    assign(*this, other);
    return *this;
  }
  template <class E>
    requires(operand<E>)
  basic_view& operator=(E&& e) {
    assign(*this, std::forward<E>(e));
    return *this;
  }

  constexpr T* data() const { return data_; }
  constexpr const Ext& extents() const { return ext_; }
  constexpr shape_t<rank> shape() const { return ext_.shape(); }
  constexpr index_t extent(std::size_t i) const { return ext_.extent(i); }
  constexpr index_t size() const { return shape_size(shape()); }
  constexpr shape_t<rank> strides() const {
    if constexpr (Strided) return strides_;
    else return detail::contiguous_strides(shape());
  }
  constexpr const basic_view& view() const { return *this; }

  template <std::integral... I>
    requires(sizeof...(I) == rank && Space != memory_space::device)
  T& operator()(I... i) const {
    if constexpr (Strided) return data_[detail::strided_offset(strides_, i...)];
    else return data_[detail::row_major_offset(shape(), i...)];
  }

  // --- leaf protocol ---
  template <std::size_t R, std::size_t = 0>
  detail::load_eval<T, R> evaluator(const shape_t<R>&) const {
    detail::load_eval<T, R> e{data_, {}};
    detail::place_strides<R, rank>(e.stride, shape(), strides());
    return e;
  }
  template <class F>
  void visit_leaves(F&& f) const {
    const auto s = shape();
    const auto st = strides();
    const auto range = detail::offset_range(s, st);  // {0, -1} when empty
    detail::leaf_info l{data_, detail::footprint_elements(s, st) * index_t(sizeof(T)), Space,
                        range[0] * std::ptrdiff_t(sizeof(T)), (range[1] + 1) * std::ptrdiff_t(sizeof(T)),
                        index_t(sizeof(T))};
    for (std::size_t d = 0; d < rank; ++d)
      if (s[d] > 1 && st[d] != 0) l.axes.push_back({s[d], st[d] * index_t(sizeof(T))});
    f(l);
  }

 private:
  T* data_ = nullptr;
  [[no_unique_address]] Ext ext_{};
  // Not [[no_unique_address]]: g++ 12 lets the empty tuple<> overlap data_ and then value-initialises
  // it with a store that can zero data_ (seen as null data() for views built by fuse::view(p, ext)).
  std::conditional_t<Strided, shape_t<rank>, detail::tuple<>> strides_{};
};

template <class T, std::size_t R, memory_space S = memory_space::host>
using strided_view = basic_view<T, dextents<R>, true, S>;

// --- fuse::view(...) ---

namespace detail {
// Extents given at run time; a negative one is an error, not an empty view.
template <std::size_t R>
constexpr const shape_t<R>& checked_view_shape(const shape_t<R>& s) {
  for (auto e : s)
    if (e < 0) throw shape_error("fuse::view: negative extent in " + format_shape(s));
  return s;
}
}  // namespace detail

template <class T, std::integral... I>
constexpr auto view(T* data, I... e) {
  constexpr std::size_t R = sizeof...(I);
  return basic_view<T, dextents<R>>(data, detail::extents_from_shape<R, dextents<R>>(
                                              detail::checked_view_shape(shape_t<R>{static_cast<index_t>(e)...})));
}
template <class T, index_t... E>
constexpr auto view(T* data, const extents<E...>& ext) {
  detail::checked_view_shape(ext.shape());
  return basic_view<T, extents<E...>>(data, ext);
}
template <class T, std::size_t R>
constexpr auto view(T* data, const shape_t<R>& shape, const shape_t<R>& strides) {
  return strided_view<T, R>(data, detail::extents_from_shape<R, dextents<R>>(detail::checked_view_shape(shape)), strides);
}
// view(p, {3, 3}, {2, 2}): braced shape and strides (a braced list cannot deduce std::array's R).
template <class T, std::size_t R>
constexpr auto view(T* data, const index_t (&shape)[R], const index_t (&strides)[R]) {
  return view(data, std::to_array(shape), std::to_array(strides));
}
template <class T, std::size_t N>
constexpr auto view(std::span<T, N> s) {
  return view(s.data(), static_cast<index_t>(s.size()));
}
template <class T, class A>
constexpr auto view(std::vector<T, A>& v) {
  return view(v.data(), static_cast<index_t>(v.size()));
}
template <class T, class A>
constexpr auto view(const std::vector<T, A>& v) {
  return view(v.data(), static_cast<index_t>(v.size()));
}
// A view of a temporary vector would dangle as soon as the full expression ends.
template <class T, class A>
auto view(std::vector<T, A>&& v) {  // auto: the body, and so the message, is seen first
  static_assert(sizeof(T) == 0, "fuse::view: the std::vector is a temporary, so its view would dangle; name the vector first");
  return view(v);
}

namespace detail {
template <class V>
inline constexpr bool is_view_v = false;
template <class T, class Ext, bool S, memory_space M>
inline constexpr bool is_view_v<basic_view<T, Ext, S, M>> = true;
}  // namespace detail

}  // namespace fuse
