// tests/diff/runner.hpp - one differential case: build a random tree's leaves, evaluate the
// expression fused (all threads and one thread), eagerly, and into a strided destination view, and
// compare each with the double-precision reference within its derived error bound.
//
// Settings (environment):
//   FUSE_DIFF_CASES   cases per family (default 1700: 3 families, about 5000 cases per run)
//   FUSE_DIFF_SEED    first case seed (default 1; a CI run is reproducible)
//   FUSE_DIFF_REPLAY  run only this case seed (as printed by a failure)
// Soak: FUSE_DIFF_CASES=200000 FUSE_DIFF_SEED=$RANDOM build/test/tests/fuse_diff_tests (see scripts/diff-soak.sh)
#pragma once

#include "diff/generator.hpp"

// Tree families are compile-time; a soak build can explore other trees with
// -DFUSE_DIFF_FAMILY_BASE=<n> (CI runs families 0 and 1, in different configurations).
#ifndef FUSE_DIFF_FAMILY_BASE
#define FUSE_DIFF_FAMILY_BASE 0
#endif

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

namespace fuse_diff {

struct settings {
  std::uint64_t seed = 1;
  long cases = 1700;
  bool replay = false;
  std::uint64_t replay_seed = 0;
};

inline settings read_settings() {
  settings s;
  if (const char* v = std::getenv("FUSE_DIFF_CASES")) s.cases = std::strtol(v, nullptr, 10);
  if (const char* v = std::getenv("FUSE_DIFF_SEED")) s.seed = std::strtoull(v, nullptr, 0);
  if (const char* v = std::getenv("FUSE_DIFF_REPLAY")) s.replay = true, s.replay_seed = std::strtoull(v, nullptr, 0);
  return s;
}

// got(k) for every row-major offset k of the reference's root; appends what differs to `msg`.
template <class Get>
void compare(const reference& ref, const evaluation& ev, int root, const char* mode, const dims& got_shape, Get&& got,
             std::string& msg) {
  const dims& s = ev.shape[std::size_t(root)];
  if (got_shape != s) {
    msg += std::string("  ") + mode + ": shape " + to_string(got_shape) + ", want " + to_string(s) + "\n";
    return;
  }
  const double u = ref.nodes[std::size_t(root)].unit;
  int bad = 0;
  std::ostringstream o;
  o.precision(9);
  const auto& want = ev.val[std::size_t(root)];
  for (std::size_t k = 0; k < want.size(); ++k) {
    const double g = got(index_t(k)), v = want[k].v, tol = 2 * want[k].e + 4 * u * std::fabs(v);
    const bool ok = v != v ? g != g : std::isinf(v) ? g == v : std::isinf(tol) || std::fabs(g - v) <= tol;
    if (!ok && bad++ < 4) o << "    at offset " << k << ": got " << g << ", want " << v << " +- " << tol << "\n";
  }
  if (bad) msg += std::string("  ") + mode + ": " + std::to_string(bad) + " of " + std::to_string(want.size()) + " elements differ\n" + o.str();
}

// A destination view of shape s over a sentinel-filled buffer: permuted axes, gaps, negative
// strides, misaligned start.
template <class T, std::size_t R>
struct destination {
  std::vector<T> buf;
  T* ptr = nullptr;
  std::array<index_t, R> shape{}, strides{};
  static constexpr T sentinel = T(12345);

  destination(std::mt19937_64& g, const dims& s) {
    std::array<std::size_t, R> order{};
    for (std::size_t j = 0; j < R; ++j) order[j] = j, shape[j] = s[j];
    std::shuffle(order.begin(), order.end(), g);
    index_t running = 1, lo = 0, hi = 0;
    for (auto j : order) {
      const index_t gap = chance(g, 70) ? 1 : 2;
      strides[j] = (chance(g, 20) ? -1 : 1) * gap * running;
      running *= std::max<index_t>(s[j], 1) * gap;
      if (s[j] > 0) (strides[j] < 0 ? lo : hi) += (s[j] - 1) * strides[j];
    }
    const index_t misalign = pick(g, 0, 3);
    buf.assign(std::size_t(hi - lo + 1 + misalign), sentinel);
    ptr = buf.data() + (misalign - lo);
  }
  auto view() { return fuse::view(ptr, shape, strides); }
  index_t offset_of(index_t k) const {  // row-major offset k -> element offset
    index_t off = 0;
    for (std::size_t d = R; d-- > 0;) off += (k % shape[d]) * strides[d], k /= shape[d];
    return off;
  }
  // Elements outside the view that were written.
  index_t stray_writes(index_t n) const {
    std::vector<bool> inside(buf.size(), false);
    for (index_t k = 0; k < n; ++k) inside[std::size_t(ptr - buf.data() + offset_of(k))] = true;
    index_t stray = 0;
    for (std::size_t i = 0; i < buf.size(); ++i) stray += !inside[i] && buf[i] != sentinel;
    return stray;
  }
};

template <class E>
dims shape_of(const E& e) {
  const auto s = e.shape();
  return dims(s.begin(), s.end());
}

template <std::uint64_t S, std::size_t... K>
auto make_leaves(std::mt19937_64& g, const dims& out, std::index_sequence<K...>) {
  using TT = tree_traits<S>;
  return std::tuple{make_leaf<typename TT::value_type>(g, out, TT::leaf_rank(int(K)), TT::kind(int(K)))...};
}

// Device copies of the leaves' buffers (CUDA): the same layouts, offsets and values.
#ifdef __CUDACC__
template <class T>
fuse::device_tensor<T, 1> device_copy(const leaf_storage<T>& L) {
  fuse::device_tensor<T, 1> d(index_t(L.buf.size()));
  fuse::copy(d, fuse::view(L.buf.data(), index_t(L.buf.size())));
  return d;
}
#endif

template <std::uint64_t S, bool Device, std::size_t... K>
auto leaf_exprs(auto& storage, std::index_sequence<K...>) {
  using TT = tree_traits<S>;
  using T = typename TT::value_type;
  if constexpr (Device) {
#ifdef __CUDACC__
    auto dev = std::tuple{device_copy(std::get<K>(storage))...};
    auto exprs = std::tuple{leaf_expr<T, TT::leaf_rank(int(K)), TT::kind(int(K)), true>(
        std::get<K>(storage), std::get<K>(dev).data() + (std::get<K>(storage).ptr - std::get<K>(storage).buf.data()))...};
    return std::pair{std::move(dev), exprs};
#endif
  } else {
    return std::pair{0, std::tuple{leaf_expr<T, TT::leaf_rank(int(K)), TT::kind(int(K))>(std::get<K>(storage), std::get<K>(storage).ptr)...}};
  }
}

// Evaluates e with exec; calls check(shape, got) with got(k) the k-th row-major element, on the host.
template <bool Device, class E, class Exec, class Check>
void evaluate(const E& expr, const Exec& exec, Check&& check) {
  using V = typename E::value_type;
  if constexpr (E::rank == 0) {
    const V v = fuse::eval(exec, expr);
    check(dims{}, [&](index_t) { return double(v); });
  } else if constexpr (Device) {
#ifdef __CUDACC__
    const auto d = fuse::eval(exec, expr);
    fuse::tensor<V, E::rank> t(d.shape());
    fuse::copy(t, d);
    check(shape_of(t), [&](index_t k) { return double(t.data()[k]); });
#endif
  } else {
    const auto t = fuse::eval(exec, expr);
    check(shape_of(t), [&](index_t k) { return double(t.data()[k]); });
  }
}

// Runs one case of tree S (on the host, or with the CUDA executor when Device); returns a
// description of what failed (empty: passed).
template <std::uint64_t S, bool Device = false>
std::string run_case(std::uint64_t case_seed) {
  using TT = tree_traits<S>;
  std::mt19937_64 g(case_seed);
  const dims out = random_shape(g, TT::rank);
  constexpr auto slots = std::make_index_sequence<leaf_slots>{};
  auto storage = make_leaves<S>(g, out, slots);
  const auto leaves = leaf_exprs<S, Device>(storage, slots);
  const auto& ctx = leaves.second;
  reference ref;
  std::apply([&](const auto&... L) { ref.leaves = {L.ref...}; }, storage);
  // (No structured binding: clang 14 cannot capture one in the lambdas below.)
  const auto tree = gen<S, TT::depth, true>(ctx, ref);
  const auto& expr = tree.expr;
  const int root = tree.id;
  using E = std::remove_cvref_t<decltype(expr)>;
  using V = typename E::value_type;
  evaluation ev = ref.run();
  // An empty result reads nothing, so no reduction inside can fail (core/assign.hpp).
  if (numel(ev.shape[std::size_t(root)]) == 0) ev.empty_max = false;

  std::string msg;
  auto guarded = [&](const char* mode, auto&& body) {
    try {
      body();
      if (ev.empty_max) msg += std::string("  ") + mode + ": no shape_error for a max/min of an empty extent\n";
    } catch (const fuse::shape_error& e) {
      if (!ev.empty_max) msg += std::string("  ") + mode + ": unexpected shape_error: " + e.what() + "\n";
    } catch (const std::exception& e) {
      msg += std::string("  ") + mode + ": unexpected exception: " + e.what() + "\n";
    }
  };
  auto check_eval = [&](const char* mode, auto exec) {
    guarded(mode, [&] {
      evaluate<Device>(expr, exec, [&](const dims& shape, auto&& got) { compare(ref, ev, root, mode, shape, got, msg); });
    });
  };
  if constexpr (Device) {
#ifdef __CUDACC__
    check_eval("cuda fused", fuse::cuda{});
    check_eval("cuda eager", fuse::eager(fuse::cuda{}));
#endif
  } else {
    check_eval("fused", fuse::cpu{});
    if (case_seed & 1) check_eval("fused, 1 thread", fuse::cpu{.threads = 1});
    check_eval("eager", fuse::eager(fuse::cpu{}));
    if constexpr (E::rank > 0) {
      if (case_seed % 3 == 0 && !ev.empty_max) {
        destination<V, E::rank> d(g, ev.shape[std::size_t(root)]);
        guarded("assign to a strided view", [&] {
          fuse::assign(d.view(), expr);
          compare(ref, ev, root, "assign to a strided view", ev.shape[std::size_t(root)],
                  [&](index_t k) { return double(d.ptr[d.offset_of(k)]); }, msg);
          if (const index_t n = d.stray_writes(numel(ev.shape[std::size_t(root)])))
            msg += "  assign to a strided view: " + std::to_string(n) + " elements outside the view written\n";
        });
      }
    }
  }
  if (msg.empty()) return msg;
  std::ostringstream o;
  o << "case seed " << case_seed << " (FUSE_DIFF_REPLAY=" << case_seed << "), tree " << S << ", "
    << (std::is_same_v<typename TT::value_type, float> ? "float" : "double") << " leaves, output shape "
    << to_string(ev.shape[std::size_t(root)]) << "\n  " << ref.describe(root) << "\n";
  for (std::size_t k = 0; k < ref.leaves.size(); ++k) o << "  L" << k << ": " << ref.leaves[k].how << "\n";
  return o.str() + msg;
}

template <std::uint64_t Family, bool Device, std::size_t... I>
constexpr auto family_table(std::index_sequence<I...>) {
  return std::array<std::string (*)(std::uint64_t), sizeof...(I)>{&run_case<mix(Family * 1000 + I), Device>...};
}

// Runs the settings' cases over a family of N trees; each case seed picks its tree.
template <std::uint64_t Family, std::size_t N, bool Device = false>
void run_family(long default_cases = 1700) {
  static constexpr auto table = family_table<Family, Device>(std::make_index_sequence<N>{});
  settings s = read_settings();
  if (!std::getenv("FUSE_DIFF_CASES")) s.cases = default_cases;
  long failures = 0, ran = 0;
  for (long i = 0; i < (s.replay ? 1 : s.cases); ++i) {
    const std::uint64_t case_seed = s.replay ? s.replay_seed : mix(s.seed * 0x100000001ull + std::uint64_t(i) * 7 + Family);
    const std::string failure = table[case_seed % N](case_seed);
    ++ran;
    if (!failure.empty() && failures++ < 5) FAIL_CHECK("family " << Family << ": " << failure);
  }
  INFO("family " << Family << ": " << ran << " cases, " << failures << " failed");
  CHECK(failures == 0);
}

}  // namespace fuse_diff
