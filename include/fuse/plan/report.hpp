// fuse/plan/report.hpp - fuse::plan: the kernels an executor will run for an expression, and the
// traffic and arithmetic the cost model predicts for its run-time shapes. Nothing is executed.
#pragma once

#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "fuse/backend/eager.hpp"
#include "fuse/core/generators.hpp"
#include "fuse/plan/fusion.hpp"

namespace fuse {

// One kernel of a plan.
struct kernel_report {
  std::string what;  // e.g. "elementwise gelu(add(x0, x1))"
  index_t bytes_read = 0;
  index_t bytes_written = 0;
  index_t flops = 0;
};

struct plan_report {
  std::string executor;  // "fused" or "eager"
  std::size_t kernels = 0;
  index_t bytes_read = 0;
  index_t bytes_written = 0;
  index_t flops = 0;
  std::vector<kernel_report> lines;

  void add(kernel_report k) {
    ++kernels;
    bytes_read += k.bytes_read;
    bytes_written += k.bytes_written;
    flops += k.flops;
    lines.push_back(std::move(k));
  }
};

namespace detail {

inline std::string format_bytes(index_t b) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1);
  if (b >= (index_t(1) << 30)) s << double(b) / double(index_t(1) << 30) << " GiB";
  else if (b >= (index_t(1) << 20)) s << double(b) / double(index_t(1) << 20) << " MiB";
  else if (b >= 1024) s << double(b) / 1024.0 << " KiB";
  else s << b << " B";
  return s.str();
}

// Names leaves x0, x1, ... by their memory, and sums the distinct bytes they occupy.
struct leaf_table {
  std::map<const void*, std::pair<std::size_t, index_t>> seen;  // data -> (number, bytes)

  std::string name(const leaf_info& l) {
    auto [it, fresh] = seen.try_emplace(l.data, seen.size(), l.bytes);
    if (!fresh && l.bytes > it->second.second) it->second.second = l.bytes;
    return "x" + std::to_string(it->second.first);
  }
  index_t bytes() const {
    index_t b = 0;
    for (auto& [p, v] : seen) b += v.second;
    return b;
  }
};

template <class E>
std::string describe(const E& e, leaf_table& leaves) {
  if constexpr (requires { e.args; }) {
    std::string s = std::string(decltype(e.f)::name) + "(";
    bool first = true;
    for_each(e.args, [&](const auto& a) {
      s += (first ? "" : ", ") + describe(a, leaves);
      first = false;
    });
    return s + ")";
  } else if constexpr (requires { e.value; E::weak; }) {
    std::ostringstream o;
    o << +e.value;
    return o.str();
  } else if constexpr (E::kind == node_kind::generator) {
    std::string s = std::string(E::name) + "(";
    e.visit_leaves([&](const leaf_info& l) { s += (s.back() == '(' ? "" : ", ") + leaves.name(l); });
    return s + ")";
  } else {
    std::string s;
    e.visit_leaves([&](const leaf_info& l) { s = leaves.name(l); });
    return s;
  }
}

template <class E>
index_t count_flops(const E& e) {
  index_t f = 0;
  if constexpr (requires { e.args; }) {
    f += index_t(decltype(e.f)::flops) * shape_size(e.shape());
    for_each(e.args, [&](const auto& a) { f += count_flops(a); });
  }
  return f;
}

template <class E>
kernel_report fused_kernel(const E& e) {
  leaf_table leaves;
  kernel_report k;
  k.what = std::string(E::kind == node_kind::elementwise ? "elementwise " : "copy ") + describe(e, leaves);
  k.bytes_read = leaves.bytes();
  k.bytes_written = shape_size(e.shape()) * index_t(sizeof(typename E::value_type));
  k.flops = count_flops(e);
  return k;
}

// Eager: one kernel per interior node, children first; each writes a temporary t<n>.
template <class E>
std::string eager_kernels(const E& e, plan_report& p, leaf_table& names) {
  if constexpr (requires { e.args; }) {
    leaf_table reads;  // this kernel's own distinct inputs
    index_t temp_bytes = 0;
    std::string args;
    for_each(e.args, [&](const auto& a) {
      using A = std::remove_cvref_t<decltype(a)>;
      std::string n;
      if constexpr (A::kind == node_kind::elementwise) {
        n = eager_kernels(a, p, names);
        temp_bytes += shape_size(a.shape()) * index_t(sizeof(typename A::value_type));
      } else {
        n = describe(a, names);
        describe(a, reads);
      }
      args += (args.empty() ? "" : ", ") + n;
    });
    kernel_report k;
    const std::string out = "t" + std::to_string(p.kernels);
    k.what = std::string(decltype(e.f)::name) + "(" + args + ") -> " + out;
    k.bytes_read = reads.bytes() + temp_bytes;
    k.bytes_written = shape_size(e.shape()) * index_t(sizeof(typename E::value_type));
    k.flops = index_t(decltype(e.f)::flops) * shape_size(e.shape());
    p.add(std::move(k));
    return out;
  } else {
    return describe(e, names);
  }
}

}  // namespace detail

// The plan `exec` would run for `e` (fuse::eager(exec): one kernel per interior node).
template <class Exec, class E>
  requires expression<E> || scalar<E>
plan_report plan(const Exec&, const E& expr) {
  const auto e = detail::hold_operand(expr);
  using H = std::remove_cvref_t<decltype(e)>;
  plan_report p;
  if constexpr (detail::is_eager_v<Exec>) {
    p.executor = "eager";
    detail::leaf_table names;
    detail::eager_kernels(e, p, names);
    if (p.kernels == 0) p.add(detail::fused_kernel(e));
  } else {
    p.executor = "fused";
    static_assert(kernels_v<H> == 1, "fuse::plan: multi-kernel plans arrive with reductions");
    p.add(detail::fused_kernel(e));
  }
  return p;
}

template <expression E>
plan_report plan(const E& e) {
  plan_report p = plan(cpu{}, e);
  return p;
}

inline std::ostream& operator<<(std::ostream& os, const plan_report& p) {
  os << p.executor << " plan: " << p.kernels << (p.kernels == 1 ? " kernel" : " kernels") << ", read "
     << detail::format_bytes(p.bytes_read) << ", write " << detail::format_bytes(p.bytes_written) << ", "
     << p.flops << " flops\n";
  for (std::size_t i = 0; i < p.lines.size(); ++i) {
    const auto& k = p.lines[i];
    os << "  kernel " << i << ": " << k.what << "  [read " << detail::format_bytes(k.bytes_read) << ", write "
       << detail::format_bytes(k.bytes_written) << ", " << k.flops << " flops]\n";
  }
  return os;
}

}  // namespace fuse
