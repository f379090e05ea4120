// SPDX-License-Identifier: GPL-3.0-or-later
// Times the CPU transformer kernels (attention, LayerNorm, GELU, forward and
// backward) on the ViT projects' shapes, one JSON line each.
//   bench_transformer_kernels [--batch N] [--repeat N] [--model vit-tiny|vit-b16]
//                             [--build ISA] [--precision fp32|bf16] [--native on|off]
// The kernels are those the CPU backend runs: of the build it runs
// (kernel_builds.h) or of the build named (x86-64, AVX2, AVX-512), and with
// bf16 features the kernels written for the CPU's bfloat16 instructions
// where it has them (AMX, AVX-512 BF16: cpu_kernels.h) unless --native off;
// "build" says which ran. Threads come from OMP_NUM_THREADS. "min_ms" is
// the fastest of --repeat calls (other load on a shared machine only ever
// adds time), "ms" the median; "gflops" counts attention's matrix products
// (2 T^2 d multiply-adds a head forward, 5 T^2 d backward: S, dP, dQ, dK,
// dV) from min_ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernel_builds.h"
#include "backends/cpu/kernels/tile_attention.h"
#include "bench_tensors.h"

namespace {

using namespace tr;
using tr::bench::Tensors;

struct Model {
  const char* name;
  int64_t tokens, dim, heads, mlp, batch;
};

constexpr Model kModels[] = {
    {"vit-tiny", 50, 64, 4, 128, 128},
    {"vit-b16", 197, 768, 12, 3072, 8},
};

struct Options {
  int64_t batch = 0;  // 0: the model's
  int repeat = 20;
  std::string model, build;
  DType features = DType::FP32;
  bool native = true;
};

struct Timing {
  double median = 0, min = 0;
};

Timing time_kernel(int repeat, cpu::Kernel k, const KernelArgs& a) {
  for (int i = 0; i < 2; ++i) k(a);
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    k(a);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

void report(const Model& m, int64_t batch, const char* op, const char* isa, Timing t,
            double flops) {
  std::printf(
      "{\"model\":\"%s\",\"batch\":%lld,\"op\":\"%s\",\"build\":\"%s\",\"ms\":%.3f,"
      "\"min_ms\":%.3f",
      m.name, static_cast<long long>(batch), op, isa, t.median, t.min);
  if (flops > 0) std::printf(",\"gflops\":%.1f", flops / t.min / 1e6);
  std::printf("}\n");
}

// One op's node, for the kernel table and the kernel's arguments.
GraphNode node_of(ComputeOp op) {
  GraphNode n;
  n.op = op;
  return n;
}

void bench_model(const Model& m, const Options& o, const cpu::OwnKernels& own) {
  const int64_t n = o.batch > 0 ? o.batch : m.batch;
  std::mt19937 rng(5);
  Tensors t;
  const Shape x{n, 1, m.tokens, m.dim}, qkv{n, 1, m.tokens, 3 * m.dim},
      lse{n, 1, m.tokens, m.heads}, c{1, 1, 1, m.dim}, saved{n, 1, m.tokens, 2},
      hidden{n, 1, m.tokens, m.mlp};
  // Features (and their gradients) in the precision asked; statistics,
  // scales and shifts FP32, as a plan places them.
  auto feature = [&](const Shape& s) { return t.add(s, rng, -1.0f, 1.0f, o.features); };
  const size_t q = feature(qkv), o_ = feature(x), l = t.add(lse, rng), dout = feature(x),
               dq = feature(qkv), gamma = t.add(c, rng, 0.5f, 1.5f), beta = t.add(c, rng),
               st = t.add(saved, rng), y = feature(x), dgamma = t.add(c, rng),
               dbeta = t.add(c, rng), dx = feature(x), h = feature(hidden), hy = feature(hidden),
               hd = feature(hidden);
  const GraphNode attn_fwd = node_of(ComputeOp::ATTENTION_FWD),
                  attn_bwd = node_of(ComputeOp::ATTENTION_BWD),
                  ln_fwd_node = node_of(ComputeOp::LAYER_NORM_FWD),
                  ln_bwd_node = node_of(ComputeOp::LAYER_NORM_BWD),
                  act_fwd = node_of(ComputeOp::ACTIVATION_FWD),
                  act_bwd = node_of(ComputeOp::ACTIVATION_BWD);
  const std::string own_isa = std::string(own.isa) + (o.features == DType::BF16 ? " bf16" : "");
  // The kernel the backend runs for `a`, and what ran.
  auto timed = [&](const KernelArgs& a, std::string& isa) {
    const cpu::Kernel k = cpu::launch_kernel(a, own, o.native);
    isa = k == cpu::compute_kernel(a.node->op, own) ? own_isa : own_isa + " native";
    return time_kernel(o.repeat, k, a);
  };
  std::string isa;

  LayerNode attn;
  attn.id = "attn";
  attn.type = LayerType::SelfAttention;
  attn.params.heads = m.heads;
  const double d = static_cast<double>(m.dim / m.heads);
  const double pair_products =
      static_cast<double>(n * m.heads) * static_cast<double>(m.tokens * m.tokens) * d * 2.0;
  // The forward's log-sum-exp is the backward's input: run the forward first.
  Timing tm = timed(t.args({q}, {o_, l}, attn, attn_fwd), isa);
  report(m, n, "ATTENTION_FWD", isa.c_str(), tm, 2 * pair_products);
  tm = timed(t.args({q, o_, l, dout}, {dq}, attn, attn_bwd), isa);
  report(m, n, "ATTENTION_BWD", isa.c_str(), tm, 5 * pair_products);

  LayerNode ln;
  ln.id = "ln";
  ln.type = LayerType::LayerNorm;
  tm = timed(t.args({o_, gamma, beta}, {y, st}, ln, ln_fwd_node), isa);
  report(m, n, "LAYER_NORM_FWD", isa.c_str(), tm, 0);
  tm = timed(t.args({o_, gamma, st, dout}, {dgamma, dbeta, dx}, ln, ln_bwd_node), isa);
  report(m, n, "LAYER_NORM_BWD", isa.c_str(), tm, 0);

  LayerNode gelu;
  gelu.id = "gelu";
  gelu.type = LayerType::GELU;
  tm = timed(t.args({h}, {hy}, gelu, act_fwd), isa);
  report(m, n, "GELU_FWD", isa.c_str(), tm, 0);
  tm = timed(t.args({h, hy}, {hd}, gelu, act_bwd), isa);
  report(m, n, "GELU_BWD", isa.c_str(), tm, 0);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--batch" && has_value) {
      o.batch = std::atoll(argv[++i]);
    } else if (a == "--repeat" && has_value) {
      o.repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--model" && has_value) {
      o.model = argv[++i];
    } else if (a == "--build" && has_value) {
      o.build = argv[++i];
    } else if (a == "--precision" && has_value &&
               (std::strcmp(argv[i + 1], "fp32") == 0 || std::strcmp(argv[i + 1], "bf16") == 0)) {
      o.features = std::strcmp(argv[++i], "bf16") == 0 ? DType::BF16 : DType::FP32;
    } else if (a == "--native" && has_value &&
               (std::strcmp(argv[i + 1], "on") == 0 || std::strcmp(argv[i + 1], "off") == 0)) {
      o.native = std::strcmp(argv[++i], "on") == 0;
    } else {
      std::fprintf(stderr,
                   "usage: bench_transformer_kernels [--batch N] [--repeat N] "
                   "[--model vit-tiny|vit-b16] [--build x86-64|AVX2|AVX-512] "
                   "[--precision fp32|bf16] [--native on|off]\n");
      return 2;
    }
  }
  const cpu::OwnKernels* build = &cpu::best_own_kernels();
  if (!o.build.empty() && o.build != "x86-64") {
    const cpu::LoadedKernels* k = cpu::optional_own_kernels(o.build);
    if (!k || !k->kernels) {
      std::fprintf(stderr, "bench_transformer_kernels: no %s build here%s%s\n", o.build.c_str(),
                   k ? ": " : "", k ? k->problem.c_str() : "");
      return 1;
    }
    build = k->kernels;
  } else if (o.build == "x86-64") {
    build = &cpu::portable_own_kernels();
  }
  bool any = false;
  for (const Model& m : kModels) {
    if (!o.model.empty() && o.model != m.name) continue;
    any = true;
    bench_model(m, o, *build);
  }
  if (!any) {
    std::fprintf(stderr, "bench_transformer_kernels: unknown model '%s' (vit-tiny, vit-b16)\n",
                 o.model.c_str());
    return 2;
  }
  return 0;
}
