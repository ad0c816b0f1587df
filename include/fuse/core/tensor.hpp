// fuse/core/tensor.hpp - owning, contiguous, row-major arrays (host: 64-byte aligned).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>

#include "fuse/core/view.hpp"

namespace fuse {

namespace detail {
// Bytes of an array of `shape` with elements of `elem` bytes; std::bad_alloc where the count does
// not fit in size_t (it wrapped to a small number or 0, and allocate(0) gives nullptr).
template <std::size_t R>
std::size_t checked_bytes(const shape_t<R>& shape, std::size_t elem) {
  for (auto e : shape)
    if (e == 0) return 0;
  std::size_t n = elem;
  for (auto e : shape)
    if (__builtin_mul_overflow(n, static_cast<std::size_t>(e), &n) || n > (std::size_t(-1) >> 1)) throw std::bad_alloc();
  return n;
}

// 64-byte aligned host memory (a cache line; also the widest SIMD load).
struct host_allocator {
  static constexpr memory_space space = memory_space::host;
  static void* allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return p;
  }
  static void deallocate(void* p) noexcept { std::free(p); }
  static void copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  static void copy_to_host(void* dst, const void* src, std::size_t bytes) { copy(dst, src, bytes); }
};
}  // namespace detail

// An owning array of `Rank` dynamic extents in the memory `Alloc` manages.
template <class T, std::size_t Rank, class Alloc>
class basic_tensor : public detail::expr_tag {
  static_assert(detail::is_element_v<T>,
                "fuse::tensor<T, Rank>: T must be an arithmetic type other than long double (or a number class convertible to float, such as __half)");

 public:
  using value_type = T;
  static constexpr std::size_t rank = Rank;
  static constexpr node_kind kind = node_kind::leaf;
  static constexpr memory_space space = Alloc::space;
  static constexpr shape_t<rank> static_shape = dextents<Rank>::static_shape;
  using view_type = basic_view<T, dextents<Rank>, false, space>;
  using const_view_type = basic_view<const T, dextents<Rank>, false, space>;

  basic_tensor() requires(Rank > 0) = default;  // empty: every extent 0
  basic_tensor() requires(Rank == 0) : basic_tensor(shape_t<0>{}) {}  // one element, as its shape says
  template <std::integral... I>
    requires(sizeof...(I) == Rank)
  explicit basic_tensor(I... e) : basic_tensor(shape_t<Rank>{static_cast<index_t>(e)...}) {}
  // x({m, n}): a braced list binds to this array exactly; without it the call is ambiguous between
  // the shape_t constructor and the copy/move constructors (via the extents constructor above).
  explicit basic_tensor(const index_t (&shape)[Rank == 0 ? 1 : Rank])
    requires(Rank > 0)
      : basic_tensor(std::to_array(shape)) {}
  explicit basic_tensor(const shape_t<Rank>& shape) : shape_(shape) {
    for (auto e : shape)
      if (e < 0) throw shape_error("fuse::tensor: negative extent in " + detail::format_shape(shape));
    data_.reset(static_cast<T*>(Alloc::allocate(detail::checked_bytes(shape, sizeof(T)))));
  }

  basic_tensor(const basic_tensor& o) : basic_tensor(o.shape_) { Alloc::copy(data(), o.data(), bytes()); }
  // A moved-from tensor is empty (every extent 0), as a moved-from std::vector, so that using it
  // again (x = std::move(x) * 2: x is moved into the expression) is a shape_error, not a null
  // dereference. Rank 0 always has its one element: the source gets a fresh (or the old) one.
  basic_tensor(basic_tensor&& o) noexcept(Rank > 0) : data_(std::move(o.data_)), shape_(std::exchange(o.shape_, shape_t<Rank>{})) {
    if constexpr (Rank == 0) o.data_.reset(static_cast<T*>(Alloc::allocate(sizeof(T))));
  }
  // Same shape: copied into the existing storage, so expressions and views that hold this tensor
  // stay valid (as std::vector keeps its buffer). A move, or a copy of another shape, replaces it.
  basic_tensor& operator=(const basic_tensor& o) {
    if (this == &o) return *this;
    if (shape_ == o.shape_ && data_) Alloc::copy(data(), o.data(), bytes());
    else *this = basic_tensor(o);
    return *this;
  }
  basic_tensor& operator=(basic_tensor&& o) noexcept {
    if (this == &o) return *this;
    if constexpr (Rank == 0) {
      data_.swap(o.data_);
    } else {
      data_ = std::move(o.data_);
      shape_ = std::exchange(o.shape_, shape_t<Rank>{});
    }
    return *this;
  }

  // Any other expression (or a scalar) is written into the existing storage: fuse::assign.
  template <class E>
    requires(operand<E> && !std::is_same_v<std::remove_cvref_t<E>, basic_tensor>)
  basic_tensor& operator=(E&& e) {
    assign(*this, std::forward<E>(e));
    return *this;
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  const shape_t<Rank>& shape() const { return shape_; }
  index_t extent(std::size_t i) const { return shape_[i]; }
  index_t size() const { return shape_size(shape_); }
  shape_t<Rank> strides() const { return detail::contiguous_strides(shape_); }
  std::size_t bytes() const { return static_cast<std::size_t>(size()) * sizeof(T); }

  view_type view() { return view_type(data(), detail::extents_from_shape<Rank, dextents<Rank>>(shape_)); }
  const_view_type view() const { return const_view_type(data(), detail::extents_from_shape<Rank, dextents<Rank>>(shape_)); }

  template <std::integral... I>
    requires(sizeof...(I) == Rank && space != memory_space::device)
  T& operator()(I... i) { return data()[detail::row_major_offset(shape_, i...)]; }
  template <std::integral... I>
    requires(sizeof...(I) == Rank && space != memory_space::device)
  const T& operator()(I... i) const { return data()[detail::row_major_offset(shape_, i...)]; }

  // --- leaf protocol (a tensor moved into an expression is read like its view) ---
  template <std::size_t R, std::size_t = 0>
  detail::load_eval<const T, R> evaluator(const shape_t<R>& out) const { return view().evaluator(out); }
  template <class F>
  void visit_leaves(F&& f) const { view().visit_leaves(f); }

 private:
  struct deleter {
    void operator()(T* p) const noexcept { Alloc::deallocate(p); }
  };
  std::unique_ptr<T, deleter> data_;
  shape_t<Rank> shape_{};
};

template <class T, std::size_t Rank>
using tensor = basic_tensor<T, Rank, detail::host_allocator>;

namespace detail {
// The value of a rank-0 tensor, on the host (on CUDA this waits for it: backend/cuda/memory.hpp
// overloads this for fuse::cuda, found by argument-dependent lookup).
template <class Exec, class T, class Alloc>
T read_scalar(const Exec&, const basic_tensor<T, 0, Alloc>& t) {
  T v{};
  Alloc::copy_to_host(&v, t.data(), sizeof(T));
  return v;
}
}  // namespace detail

namespace detail {
// An rvalue tensor moved into an expression, shared by every copy of the expression: copies stay
// cheap and read the same memory (the kernels recognise a repeated load by its address), and the
// views that a composite takes of its buffer (softmax reads x in three places) stay valid as long
// as any copy lives. A tensor held by value would be copied with the expression, and those views
// would still point into the original. Read through a view of the buffer, which squeeze and
// unsqueeze may replace (core/squeeze.hpp).
template <class View>
class owned_view : public expr_tag {
 public:
  using value_type = typename View::value_type;
  static constexpr std::size_t rank = View::rank;
  static constexpr node_kind kind = node_kind::leaf;
  static constexpr memory_space space = View::space;
  static constexpr shape_t<rank> static_shape = View::static_shape;

  owned_view(const View& v, std::shared_ptr<const void> owner) : view_(v), owner_(std::move(owner)) {}
  // A leaf held by a node, not a destination: `=` from another owned_view rebinds (view_'s own `=`
  // would write elements into this buffer, then owner_ would free it under view_).
  FUSE_NODE_IS_A_VALUE(owned_view)

  shape_t<rank> shape() const { return view_.shape(); }
  // Read access as the view gives it (x(i, j), extent, size, strides); writing is a compile error.
  template <class... I>
  decltype(auto) operator()(I... i) const { return view_(i...); }
  index_t extent(std::size_t i) const { return view_.extent(i); }
  index_t size() const { return view_.size(); }
  auto strides() const { return view_.strides(); }
  const View& view() const { return view_; }
  const std::shared_ptr<const void>& owner() const { return owner_; }
  // y = e on a view writes elements; here there is nothing a user could see written.
  template <class E>
    requires(!std::is_same_v<std::remove_cvref_t<E>, owned_view>)
  owned_view& operator=(E&&) {
    static_assert(sizeof(E) == 0, "fuse::assign: " FUSE_READ_ONLY_DESTINATION);
    return *this;
  }

  // --- leaf protocol: read like the view ---
  template <std::size_t R, std::size_t B = 0>
  auto evaluator(const shape_t<R>& out) const { return view_.template evaluator<R, B>(out); }
  template <class F>
  void visit_leaves(F&& f) const { view_.visit_leaves(f); }

 private:
  View view_;
  std::shared_ptr<const void> owner_;
};

// A shared owner that a node can hold by value (take keeps moved-in tensors alive with it). Its
// copies are __host__ __device__ as nvcc infers a node's implicit copies to be (shared_ptr's are
// host-only: warning #20011); they share ownership on the host, and a node is never copied on a
// device.
class keep_alive {
 public:
  keep_alive() = default;
  explicit keep_alive(std::shared_ptr<const void> p) : p_(p ? new std::shared_ptr<const void>(std::move(p)) : nullptr) {}
  FUSE_HOST_DEVICE keep_alive(const keep_alive& o) { share(o); }
  // Moves steal the pointer (no allocation), so nodes holding one move without throwing.
  FUSE_HOST_DEVICE keep_alive(keep_alive&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  FUSE_HOST_DEVICE keep_alive& operator=(keep_alive&& o) noexcept {
    if (this != &o) release(), p_ = o.p_, o.p_ = nullptr;
    return *this;
  }
  FUSE_HOST_DEVICE keep_alive& operator=(const keep_alive& o) {
    if (this != &o) release(), share(o);
    return *this;
  }
  FUSE_HOST_DEVICE ~keep_alive() { release(); }

 private:
  FUSE_HOST_DEVICE void share(const keep_alive& o) {
#if !FUSE_DEVICE_PASS
    p_ = o.p_ ? new std::shared_ptr<const void>(*o.p_) : nullptr;
#endif
  }
  FUSE_HOST_DEVICE void release() {
#if !FUSE_DEVICE_PASS
    delete p_;
#endif
    p_ = nullptr;
  }
  std::shared_ptr<const void>* p_ = nullptr;
};

template <class V>
inline constexpr bool is_owned_view_v = false;
template <class V>
inline constexpr bool is_owned_view_v<owned_view<V>> = true;

template <class Tensor>
auto own(Tensor&& t) {
  auto owner = std::make_shared<const Tensor>(std::move(t));
  return owned_view<typename Tensor::const_view_type>(owner->view(), owner);
}

template <class V>
inline constexpr bool is_tensor_v = false;
template <class T, std::size_t R, class A>
inline constexpr bool is_tensor_v<basic_tensor<T, R, A>> = true;

// How an operand is stored in a node: tensors by reference (as a view) when lvalues, moved in when
// rvalues; views and nodes by value.
template <class A>
struct hold {
  using type = std::remove_cvref_t<A>;
};
template <class T, std::size_t R, class Al>
struct hold<basic_tensor<T, R, Al>&> {
  using type = typename basic_tensor<T, R, Al>::view_type;
};
template <class T, std::size_t R, class Al>
struct hold<const basic_tensor<T, R, Al>&> {
  using type = typename basic_tensor<T, R, Al>::const_view_type;
};
}  // namespace detail

}  // namespace fuse
