// SPDX-License-Identifier: GPL-3.0-or-later
// Times the CPU convolution and linear kernels on the model zoo's layers, one JSON line each.
//   bench_dense_kernels [--batch N] [--repeat N] [--model lenet|resnet8|cnn-bn]
// Threads come from OMP_NUM_THREADS (oneDNN runs on OpenMP). Warm-up calls
// create the cached primitives first, so the figures are a training step's
// steady state: "ms" is the median of --repeat calls, "min_ms" the fastest,
// and "gflops" comes from min_ms because other load on a shared machine only
// ever adds time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/dense.h"
#include "backends/cpu/kernels/onednn_info.h"
#include "bench_tensors.h"
#include "zoo_layers.h"

namespace {

using namespace tr;
using tr::bench::ConvLayer;
using tr::bench::LinearLayer;
using tr::bench::Tensors;

using Options = tr::bench::ZooOptions;

struct Timing {
  double median = 0, min = 0;
};

Timing time_kernel(const Options& o, const KernelArgs& a, void (*kernel)(const KernelArgs&)) {
  for (int i = 0; i < 3; ++i) kernel(a);
  std::vector<double> ms;
  for (int i = 0; i < o.repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    kernel(a);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

// Prints one kernel's line and returns its median, for the step total.
double print(const std::string& model, const std::string& layer, const char* kernel,
             const std::string& shape, Timing t, double flops, const std::string& impl) {
  std::printf(
      "{\"model\":\"%s\",\"layer\":\"%s\",\"kernel\":\"%s\",\"shape\":\"%s\",\"ms\":%.4f,"
      "\"min_ms\":%.4f,\"gflops\":%.1f,\"impl\":\"%s\"}\n",
      model.c_str(), layer.c_str(), kernel, shape.c_str(), t.median, t.min, flops / t.min / 1e6,
      impl.c_str());
  return t.median;
}

// Returns the milliseconds of one training step's worth of these kernels.
double bench_conv(const Options& o, const std::string& model, const ConvLayer& c) {
  std::mt19937 rng(1);
  LayerNode layer;
  layer.id = c.name;
  layer.type = LayerType::Conv2d;
  layer.params.out_channels = c.co;
  layer.params.kernel_h = layer.params.kernel_w = c.k;
  layer.params.stride_h = layer.params.stride_w = c.stride;
  layer.params.pad_h = layer.params.pad_w = c.pad;
  layer.params.bias = c.bias;
  const GraphNode node;
  const int64_t ho = (c.h + 2 * c.pad - c.k) / c.stride + 1,
                wo = (c.w + 2 * c.pad - c.k) / c.stride + 1;
  Tensors t;
  const size_t x = t.add({o.batch, c.h, c.w, c.ci}, rng), w = t.add({c.co, c.k, c.k, c.ci}, rng),
               b = t.add({1, 1, 1, c.co}, rng), y = t.add({o.batch, ho, wo, c.co}, rng),
               dy = t.add({o.batch, ho, wo, c.co}, rng), dw = t.add({c.co, c.k, c.k, c.ci}, rng),
               db = t.add({1, 1, 1, c.co}, rng), dx = t.add({o.batch, c.h, c.w, c.ci}, rng);
  const std::vector<size_t> fwd_in =
      c.bias ? std::vector<size_t>{x, w, b} : std::vector<size_t>{x, w};
  const std::vector<size_t> bwd_out =
      c.bias ? std::vector<size_t>{dw, db, dx} : std::vector<size_t>{dw, dx};
  const std::vector<size_t> first_out =
      c.bias ? std::vector<size_t>{dw, db} : std::vector<size_t>{dw};
  const KernelArgs fa = t.args(fwd_in, {y}, layer, node);
  const cpu::dense_info::ConvImpls impls = cpu::dense_info::conv_impls(fa);
  const double flops = 2.0 * static_cast<double>(o.batch * ho * wo * c.co * c.ci * c.k * c.k);
  char shape[160];
  std::snprintf(shape, sizeof shape, "[%lld,%lld,%lld,%lld] k%lld s%lld p%lld -> %lld%s",
                static_cast<long long>(o.batch), static_cast<long long>(c.h),
                static_cast<long long>(c.w), static_cast<long long>(c.ci),
                static_cast<long long>(c.k), static_cast<long long>(c.stride),
                static_cast<long long>(c.pad), static_cast<long long>(c.co), c.bias ? " +b" : "");

  auto run = [&](const char* kernel, const KernelArgs& a, void (*fn)(const KernelArgs&), double fl,
                 const std::string& impl) {
    return print(model, c.name, kernel, shape, time_kernel(o, a, fn), fl, impl);
  };
  auto part = [&](BwdPart p) {
    return t.args({x, w, dy}, bwd_out, layer, node, static_cast<int>(p));
  };
  double step = run("conv_fwd", fa, cpu::conv_fwd, flops, impls.fwd);
  run("conv_bwd.dW", part(BwdPart::DW), cpu::conv_bwd, flops, impls.bwd_weights);
  if (c.bias)
    run("conv_bwd.dB", part(BwdPart::DB), cpu::conv_bwd,
        static_cast<double>(o.batch * ho * wo * c.co), "sum_rows");
  if (c.first) {
    step += run("conv_bwd_first", t.args({x, dy}, first_out, layer, node), cpu::conv_bwd_first,
                flops, impls.bwd_weights);
  } else {
    run("conv_bwd.dX", part(BwdPart::DX), cpu::conv_bwd, flops, impls.bwd_data);
    // A gradient slot with two consumers (a residual block's input) adds into dx.
    GraphNode accumulating;
    accumulating.accumulate_mask = static_cast<uint8_t>(1u << (bwd_out.size() - 1));
    run("conv_bwd.dX_acc",
        t.args({x, w, dy}, bwd_out, layer, accumulating, static_cast<int>(BwdPart::DX)),
        cpu::conv_bwd, flops, impls.bwd_data);
    step +=
        run("conv_bwd.all", t.args({x, w, dy}, bwd_out, layer, node), cpu::conv_bwd, 2 * flops, "");
  }
  return step;
}

double bench_linear(const Options& o, const std::string& model, const LinearLayer& l) {
  std::mt19937 rng(2);
  LayerNode layer;
  layer.id = l.name;
  layer.type = LayerType::Linear;
  layer.params.out_channels = l.out;
  layer.params.bias = l.bias;
  const GraphNode node;
  Tensors t;
  const size_t x = t.add({o.batch, 1, 1, l.in}, rng), w = t.add({l.out, 1, 1, l.in}, rng),
               b = t.add({1, 1, 1, l.out}, rng), y = t.add({o.batch, 1, 1, l.out}, rng),
               dy = t.add({o.batch, 1, 1, l.out}, rng), dw = t.add({l.out, 1, 1, l.in}, rng),
               db = t.add({1, 1, 1, l.out}, rng), dx = t.add({o.batch, 1, 1, l.in}, rng);
  const std::vector<size_t> fwd_in =
      l.bias ? std::vector<size_t>{x, w, b} : std::vector<size_t>{x, w};
  const std::vector<size_t> bwd_out =
      l.bias ? std::vector<size_t>{dw, db, dx} : std::vector<size_t>{dw, dx};
  const double flops = 2.0 * static_cast<double>(o.batch * l.in * l.out);
  char shape[96];
  std::snprintf(shape, sizeof shape, "[%lld,%lld] x [%lld,%lld]%s", static_cast<long long>(o.batch),
                static_cast<long long>(l.in), static_cast<long long>(l.in),
                static_cast<long long>(l.out), l.bias ? " +b" : "");
  auto run = [&](const char* kernel, const KernelArgs& a, void (*fn)(const KernelArgs&), double fl,
                 const std::string& impl) {
    return print(model, l.name, kernel, shape, time_kernel(o, a, fn), fl, impl);
  };
  auto part = [&](BwdPart p) {
    return t.args({x, w, dy}, bwd_out, layer, node, static_cast<int>(p));
  };
  double step =
      run("linear_fwd", t.args(fwd_in, {y}, layer, node), cpu::linear_fwd, flops, "dnnl_sgemm");
  run("linear_bwd.dW", part(BwdPart::DW), cpu::linear_bwd, flops, "dnnl_sgemm");
  if (l.bias)
    run("linear_bwd.dB", part(BwdPart::DB), cpu::linear_bwd, static_cast<double>(o.batch * l.out),
        "sum_rows");
  run("linear_bwd.dX", part(BwdPart::DX), cpu::linear_bwd, flops, "dnnl_sgemm");
  step += run("linear_bwd.all", t.args({x, w, dy}, bwd_out, layer, node), cpu::linear_bwd,
              2 * flops, "");
  return step;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!bench::parse_zoo_options(argc, argv, "bench_dense_kernels", o)) return 2;
  for (const bench::ZooModel& m : bench::zoo_models()) {
    if (!o.model.empty() && o.model != m.name) continue;
    double step = 0.0;
    for (const ConvLayer& c : m.convs) step += bench_conv(o, m.name, c);
    for (const LinearLayer& l : m.linears) step += bench_linear(o, m.name, l);
    std::printf("{\"model\":\"%s\",\"kernel\":\"step_total\",\"batch\":%lld,\"ms\":%.3f}\n", m.name,
                static_cast<long long>(o.batch), step);
  }
  return 0;
}
