// bench/bench_cuda.cu - the Core and Reductions workloads on a GPU: fused, eager and a hand-written
// kernel (bench/hand_kernels.cuh), as GB/s of minimal traffic and as a fraction of the measured
// device copy bandwidth (cudaMemcpy device to device, bytes read + written). Each result is checked
// against the CPU executor. Prints one table; exit code 1 if any check fails.
//
// Timing (docs/performance.md, "GPU (H200)"): CUDA events around a batch of 10 back-to-back calls,
// median of 7 batches after a warm-up: the main columns. Events around one call on an idle GPU
// (the median of 20; the method of the runs up to 2026-11-30) also time the launch's latency,
// 6.6-8.1 us a call on the H200: a 1 GiB copy hides it, a 30 us row kernel does not. Both are
// printed, each against the copy timed the same way, with the host's time to issue one call (if
// it exceeds the device's, a batch measures the host; a full reduction's eval waits for its value,
// so its batches are single calls).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <fuse/fuse.hpp>

#include "hand_kernels.cuh"

namespace {

using fuse::index_t;

struct timing {
  double ms;         // device time per call, in batches
  double single_ms;  // one call between events on an idle GPU
  double host_us;    // host time to issue one call
};

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

timing time_calls(const std::function<void()>& f) {
  f();
  fuse::detail::cuda_check(cudaDeviceSynchronize(), "bench: warm-up");
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  auto elapsed = [&] {
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return double(ms);
  };
  std::vector<double> single, batch, host;
  for (int i = 0; i < 20; ++i) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    single.push_back(elapsed());
  }
  constexpr int calls = 10;
  for (int i = 0; i < 7; ++i) {
    cudaEventRecord(a);
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < calls; ++k) f();
    host.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
    cudaEventRecord(b);
    batch.push_back(elapsed() / calls);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  fuse::detail::cuda_check(cudaGetLastError(), "bench: timing");
  return {median(batch), median(single), median(host)};
}

// Poisons `out` (all bits set: NaN in fp32 and bf16), so that the check after the timed runs
// fails unless they wrote every element; then times f.
template <class Out>
timing time_calls(Out& out, const std::function<void()>& f) {
  fuse::detail::cuda_check(cudaMemset(out.data(), 0xff, out.size() * sizeof(*out.data())), "bench: poison");
  return time_calls(f);
}

template <std::size_t R>
fuse::tensor<float, R> random_host(fuse::shape_t<R> s, unsigned seed) {
  fuse::tensor<float, R> t(s);
  std::uint64_t st = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (index_t i = 0; i < t.size(); ++i) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    t.data()[i] = -2.f + 4.f * float(st >> 40) / float(1 << 24);
  }
  return t;
}

struct row {
  std::string name;
  double bytes;
  timing t;
  bool pass;
  double gbs() const { return bytes / (t.ms * 1e6); }
  double single_gbs() const { return bytes / (t.single_ms * 1e6); }
};

template <std::size_t R>
bool close(const fuse::tensor<float, R>& a, const fuse::device_tensor<float, R>& d, double tol = 1e-5) {
  fuse::tensor<float, R> b(d.shape());
  fuse::copy(b, d);
  double num = 0, den = 0;
  for (index_t i = 0; i < a.size(); ++i) {
    const double e = double(a.data()[i]) - double(b.data()[i]);
    num += e * e, den += double(a.data()[i]) * a.data()[i];
    if (std::isnan(b.data()[i])) return false;
  }
  return std::sqrt(num / std::max(den, 1e-30)) < tol;
}

// The row layers' inputs: x [m, n] and gamma, beta [n], on the host (for the references) and the
// device, and a device output.
struct layer_inputs {
  fuse::tensor<float, 2> hx;
  fuse::tensor<float, 1> hg, hb;
  fuse::device_tensor<float, 2> x, y;
  fuse::device_tensor<float, 1> g, b;
  layer_inputs(index_t m, index_t n, unsigned seed)
      : hx(random_host<2>({m, n}, seed)), hg(random_host<1>({n}, seed + 1)), hb(random_host<1>({n}, seed + 2)),
        x(m, n), y(m, n), g(n), b(n) {
    fuse::copy(x, hx), fuse::copy(g, hg), fuse::copy(b, hb);
  }
  double bytes() const { return 2.0 * double(hx.size()) * 4; }  // x read once, y written once
};

// softmax and layer norm, fused, over d's rows: rows "<layer> <shape> fp32 fused"; with `hand`, the
// hand-written kernels too (rows of 1024 only).
void fused_layers(std::vector<row>& rows, layer_inputs& d, const std::string& shape, bool hand = false) {
  const index_t m = d.hx.extent(0), n = d.hx.extent(1);
  auto sm_ref = fuse::eval(fuse::softmax(d.hx, fuse::axis<-1>));
  auto t = time_calls(d.y, [&] { fuse::assign(fuse::cuda{}, d.y, fuse::softmax(d.x, fuse::axis<-1>)); });
  rows.push_back({"softmax " + shape + " fp32 fused", d.bytes(), t, close(sm_ref, d.y)});
  if (hand) {
    t = time_calls(d.y, [&] { hand::launch_softmax(d.x.data(), d.y.data(), m, n); });
    rows.push_back({"softmax " + shape + " fp32 hand", d.bytes(), t, close(sm_ref, d.y)});
  }
  auto ln_ref = fuse::eval(fuse::layer_norm(d.hx, d.hg, d.hb));
  const double ln_bytes = d.bytes() + 8.0 * double(n);
  t = time_calls(d.y, [&] { fuse::assign(fuse::cuda{}, d.y, fuse::layer_norm(d.x, d.g, d.b)); });
  rows.push_back({"layer_norm " + shape + " fp32 fused", ln_bytes, t, close(ln_ref, d.y, 1e-4)});
  if (hand) {
    t = time_calls(d.y, [&] { hand::launch_layer_norm(d.x.data(), d.g.data(), d.b.data(), 1e-5f, d.y.data(), m, n); });
    rows.push_back({"layer_norm " + shape + " fp32 hand", ln_bytes, t, close(ln_ref, d.y, 1e-4)});
  }
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::vector<row> rows;

  // Device copy bandwidth: 1 GiB each way.
  const index_t copy_n = index_t(1) << 28;
  fuse::device_tensor<float, 1> c0(copy_n), c1(copy_n);
  cudaMemset(c0.data(), 1, copy_n * 4);
  const timing copy_t = time_calls([&] { cudaMemcpyAsync(c1.data(), c0.data(), copy_n * 4, cudaMemcpyDeviceToDevice); });
  rows.push_back({"device copy (cudaMemcpy)", 2.0 * copy_n * 4, copy_t, true});
  const double copy_gbs = rows.back().gbs(), copy_single_gbs = rows.back().single_gbs();

  {  // axpby_relu on 2^25 and 2^28 floats
    for (index_t n : {index_t(1) << 25, index_t(1) << 28}) {
      auto hx = random_host<1>({n}, 1), hw = random_host<1>({n}, 2);
      fuse::device_tensor<float, 1> x(n), w(n), y(n);
      fuse::copy(x, hx), fuse::copy(w, hw);
      auto e = fuse::max(1.5f * x + -0.75f * w, 0.f);
      auto ref = fuse::eval(fuse::max(1.5f * hx + -0.75f * hw, 0.f));
      const double bytes = 3.0 * n * 4;
      const std::string tag = "axpby_relu 2^" + std::to_string(int(std::log2(double(n))));
      auto t = time_calls(y, [&] { fuse::assign(fuse::cuda{}, y, e); });
      rows.push_back({tag + " fused", bytes, t, close(ref, y)});
      t = time_calls(y, [&] { fuse::assign(fuse::eager(fuse::cuda{}), y, e); });
      rows.push_back({tag + " eager", bytes, t, close(ref, y)});
      t = time_calls(y, [&] { hand::launch_axpby_relu(1.5f, x.data(), -0.75f, w.data(), y.data(), n); });
      rows.push_back({tag + " hand", bytes, t, close(ref, y)});
    }
  }
  {  // bias_gelu [8192, 4096] + [4096]
    const index_t m = 8192, n = 4096;
    auto hx = random_host<2>({m, n}, 3);
    auto hb = random_host<1>({n}, 4);
    fuse::device_tensor<float, 2> x(m, n), y(m, n);
    fuse::device_tensor<float, 1> b(n);
    fuse::copy(x, hx), fuse::copy(b, hb);
    auto ref = fuse::eval(fuse::gelu(hx + hb));
    const double bytes = (2.0 * m + 1) * n * 4;
    auto t = time_calls(y, [&] { fuse::assign(fuse::cuda{}, y, fuse::gelu(x + b)); });
    rows.push_back({"bias_gelu [8192,4096] fused", bytes, t, close(ref, y)});
    t = time_calls(y, [&] { fuse::assign(fuse::eager(fuse::cuda{}), y, fuse::gelu(x + b)); });
    rows.push_back({"bias_gelu [8192,4096] eager", bytes, t, close(ref, y)});
    t = time_calls(y, [&] { hand::launch_bias_gelu(x.data(), b.data(), y.data(), m, n); });
    rows.push_back({"bias_gelu [8192,4096] hand", bytes, t, close(ref, y)});
  }

  {  // reduction-broadcast layers on [16384, 1024]: fp32 and bf16 (computed in fp32)
    const index_t m = 16384, n = 1024;
    layer_inputs d(m, n, 5);
    auto& [hx, hg, hb, x, y, g, b] = d;
    fused_layers(rows, d, "[16384,1024]", true);
    const double bytes = d.bytes();
    auto sm_ref = fuse::eval(fuse::softmax(hx, fuse::axis<-1>));
    auto t = time_calls(y, [&] { fuse::assign(fuse::eager(fuse::cuda{}), y, fuse::softmax(x, fuse::axis<-1>)); });
    rows.push_back({"softmax [16384,1024] fp32 eager", bytes, t, close(sm_ref, y)});
    auto rn_ref = fuse::eval(fuse::rms_norm(hx, hg));
    t = time_calls(y, [&] { fuse::assign(fuse::cuda{}, y, fuse::rms_norm(x, g)); });
    rows.push_back({"rms_norm [16384,1024] fp32 fused", bytes + 4.0 * n, t, close(rn_ref, y)});
    t = time_calls(y, [&] { hand::launch_rms_norm(x.data(), g.data(), 1e-6f, y.data(), m, n); });
    rows.push_back({"rms_norm [16384,1024] fp32 hand", bytes + 4.0 * n, t, close(rn_ref, y)});

    // bf16 storage: half the bytes; checked against the fp32 CPU result at bf16 precision. Input
    // and output (64 MiB) would nearly fit the 50-60 MB L2, so the runs rotate over 4 input copies.
    fuse::device_tensor<__nv_bfloat16, 2> yb(m, n);
    std::vector<fuse::device_tensor<__nv_bfloat16, 2>> xbs;
    xbs.reserve(4);
    for (int c = 0; c < 4; ++c) fuse::assign(xbs.emplace_back(m, n), fuse::cast<__nv_bfloat16>(x));
    const auto& xb = xbs[0];
    int turn = 0;
    auto next_xb = [&]() -> const auto& { return xbs[turn++ % 4]; };
    fuse::tensor<float, 2> hxb(m, n);
    fuse::copy(hxb, fuse::eval(fuse::cuda{}, fuse::cast<float>(xb)));
    auto as_float = [&] { return fuse::eval(fuse::cuda{}, fuse::cast<float>(yb)); };
    const double bbytes = 2.0 * m * n * 2;
    auto smb_ref = fuse::eval(fuse::softmax(hxb, fuse::axis<-1>));
    t = time_calls(yb, [&] { fuse::assign(fuse::cuda{}, yb, fuse::softmax(next_xb(), fuse::axis<-1>)); });
    rows.push_back({"softmax [16384,1024] bf16 fused", bbytes, t, close(smb_ref, as_float(), 1e-2)});
    t = time_calls(yb, [&] { hand::launch_softmax(next_xb().data(), yb.data(), m, n); });
    rows.push_back({"softmax [16384,1024] bf16 hand", bbytes, t, close(smb_ref, as_float(), 1e-2)});
    auto lnb_ref = fuse::eval(fuse::layer_norm(hxb, hg, hb));
    t = time_calls(yb, [&] { fuse::assign(fuse::cuda{}, yb, fuse::layer_norm(next_xb(), g, b)); });
    rows.push_back({"layer_norm [16384,1024] bf16 fused", bbytes + 8.0 * n, t, close(lnb_ref, as_float(), 1e-2)});
    t = time_calls(yb, [&] { hand::launch_layer_norm(next_xb().data(), g.data(), b.data(), 1e-5f, yb.data(), m, n); });
    rows.push_back({"layer_norm [16384,1024] bf16 hand", bbytes + 8.0 * n, t, close(lnb_ref, as_float(), 1e-2)});
  }
  {  // medium rows: one block per row, the row in the block's registers (rows of 1025-8192)
    layer_inputs d(4096, 4096, 10);
    fused_layers(rows, d, "[4096,4096]");
  }
  {  // softmax over long rows, and a full reduction
    const index_t m = 64, n = 262144;
    auto hx = random_host<2>({m, n}, 8);
    fuse::device_tensor<float, 2> x(m, n), y(m, n);
    fuse::copy(x, hx);
    auto ref = fuse::eval(fuse::softmax(hx, fuse::axis<-1>));
    const auto t = time_calls(y, [&] { fuse::assign(fuse::cuda{}, y, fuse::softmax(x, fuse::axis<-1>)); });
    rows.push_back({"softmax [64,262144] fp32 fused", 2.0 * m * n * 4, t, close(ref, y)});
    const index_t n2 = index_t(1) << 25;
    auto hs = random_host<1>({n2}, 9);
    fuse::device_tensor<float, 1> s(n2);
    fuse::copy(s, hs);
    double exact = 0;
    for (index_t i = 0; i < n2; ++i) exact += double(hs(i)) * hs(i);
    float got = NAN;
    const auto t2 = time_calls([&] { got = fuse::eval(fuse::cuda{}, fuse::sum(s * s)); });
    rows.push_back({"sum of squares 2^25 fp32", n2 * 4.0, t2, std::abs(got - exact) / exact < 1e-6});
  }

  // x hand: the hand-written kernel's time over this row's, where the table has one for it.
  auto hand_ratio = [&](const row& r) {
    const auto fused = r.name.rfind(" fused");
    if (fused == std::string::npos) return std::string();
    const std::string hand_name = r.name.substr(0, fused) + " hand";
    for (const row& h : rows)
      if (h.name == hand_name) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%.3f", h.t.ms / r.t.ms);
        return std::string(buf);
      }
    return std::string();
  };
  std::printf("\n%s, %d SMs; batches of 10 calls (1 call: events around one call on an idle GPU)\n", prop.name,
              prop.multiProcessorCount);
  std::printf("%-36s %9s %7s %7s %9s %7s %8s %6s\n", "workload", "GB/s", "x copy", "x hand", "1 call", "x copy",
              "host us", "check");
  bool ok = true;
  for (auto& r : rows) {
    std::printf("%-36s %9.1f %7.3f %7s %9.1f %7.3f %8.1f %6s\n", r.name.c_str(), r.gbs(), r.gbs() / copy_gbs,
                hand_ratio(r).c_str(), r.single_gbs(), r.single_gbs() / copy_single_gbs, r.t.host_us, r.pass ? "pass" : "FAIL");
    ok = ok && r.pass;
  }
  return ok ? 0 : 1;
}
