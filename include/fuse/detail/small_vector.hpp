// fuse/detail/small_vector.hpp - a list that holds its first N elements in place.
//
// Each assign lists its trackers' strides to merge axes. As std::vectors those lists made 11
// allocations per call of a four-leaf expression (21 for a softmax), about half of the ~225 ns
// that a fused assign of 16 elements cost (perf, 2026-12-04). Host only; not copyable (it points
// into itself).
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <type_traits>

namespace fuse::detail {

template <class T, std::size_t N>
class small_vector {
  static_assert(std::is_trivially_copyable_v<T>, "fuse: small_vector holds plain values");

 public:
  small_vector() = default;
  small_vector(std::initializer_list<T> values) {
    for (const T& v : values) push_back(v);
  }
  small_vector(const small_vector&) = delete;
  small_vector& operator=(const small_vector&) = delete;

  void push_back(T v) {  // by value: v may be one of this list's elements, which grow() frees
    if (size_ == capacity_) grow();
    data_[size_++] = v;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  void grow() {
    auto bigger = std::make_unique_for_overwrite<T[]>(capacity_ * 2);
    std::copy_n(data_, size_, bigger.get());
    heap_ = std::move(bigger);
    data_ = heap_.get();
    capacity_ *= 2;
  }

  T in_place_[N];
  std::unique_ptr<T[]> heap_;
  T* data_ = in_place_;
  std::size_t size_ = 0, capacity_ = N;
};

}  // namespace fuse::detail
