// The numbers of fuse::plan (spec section 5), computed from the shapes in each test: bytes_read
// counts the distinct bytes of the leaves (a leaf used many times once, a broadcast row once, a
// stride-0 view its real bytes, take the rows it gathers), bytes_written the output, flops equal
// between the fused and the eager plan; the eager plan also reads and writes its temporaries.
// And the printed plan: one line per kernel.
#include "ops/ops_support.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

namespace {
using fuse::index_t;
using fuse::shape_t;

template <class T>
constexpr index_t sz = index_t(sizeof(T));

// Fused and eager plans of e: the same flops (> 0 when e has a node), and the plan of an explicit
// executor equals the default one.
template <class E>
std::pair<fuse::plan_report, fuse::plan_report> plans(const E& e) {
  auto fused = fuse::plan(e);
  auto eager = fuse::plan(fuse::eager(fuse::cpu{}), e);
  const auto one = fuse::plan(fuse::cpu{.threads = 1}, e);
  CHECK(one.kernels == fused.kernels);
  CHECK(one.bytes_read == fused.bytes_read);
  CHECK(one.bytes_written == fused.bytes_written);
  CHECK(one.flops == fused.flops);
  CHECK(fused.flops == eager.flops);
  CHECK(fused.kernels == fuse::kernels_v<E>);
  CHECK(eager.kernels == fuse::eager_kernels_v<E>);
  return {fused, eager};
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  if (!s.empty() && s.back() != '\n') ++n;
  return n;
}

}  // namespace

TEST_CASE("plan numbers: bias + gelu, fused and eager", "[plan][bytes]") {
  const index_t m = 37, n = 129;
  fuse::tensor<float, 2> x(m, n);
  fuse::tensor<float, 1> bias(n);
  auto e = fuse::gelu(x + bias);
  auto [fused, eager] = plans(e);
  const index_t X = m * n * sz<float>, B = n * sz<float>;
  CHECK(fused.kernels == 1);
  CHECK(fused.bytes_read == X + B);  // the bias row counts once, not m times
  CHECK(fused.bytes_written == X);
  CHECK(fused.flops > 0);
  // eager: t0 = x + bias (reads x, bias; writes t0); t1 = gelu(t0) (reads t0; writes t1).
  CHECK(eager.kernels == 2);
  CHECK(eager.bytes_read == X + B + X);
  CHECK(eager.bytes_written == X + X);
  // More work per element: more flops; twice the elements: twice the flops.
  CHECK(fuse::plan(fuse::gelu(x + bias)).flops > fuse::plan(x + bias).flops);
  fuse::tensor<float, 2> x2(2 * m, n);
  CHECK(fuse::plan(fuse::gelu(x2 + bias)).flops == 2 * fused.flops);
}

TEST_CASE("plan numbers: a leaf used five times counts once", "[plan][bytes]") {
  const index_t m = 3, n = 1001;
  fuse::tensor<double, 2> x(m, n);
  auto e = x * x * x * x * x;  // 4 multiplications
  auto [fused, eager] = plans(e);
  const index_t X = m * n * sz<double>;
  CHECK(fused.bytes_read == X);
  CHECK(fused.bytes_written == X);
  // eager: x * x reads x once; each later product reads its temporary and x.
  CHECK(eager.kernels == 4);
  CHECK(eager.bytes_read == X + 3 * (X + X));
  CHECK(eager.bytes_written == 4 * X);
  // Through views of the same memory it is still one leaf's bytes.
  fuse::tensor<float, 2> sq(n, n);
  auto [f2, e2] = plans(sq + fuse::transpose(sq) * sq);
  CHECK(f2.bytes_read == n * n * sz<float>);
  CHECK(f2.bytes_written == n * n * sz<float>);
  CHECK(e2.bytes_read == n * n * sz<float> + (n * n * sz<float> + n * n * sz<float>));
}

TEST_CASE("plan numbers: broadcast rows, columns, stride-0 views and slices count their own bytes", "[plan][bytes]") {
  const index_t m = 64, n = 33;
  fuse::tensor<float, 2> x(m, n), row2(1, n), col(m, 1);
  fuse::tensor<float, 1> row(n);
  const index_t X = m * n * sz<float>;
  {
    auto [f, e] = plans(x + row2 + col);
    CHECK(f.bytes_read == X + n * sz<float> + m * sz<float>);
    CHECK(f.bytes_written == X);
  }
  {
    // A bias read as an (m, n) view with stride 0 on axis 0: its n real elements.
    std::vector<float> mem(static_cast<std::size_t>(n), 1.f);
    auto v = fuse::view(mem.data(), shape_t<2>{m, n}, shape_t<2>{0, 1});
    auto [f, e] = plans(x * v);
    CHECK(f.bytes_read == X + n * sz<float>);
    // One element seen everywhere: strides {0, 0}.
    auto one = fuse::view(mem.data(), shape_t<2>{m, n}, shape_t<2>{0, 0});
    auto [f1, e1] = plans(x * one);
    CHECK(f1.bytes_read == X + sz<float>);
    // A stride-0 view alone: a copy kernel reading n elements, writing m * n.
    auto [f2, e2] = plans(v);
    CHECK(f2.kernels == 1);
    CHECK(f2.bytes_read == n * sz<float>);
    CHECK(f2.bytes_written == X);
  }
  {
    // A slice of every other column: m * ceil(n / 2) elements; of the first rows: their bytes.
    auto [f, e] = plans(fuse::slice<1>(x, 0, n, 2) * 2.f);
    CHECK(f.bytes_read == m * ((n + 1) / 2) * sz<float>);
    CHECK(f.bytes_written == m * ((n + 1) / 2) * sz<float>);
    auto [f2, e2] = plans(fuse::slice<0>(x, 0, 5) + row);
    CHECK(f2.bytes_read == 5 * n * sz<float> + n * sz<float>);
    CHECK(f2.bytes_written == 5 * n * sz<float>);
  }
  {
    // Overlapping views of one buffer count their bytes once: x[1:] - x[:-1] reads x, and a
    // sliding window of 3 over 6 elements reads 6. Every-other-column slices side by side read x.
    auto [f, e] = plans(fuse::slice<0>(x, 1, m) - fuse::slice<0>(x, 0, m - 1));
    CHECK(f.bytes_read == X);
    std::vector<float> six(6, 1.f);
    auto windows = fuse::view(six.data(), shape_t<2>{4, 3}, shape_t<2>{1, 1});
    auto [f2, e2] = plans(windows * 2.f);
    CHECK(f2.bytes_read == 6 * sz<float>);
    // A window whose 9 elements fill their 9-element span yet meet: offsets {0, 2, 4, 6, 8}.
    std::vector<float> nine(9, 1.f);
    auto meeting = fuse::view(nine.data(), shape_t<2>{3, 3}, shape_t<2>{2, 2});
    auto [f9, e9] = plans(meeting * 2.f);
    CHECK(f9.bytes_read == 5 * sz<float>);
    auto [f3, e3] = plans(fuse::slice<1>(x, 0, n - 1, 2) + fuse::slice<1>(x, 1, n, 2));
    CHECK(f3.bytes_read == m * (n - 1) * sz<float>);  // the two slices: distinct, within x
    // Partly overlapping sparse slices count their union: columns {0, 1, 2} and {0, 2, 4} of
    // [8, 6] are 4 columns (the larger footprint gave 3), {1, 2, 3} and {3, 4, 5} are 5 (the
    // byte range from (0, 1) to (7, 5) gave 47 elements).
    fuse::tensor<float, 2> z(8, 6);
    auto [f5, e5] = plans(fuse::slice<1>(z, 0, 3) + fuse::slice<1>(z, 0, 6, 2));
    CHECK(f5.bytes_read == 8 * 4 * sz<float>);
    auto [f6, e6] = plans(fuse::slice<1>(z, 1, 4) + fuse::slice<1>(z, 3, 6));
    CHECK(f6.bytes_read == 8 * 5 * sz<float>);
    auto [f7, e7] = plans(z + fuse::slice<1>(z, 2, 3));  // z covers the (sparse) column
    // Two neighbouring columns of a wide matrix: 16 elements, counted without a map of the span
    // (the storage is never touched: a plan reads no data).
    fuse::tensor<float, 2> wide(8, index_t(1) << 22);
    auto [f8, e8] = plans(fuse::slice<1>(wide, 0, 1) + fuse::slice<1>(wide, 1, 2));
    CHECK(f8.bytes_read == 16 * sz<float>);
    CHECK(f7.bytes_read == 8 * 6 * sz<float>);
    // Disjoint buffers still add: x and a slice of another tensor.
    fuse::tensor<float, 2> y(m, n);
    auto [f4, e4] = plans(x + fuse::slice<0>(y, 0, m));
    CHECK(f4.bytes_read == 2 * X);
  }
  {
    // Scalars and generators (full, iota) have no bytes.
    auto [f, e] = plans(x * 2.f + fuse::full(x.shape(), 1.f) + fuse::cast<float>(fuse::iota<1>(x.shape())));
    CHECK(f.bytes_read == X);
    CHECK(f.bytes_written == X);
  }
}

TEST_CASE("plan numbers: take counts the rows it gathers", "[plan][bytes][take]") {
  const index_t vocab = 1000, d = 24, k = 7;
  fuse::tensor<float, 2> table(vocab, d);
  fuse::tensor<std::int32_t, 1> idx(k);
  for (index_t i = 0; i < k; ++i) idx(i) = std::int32_t((i * 331) % vocab);
  fuse::tensor<float, 1> bias(d);
  {
    auto [f, e] = plans(fuse::take(table, idx) * 2.f + bias);
    CHECK(f.bytes_read == k * d * sz<float> + k * sz<std::int32_t> + d * sz<float>);
    CHECK(f.bytes_written == k * d * sz<float>);
    // eager: t0 = take * 2 reads the same rows and indices; t1 = t0 + bias.
    CHECK(e.kernels == 2);
    CHECK(e.bytes_read == (k * d * sz<float> + k * sz<std::int32_t>) + (k * d * sz<float> + d * sz<float>));
    CHECK(e.bytes_written == 2 * k * d * sz<float>);
  }
  {
    // Indices of rank 2 and another integer type: indices.size() rows, even when repeated.
    fuse::tensor<std::int64_t, 2> idx2(3, 4);
    for (index_t i = 0; i < 12; ++i) idx2.data()[i] = i % 2;  // rows 0 and 1, six times each
    auto e = fuse::take(table, idx2);
    REQUIRE(e.shape() == shape_t<3>{3, 4, d});
    auto [f, eg] = plans(e);
    CHECK(f.bytes_read == 12 * d * sz<float> + 12 * sz<std::int64_t>);
    CHECK(f.bytes_written == 12 * d * sz<float>);
  }
  {
    // Two gathers from one table with their own indices add their rows (the second merged into
    // the first); the same gather used twice counts once.
    fuse::tensor<std::int32_t, 1> other(k);
    for (index_t i = 0; i < k; ++i) other(i) = std::int32_t(vocab - 1 - i);
    auto [f, e] = plans(fuse::take(table, idx) + fuse::take(table, other));
    CHECK(f.bytes_read == 2 * (k * d * sz<float> + k * sz<std::int32_t>));
    auto [f2, e2] = plans(fuse::take(table, idx) * fuse::take(table, idx));
    CHECK(f2.bytes_read == k * d * sz<float> + k * sz<std::int32_t>);
  }
}

TEST_CASE("plan numbers: take and a view of the same table add their rows", "[plan][bytes][take]") {
  // The gathered rows count once per index (no bound is known), the view its own rows, wherever
  // the view starts (a view from row 0 was folded into the gather until 2026-12-03: 140 B).
  const index_t d = 6;
  fuse::tensor<float, 2> table(10, d);
  fuse::tensor<std::int32_t, 1> idx(5);
  for (index_t i = 0; i < 5; ++i) idx(i) = std::int32_t(7 + i % 3);
  for (index_t start : {0, 1}) {
    auto [f, e] = plans(fuse::take(table, idx) + fuse::slice<0>(table, start, start + 5));
    CHECK(f.bytes_read == 5 * d * sz<float> + 5 * d * sz<float> + 5 * sz<std::int32_t>);
  }
}

TEST_CASE("plan numbers: a reduction counts once only where it is the same", "[plan][flops][reduce]") {
  // Reductions that print alike but differ (a view's layout, a cast's type, a constant beyond
  // six digits) are two phases; plans() checks that their flops equal the eager plan's. Until
  // 2026-12-03 the printed text was compared and the second was dropped.
  const index_t n = 5;
  fuse::tensor<float, 2> x(n, n);
  auto phases = [](const fuse::plan_report& p) {
    const std::string& w = p.lines.at(0).what;
    return w.substr(0, w.find(']') + 1);
  };
  {
    auto [f, e] = plans(fuse::max(x, fuse::axis<-1>) + fuse::max(fuse::transpose(x), fuse::axis<-1>));
    CHECK(phases(f) == "row kernel, 2 phases [max, max]");
    CHECK(f.flops == 2 * n * n + n);
  }
  {
    auto [f, e] = plans(fuse::sum(fuse::cast<double>(x), fuse::axis<-1>) + fuse::sum(fuse::cast<int>(x), fuse::axis<-1>));
    CHECK(phases(f) == "row kernel, 2 phases [sum, sum]");
  }
  {
    auto [f, e] = plans(fuse::sum(x * 1.0000001f, fuse::axis<-1>) - fuse::sum(x * 1.0000002f, fuse::axis<-1>));
    CHECK(phases(f) == "row kernel, 2 phases [sum, sum]");
  }
  {
    // The same reduction twice: one phase (the eager plan computes it twice).
    const auto f = fuse::plan(fuse::max(x, fuse::axis<-1>) + fuse::max(x, fuse::axis<-1>));
    CHECK(phases(f) == "row kernel, 1 phase [max]");
    CHECK(f.flops == n * n + n);
  }
}

TEST_CASE("a printed plan names each leaf once for all its kernels", "[plan][print]") {
  // Each kernel named its leaves from x0 on: kernel 1 called y "x0" too.
  fuse::tensor<float, 2> x(4, 6), y(4, 6);
  const auto p = fuse::plan(fuse::sum(x, fuse::axis<0>) + fuse::sum(y, fuse::axis<1>));
  REQUIRE(p.kernels == 2);
  CHECK(p.lines[0].what.find("sum(x0)") != std::string::npos);
  CHECK(p.lines[1].what.find("sum(x1)") != std::string::npos);
  // A full reduction lifted to rank 1 prints as the reduction (index arithmetic).
  const auto q = fuse::plan(fuse::unsqueeze<0>(fuse::sum(x)));
  CHECK(q.lines.at(0).what == "row kernel, 1 phase [sum]: sum(x0)");
}

TEST_CASE("plan numbers: output and input types set the bytes", "[plan][bytes][types]") {
  const index_t n = 1000003;
  fuse::tensor<float, 1> a(n), b(n);
  fuse::tensor<std::int32_t, 1> k(n);
  {
    auto [f, e] = plans(a < b);  // bool out
    CHECK(f.bytes_read == 2 * n * sz<float>);
    CHECK(f.bytes_written == n * sz<bool>);
  }
  {
    auto [f, e] = plans(fuse::exp(k));  // int32 in, double out
    CHECK(f.bytes_read == n * sz<std::int32_t>);
    CHECK(f.bytes_written == n * sz<double>);
  }
  {
    // where(a < b, a, 0): eager t0 = a < b (bool temporary), t1 = where(t0, a, 0).
    auto [f, e] = plans(fuse::where(a < b, a, 0.f));
    CHECK(f.bytes_read == 2 * n * sz<float>);
    CHECK(e.bytes_read == 2 * n * sz<float> + (n * sz<bool> + n * sz<float>));
    CHECK(e.bytes_written == n * sz<bool> + n * sz<float>);
  }
  {
    // A causal mask from iota: only x is read.
    fuse::tensor<float, 2> x(50, 50);
    const auto s = x.shape();
    auto [f, e] = plans(fuse::where(fuse::iota<1>(s) <= fuse::iota<0>(s), x, fuse::full(s, -1e9f)));
    CHECK(f.bytes_read == 2500 * sz<float>);
    CHECK(f.bytes_written == 2500 * sz<float>);
    CHECK(e.kernels == 2);
    CHECK(e.bytes_read == 2500 * sz<bool> + 2500 * sz<float>);
  }
}

TEST_CASE("plan numbers: map and the hand-written GELU", "[plan][bytes][gelu]") {
  const index_t m = 8, n = 1024;
  fuse::tensor<float, 2> x(m, n);
  fuse::tensor<float, 1> bias(n);
  const index_t X = m * n * sz<float>, B = n * sz<float>;
  {
    auto [f, e] = plans(fuse::map([](float a, float b) { return a * b; }, x, bias));
    CHECK(f.bytes_read == X + B);
    CHECK(f.bytes_written == X);
    CHECK(f.flops > 0);
  }
  {
    auto z = x + bias;
    auto hand = 0.5f * z * (1.f + fuse::tanh(0.7978845608f * (z + 0.044715f * z * z * z)));
    auto [f, e] = plans(hand);
    CHECK(f.kernels == 1);
    CHECK(f.bytes_read == X + B);  // z's leaves once, not five times
    CHECK(f.bytes_written == X);
    CHECK(f.flops > 0);
    // Every eager kernel writes an (m, n) float temporary and reads more than the fused pass.
    CHECK(e.bytes_written == index_t(e.kernels) * X);
    CHECK(e.bytes_read > f.bytes_read + index_t(e.kernels - 1) * X);
  }
}

TEST_CASE("plan numbers: var and logsumexp, one eager kernel each", "[plan][bytes][reduce]") {
  const index_t m = 9, n = 33;
  fuse::tensor<float, 2> x(m, n), y(m, n);
  ops_test::fill_random(x, -2, 2);
  ops_test::fill_random(y, -2, 2);
  const index_t X = m * n * sz<float>, C = m * sz<float>;
  {
    auto [fused, eager] = plans(fuse::var(x, fuse::axis<-1>));
    CHECK(fused.bytes_read == X);
    REQUIRE(eager.kernels == 1);
    CHECK(eager.lines[0].what.starts_with("var(x0)"));
    CHECK(eager.bytes_read == X);
    CHECK(eager.bytes_written == C);
  }
  plans(fuse::logsumexp(x));
  plans(fuse::var(x, fuse::axis<0>));
  {
    // t0 = x + y; t1 = logsumexp(t0): reads the temporary, writes one value per row. Eager adds
    // once; the fused kernel adds in each phase that reads its operand (max, then sum).
    auto e = fuse::logsumexp(x + y, fuse::axis<-1>);
    const auto fused = fuse::plan(e);
    const auto eager = fuse::plan(fuse::eager(fuse::cpu{}), e);
    REQUIRE(eager.kernels == 2);
    CHECK(eager.kernels == fuse::eager_kernels_v<decltype(e)>);
    CHECK(eager.lines[0].flops == m * n);
    CHECK(eager.lines[1].what.starts_with("logsumexp(t0)"));
    CHECK(eager.lines[1].bytes_read == X);
    CHECK(eager.lines[1].bytes_written == C);
    CHECK(fused.bytes_read == 2 * X);
    CHECK(fused.flops == eager.flops + m * n);
  }
}

TEST_CASE("a printed plan has one line per kernel", "[plan][print]") {
  const index_t m = 4, n = 16;
  fuse::tensor<float, 2> x(m, n);
  fuse::tensor<float, 1> bias(n);
  auto e = fuse::gelu(x + bias);
  for (const auto& p : {fuse::plan(e), fuse::plan(fuse::eager(fuse::cpu{}), e), fuse::plan(fuse::eager(fuse::cpu{}), fuse::where(x > 0, x, 0.1f * x))}) {
    std::ostringstream os;
    os << p;
    const std::string text = os.str();
    INFO(text);
    REQUIRE(!text.empty());
    CHECK(text.back() == '\n');
    // One line per kernel, and at most one summary line above them.
    const std::size_t lines = count_lines(text);
    CHECK((lines == p.kernels || lines == p.kernels + 1));
  }
  // Each eager kernel line names its own operation once.
  std::ostringstream os;
  os << fuse::plan(fuse::eager(fuse::cpu{}), e);
  const std::string text = os.str();
  CHECK(text.find("gelu") != std::string::npos);
  CHECK(text.find("add") != std::string::npos);
  CHECK(text.find("gelu") == text.rfind("gelu"));
}

TEST_CASE("kernels run in the order the plan lists them, fused and eager", "[plan][order]") {
  // Each map records its tag at its first element, so `order` is the order in which the kernels
  // ran. (A call's arguments are evaluated in no set order, and GCC goes right to left: the
  // executors build their nodes with braces.)
  fuse::tensor<float, 2> b(3, 4), c(3, 4);
  for (index_t i = 0; i < 12; ++i) b.data()[i] = float(i) + 1, c.data()[i] = float(i) - 20;
  std::vector<int> order;
  auto tag = [&order](int t) {
    return [&order, t](float v) {
      if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
      return v;
    };
  };
  // Two reductions that leave the (elementwise) group, each a kernel of its own.
  auto e = fuse::sum(fuse::map(tag(1), b), fuse::axis<0>) + fuse::mean(fuse::map(tag(2), c), fuse::axis<0>);
  const auto p = fuse::plan(e);
  REQUIRE(p.kernels == 3);
  CHECK(p.lines[0].what.starts_with("row kernel, 1 phase [sum]"));
  CHECK(p.lines[1].what.starts_with("row kernel, 1 phase [mean]"));
  const auto y = fuse::eval(fuse::cpu{1}, e);
  CHECK(order == std::vector<int>{1, 2});
  CHECK(y(0, 1) == (2.0f + 6.0f + 10.0f) + (-19.0f - 15.0f - 11.0f) / 3.0f);

  order.clear();
  auto e2 = fuse::map(tag(1), b) + fuse::map(tag(2), c);
  const auto pe = fuse::plan(fuse::eager(fuse::cpu{1}), e2);
  REQUIRE(pe.kernels == 3);
  CHECK(pe.lines[0].what == "map(x0) -> t0");
  CHECK(pe.lines[1].what == "map(x1) -> t1");
  const auto y2 = fuse::eval(fuse::eager(fuse::cpu{1}), e2);
  CHECK(order == std::vector<int>{1, 2});
  CHECK(y2(2, 3) == 12.0f + -9.0f);
}

TEST_CASE("plan numbers: a row kernel over strided rows counts its contiguous copies", "[plan][bytes][strided]") {
  // The CPU row kernel copies a leaf strided along its rows (a transpose) contiguous first
  // (backend/cpu/strided_rows.hpp): the copy is written and read back. A leaf read along its rows
  // with a step (a row gathered into a row of copies) and a contiguous one are not copied.
  fuse::tensor<float, 2> x(37, 53), z(37, 53);
  fuse::tensor<float, 1> g(37);
  const index_t xb = 37 * 53 * sz<float>;
  auto xt = fuse::transpose(x);  // [53, 37], rows of stride 53
  const auto soft = fuse::plan(fuse::softmax(xt, fuse::axis<-1>));
  INFO(soft);
  REQUIRE(soft.kernels == 1);
  CHECK(soft.bytes_read == 2 * xb);
  CHECK(soft.bytes_written == 2 * xb);
  CHECK(soft.lines[0].what.find("(strided leaves copied contiguous first: ") != std::string::npos);
  // Used three times (in two phases and the epilogue) and twice in one node: one copy.
  const auto twice = fuse::plan(xt - fuse::max(xt, fuse::axis<-1>) + xt * 2.f);
  INFO(twice);
  CHECK(twice.bytes_read == 2 * xb);
  CHECK(twice.bytes_written == 2 * xb);
  // Two strided leaves of other data: two copies; a contiguous gamma is read as it is.
  const auto two = fuse::plan(fuse::softmax(xt + fuse::transpose(z), fuse::axis<-1>) * g);
  INFO(two);
  CHECK(two.bytes_read == 4 * xb + 37 * sz<float>);
  CHECK(two.bytes_written == 3 * xb);
  // Contiguous rows, and rows read with a step along them (gathered a row at a time): no copies.
  const auto plain = fuse::plan(fuse::softmax(x, fuse::axis<-1>));
  INFO(plain);
  CHECK(plain.lines[0].what.find("copied contiguous") == std::string::npos);
  CHECK(plain.bytes_read == xb);
  CHECK(plain.bytes_written == xb);
  const auto stepped = fuse::plan(fuse::softmax(fuse::slice<1>(x, 0, 53, 2), fuse::axis<-1>));  // [37, 27]
  INFO(stepped);
  CHECK(stepped.lines[0].what.find("copied contiguous") == std::string::npos);
  CHECK(stepped.bytes_written == 37 * 27 * sz<float>);
  // Rows strided otherwise than a copy mends (a transposed table under take, read at the ids'
  // rows): the row kernel declines, and the plan lists the fallback's kernels.
  fuse::tensor<float, 2> tt(64, 50);
  fuse::tensor<int, 1> ids(7);
  for (index_t i = 0; i < 7; ++i) ids(i) = int(i * 13 % 50);
  const auto declined = fuse::plan(fuse::softmax(fuse::take(fuse::transpose(tt), ids), fuse::axis<-1>));
  INFO(declined);
  REQUIRE(declined.kernels == 5);
  CHECK(declined.lines[4].what.find("(split at run time: the row kernel cannot read its strided rows)") != std::string::npos);
  CHECK(fuse::plan(fuse::softmax(fuse::take(tt, ids), fuse::axis<-1>)).kernels == 1);
  CHECK(fuse::plan(fuse::sum(fuse::take(fuse::transpose(tt), ids), fuse::axis<-1>)).kernels == 2);  // take, then sum

  // Root reductions: the row kernel runs (and copies) where the column and short-row loops decline:
  // rows of 16 or more, a last axis under 16, a leaf strided along the last axis.
  const auto rows = fuse::plan(fuse::sum(xt, fuse::axis<-1>));  // rows of 37, strided
  INFO(rows);
  CHECK(rows.bytes_read == 2 * xb);
  CHECK(rows.bytes_written == xb + 53 * sz<float>);
  fuse::tensor<float, 2> w(1000, 3), s(4, 5);
  const auto columns = fuse::plan(fuse::sum(w, fuse::axis<0>));  // 3 columns: by rows of 1000 strided ones
  INFO(columns);
  CHECK(columns.bytes_read == 2 * 3000 * sz<float>);
  const auto short_rows = fuse::plan(fuse::sum(fuse::transpose(s), fuse::axis<-1>));  // rows of 4, stride 5
  INFO(short_rows);
  CHECK(short_rows.bytes_read == 2 * 20 * sz<float>);
  CHECK(fuse::plan(fuse::sum(s, fuse::axis<-1>)).bytes_read == 20 * sz<float>);  // short rows, contiguous
  CHECK(fuse::plan(fuse::sum(fuse::transpose(w), fuse::axis<0>)).bytes_read == 3000 * sz<float>);  // rows contiguous in w
  // A group whose reduction over other axes is computed first still reads xt through a copy.
  const auto mixed = fuse::plan(fuse::softmax(xt, fuse::axis<-1>) + fuse::sum(xt, fuse::axis<0>));
  INFO(mixed);
  REQUIRE(mixed.kernels == 2);
  CHECK(mixed.lines[1].what.find("(strided leaves copied contiguous first: ") != std::string::npos);
  CHECK(mixed.lines[1].bytes_written == 2 * xb);
}
