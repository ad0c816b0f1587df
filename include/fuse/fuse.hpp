// fuse/fuse.hpp - the one header users include. It only includes.
#pragma once

#include "fuse/config.hpp"

// Rank-generic loops compare with 0 when a rank is 0; EDG's warning about that is noise here.
#if defined(__NVCC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 186
#endif
// clang reports every `omp simd` loop it cannot vectorise (integer pow, bool masks): the generic
// loops are instantiated for every type, and their scalar form is correct there.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#include "fuse/core/assign.hpp"
#include "fuse/core/copy.hpp"
#include "fuse/core/generators.hpp"
#include "fuse/core/squeeze.hpp"
#include "fuse/core/tensor.hpp"
#include "fuse/core/view.hpp"
#include "fuse/core/views.hpp"
#include "fuse/ops/activation.hpp"
#include "fuse/ops/arith.hpp"
#include "fuse/ops/compare.hpp"
#include "fuse/ops/math.hpp"
#include "fuse/ops/nn.hpp"
#include "fuse/ops/reduce.hpp"
#include "fuse/ops/select.hpp"
#include "fuse/plan/fusion.hpp"
#include "fuse/plan/report.hpp"

#if FUSE_HAS_CUDA
#include "fuse/backend/cuda/cuda.hpp"
#endif

#if defined(__clang__)
#pragma clang diagnostic pop
#endif
#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
