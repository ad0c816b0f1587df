// tests/diff/generator.hpp - random expression trees for the differential test.
//
// A tree's *structure* is chosen at compile time from a 64-bit seed S (fuse expressions are types),
// so one translation unit instantiates a family of a few dozen trees. Everything else is chosen
// per case at run time from a case seed: extents (including 0 and 1), which leaf axes broadcast
// (extent 1 or stride 0), memory layouts (permuted, gapped, negative strides, misaligned), slice
// bounds. Each tree is built twice in lockstep: as a fuse expression, and as a reference tree.
#pragma once

#include "diff/reference.hpp"

#include <array>
#include <random>
#include <tuple>
#include <type_traits>
#include <utility>

namespace fuse_diff {

constexpr std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
constexpr std::uint64_t child_seed(std::uint64_t s, int k) { return mix(s * 31 + std::uint64_t(k) + 1); }

inline constexpr int leaf_slots = 3;
enum leaf_kind : int { plain, transposed, sliced };

// Per-tree choices: rank of the result, leaf type, depth, and each leaf slot's rank and kind.
template <std::uint64_t S>
struct tree_traits {
  static constexpr std::size_t rank = 1 + mix(S ^ 1) % 4;
  using value_type = std::conditional_t<mix(S ^ 2) % 4 == 0, double, float>;
  static constexpr int depth = 2 + int(mix(S ^ 3) % 3);
  static constexpr std::size_t leaf_rank(int k) { return rank > 1 && mix(S ^ (10 + k)) % 4 == 0 ? rank - 1 : rank; }
  static constexpr int kind(int k) {
    const auto r = mix(S ^ (20 + k)) % 8;
    return r < 5 ? plain : r < 7 ? transposed : sliced;
  }
};

// ---------------------------------------------------------------------------------------------
// Leaves.

template <class T>
struct leaf_storage {
  std::vector<T> buf;
  T* ptr = nullptr;     // element (0, ..., 0) of the view before any slice
  dims raw_shape, raw_strides;
  index_t begin = 0, end = 0, step = 1;  // slice<0> arguments
  leaf_data ref;
};

inline index_t pick(std::mt19937_64& g, index_t lo, index_t hi) { return std::uniform_int_distribution<index_t>(lo, hi)(g); }
inline bool chance(std::mt19937_64& g, int percent) { return pick(g, 0, 99) < percent; }

inline dims random_shape(std::mt19937_64& g, std::size_t rank) {
  static constexpr index_t max_extent[] = {0, 300, 40, 14, 8};
  dims s(rank);
  for (auto& e : s) e = chance(g, 4) ? 0 : chance(g, 15) ? 1 : pick(g, 2, max_extent[rank]);
  return s;
}

// A leaf of rank r broadcasting against `out`: each axis has the output's extent, 1, or the
// output's extent with stride 0; laid out in memory in a random axis order with gaps, negative
// strides and a misaligned start.
template <class T>
leaf_storage<T> make_leaf(std::mt19937_64& g, const dims& out, std::size_t r, int kind) {
  leaf_storage<T> L;
  dims shape(r), strides(r, 0);
  std::vector<bool> zero(r, false);
  for (std::size_t j = 0; j < r; ++j) {
    shape[j] = chance(g, 20) ? 1 : out[out.size() - r + j];
    zero[j] = shape[j] > 1 && chance(g, 10);
  }
  // Slicing axis 0: the raw extent holds `pre` elements before, `post` after, every step-th taken.
  dims raw = shape;
  index_t pre = 0, post = 0;
  if (kind == sliced) {
    L.step = pick(g, 1, 3), pre = pick(g, 0, 2), post = pick(g, 0, 2);
    raw[0] = shape[0] == 0 ? pre + post : (shape[0] - 1) * L.step + 1 + pre + post;
    zero[0] = false;
  }
  std::vector<std::size_t> order(r);
  for (std::size_t j = 0; j < r; ++j) order[j] = j;
  std::shuffle(order.begin(), order.end(), g);
  index_t running = 1, lo = 0, hi = 0;
  for (auto j : order) {
    if (zero[j]) continue;
    const index_t gap = chance(g, 70) ? 1 : pick(g, 2, 3);
    strides[j] = (chance(g, 15) ? -1 : 1) * gap * running;
    running *= std::max<index_t>(raw[j], 1) * gap;
    if (raw[j] > 0) (strides[j] < 0 ? lo : hi) += (raw[j] - 1) * strides[j];
  }
  const index_t misalign = pick(g, 0, 3);
  L.buf.resize(std::size_t(hi - lo + 1 + misalign));
  std::uniform_real_distribution<double> mag(0.0625, 2.0);
  for (auto& x : L.buf) x = T(chance(g, 50) ? mag(g) : -mag(g));
  const index_t base = misalign - lo;
  L.ptr = L.buf.data() + base;
  L.raw_shape = raw, L.raw_strides = strides;
  // The reference reads the logical view directly.
  L.ref.values.assign(L.buf.begin(), L.buf.end());
  L.ref.base = base;
  L.ref.shape = shape, L.ref.strides = strides;
  L.ref.how = kind == plain ? "plain" : kind == transposed ? "transposed" : "sliced";
  if (kind == sliced) {
    L.ref.base += pre * strides[0];
    L.ref.strides[0] = strides[0] * L.step;
    // Python bounds: sometimes negative begin, sometimes an end past the extent (same length).
    L.begin = chance(g, 30) && pre < raw[0] ? pre - raw[0] : pre;
    L.end = shape[0] == 0 ? pre : pre + (shape[0] - 1) * L.step + 1;
    if (shape[0] > 0 && post < L.step && chance(g, 30)) L.end = raw[0] + 7;
  }
  L.ref.how += " shape " + to_string(shape) + " strides " + to_string(L.ref.strides);
  return L;
}

template <std::size_t R>
std::array<index_t, R> to_array(const dims& d, bool reversed = false) {
  std::array<index_t, R> a{};
  for (std::size_t i = 0; i < R; ++i) a[i] = d[reversed ? R - 1 - i : i];
  return a;
}

// A strided view of host memory, or of device memory when Device (a CUDA translation unit).
template <bool Device, class T, std::size_t R>
auto strided_view(T* ptr, const std::array<index_t, R>& shape, const std::array<index_t, R>& strides) {
#ifdef __CUDACC__
  if constexpr (Device) return fuse::device_view(ptr, shape, strides);
  else
#endif
    return fuse::view(ptr, shape, strides);
}

// The leaf's expression over `ptr` (L.ptr, or where the same element lies in a device copy).
template <class T, std::size_t R, int Kind, bool Device = false>
auto leaf_expr(const leaf_storage<T>& L, T* ptr) {
  if constexpr (Kind == transposed) {
    // The raw view is the transpose of the logical one; transpose() turns it back.
    return fuse::transpose(strided_view<Device>(ptr, to_array<R>(L.raw_shape, true), to_array<R>(L.raw_strides, true)));
  } else if constexpr (Kind == sliced) {
    return fuse::slice<0>(strided_view<Device>(ptr, to_array<R>(L.raw_shape), to_array<R>(L.raw_strides)), L.begin, L.end, L.step);
  } else {
    return strided_view<Device>(ptr, to_array<R>(L.raw_shape), to_array<R>(L.raw_strides));
  }
}

// ---------------------------------------------------------------------------------------------
// Trees.

template <class E>
struct built {
  E expr;
  int id;
};
template <class E>
built(E, int) -> built<E>;

template <class E>
double unit_of() {
  return std::numeric_limits<typename std::remove_cvref_t<E>::value_type>::epsilon() / 2;
}

inline int add(reference& ref, node n) {
  ref.nodes.push_back(n);
  return int(ref.nodes.size()) - 1;
}

template <op K, class X>
auto unary(X x) {
  if constexpr (K == op::neg) return -x;
  else if constexpr (K == op::abs) return fuse::abs(x);
  else if constexpr (K == op::square) return fuse::square(x);
  else if constexpr (K == op::tanh) return fuse::tanh(x);
  else if constexpr (K == op::sigmoid) return fuse::sigmoid(x);
  else if constexpr (K == op::sin) return fuse::sin(x);
  else if constexpr (K == op::cos) return fuse::cos(x);
  else if constexpr (K == op::erf) return fuse::erf(x);
  else if constexpr (K == op::relu) return fuse::relu(x);
  else if constexpr (K == op::gelu) return fuse::gelu(x);
  else if constexpr (K == op::gelu_erf) return fuse::gelu_erf(x);
  else if constexpr (K == op::silu) return fuse::silu(x);
  else if constexpr (K == op::softplus) return fuse::softplus(x);
  else if constexpr (K == op::exp_clamped) return fuse::exp(fuse::clamp(x, -5.0, 5.0));
  else if constexpr (K == op::expm1_tanh) return fuse::expm1(fuse::tanh(x));
  else if constexpr (K == op::log_shift) return fuse::log(0.5 + fuse::abs(x));
  else if constexpr (K == op::log1p_abs) return fuse::log1p(fuse::abs(x));
  else if constexpr (K == op::sqrt_shift) return fuse::sqrt(0.25 + fuse::abs(x));
  else if constexpr (K == op::rsqrt_shift) return fuse::rsqrt(0.25 + fuse::abs(x));
  else if constexpr (K == op::clamp_unit) return fuse::clamp(x, -1.0, 1.0);
  else if constexpr (K == op::to_double) return fuse::cast<double>(x);
  else return fuse::cast<float>(x);
}

template <op K, class X>
auto with_c(X x, double c) {
  if constexpr (K == op::add_c) return x + c;
  else if constexpr (K == op::mul_c) return x * c;
  else if constexpr (K == op::rsub_c) return c - x;
  else return x / c;
}

template <op K, class A, class B>
auto binary(A a, B b) {
  if constexpr (K == op::add) return a + b;
  else if constexpr (K == op::sub) return a - b;
  else if constexpr (K == op::mul) return a * b;
  else if constexpr (K == op::div_shift) return a / (1.25 + fuse::abs(b));
  else if constexpr (K == op::min) return fuse::min(a, b);
  else if constexpr (K == op::max) return fuse::max(a, b);
  else if constexpr (K == op::where_gt) return fuse::where(a > b, a, -b);
  else return fuse::pow(0.5 + fuse::abs(a), fuse::clamp(b, -2.0, 2.0));
}

// Axis codes: -1 last, 0 first, 99 all.
template <int Axis>
constexpr auto axis_arg() {
  if constexpr (Axis == -1) return fuse::axis<-1>;
  else return fuse::axis<0>;
}

template <op K, int Axis, class X>
auto reduction(X x) {
  if constexpr (Axis == 99) {
    if constexpr (K == op::sum) return fuse::sum(x);
    else if constexpr (K == op::mean) return fuse::mean(x);
    else if constexpr (K == op::max_r) return fuse::max(x);
    else if constexpr (K == op::min_r) return fuse::min(x);
    else if constexpr (K == op::var) return fuse::var(x);
    else return fuse::logsumexp(x);
  } else {
    constexpr auto ax = axis_arg<Axis>();
    if constexpr (K == op::sum) return fuse::sum(x, ax);
    else if constexpr (K == op::mean) return fuse::mean(x, ax);
    else if constexpr (K == op::max_r) return fuse::max(x, ax);
    else if constexpr (K == op::min_r) return fuse::min(x, ax);
    else if constexpr (K == op::var) return fuse::var(x, ax);
    else return fuse::logsumexp(x, ax);
  }
}

enum shape_pick : int { p_leaf, p_unary, p_const, p_binary, p_reduce, p_reduce_back, p_layer };

constexpr int pick_kind(std::uint64_t h, int depth) {
  if (depth == 0) return p_leaf;
  const int r = int(h % 100);
  return r < 10 ? p_leaf : r < 32 ? p_unary : r < 42 ? p_const : r < 66 ? p_binary : r < 76 ? p_reduce : r < 90 ? p_reduce_back : p_layer;
}

template <class X>
constexpr bool has_axes = std::remove_cvref_t<X>::rank > 0;

template <std::uint64_t S, int D, bool Root, class Ctx>
auto gen(const Ctx& ctx, reference& ref) {
  constexpr std::uint64_t h = mix(S);
  constexpr int kind = pick_kind(h, D);
  constexpr std::uint64_t h2 = mix(h);
  if constexpr (kind == p_leaf) {
    constexpr int slot = int(h2 % leaf_slots);
    return built{std::get<slot>(ctx), add(ref, {.kind = op::leaf, .slot = slot})};
  } else if constexpr (kind == p_unary) {
    constexpr op k = op(int(op::neg) + int(h2 % (int(op::to_float) - int(op::neg) + 1)));
    auto x = gen<child_seed(S, 0), D - 1, false>(ctx, ref);
    auto e = unary<k>(x.expr);
    return built{e, add(ref, {.kind = k, .a = x.id, .unit = unit_of<decltype(e)>()})};
  } else if constexpr (kind == p_const) {
    constexpr op k = op(int(op::add_c) + int(h2 % 4));
    constexpr double c = ((h2 >> 8) % 2 ? -1 : 1) * (0.5 + double((h2 >> 16) % 61) / 16);  // exact in float
    auto x = gen<child_seed(S, 0), D - 1, false>(ctx, ref);
    auto e = with_c<k>(x.expr, c);
    return built{e, add(ref, {.kind = k, .a = x.id, .constant = c, .unit = unit_of<decltype(e)>()})};
  } else if constexpr (kind == p_binary) {
    constexpr op k = op(int(op::add) + int(h2 % 8));
    auto a = gen<child_seed(S, 0), D - 1, false>(ctx, ref);
    auto b = gen<child_seed(S, 1), D - 1, false>(ctx, ref);
    auto e = binary<k>(a.expr, b.expr);
    return built{e, add(ref, {.kind = k, .a = a.id, .b = b.id, .unit = unit_of<decltype(e)>()})};
  } else if constexpr (kind == p_reduce || kind == p_reduce_back) {
    constexpr op k = op(int(op::sum) + int(h2 % 6));
    constexpr int choice = int((h2 >> 8) % 3);
    auto x = gen<child_seed(S, 0), D - 1, false>(ctx, ref);
    if constexpr (!has_axes<decltype(x.expr)>) {
      return x;  // a rank-0 child has nothing left to reduce
    } else {
      constexpr int axis = choice == 0 ? -1 : choice == 1 ? 0 : (Root && kind == p_reduce) ? -1 : 99;
      auto r = reduction<k, axis>(x.expr);
      const int rid = add(ref, {.kind = k, .a = x.id, .axis = axis, .unit = unit_of<decltype(r)>()});
      if constexpr (kind == p_reduce) {
        return built{r, rid};
      } else {
        // The reduced value broadcast back over what it reduced: x - max(x), x * mean(x), ...
        constexpr op b = op(int(op::add) + int((h2 >> 16) % 3));
        auto e = binary<b>(x.expr, r);
        return built{e, add(ref, {.kind = b, .a = x.id, .b = rid, .unit = unit_of<decltype(e)>()})};
      }
    }
  } else {
    constexpr int layer = int(h2 % 4);
    auto x = gen<child_seed(S, 0), D - 1, false>(ctx, ref);
    using X = decltype(x.expr);
    if constexpr (!has_axes<X>) {
      return x;
    } else if constexpr (layer < 2) {
      constexpr int axis = (h2 >> 8) % 2 ? -1 : 0;
      constexpr auto ax = axis_arg<axis>();
      auto e = [&] {
        if constexpr (layer == 0) return fuse::softmax(x.expr, ax);
        else return fuse::log_softmax(x.expr, ax);
      }();
      return built{e, add(ref, {.kind = layer == 0 ? op::softmax : op::log_softmax, .a = x.id, .axis = axis,
                                .unit = unit_of<decltype(e)>()})};
    } else {
      using T = typename std::remove_cvref_t<X>::value_type;
      constexpr double eps = (h2 >> 8) % 2 ? 1e-5 : 1e-6;
      auto g = gen<child_seed(S, 1), (D >= 2 ? D - 2 : 0), false>(ctx, ref);
      if constexpr (layer == 2) {
        auto e = fuse::rms_norm(x.expr, g.expr, eps);
        return built{e, add(ref, {.kind = op::rms_norm, .a = x.id, .b = g.id, .constant = double(T(eps)),
                                  .unit = unit_of<decltype(e)>()})};
      } else {
        auto b = gen<child_seed(S, 2), (D >= 2 ? D - 2 : 0), false>(ctx, ref);
        auto e = fuse::layer_norm(x.expr, g.expr, b.expr, eps);
        return built{e, add(ref, {.kind = op::layer_norm, .a = x.id, .b = g.id, .c = b.id, .constant = double(T(eps)),
                                  .unit = unit_of<decltype(e)>()})};
      }
    }
  }
}

}  // namespace fuse_diff
