// fuse/core/errors.hpp - the exceptions a user can catch, and shape formatting for their messages.
#pragma once

#include <array>
#include <stdexcept>
#include <string>

#include "fuse/config.hpp"

namespace fuse {

// Shapes that do not broadcast, an unwritable output, a bad reshape/slice/squeeze.
struct shape_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// take() with an index outside the table.
struct index_error : std::out_of_range {
  using std::out_of_range::out_of_range;
};

// A failing CUDA call or launch; the message carries the CUDA error's name and text.
struct cuda_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {

// A shape of any rank, for error paths that need not be a template.
struct extents_ref {
  const index_t* extents = nullptr;
  std::size_t rank = 0;
};

// "[3, 4]"
inline std::string format_shape(extents_ref s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.rank; ++i) {
    if (i) out += ", ";
    out += std::to_string(s.extents[i]);  // run-time extents: -1 is an error to show, not fuse::dyn
  }
  return out + "]";
}
template <std::size_t R>
std::string format_shape(const std::array<index_t, R>& s) {
  return format_shape(extents_ref{s.data(), R});
}

[[noreturn]] inline void throw_shape_error(const char* what, extents_ref a, extents_ref b) {
  throw shape_error(std::string("fuse::") + what + ": shapes " + format_shape(a) + " and " + format_shape(b) +
                    " do not broadcast");
}
template <std::size_t A, std::size_t B>
[[noreturn]] void throw_shape_error(const char* what, const std::array<index_t, A>& a, const std::array<index_t, B>& b) {
  throw_shape_error(what, extents_ref{a.data(), A}, extents_ref{b.data(), B});
}

// Operand `bad` of an elementwise op (shapes[0, count)) does not broadcast with those before it:
// names the first other operand it does not broadcast with, as broadcast_shapes would.
[[noreturn]] inline void throw_broadcast_error(const char* what, const extents_ref* shapes, std::size_t count, std::size_t bad) {
  const extents_ref b = shapes[bad];
  for (std::size_t k = 0; k < count; ++k) {
    const extents_ref a = shapes[k];
    if (k == bad) continue;
    const std::size_t r = a.rank > b.rank ? a.rank : b.rank;
    for (std::size_t d = 0; d < r; ++d) {
      const index_t x = d + a.rank >= r ? a.extents[d + a.rank - r] : 1;
      const index_t y = d + b.rank >= r ? b.extents[d + b.rank - r] : 1;
      if (x != y && x != 1 && y != 1) throw_shape_error(what, a, b);
    }
  }
  throw shape_error(std::string("fuse::") + what + ": shapes do not broadcast");
}

}  // namespace detail
}  // namespace fuse
