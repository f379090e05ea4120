// SPDX-License-Identifier: GPL-3.0-or-later
// Measures what fusing BatchNorm2d with the ReLU after it saves on the CPU:
// for each BN+ReLU pair of the model zoo, BN then ReLU against the fused
// kernel, forward and backward, one JSON line each, then per-model totals.
//   bench_bn_relu [--batch N] [--repeat N] [--dtype fp32|bf16] [--build ISA]
// The kernels are those of the build the CPU backend runs (kernel_builds.h),
// or of the build named (x86-64, AVX2, AVX-512).
// The two programs alternate call by call and each keeps its fastest time:
// other load on a shared machine only ever adds time, so the minimum of
// interleaved runs is the fairest comparison there is on such a host.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernel_builds.h"
#include "bench_tensors.h"

namespace {

using namespace tr;
using tr::bench::Tensors;

struct Pair {
  const char* model;
  const char* layer;
  int64_t h, w, c;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Fastest time of each of two functions, called alternately `repeat` times.
std::pair<double, double> interleaved_min(int repeat, const std::function<void()>& a,
                                          const std::function<void()>& b) {
  a();
  b();
  double best_a = 1e30, best_b = 1e30;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    a();
    best_a = std::min(best_a, ms_since(t0));
    t0 = std::chrono::steady_clock::now();
    b();
    best_b = std::min(best_b, ms_since(t0));
  }
  return {best_a, best_b};
}

struct Saving {
  double plain = 0, fused = 0;
};

struct Kernels {
  cpu::Kernel bn_fwd, relu_fwd, bn_relu_fwd, relu_bwd, bn_bwd, bn_relu_bwd;
};

Kernels kernels_of(const cpu::OwnKernels& build) {
  auto k = [&](ComputeOp op) { return cpu::compute_kernel(op, build); };
  return {k(ComputeOp::BN_FWD_TRAIN), k(ComputeOp::RELU_FWD), k(ComputeOp::BN_RELU_FWD_TRAIN),
          k(ComputeOp::RELU_BWD),     k(ComputeOp::BN_BWD),   k(ComputeOp::BN_RELU_BWD)};
}

// Features and parameters in `dt`, statistics in FP32, as the plan lays them out.
Saving bench_pair(const Pair& p, int64_t batch, int repeat, DType dt, const Kernels& k) {
  std::mt19937 rng(3);
  LayerNode layer;
  layer.id = p.layer;
  layer.type = LayerType::BatchNorm2d;
  const GraphNode node;
  const Shape s{batch, p.h, p.w, p.c}, c{1, 1, 1, p.c};
  Tensors t;
  const size_t x = t.add(s, rng, -2.0f, 3.0f, dt), gamma = t.add(c, rng, 0.5f, 1.5f, dt),
               beta = t.add(c, rng, -1.0f, 1.0f, dt), pm = t.add(c, rng),
               pv = t.add(c, rng, 0.5f, 1.0f), y = t.add(s, rng, -1.0f, 1.0f, dt),
               r = t.add(s, rng, -1.0f, 1.0f, dt), saved = t.add({1, 1, 2, p.c}, rng),
               nm = t.add(c, rng), nv = t.add(c, rng), dr = t.add(s, rng, -1.0f, 1.0f, dt),
               dy = t.add(s, rng, -1.0f, 1.0f, dt), dg = t.add(c, rng, -1.0f, 1.0f, dt),
               db = t.add(c, rng, -1.0f, 1.0f, dt), dx = t.add(s, rng, -1.0f, 1.0f, dt);
  const KernelArgs bn_f = t.args({x, gamma, beta, pm, pv}, {y, saved, nm, nv}, layer, node);
  const KernelArgs relu_f = t.args({y}, {r}, layer, node);
  const KernelArgs fused_f = t.args({x, gamma, beta, pm, pv}, {r, saved, nm, nv}, layer, node);
  const KernelArgs relu_b = t.args({y, dr}, {dy}, layer, node);
  const KernelArgs bn_b = t.args({x, gamma, saved, dy}, {dg, db, dx}, layer, node);
  const KernelArgs fused_b = t.args({x, gamma, beta, saved, dr}, {dg, db, dx}, layer, node);
  k.bn_fwd(bn_f);  // saved statistics for the backward passes

  const auto [fwd_plain, fwd_fused] = interleaved_min(
      repeat,
      [&] {
        k.bn_fwd(bn_f);
        k.relu_fwd(relu_f);
      },
      [&] { k.bn_relu_fwd(fused_f); });
  const auto [bwd_plain, bwd_fused] = interleaved_min(
      repeat,
      [&] {
        k.relu_bwd(relu_b);
        k.bn_bwd(bn_b);
      },
      [&] { k.bn_relu_bwd(fused_b); });
  std::printf(
      "{\"model\":\"%s\",\"layer\":\"%s\",\"shape\":[%lld,%lld,%lld,%lld],"
      "\"fwd_plain_ms\":%.4f,\"fwd_fused_ms\":%.4f,\"bwd_plain_ms\":%.4f,\"bwd_fused_ms\":%.4f}\n",
      p.model, p.layer, static_cast<long long>(batch), static_cast<long long>(p.h),
      static_cast<long long>(p.w), static_cast<long long>(p.c), fwd_plain, fwd_fused, bwd_plain,
      bwd_fused);
  return {fwd_plain + bwd_plain, fwd_fused + bwd_fused};
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 128;
  int repeat = 30;
  DType dt = DType::FP32;
  const cpu::OwnKernels* build = &cpu::best_own_kernels();
  const char* usage =
      "usage: bench_bn_relu [--batch N] [--repeat N] [--dtype fp32|bf16] [--build ISA]\n";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
      batch = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
      const std::string d = argv[++i];
      if (d != "fp32" && d != "bf16") {
        std::fprintf(stderr, "bench_bn_relu: --dtype takes fp32 or bf16, got '%s'\n", d.c_str());
        return 2;
      }
      dt = d == "bf16" ? DType::BF16 : DType::FP32;
    } else if (std::strcmp(argv[i], "--build") == 0 && i + 1 < argc) {
      const std::string isa = argv[++i];
      build = nullptr;
      for (const cpu::OwnKernels* b : cpu::runnable_own_kernels())
        if (isa == b->isa) build = b;
      if (!build) {
        std::string names;
        for (const cpu::OwnKernels* b : cpu::runnable_own_kernels())
          names += std::string(names.empty() ? "" : ", ") + b->isa;
        std::fprintf(stderr, "bench_bn_relu: no %s build runs here (these do: %s)\n", isa.c_str(),
                     names.c_str());
        return 2;
      }
    } else {
      std::fputs(usage, stderr);
      return 2;
    }
  }
  const Kernels k = kernels_of(*build);
  std::printf("{\"build\":\"%s\",\"dtype\":\"%s\"}\n", build->isa,
              dt == DType::BF16 ? "bf16" : "fp32");
  // The BN+ReLU pairs the compiler fuses in projects/*.json (28x28x1 inputs).
  const std::vector<Pair> pairs = {
      {"cnn-bn", "bn1", 28, 28, 32},       {"cnn-bn", "bn2", 28, 28, 32},
      {"cnn-bn", "bn3", 14, 14, 64},       {"cnn-bn", "bn4", 14, 14, 64},
      {"resnet8", "bn1", 28, 28, 16},      {"resnet8", "s1b1_bn1", 28, 28, 16},
      {"resnet8", "s2b1_bn1", 14, 14, 32}, {"resnet8", "s3b1_bn1", 7, 7, 64},
  };
  std::string model;
  Saving total;
  auto flush = [&] {
    if (model.empty()) return;
    std::printf(
        "{\"model\":\"%s\",\"kernel\":\"bn_relu_total\",\"plain_ms\":%.3f,\"fused_ms\":%.3f,"
        "\"saved_ms\":%.3f}\n",
        model.c_str(), total.plain, total.fused, total.plain - total.fused);
    total = {};
  };
  for (const Pair& p : pairs) {
    if (model != p.model) {
      flush();
      model = p.model;
    }
    const Saving s = bench_pair(p, batch, repeat, dt, k);
    total.plain += s.plain;
    total.fused += s.fused;
  }
  flush();
  return 0;
}
