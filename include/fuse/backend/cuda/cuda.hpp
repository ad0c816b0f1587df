// fuse/backend/cuda/cuda.hpp - everything CUDA: included by fuse.hpp only when nvcc compiles.
#pragma once

#include "fuse/backend/cuda/error.hpp"
#include "fuse/backend/cuda/executor.hpp"
#include "fuse/backend/cuda/half.hpp"
#include "fuse/backend/cuda/memory.hpp"
#include "fuse/backend/cuda/row_kernel.cuh"
