// fuse/math/basic.hpp - sqrt and fabs for host and device. With -fno-math-errno (set by the
// fuse::fuse CMake target) the host versions compile to single vector instructions.
#pragma once

#include <cmath>

#include "fuse/config.hpp"

namespace fuse::math {

#if FUSE_DEVICE_PASS
FUSE_HOST_DEVICE FUSE_INLINE float sqrt(float x) { return ::sqrtf(x); }
FUSE_HOST_DEVICE FUSE_INLINE double sqrt(double x) { return ::sqrt(x); }
FUSE_HOST_DEVICE FUSE_INLINE float fabs(float x) { return ::fabsf(x); }
FUSE_HOST_DEVICE FUSE_INLINE double fabs(double x) { return ::fabs(x); }
#else
FUSE_HOST_DEVICE FUSE_INLINE float sqrt(float x) { return std::sqrt(x); }
FUSE_HOST_DEVICE FUSE_INLINE double sqrt(double x) { return std::sqrt(x); }
FUSE_HOST_DEVICE FUSE_INLINE float fabs(float x) { return std::fabs(x); }
FUSE_HOST_DEVICE FUSE_INLINE double fabs(double x) { return std::fabs(x); }
#endif

}  // namespace fuse::math
