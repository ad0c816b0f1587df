// examples/gpt2_block.cpp - the forward pass of one GPT-2 block (pre-layer-norm) written with
// fuse's public API alone: token and position embedding, layer norm, causal-masked softmax
// attention, GELU, residuals. Each layer prints its plan (fused kernels against eager's), runs
// fused and eagerly, and the block's output is checked against a double-precision loop.
//
// fuse has no matmul yet (an anchor op), so the contractions are written as NumPy would without
// einsum: a broadcast product summed over the shared axis. They read m * k * n products with no
// blocking: right, and fine at this size, but not how a large model should multiply.
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <fuse/fuse.hpp>

using fuse::index_t;
using tensor1 = fuse::tensor<float, 1>;
using tensor2 = fuse::tensor<float, 2>;
using tensor3 = fuse::tensor<float, 3>;

// The model's sizes: odd ones on purpose (SIMD tails).
constexpr index_t vocab = 101, seq = 13, dim = 48, heads = 4, head_dim = dim / heads, hidden = 4 * dim;
constexpr float eps = 1e-5f;

struct weights {
  tensor2 wte{vocab, dim}, wpe{seq, dim};
  tensor1 ln1_g{dim}, ln1_b{dim}, ln2_g{dim}, ln2_b{dim};
  tensor2 w_qkv{dim, 3 * dim}, w_proj{dim, dim}, w_fc{dim, hidden}, w_out{hidden, dim};
  tensor1 b_qkv{3 * dim}, b_proj{dim}, b_fc{hidden}, b_out{dim};
};

// a [m, k] times w [k, n]: the product broadcast to [m, k, n], summed over k.
template <class A, class W>
auto matmul(const A& a, const W& w) {
  return fuse::squeeze<1>(fuse::sum(fuse::unsqueeze<2>(a) * w, fuse::axis<1>));
}

// Runs one layer fused into y and eagerly into a copy of y's shape; prints both plans' kernel
// counts and the larger difference between the two results.
template <class Y, class E>
void layer(const char* name, Y& y, const E& e) {
  const auto fused = fuse::plan(fuse::cpu{}, e), eager = fuse::plan(fuse::eager(fuse::cpu{}), e);
  Y y_eager = y;
  fuse::assign(fuse::cpu{}, y, e);
  fuse::assign(fuse::eager(fuse::cpu{}), y_eager, e);
  double diff = 0;
  for (index_t i = 0; i < y.size(); ++i) diff = std::max(diff, double(std::abs(y.data()[i] - y_eager.data()[i])));
  std::printf("%-40s fused %zu kernel(s), eager %2zu   max |fused - eager| %.2g\n", name, std::size_t(fused.kernels),
              std::size_t(eager.kernels), diff);
}

tensor2 block(const weights& w, const std::vector<int>& tokens) {
  const auto tok = fuse::view(tokens.data(), seq);

  // Embedding: a gather of the token rows plus the position rows, one pass.
  tensor2 h(seq, dim);
  layer("h = wte[tokens] + wpe", h, fuse::take(w.wte, tok) + w.wpe);

  // Attention. The layer norm is one row kernel (mean, variance, affine epilogue).
  tensor2 a(seq, dim), qkv(seq, 3 * dim);
  layer("a = layer_norm(h)", a, fuse::layer_norm(h, w.ln1_g, w.ln1_b, eps));
  layer("qkv = a @ w_qkv + b_qkv", qkv, matmul(a, w.w_qkv) + w.b_qkv);

  // [seq, 3, heads, head_dim] -> q, k, v as [heads, seq, head_dim] views (no copies).
  const auto parts = fuse::reshape(qkv, seq, 3, heads, head_dim);
  auto part = [&](index_t i) { return fuse::permute<1, 0, 2>(fuse::squeeze<1>(fuse::slice<1>(parts, i, i + 1))); };
  const auto q = part(0), k = part(1), v = part(2);

  // scores[h, i, j] = q[h, i, :] . k[h, j, :], a reduction over the last axis of a broadcast
  // product; then the causal mask (a key after the query gets -inf), the scale and the softmax.
  // Two kernels: the scores (computed once, though the softmax reads them four times), then one
  // row kernel for mask, scale and softmax.
  tensor3 p(heads, seq, seq);
  const std::array<index_t, 3> s{heads, seq, seq};
  const float scale = 1.f / std::sqrt(float(head_dim)), minus_inf = -std::numeric_limits<float>::infinity();
  auto scores = fuse::squeeze<3>(fuse::sum(fuse::unsqueeze<2>(q) * fuse::unsqueeze<1>(k), fuse::axis<-1>));
  auto masked = fuse::softmax(fuse::where(fuse::iota<2>(s) <= fuse::iota<1>(s), scores * scale, minus_inf), fuse::axis<-1>);
  static_assert(fuse::kernels_v<decltype(masked)> == 2);
  layer("p = softmax(causal(q @ k^T * scale))", p, masked);

  // y[h, i, :] = sum over j of p[h, i, j] v[h, j, :]; heads back side by side as [seq, dim].
  tensor3 y_heads(heads, seq, head_dim), y(seq, heads, head_dim);
  layer("y = p @ v", y_heads, fuse::squeeze<2>(fuse::sum(fuse::unsqueeze<3>(p) * fuse::unsqueeze<1>(v), fuse::axis<2>)));
  y = fuse::permute<1, 0, 2>(y_heads);
  const auto y2 = fuse::reshape(y, seq, dim);

  // The projection's bias and the residual join the contraction's epilogue.
  tensor2 h1(seq, dim);
  layer("h1 = h + y @ w_proj + b_proj", h1, h + matmul(y2, w.w_proj) + w.b_proj);

  // MLP: layer norm, bias + GELU, projection + residual.
  tensor2 a2(seq, dim), f(seq, hidden), out(seq, dim);
  layer("a2 = layer_norm(h1)", a2, fuse::layer_norm(h1, w.ln2_g, w.ln2_b, eps));
  layer("f = gelu(a2 @ w_fc + b_fc)", f, fuse::gelu(matmul(a2, w.w_fc) + w.b_fc));
  layer("out = h1 + f @ w_out + b_out", out, h1 + matmul(f, w.w_out) + w.b_out);
  return out;
}

// The same block in double precision with plain loops.
std::vector<double> reference(const weights& w, const std::vector<int>& tokens) {
  using vec = std::vector<double>;
  auto matmul_ref = [](const vec& a, const tensor2& b, const tensor1& bias, index_t m, index_t k, index_t n) {
    vec c(std::size_t(m * n));
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        double acc = bias(j);
        for (index_t t = 0; t < k; ++t) acc += a[std::size_t(i * k + t)] * double(b(t, j));
        c[std::size_t(i * n + j)] = acc;
      }
    return c;
  };
  auto layer_norm_ref = [](const vec& x, const tensor1& g, const tensor1& b) {
    vec y(x.size());
    for (index_t i = 0; i < seq; ++i) {
      double mean = 0, var = 0;
      for (index_t j = 0; j < dim; ++j) mean += x[std::size_t(i * dim + j)] / dim;
      for (index_t j = 0; j < dim; ++j) var += std::pow(x[std::size_t(i * dim + j)] - mean, 2) / dim;
      for (index_t j = 0; j < dim; ++j)
        y[std::size_t(i * dim + j)] = (x[std::size_t(i * dim + j)] - mean) / std::sqrt(var + eps) * g(j) + b(j);
    }
    return y;
  };
  vec h(std::size_t(seq * dim));
  for (index_t i = 0; i < seq; ++i)
    for (index_t j = 0; j < dim; ++j) h[std::size_t(i * dim + j)] = double(w.wte(tokens[std::size_t(i)], j)) + w.wpe(i, j);
  const vec qkv = matmul_ref(layer_norm_ref(h, w.ln1_g, w.ln1_b), w.w_qkv, w.b_qkv, seq, dim, 3 * dim);
  vec y(std::size_t(seq * dim));
  for (index_t hd = 0; hd < heads; ++hd)
    for (index_t i = 0; i < seq; ++i) {
      auto at = [&](index_t row, index_t which, index_t d) { return qkv[std::size_t(row * 3 * dim + which * dim + hd * head_dim + d)]; };
      vec p(std::size_t(i + 1));  // keys 0..i: the causal mask
      double top = -INFINITY, total = 0;
      for (index_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (index_t d = 0; d < head_dim; ++d) dot += at(i, 0, d) * at(j, 1, d);
        p[std::size_t(j)] = dot / std::sqrt(double(head_dim));
        top = std::max(top, p[std::size_t(j)]);
      }
      for (auto& x : p) total += (x = std::exp(x - top));
      for (index_t d = 0; d < head_dim; ++d) {
        double acc = 0;
        for (index_t j = 0; j <= i; ++j) acc += p[std::size_t(j)] / total * at(j, 2, d);
        y[std::size_t(i * dim + hd * head_dim + d)] = acc;
      }
    }
  vec h1 = matmul_ref(y, w.w_proj, w.b_proj, seq, dim, dim);
  for (std::size_t i = 0; i < h1.size(); ++i) h1[i] += h[i];
  vec f = matmul_ref(layer_norm_ref(h1, w.ln2_g, w.ln2_b), w.w_fc, w.b_fc, seq, dim, hidden);
  for (auto& x : f) x = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  vec out = matmul_ref(f, w.w_out, w.b_out, seq, hidden, dim);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] += h1[i];
  return out;
}

int main() {
  weights w;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto fill = [&](auto& t, float scale, float shift = 0.f) {
    for (index_t i = 0; i < t.size(); ++i) t.data()[i] = shift + scale * normal(gen);
  };
  fill(w.wte, 0.5f), fill(w.wpe, 0.1f);
  fill(w.ln1_g, 0.1f, 1.f), fill(w.ln1_b, 0.1f), fill(w.ln2_g, 0.1f, 1.f), fill(w.ln2_b, 0.1f);
  fill(w.w_qkv, 0.3f), fill(w.w_proj, 0.15f), fill(w.w_fc, 0.15f), fill(w.w_out, 0.07f);
  fill(w.b_qkv, 0.1f), fill(w.b_proj, 0.1f), fill(w.b_fc, 0.1f), fill(w.b_out, 0.1f);
  std::vector<int> tokens(seq);
  std::uniform_int_distribution<int> token(0, int(vocab) - 1);
  for (auto& t : tokens) t = token(gen);

  std::printf("one GPT-2 block: %lld tokens, width %lld, %lld heads, vocabulary %lld\n\n", (long long)seq,
              (long long)dim, (long long)heads, (long long)vocab);
  const tensor2 out = block(w, tokens);
  const std::vector<double> ref = reference(w, tokens);

  // (Written so that a NaN counts as wrong: std::max would skip it.)
  double scale = 0, err = 0;
  for (double r : ref) scale = std::max(scale, std::abs(r));
  index_t wrong = 0;
  for (index_t i = 0; i < out.size(); ++i) {
    const double d = std::abs(out.data()[i] - ref[std::size_t(i)]);
    if (!(d <= 1e-5 * scale)) ++wrong;
    if (d > err) err = d;
  }
  std::printf("\nmax |out - double reference| = %.2g (outputs up to %.2g); %lld of %lld outside 1e-5 of that\n", err,
              scale, (long long)wrong, (long long)out.size());
  return wrong == 0 ? 0 : 1;
}
