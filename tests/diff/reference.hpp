// tests/diff/reference.hpp - the differential test's reference: a runtime tree that mirrors a
// generated expression node for node, evaluated densely in double, bottom-up. Every value carries
// a first-order bound on the error a correct float implementation may make (input errors pushed
// through the op, plus the op's own rounding), so the tolerance follows the ops involved.
#pragma once

#include <fuse/fuse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace fuse_diff {

using fuse::index_t;
using dims = std::vector<index_t>;

// Node kinds. Some are small compositions (e.g. log_shift = log(0.5 + |a|)) that keep every
// generated tree inside the domain of its functions; the generator spells them the same way.
enum class op : int {
  leaf,
  // unary
  neg, abs, square, tanh, sigmoid, sin, cos, erf, relu, gelu, gelu_erf, silu, softplus, exp_clamped,
  expm1_tanh, log_shift, log1p_abs, sqrt_shift, rsqrt_shift, clamp_unit, to_double, to_float,
  // with a constant
  add_c, mul_c, rsub_c, div_c,
  // binary
  add, sub, mul, div_shift, min, max, where_gt, pow_shift,
  // reductions (keep the reduced axis, or all axes giving rank 0)
  sum, mean, max_r, min_r, var, logsumexp,
  // layers
  softmax, log_softmax, rms_norm, layer_norm,
};

inline const char* name(op k) {
  static const char* const names[] = {
      "leaf", "neg", "abs", "square", "tanh", "sigmoid", "sin", "cos", "erf", "relu", "gelu", "gelu_erf", "silu",
      "softplus", "exp_clamped", "expm1_tanh", "log_shift", "log1p_abs", "sqrt_shift", "rsqrt_shift", "clamp_unit",
      "cast<double>", "cast<float>", "+", "*", "c-", "/", "+", "-", "*", "div_shift", "min", "max", "where_gt",
      "pow_shift", "sum", "mean", "max", "min", "var", "logsumexp", "softmax", "log_softmax", "rms_norm",
      "layer_norm"};
  return names[int(k)];
}

inline bool is_unary(op k) { return k >= op::neg && k <= op::to_float; }
inline bool with_constant(op k) { return k >= op::add_c && k <= op::div_c; }
inline bool is_binary(op k) { return k >= op::add && k <= op::pow_shift; }
inline bool is_reduction(op k) { return k >= op::sum && k <= op::logsumexp; }
inline bool is_layer(op k) { return k >= op::softmax; }

// Ulps of rounding an op may add beyond propagating its inputs' errors: 1 for IEEE arithmetic,
// more for the library's vectorised approximations and for small compositions.
inline double rounding_ulps(op k) {
  switch (k) {
    case op::neg: case op::abs: case op::relu: case op::clamp_unit: case op::to_double: case op::min:
    case op::max: case op::where_gt: case op::max_r: case op::min_r:
      return 0;
    case op::square: case op::to_float: case op::add_c: case op::mul_c: case op::rsub_c: case op::div_c:
    case op::add: case op::sub: case op::mul:
      return 1;
    default:
      return 16;
  }
}

// One view's worth of leaf data: the values (as double) and how the view addresses them.
struct leaf_data {
  std::vector<double> values;  // a copy of the leaf's whole buffer
  index_t base = 0;            // element (0, ..., 0) is values[base]
  dims shape, strides;
  std::string how;             // "plain", "transposed", "sliced": for failure messages
};

struct node {
  op kind = op::leaf;
  int a = -1, b = -1, c = -1;  // children (ids of earlier nodes)
  int slot = -1;               // leaf slot
  int axis = 0;                // reduction / layer axis as written (-1 last, 0 first); 99: all axes
  double constant = 0;         // the constant, already rounded to the node's type (or eps)
  double unit = 0;             // unit roundoff of the node's value type
};

struct value {
  double v, e;
};

// The shapes and values of every node, filled bottom-up.
struct evaluation {
  std::vector<dims> shape;
  std::vector<std::vector<value>> val;
  bool empty_max = false;  // a max/min of an empty extent with a non-empty result: shape_error
};

inline index_t numel(const dims& s) {
  index_t n = 1;
  for (auto e : s) n *= e;
  return n;
}

inline dims broadcast(const dims& x, const dims& y) {
  const std::size_t r = std::max(x.size(), y.size());
  dims out(r, 1);
  for (std::size_t i = 0; i < r; ++i) {
    const index_t ex = i < r - x.size() ? 1 : x[i - (r - x.size())];
    const index_t ey = i < r - y.size() ? 1 : y[i - (r - y.size())];
    out[i] = ex == 1 ? ey : ex;  // the generator only builds compatible shapes
  }
  return out;
}

// Dense row-major strides of `s`, as read from an index of rank `r` (trailing axes aligned, an
// extent of 1 reads element 0).
inline dims read_strides(const dims& s, std::size_t r) {
  dims st(r, 0);
  index_t acc = 1;
  for (std::size_t j = s.size(); j-- > 0;) {
    if (s[j] != 1) st[r - s.size() + j] = acc;
    acc *= s[j];
  }
  return st;
}

inline std::string to_string(const dims& s) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
}

// ---------------------------------------------------------------------------------------------
// Scalar semantics, in double. max/min propagate NaN like np.maximum.

inline double nan_max(double x, double y) { return (x != x || y != y) ? std::nan("") : std::max(x, y); }
inline double nan_min(double x, double y) { return (x != x || y != y) ? std::nan("") : std::min(x, y); }

inline double apply(op k, double a, double b = 0, double c = 0) {
  switch (k) {
    case op::neg: return -a;
    case op::abs: return std::fabs(a);
    case op::square: return a * a;
    case op::tanh: return std::tanh(a);
    case op::sigmoid: return 1 / (1 + std::exp(-a));
    case op::sin: return std::sin(a);
    case op::cos: return std::cos(a);
    case op::erf: return std::erf(a);
    case op::relu: return a != a ? a : std::max(a, 0.0);
    case op::gelu: return 0.5 * a * (1 + std::tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)));
    case op::gelu_erf: return 0.5 * a * std::erfc(-a / std::sqrt(2.0));  // (1 + erf cancels for negative a)
    case op::silu: return a / (1 + std::exp(-a));
    case op::softplus: return std::log1p(std::exp(-std::fabs(a))) + std::max(a, 0.0);
    case op::exp_clamped: return std::exp(a != a ? a : std::clamp(a, -5.0, 5.0));
    case op::expm1_tanh: return std::expm1(std::tanh(a));
    case op::log_shift: return std::log(0.5 + std::fabs(a));
    case op::log1p_abs: return std::log1p(std::fabs(a));
    case op::sqrt_shift: return std::sqrt(0.25 + std::fabs(a));
    case op::rsqrt_shift: return 1 / std::sqrt(0.25 + std::fabs(a));
    case op::clamp_unit: return a != a ? a : std::clamp(a, -1.0, 1.0);
    case op::to_double: case op::to_float: return a;
    case op::add_c: return a + c;
    case op::mul_c: return a * c;
    case op::rsub_c: return c - a;
    case op::div_c: return a / c;
    case op::add: return a + b;
    case op::sub: return a - b;
    case op::mul: return a * b;
    case op::div_shift: return a / (1.25 + std::fabs(b));
    case op::min: return nan_min(a, b);
    case op::max: return nan_max(a, b);
    case op::where_gt: return a > b ? a : -b;
    case op::pow_shift: return std::pow(0.5 + std::fabs(a), b != b ? b : std::clamp(b, -2.0, 2.0));
    default: return std::nan("");
  }
}

// An error bound that is NaN (from NaN or infinite values) checks nothing: infinite.
inline double bound(double e) { return e == e ? e : std::numeric_limits<double>::infinity(); }

// Elementwise: the worst change of f over the corners of the inputs' error boxes (doubled, for
// extrema inside the box), plus the op's own rounding.
inline value elementwise(const node& n, value a, value b = {0, 0}) {
  const double v = apply(n.kind, a.v, b.v, n.constant);
  double prop = 0;
  for (int sa = -1; sa <= 1; sa += 2)
    for (int sb = -1; sb <= 1; sb += 2)
      prop = std::max(prop, std::fabs(apply(n.kind, a.v + sa * a.e, b.v + sb * b.e, n.constant) - v));
  if (a.e == 0 && b.e == 0) prop = 0;
  const double scale = std::fabs(v) + std::fabs(a.v) + (is_binary(n.kind) ? std::fabs(b.v) : 0);
  return {v, bound(2 * prop + rounding_ulps(n.kind) * n.unit * scale)};
}

// ---------------------------------------------------------------------------------------------
// Bottom-up evaluation of the whole tree.

struct reference {
  std::vector<node> nodes;
  std::vector<leaf_data> leaves;

  // Calls f(out_offset, out_index) for every element of shape s.
  template <class F>
  static void for_each(const dims& s, F&& f) {
    const index_t n = numel(s);
    dims idx(s.size(), 0);
    for (index_t k = 0; k < n; ++k) {
      f(k, idx);
      for (std::size_t d = s.size(); d-- > 0;)
        if (++idx[d] < s[d]) break;
        else idx[d] = 0;
    }
  }
  static index_t offset(const dims& idx, const dims& st) {
    index_t o = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) o += idx[d] * st[d];
    return o;
  }

  // The reduced axis of a child of rank r, as a dimension number.
  static std::size_t axis_of(int axis, std::size_t r) { return axis < 0 ? r - 1 : 0; }

  evaluation run() const {
    evaluation ev;
    ev.shape.resize(nodes.size());
    ev.val.resize(nodes.size());
    for (std::size_t id = 0; id < nodes.size(); ++id) eval_node(ev, id);
    return ev;
  }

 private:
  void eval_node(evaluation& ev, std::size_t id) const {
    const node& n = nodes[id];
    auto& out = ev.val[id];
    dims& s = ev.shape[id];
    if (n.kind == op::leaf) {
      const leaf_data& L = leaves[std::size_t(n.slot)];
      s = L.shape;
      out.resize(std::size_t(numel(s)));
      for_each(s, [&](index_t k, const dims& i) { out[std::size_t(k)] = {L.values[std::size_t(L.base + offset(i, L.strides))], 0}; });
    } else if (is_unary(n.kind) || with_constant(n.kind)) {
      s = ev.shape[std::size_t(n.a)];
      out.resize(std::size_t(numel(s)));
      for (std::size_t k = 0; k < out.size(); ++k) out[k] = elementwise(n, ev.val[std::size_t(n.a)][k]);
    } else if (is_binary(n.kind)) {
      const dims &sa = ev.shape[std::size_t(n.a)], &sb = ev.shape[std::size_t(n.b)];
      s = broadcast(sa, sb);
      const dims ra = read_strides(sa, s.size()), rb = read_strides(sb, s.size());
      out.resize(std::size_t(numel(s)));
      for_each(s, [&](index_t k, const dims& i) {
        out[std::size_t(k)] = elementwise(n, ev.val[std::size_t(n.a)][std::size_t(offset(i, ra))], ev.val[std::size_t(n.b)][std::size_t(offset(i, rb))]);
      });
    } else if (is_reduction(n.kind)) {
      reduce(ev, id);
    } else {
      layer(ev, id);
    }
  }

  // The elements of child `c` that output element `i` of node shape `s` combines: those of the
  // reduced axes (all axes when axis == 99).
  template <class F>
  void gather(const evaluation& ev, int c, int axis, const dims& i, F&& f) const {
    const dims& cs = ev.shape[std::size_t(c)];
    const auto& cv = ev.val[std::size_t(c)];
    if (axis == 99) {
      for (const auto& x : cv) f(x);
      return;
    }
    const std::size_t ax = axis_of(axis, cs.size());
    const dims st = read_strides(cs, cs.size());
    dims j = i;
    j[ax] = 0;
    const index_t base = offset(j, st);
    index_t step = 1;
    for (std::size_t d = ax + 1; d < cs.size(); ++d) step *= cs[d];
    for (index_t r = 0; r < cs[ax]; ++r) f(cv[std::size_t(base + r * step)]);
  }

  void reduce(evaluation& ev, std::size_t id) const {
    const node& n = nodes[id];
    const dims& cs = ev.shape[std::size_t(n.a)];
    dims& s = ev.shape[id];
    index_t count = numel(cs);
    if (n.axis == 99) {
      s = {};
    } else {
      s = cs;
      const std::size_t ax = axis_of(n.axis, cs.size());
      count = cs[ax];
      s[ax] = 1;
    }
    auto& out = ev.val[id];
    out.resize(std::size_t(numel(s)));
    if ((n.kind == op::max_r || n.kind == op::min_r) && count == 0 && !out.empty()) ev.empty_max = true;
    const double cnt = double(count), u = n.unit;
    for_each(s, [&](index_t k, const dims& i) {
      double sum = 0, abs_sum = 0, err = 0, emax = 0;
      double mx = -std::numeric_limits<double>::infinity(), mn = -mx;
      bool nan = false;
      gather(ev, n.a, n.axis, i, [&](value x) {
        sum += x.v, abs_sum += std::fabs(x.v), err += x.e, emax = std::max(emax, x.e);
        nan |= x.v != x.v;
        mx = std::max(mx, x.v), mn = std::min(mn, x.v);
      });
      value r{};
      switch (n.kind) {
        case op::sum: r = {sum, err + cnt * u * abs_sum}; break;
        case op::mean: r = {sum / cnt, (err + cnt * u * abs_sum) / cnt + u * std::fabs(sum / cnt)}; break;
        case op::max_r: r = {nan ? std::nan("") : mx, emax}; break;
        case op::min_r: r = {nan ? std::nan("") : mn, emax}; break;
        case op::var: {
          // Two-pass, as the library: the mean's error shifts every deviation.
          const double m = sum / cnt, em = (err + cnt * u * abs_sum) / cnt + u * std::fabs(m);
          double sq = 0, esq = 0;
          gather(ev, n.a, n.axis, i, [&](value x) {
            const double d = x.v - m, ed = x.e + em + u * (std::fabs(x.v) + std::fabs(m));
            sq += d * d, esq += 2 * std::fabs(d) * ed + ed * ed;
          });
          r = {sq / cnt, (esq + 2 * cnt * u * sq) / cnt + u * sq / cnt};
          break;
        }
        case op::logsumexp: {
          const double shift = std::isinf(mx) || count == 0 ? 0 : mx;
          double se = 0;
          gather(ev, n.a, n.axis, i, [&](value x) { se += std::exp(x.v - shift); });
          const double v = shift + std::log(se);
          r = {v, emax + (rounding_ulps(n.kind) + cnt) * u * 2 + 2 * u * (std::fabs(v) + std::fabs(shift))};
          break;
        }
        default: break;
      }
      if (nan) r.v = std::nan("");
      r.e = bound(r.e);
      out[std::size_t(k)] = r;
    });
  }

  // softmax / log_softmax along n.axis of child a; rms_norm(a, b) and layer_norm(a, b, c) along
  // the last axis of a, then broadcast with gamma (b) and beta (c).
  void layer(evaluation& ev, std::size_t id) const {
    const node& n = nodes[id];
    const dims& xs = ev.shape[std::size_t(n.a)];
    const auto& xv = ev.val[std::size_t(n.a)];
    const std::size_t ax = axis_of(n.kind == op::softmax || n.kind == op::log_softmax ? n.axis : -1, xs.size());
    dims rows = xs;  // the per-row statistics' shape
    if (!rows.empty()) rows[ax] = 1;
    if ((n.kind == op::softmax || n.kind == op::log_softmax) && xs[ax] == 0 && numel(rows) != 0) ev.empty_max = true;
    const double len = double(xs[ax]), u = n.unit, k_ulp = rounding_ulps(n.kind);
    // Per row: the normalised value (and its error) of every element of x.
    std::vector<value> normed(xv.size());
    for_each(rows, [&](index_t, const dims& i) {
      std::vector<std::size_t> at;
      const dims st = read_strides(xs, xs.size());
      dims j = i;
      index_t step = 1;
      for (std::size_t d = ax + 1; d < xs.size(); ++d) step *= xs[d];
      for (index_t r = 0; r < xs[ax]; ++r) at.push_back(std::size_t(offset(j, st) + r * step));
      double mx = -std::numeric_limits<double>::infinity(), sum = 0, abs_sum = 0, sq = 0, emax = 0;
      for (auto p : at) mx = std::max(mx, xv[p].v), sum += xv[p].v, abs_sum += std::fabs(xv[p].v), sq += xv[p].v * xv[p].v, emax = std::max(emax, xv[p].e);
      if (n.kind == op::softmax || n.kind == op::log_softmax) {
        double se = 0;
        for (auto p : at) se += std::exp(xv[p].v - mx);
        for (auto p : at) {
          const double w = std::exp(xv[p].v - mx) / se;
          if (n.kind == op::softmax) normed[p] = {w, w * std::expm1(2 * emax) + (k_ulp + len) * u * w};
          else normed[p] = {xv[p].v - mx - std::log(se), xv[p].e + emax + 2 * (k_ulp + len) * u + 2 * u * (std::fabs(xv[p].v) + std::fabs(mx))};
        }
      } else if (n.kind == op::rms_norm) {
        const double r = std::sqrt(sq / len + n.constant), mean_abs = abs_sum / len;
        for (auto p : at) {
          const double x = xv[p].v, nv = x / r;
          const double prop = emax / r * (1 + std::fabs(x) * mean_abs / (r * r));
          normed[p] = {nv, 2 * prop + (k_ulp + len) * u * std::fabs(nv)};
        }
      } else {  // layer_norm
        const double m = sum / len;
        double vs = 0, dev_abs = 0;
        for (auto p : at) vs += (xv[p].v - m) * (xv[p].v - m), dev_abs += std::fabs(xv[p].v - m);
        const double s = std::sqrt(vs / len + n.constant), mean_dev = dev_abs / len;
        for (auto p : at) {
          const double d = xv[p].v - m, nv = d / s;
          const double ein = 2 * emax + len * u * abs_sum / len + u * (std::fabs(xv[p].v) + std::fabs(m));
          const double prop = ein / s * (1 + std::fabs(d) * mean_dev / (s * s));
          normed[p] = {nv, 2 * prop + (k_ulp + len) * u * std::fabs(nv)};
        }
      }
    });
    dims& s = ev.shape[id];
    auto& out = ev.val[id];
    if (n.kind == op::softmax || n.kind == op::log_softmax) {
      s = xs;
      out = normed;
      for (auto& x : out) x.e = bound(x.e);
      return;
    }
    // Times gamma, plus beta (layer_norm), broadcasting.
    s = broadcast(xs, ev.shape[std::size_t(n.b)]);
    if (n.kind == op::layer_norm) s = broadcast(s, ev.shape[std::size_t(n.c)]);
    const dims rx = read_strides(xs, s.size()), rg = read_strides(ev.shape[std::size_t(n.b)], s.size());
    const dims rb = n.kind == op::layer_norm ? read_strides(ev.shape[std::size_t(n.c)], s.size()) : dims{};
    out.resize(std::size_t(numel(s)));
    for_each(s, [&](index_t k, const dims& i) {
      const value x = normed[std::size_t(offset(i, rx))], g = ev.val[std::size_t(n.b)][std::size_t(offset(i, rg))];
      value r{x.v * g.v, std::fabs(g.v) * x.e + std::fabs(x.v) * g.e + x.e * g.e + u * std::fabs(x.v * g.v)};
      if (n.kind == op::layer_norm) {
        const value b = ev.val[std::size_t(n.c)][std::size_t(offset(i, rb))];
        r = {r.v + b.v, r.e + b.e + u * std::fabs(r.v + b.v)};
      }
      r.e = bound(r.e);
      out[std::size_t(k)] = r;
    });
  }

 public:
  // The tree as text, e.g. "softmax(tanh(L0) + L1 * 0.75, axis -1)".
  std::string describe(int id) const {
    const node& n = nodes[std::size_t(id)];
    std::ostringstream o;
    if (n.kind == op::leaf) o << "L" << n.slot;
    else if (with_constant(n.kind)) o << "(" << describe(n.a) << " " << name(n.kind) << " " << n.constant << ")";
    else if (n.kind == op::add || n.kind == op::sub || n.kind == op::mul) o << "(" << describe(n.a) << " " << name(n.kind) << " " << describe(n.b) << ")";
    else {
      o << name(n.kind) << "(" << describe(n.a);
      if (n.b >= 0) o << ", " << describe(n.b);
      if (n.c >= 0) o << ", " << describe(n.c);
      if (is_reduction(n.kind) || n.kind == op::softmax || n.kind == op::log_softmax)
        o << (n.axis == 99 ? ", all axes" : n.axis < 0 ? ", axis -1" : ", axis 0");
      o << ")";
    }
    return o.str();
  }
};

}  // namespace fuse_diff
