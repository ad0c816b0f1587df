// bench/hand_kernels.cuh - hand-written CUDA kernels for the benchmark's workloads: the "x hand"
// baseline of bench_cuda.cu, as the CPU benchmarks compare with a hand-written OpenMP loop.
//
// What a competent hand writes for these shapes, nothing tuned per GPU: 16-byte loads and stores
// of the data (gamma and beta are read element by element), grid-stride loops for the elementwise
// work, and for rows of exactly 1024 elements one warp per row with the row in registers (each
// lane holds 32 elements as 16-byte chunks; warp shuffles reduce; loops unrolled, so that the row
// stays in registers). The accurate expf / tanhf, as fuse uses accurate functions. Inputs must be
// 16-byte aligned (cudaMalloc's are); the host wrappers check the shapes they support.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace hand {

using index_t = std::int64_t;

// y = max(a * x + b * w, 0) over n floats (n % 4 == 0).
__global__ void axpby_relu(float a, const float4* x, float b, const float4* w, float4* y, index_t n4) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < n4; i += index_t(gridDim.x) * blockDim.x) {
    const float4 u = x[i], v = w[i];
    y[i] = make_float4(fmaxf(a * u.x + b * v.x, 0.f), fmaxf(a * u.y + b * v.y, 0.f), fmaxf(a * u.z + b * v.z, 0.f),
                       fmaxf(a * u.w + b * v.w, 0.f));
  }
}

// gelu, tanh approximation: fuse::gelu's function (fuse computes it as x * sigmoid(2u), the same).
__device__ inline float gelu(float x) { return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))); }

// y[m, n] = gelu(x[m, n] + bias[n]) (n % 4 == 0).
__global__ void bias_gelu(const float4* x, const float4* bias, float4* y, index_t total4, index_t n4) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < total4; i += index_t(gridDim.x) * blockDim.x) {
    const float4 u = x[i], c = bias[i % n4];
    y[i] = make_float4(gelu(u.x + c.x), gelu(u.y + c.y), gelu(u.z + c.z), gelu(u.w + c.w));
  }
}

// Four rows per block of 128 threads, one per warp.
inline constexpr int rows_per_block = 4;

// This warp's row of 1024 elements: lane l holds chunks l, l + 32, ... of 16 bytes, as floats.
template <class T>
struct row1024 {
  static constexpr int per_chunk = 16 / sizeof(T);
  static constexpr int chunks = 1024 / (32 * per_chunk);
  index_t r = blockIdx.x * index_t(rows_per_block) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  float v[chunks * per_chunk];

  __device__ void load(const T* x) {
    #pragma unroll
    for (int c = 0; c < chunks; ++c) {
      const uint4 raw = reinterpret_cast<const uint4*>(x + r * 1024)[c * 32 + lane];
      const T* e = reinterpret_cast<const T*>(&raw);
      #pragma unroll
      for (int k = 0; k < per_chunk; ++k) v[c * per_chunk + k] = float(e[k]);
    }
  }
  __device__ void store(T* y) const {
    #pragma unroll
    for (int c = 0; c < chunks; ++c) {
      uint4 raw;
      T* e = reinterpret_cast<T*>(&raw);
      #pragma unroll
      for (int k = 0; k < per_chunk; ++k) e[k] = T(v[c * per_chunk + k]);
      reinterpret_cast<uint4*>(y + r * 1024)[c * 32 + lane] = raw;
    }
  }
  // f(element, its column) for each element the lane holds.
  template <class F>
  __device__ void each(F f) {
    #pragma unroll
    for (int c = 0; c < chunks; ++c)
      #pragma unroll
      for (int k = 0; k < per_chunk; ++k) f(v[c * per_chunk + k], (c * 32 + lane) * per_chunk + k);
  }
};

__device__ inline float warp_sum(float s) {
  for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
  return s;
}
__device__ inline float warp_max(float s) {
  for (int d = 16; d > 0; d /= 2) s = fmaxf(s, __shfl_xor_sync(0xffffffffu, s, d));
  return s;
}

template <class T>
__global__ void softmax1024(const T* x, T* y, index_t rows) {
  row1024<T> row;
  if (row.r >= rows) return;
  row.load(x);
  float m = -INFINITY;
  row.each([&](float e, int) { m = fmaxf(m, e); });
  m = warp_max(m);
  float s = 0.f;
  row.each([&](float& e, int) { s += (e = expf(e - m)); });
  const float inv = 1.f / warp_sum(s);
  row.each([&](float& e, int) { e *= inv; });
  row.store(y);
}

// (x - mean) / sqrt(var + eps) * gamma + beta, gamma and beta in fp32; two passes over the
// registers (mean, then the squared deviations).
template <class T>
__global__ void layer_norm1024(const T* x, const float* gamma, const float* beta, float eps, T* y, index_t rows) {
  row1024<T> row;
  if (row.r >= rows) return;
  row.load(x);
  float s = 0.f;
  row.each([&](float e, int) { s += e; });
  const float mean = warp_sum(s) * (1.f / 1024);
  float q = 0.f;
  row.each([&](float e, int) { q += (e - mean) * (e - mean); });
  const float inv_std = rsqrtf(warp_sum(q) * (1.f / 1024) + eps);
  row.each([&](float& e, int j) { e = (e - mean) * inv_std * gamma[j] + beta[j]; });
  row.store(y);
}

// x / sqrt(mean(x * x) + eps) * gamma.
template <class T>
__global__ void rms_norm1024(const T* x, const float* gamma, float eps, T* y, index_t rows) {
  row1024<T> row;
  if (row.r >= rows) return;
  row.load(x);
  float q = 0.f;
  row.each([&](float e, int) { q += e * e; });
  const float inv = rsqrtf(warp_sum(q) * (1.f / 1024) + eps);
  row.each([&](float& e, int j) { e *= inv * gamma[j]; });
  row.store(y);
}

// Host side: launches on the default stream; shapes outside what the kernels cover throw.
inline int elementwise_blocks(index_t n4) {
  const index_t blocks = (n4 + 255) / 256;
  return int(blocks < 132 * 16 ? blocks : 132 * 16);
}
inline void check_rows(index_t n, const char* what) {
  if (n != 1024) throw std::invalid_argument(std::string("hand::") + what + ": rows of 1024 only");
}
inline int row_blocks(index_t rows) { return int((rows + rows_per_block - 1) / rows_per_block); }

inline void launch_axpby_relu(float a, const float* x, float b, const float* w, float* y, index_t n) {
  if (n % 4) throw std::invalid_argument("hand::axpby_relu: n % 4 != 0");
  axpby_relu<<<elementwise_blocks(n / 4), 256>>>(a, reinterpret_cast<const float4*>(x), b,
                                                 reinterpret_cast<const float4*>(w), reinterpret_cast<float4*>(y), n / 4);
}
inline void launch_bias_gelu(const float* x, const float* bias, float* y, index_t m, index_t n) {
  if (n % 4) throw std::invalid_argument("hand::bias_gelu: n % 4 != 0");
  bias_gelu<<<elementwise_blocks(m * n / 4), 256>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(bias),
                                                    reinterpret_cast<float4*>(y), m * n / 4, n / 4);
}
template <class T>
void launch_softmax(const T* x, T* y, index_t m, index_t n) {
  check_rows(n, "softmax");
  softmax1024<T><<<row_blocks(m), 32 * rows_per_block>>>(x, y, m);
}
template <class T>
void launch_layer_norm(const T* x, const float* gamma, const float* beta, float eps, T* y, index_t m, index_t n) {
  check_rows(n, "layer_norm");
  layer_norm1024<T><<<row_blocks(m), 32 * rows_per_block>>>(x, gamma, beta, eps, y, m);
}
template <class T>
void launch_rms_norm(const T* x, const float* gamma, float eps, T* y, index_t m, index_t n) {
  check_rows(n, "rms_norm");
  rms_norm1024<T><<<row_blocks(m), 32 * rows_per_block>>>(x, gamma, eps, y, m);
}

}  // namespace hand
