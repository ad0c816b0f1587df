// CUDA reductions and row kernels against the CPU executor (itself tested against double references).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include <fuse/fuse.hpp>

namespace {

template <std::size_t R>
fuse::tensor<float, R> random_host(fuse::shape_t<R> s, unsigned seed, float lo = -4.f, float hi = 4.f) {
  fuse::tensor<float, R> t(s);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (fuse::index_t i = 0; i < t.size(); ++i) t.data()[i] = d(gen);
  return t;
}

template <class T, std::size_t R>
fuse::tensor<T, R> host_of(const fuse::device_tensor<T, R>& d) {
  fuse::tensor<T, R> h(d.shape());
  fuse::copy(h, d);
  return h;
}

template <std::size_t R>
void require_close(const fuse::tensor<float, R>& got, const fuse::tensor<float, R>& ref, double rel, double abs_tol) {
  REQUIRE(got.shape() == ref.shape());
  for (fuse::index_t i = 0; i < got.size(); ++i) {
    const double g = got.data()[i], r = ref.data()[i];
    if (std::isnan(r)) REQUIRE(std::isnan(g));
    else REQUIRE(std::abs(g - r) <= rel * std::abs(r) + abs_tol);
  }
}

}  // namespace

TEST_CASE("cuda: softmax, layer_norm, rms_norm for warp- and block-per-row lengths") {
  // Rows in a warp's registers (<= 1024), in a block's (1025 - 8192), and re-read (longer).
  for (auto [m, n] : {std::pair<long, long>{1, 1}, {37, 33}, {300, 1024}, {5, 1025}, {7, 3001}, {2, 8192}, {3, 8193}, {3, 70001}}) {
    auto hx = random_host<2>({m, n}, unsigned(m + n));
    auto hg = random_host<1>({n}, 2, 0.5f, 1.5f);
    auto hb = random_host<1>({n}, 3);
    fuse::device_tensor<float, 2> x(m, n);
    fuse::device_tensor<float, 1> g(n), b(n);
    fuse::copy(x, hx), fuse::copy(g, hg), fuse::copy(b, hb);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::softmax(x, fuse::axis<-1>))), fuse::eval(fuse::softmax(hx, fuse::axis<-1>)), 1e-5, 1e-7);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::log_softmax(x, fuse::axis<-1>))), fuse::eval(fuse::log_softmax(hx, fuse::axis<-1>)), 1e-5, 1e-5);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::layer_norm(x, g, b))), fuse::eval(fuse::layer_norm(hx, hg, hb)), 1e-4, 1e-4);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::rms_norm(x, g))), fuse::eval(fuse::rms_norm(hx, hg)), 1e-5, 1e-6);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::max(x, fuse::axis<0>))), fuse::eval(fuse::max(hx, fuse::axis<0>)), 0, 0);
  }
}

TEST_CASE("cuda: var, softmax, logsumexp over a leading axis: the CPU's column pairs as two kernels") {
  // The CPU runs each pair (the mean and the variance, the max and the sum of exponentials) as
  // one column kernel; CUDA has no column pairs and runs the two as kernels of their own, and its
  // plan says so: one kernel more than kernels_v for each pair.
  for (auto [m, n] : {std::pair<long, long>{1, 16}, {37, 33}, {300, 1024}, {1000, 70}}) {
    auto hx = random_host<2>({m, n}, unsigned(3 * m + n));
    fuse::device_tensor<float, 2> x(m, n);
    fuse::copy(x, hx);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::var(x, fuse::axis<0>))), fuse::eval(fuse::var(hx, fuse::axis<0>)), 1e-5, 1e-6);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::softmax(x, fuse::axis<0>))), fuse::eval(fuse::softmax(hx, fuse::axis<0>)), 1e-5, 1e-7);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::logsumexp(x, fuse::axis<0>))), fuse::eval(fuse::logsumexp(hx, fuse::axis<0>)), 1e-6, 1e-6);
    const auto p = fuse::plan(fuse::cuda{}, fuse::softmax(x, fuse::axis<0>));
    REQUIRE(p.kernels == fuse::kernels_v<decltype(fuse::softmax(x, fuse::axis<0>))> + 1);
    REQUIRE(p.lines[1].what.find("the CUDA executor runs no column pairs") != std::string::npos);
  }
}

TEST_CASE("cuda: long rows, few of them: a cluster of blocks per row on sm_90, else a block") {
  // Fewer rows than 4 x the multiprocessors take the cluster variant where it runs; 600 rows do not.
  for (auto [m, n] : {std::pair<long, long>{1, 262144}, {3, 70001}, {64, 20000}, {600, 9001}}) {
    auto hx = random_host<2>({m, n}, unsigned(7 * m + n));
    fuse::device_tensor<float, 2> x(m, n);
    fuse::copy(x, hx);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::softmax(x, fuse::axis<-1>))), fuse::eval(fuse::softmax(hx, fuse::axis<-1>)), 1e-5, 1e-9);
    require_close(host_of(fuse::eval(fuse::cuda{}, x - fuse::logsumexp(x, fuse::axis<-1>))),
                  fuse::eval(hx - fuse::logsumexp(hx, fuse::axis<-1>)), 1e-5, 1e-4);
  }
  // Strided rows (a transposed view: stride 3 along the row), and a root reduction with two phases.
  auto hx = random_host<2>({70001, 3}, 8);
  fuse::device_tensor<float, 2> x(70001, 3);
  fuse::copy(x, hx);
  require_close(host_of(fuse::eval(fuse::cuda{}, fuse::softmax(fuse::transpose(x), fuse::axis<-1>))),
                fuse::eval(fuse::softmax(fuse::transpose(hx), fuse::axis<-1>)), 1e-5, 1e-9);
  const float v = fuse::eval(fuse::cuda{}, fuse::var(x));
  const float vref = fuse::eval(fuse::var(hx));
  REQUIRE(std::abs(v - vref) <= 1e-5 * vref);
}

TEST_CASE("cuda: a root of one value per row over longer rows (logsumexp) is one row kernel") {
  // widen_to_rows (plan/fusion.hpp): the root is written once per row. [4, 70001] with one phase
  // takes the split reduction (few long rows), whose finish now evaluates the root.
  for (auto [m, n] : {std::pair<long, long>{37, 33}, {300, 1024}, {3, 70001}, {4, 70001}}) {
    auto hx = random_host<2>({m, n}, unsigned(5 * m + n));
    auto hc = random_host<2>({m, 1}, 9);
    fuse::device_tensor<float, 2> x(m, n), c(m, 1);
    fuse::copy(x, hx), fuse::copy(c, hc);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::logsumexp(x, fuse::axis<-1>))),
                  fuse::eval(fuse::logsumexp(hx, fuse::axis<-1>)), 1e-5, 1e-5);
    auto de = c - 2.f * fuse::mean(x, fuse::axis<-1>);
    REQUIRE(fuse::plan(fuse::cuda{}, de).kernels == 1);
    require_close(host_of(fuse::eval(fuse::cuda{}, de)), fuse::eval(hc - 2.f * fuse::mean(hx, fuse::axis<-1>)), 1e-5, 1e-5);
  }
}

TEST_CASE("cuda: a training batch norm over NCHW is one row kernel (rows of N runs of H * W)") {
  // Statistics over axes<0, 2, 3> and the normalisation in one kernel (plan/fusion.hpp): rows of
  // N runs, short and long (warp, block, re-read), against the CPU.
  for (const auto& s : {fuse::shape_t<4>{3, 5, 7, 9}, fuse::shape_t<4>{2, 4, 1, 1}, fuse::shape_t<4>{8, 16, 28, 28}, fuse::shape_t<4>{4, 3, 64, 70}}) {
    auto hx = random_host<4>(s, unsigned(s[0] + s[2]), 95.f, 105.f);
    auto hg = random_host<3>({s[1], 1, 1}, 11, 0.5f, 1.5f);
    auto hb = random_host<3>({s[1], 1, 1}, 12);
    fuse::device_tensor<float, 4> x(s);
    fuse::device_tensor<float, 3> g(s[1], 1, 1), b(s[1], 1, 1);
    fuse::copy(x, hx), fuse::copy(g, hg), fuse::copy(b, hb);
    auto bn = [](const auto& x, const auto& g, const auto& b) {
      return fuse::relu((x - fuse::mean(x, fuse::axes<0, 2, 3>)) * fuse::rsqrt(fuse::var(x, fuse::axes<0, 2, 3>) + 1e-5f) * g + b);
    };
    REQUIRE(fuse::plan(fuse::cuda{}, bn(x, g, b)).kernels == 1);
    require_close(host_of(fuse::eval(fuse::cuda{}, bn(x, g, b))), fuse::eval(bn(hx, hg, hb)), 1e-4, 1e-4);
  }
}

TEST_CASE("cuda: squeeze of a reduced axis (keepdims=False), alone and inside an expression; eager var") {
  for (auto [m, n] : {std::pair<long, long>{37, 33}, {300, 1024}, {3, 70001}}) {
    auto hx = random_host<2>({m, n}, unsigned(3 * m + n));
    auto hb = random_host<1>({m}, 10);
    fuse::device_tensor<float, 2> x(m, n);
    fuse::device_tensor<float, 1> b(m);
    fuse::copy(x, hx), fuse::copy(b, hb);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::squeeze<-1>(fuse::max(x, fuse::axis<-1>)))),
                  fuse::eval(fuse::squeeze<-1>(fuse::max(hx, fuse::axis<-1>))), 0, 0);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::exp(fuse::squeeze<1>(fuse::mean(x, fuse::axis<1>))) + b)),
                  fuse::eval(fuse::exp(fuse::squeeze<1>(fuse::mean(hx, fuse::axis<1>))) + hb), 1e-5, 1e-6);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::squeeze<1>(fuse::logsumexp(x, fuse::axis<1>)))),
                  fuse::eval(fuse::squeeze<1>(fuse::logsumexp(hx, fuse::axis<1>))), 1e-5, 1e-5);
    require_close(host_of(fuse::eval(fuse::eager(fuse::cuda{}), fuse::var(x * 2.f, fuse::axis<-1>))),
                  fuse::eval(fuse::var(hx * 2.f, fuse::axis<-1>)), 1e-4, 1e-5);
  }
}

TEST_CASE("cuda: full reductions (two-stage) are accurate; empty extents give identities") {
  const long n = (1 << 22) + 3;
  auto hx = random_host<1>({n}, 4, 0.f, 1.f);
  fuse::device_tensor<float, 1> x(n);
  fuse::copy(x, hx);
  double ref = 0;
  for (long i = 0; i < n; ++i) ref += double(hx(i)) * hx(i);
  const float got = fuse::eval(fuse::cuda{}, fuse::sum(x * x));
  REQUIRE(std::abs(got - ref) / ref < 1e-6);
  const float mx = fuse::eval(fuse::cuda{}, fuse::max(x));
  REQUIRE(mx == fuse::eval(fuse::max(hx)));
  fuse::device_tensor<float, 2> e(3, 0);
  auto s = host_of(fuse::eval(fuse::cuda{}, fuse::sum(e, fuse::axis<-1>)));
  for (long r = 0; r < 3; ++r) REQUIRE(s(r, 0) == 0.f);
}

TEST_CASE("cuda: bf16 softmax and layer_norm accumulate in fp32") {
  for (const long n : {1000, 3000}) {  // a warp's and a block's registers
    const long m = 64;
    auto hx = random_host<2>({m, n}, 5);
    fuse::tensor<__nv_bfloat16, 2> hb(m, n);
    fuse::tensor<float, 2> hxf(m, n);
    for (long i = 0; i < hx.size(); ++i) hb.data()[i] = __float2bfloat16(hx.data()[i]), hxf.data()[i] = __bfloat162float(hb.data()[i]);
    fuse::device_tensor<__nv_bfloat16, 2> x(m, n);
    fuse::copy(x, hb);
    auto y = host_of(fuse::eval(fuse::cuda{}, fuse::cast<float>(fuse::eval(fuse::cuda{}, fuse::softmax(x, fuse::axis<-1>)))));
    require_close(y, fuse::eval(fuse::softmax(hxf, fuse::axis<-1>)), 1e-2, 1e-4);
  }
}

TEST_CASE("cuda: layouts the other cases miss: a block per row of runs, split strided rows, bf16 re-read rows, a user stream, in place") {
  // Rows of N runs over 528 channels or more: a block each on 132 SMs (fewer rows: a cluster each).
  {
    const fuse::shape_t<4> s{8, 600, 16, 16};
    auto hx = random_host<4>(s, 21, 95.f, 105.f);
    fuse::device_tensor<float, 4> x(s);
    fuse::copy(x, hx);
    auto bn = [](const auto& x) { return (x - fuse::mean(x, fuse::axes<0, 2, 3>)) * fuse::rsqrt(fuse::var(x, fuse::axes<0, 2, 3>) + 1e-5f); };
    require_close(host_of(fuse::eval(fuse::cuda{}, bn(x))), fuse::eval(bn(hx)), 1e-4, 1e-4);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::sum(x, fuse::axes<0, 2, 3>))), fuse::eval(fuse::sum(hx, fuse::axes<0, 2, 3>)), 1e-6, 0);
  }
  // A full reduction of a strided view: one row of 64 runs of 999 (strides 2000 and 2 do not
  // merge), split across blocks, read strided.
  {
    auto hx = random_host<2>({64, 2000}, 22, 0.f, 1.f);
    fuse::device_tensor<float, 2> x(64, 2000);
    fuse::copy(x, hx);
    const float got = fuse::eval(fuse::cuda{}, fuse::sum(fuse::slice<1>(x, 0, 1998, 2)));
    const double want = fuse::eval(fuse::sum(fuse::cast<double>(fuse::slice<1>(hx, 0, 1998, 2))));
    REQUIRE(std::abs(got - want) <= 1e-6 * want);
  }
  // bf16 rows longer than the registers hold (8192): re-read, a cluster each (3 rows) or a block
  // each (600 rows); and layer_norm in bf16.
  for (const auto [m, n] : {std::pair<long, long>{3, 70001}, {600, 9001}}) {
    auto hx = random_host<2>({m, n}, 23);
    auto hg = random_host<1>({n}, 24, 0.5f, 1.5f);
    auto hb = random_host<1>({n}, 25);
    fuse::tensor<__nv_bfloat16, 2> hxb(m, n);
    fuse::tensor<float, 2> hxf(m, n);
    for (long i = 0; i < hx.size(); ++i) hxb.data()[i] = __float2bfloat16(hx.data()[i]), hxf.data()[i] = __bfloat162float(hxb.data()[i]);
    fuse::device_tensor<__nv_bfloat16, 2> x(m, n), y(m, n);
    fuse::device_tensor<float, 1> g(n), b(n);
    fuse::copy(x, hxb), fuse::copy(g, hg), fuse::copy(b, hb);
    fuse::assign(fuse::cuda{}, y, fuse::softmax(x, fuse::axis<-1>));
    // (Every value is under 1e-3 here: an absolute tolerance would let a wrong sum pass.)
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::cast<float>(y))), fuse::eval(fuse::softmax(hxf, fuse::axis<-1>)), 1e-2, 1e-9);
    fuse::assign(fuse::cuda{}, y, fuse::layer_norm(x, g, b));
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::cast<float>(y))), fuse::eval(fuse::layer_norm(hxf, hg, hb)), 2e-2, 2e-2);
  }
  // A stream of the user's, and in place (the destination read by its own row kernel).
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  for (const auto [m, n] : {std::pair<long, long>{300, 1024}, {5, 3001}, {3, 70001}}) {
    auto hx = random_host<2>({m, n}, unsigned(26 + n));
    fuse::device_tensor<float, 2> x(m, n);
    fuse::copy(fuse::cuda{stream}, x, hx);
    auto y = fuse::eval(fuse::cuda{stream}, fuse::softmax(x, fuse::axis<-1>));
    fuse::assign(fuse::cuda{stream}, x, x - fuse::max(x, fuse::axis<-1>));
    REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
    require_close(host_of(y), fuse::eval(fuse::softmax(hx, fuse::axis<-1>)), 1e-5, 1e-7);
    require_close(host_of(x), fuse::eval(hx - fuse::max(hx, fuse::axis<-1>)), 0, 0);
  }
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}

TEST_CASE("cuda: device temporaries follow their stream: eager and split reductions on two streams, and a CUDA graph") {
  // Eager temporaries and split-reduction partials are freed on their stream when assign returns,
  // while the kernels still run: another stream must not receive a block still in use, and
  // nothing may wait on the host, so that the assignments can be captured into a graph.
  cudaStream_t s1 = nullptr, s2 = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) == cudaSuccess);
  const long n = (1 << 23) + 5;
  auto hx = random_host<1>({n}, 31), hw = random_host<1>({n}, 32);
  fuse::device_tensor<float, 1> x(n), w(n), y1(n), y2(n);
  fuse::device_tensor<float, 2> r1(2, 1), r2(2, 1);
  fuse::copy(x, hx), fuse::copy(w, hw);
  auto f1 = [](const auto& x, const auto& w) { return fuse::exp(fuse::tanh(x * 0.5f + w) - w * 0.25f) * x; };
  auto f2 = [](const auto& x, const auto& w) { return fuse::sigmoid(w * 3.f - x) + x * w; };
  // Two rows of n / 2: a root reduction over too few rows to fill the GPU, split across blocks.
  auto squares = [](const auto& x) { auto v = fuse::reshape(fuse::slice<0>(x, 0, n - 1), 2, (n - 1) / 2); return fuse::sum(v * v, fuse::axis<-1>); };
  auto check = [&] {
    REQUIRE(cudaStreamSynchronize(s1) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(s2) == cudaSuccess);
    require_close(host_of(y1), fuse::eval(f1(hx, hw)), 1e-5, 1e-6);
    require_close(host_of(y2), fuse::eval(f2(hx, hw)), 1e-5, 1e-6);
    require_close(host_of(r1), fuse::eval(squares(hx)), 1e-6, 0);
    require_close(host_of(r2), fuse::eval(squares(hw)), 1e-6, 0);
  };
  // The eager assignments back to back: f2's on s2 are queued while f1's on s1 still run (a
  // split reduction in between waited for its stream before).
  for (int k = 0; k < 3; ++k) {
    fuse::assign(fuse::eager(fuse::cuda{s1}), y1, f1(x, w));
    fuse::assign(fuse::eager(fuse::cuda{s2}), y2, f2(x, w));
    fuse::assign(fuse::cuda{s1}, r1, squares(x));
    fuse::assign(fuse::cuda{s2}, r2, squares(w));
  }
  check();
  // In place through a temporary (the destination read transposed), on both streams at once.
  {
    const long m = 2049;
    auto hz = random_host<2>({m, m}, 33);
    fuse::device_tensor<float, 2> z1(m, m), z2(m, m);
    fuse::copy(z1, hz), fuse::copy(z2, hz);
    fuse::assign(fuse::cuda{s1}, z1, fuse::transpose(z1) + 1.f);
    fuse::assign(fuse::cuda{s2}, z2, fuse::transpose(z2) * 2.f);
    REQUIRE(cudaStreamSynchronize(s1) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(s2) == cudaSuccess);
    require_close(host_of(z1), fuse::eval(fuse::transpose(hz) + 1.f), 0, 0);
    require_close(host_of(z2), fuse::eval(fuse::transpose(hz) * 2.f), 0, 0);
  }
  // The same on s1, captured once and replayed twice (the pool exists: it was made above).
  fuse::assign(fuse::cuda{s1}, y1, fuse::full(y1.shape(), 0.f)), fuse::assign(fuse::cuda{s1}, r1, fuse::full(r1.shape(), 0.f));
  fuse::assign(fuse::cuda{s2}, y2, fuse::full(y2.shape(), 0.f)), fuse::assign(fuse::cuda{s2}, r2, fuse::full(r2.shape(), 0.f));
  REQUIRE(cudaStreamSynchronize(s2) == cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t replay = nullptr;
  REQUIRE(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal) == cudaSuccess);
  try {
    fuse::assign(fuse::eager(fuse::cuda{s1}), y1, f1(x, w));
    fuse::assign(fuse::cuda{s1}, r1, squares(x));
    fuse::assign(fuse::eager(fuse::cuda{s1}), y2, f2(x, w));
    fuse::assign(fuse::cuda{s1}, r2, squares(w));
  } catch (...) {
    // End the capture, or every later CUDA call of this program fails with it.
    (void)cudaStreamEndCapture(s1, &graph);
    if (graph) (void)cudaGraphDestroy(graph);
    throw;
  }
  REQUIRE(cudaStreamEndCapture(s1, &graph) == cudaSuccess);
  REQUIRE(cudaGraphInstantiate(&replay, graph, 0) == cudaSuccess);
  for (int k = 0; k < 2; ++k) REQUIRE(cudaGraphLaunch(replay, s1) == cudaSuccess);
  check();
  REQUIRE(cudaGraphExecDestroy(replay) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(graph) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(s1) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(s2) == cudaSuccess);
}

TEST_CASE("cuda: column reductions take a thread per row where rows lie side by side") {
  // Column sums (many parts per column), NHWC statistics over N, H, W, a transposed operand's
  // sum (its logsumexp has two phases: a warp per row, for comparison).
  {
    auto hx = random_host<2>({70001, 40}, 41, 0.f, 1.f);
    fuse::device_tensor<float, 2> x(70001, 40);
    fuse::copy(x, hx);
    auto got = host_of(fuse::eval(fuse::cuda{}, fuse::sum(x, fuse::axis<0>)));
    auto want = fuse::eval(fuse::sum(fuse::cast<double>(hx), fuse::axis<0>));
    for (long c = 0; c < 40; ++c) REQUIRE(std::abs(got(0, c) - want(0, c)) <= 1e-6 * want(0, c));
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::max(x, fuse::axis<0>))), fuse::eval(fuse::max(hx, fuse::axis<0>)), 0, 0);
  }
  {
    const fuse::shape_t<4> s{8, 14, 14, 96};
    auto hx = random_host<4>(s, 42);
    fuse::device_tensor<float, 4> x(s);
    fuse::copy(x, hx);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::mean(x * x, fuse::axes<0, 1, 2>))), fuse::eval(fuse::mean(hx * hx, fuse::axes<0, 1, 2>)), 1e-5, 1e-7);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::var(x, fuse::axes<0, 1, 2>))), fuse::eval(fuse::var(hx, fuse::axes<0, 1, 2>)), 1e-4, 1e-6);
  }
  {
    auto hy = random_host<2>({333, 1000}, 43);
    fuse::device_tensor<float, 2> y(333, 1000);
    fuse::copy(y, hy);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::logsumexp(fuse::transpose(y), fuse::axis<-1>))),
                  fuse::eval(fuse::logsumexp(fuse::transpose(hy), fuse::axis<-1>)), 1e-5, 1e-6);
    require_close(host_of(fuse::eval(fuse::cuda{}, fuse::sum(fuse::transpose(y), fuse::axis<-1>))),
                  fuse::eval(fuse::sum(fuse::transpose(hy), fuse::axis<-1>)), 1e-4, 1e-4);
  }
}
