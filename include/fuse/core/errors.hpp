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

// "[3, 4]"
template <std::size_t R>
std::string format_shape(const std::array<index_t, R>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < R; ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);  // run-time extents: -1 is an error to show, not fuse::dyn
  }
  return out + "]";
}

template <std::size_t A, std::size_t B>
[[noreturn]] void throw_shape_error(const char* what, const std::array<index_t, A>& a,
                                    const std::array<index_t, B>& b) {
  throw shape_error(std::string("fuse::") + what + ": shapes " + format_shape(a) + " and " +
                    format_shape(b) + " do not broadcast");
}

}  // namespace detail
}  // namespace fuse
