// SPDX-License-Identifier: GPL-3.0-or-later
// The parallel paths of the CPU kernels (taken above half a million elements)
// give the same bits on one thread and on two, and in both builds of our own
// kernels, so a seed reproduces a run whatever the thread count and the CPU.
#include <QtTest>

#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/cpu_threads.h"
#include "core/bf16_convert.h"
#include "kernel_harness.h"

using namespace tr;

namespace {

constexpr Shape kX{64, 28, 28, 32};  // 1.6 M elements: above the parallel threshold

// Runs `kernel` on fresh copies of the same random inputs with `threads`
// threads and returns every output's bytes.
std::vector<std::vector<float>> outputs(int threads, void (*kernel)(const KernelArgs&),
                                        const std::vector<Shape>& ins,
                                        const std::vector<Shape>& outs, const LayerNode* layer) {
  cpu::set_cpu_threads(threads);
  test::KernelHarness h;
  std::mt19937 rng(11);
  std::vector<size_t> in_ids, out_ids;
  for (const Shape& s : ins) {
    in_ids.push_back(h.tensor(s));
    h.fill_random(in_ids.back(), rng);
  }
  for (const Shape& s : outs) out_ids.push_back(h.tensor(s));
  GraphNode node;
  node.layer = 0;
  kernel(h.args(in_ids, out_ids, &node, layer));
  std::vector<std::vector<float>> result;
  for (size_t id : out_ids) result.emplace_back(h.f32(id), h.f32(id) + h.elements(id));
  return result;
}

// The op's kernel in each build of our own kernels on 1 and 2 threads: all
// the same bits (the builds' equality on small cases: engine.backend_ops).
void compare(ComputeOp op, const std::vector<Shape>& ins, const std::vector<Shape>& outs,
             const LayerNode* layer = nullptr) {
  const std::vector<const cpu::OwnKernels*> builds = cpu::runnable_own_kernels();
  const auto first = outputs(1, cpu::compute_kernel(op, *builds[0]), ins, outs, layer);
  for (const cpu::OwnKernels* build : builds)
    for (int threads : {1, 2}) {
      const auto got = outputs(threads, cpu::compute_kernel(op, *build), ins, outs, layer);
      QCOMPARE(got.size(), first.size());
      for (size_t i = 0; i < got.size(); ++i)
        QVERIFY2(std::memcmp(got[i].data(), first[i].data(), got[i].size() * sizeof(float)) == 0,
                 qPrintable(QStringLiteral("output %1 of the %2 build on %3 threads differs from "
                                           "the x86-64 build's on 1")
                                .arg(i)
                                .arg(build->isa)
                                .arg(threads)));
    }
}

// The bytes of the outputs of `ops` (native BF16 kernels, cpu_kernels.h),
// run in order on the same tensors with `threads` threads. `dtypes` gives
// each tensor's type; BF16 ones start random, FP32 ones from `fp32_lo`.
struct NativeLaunch {
  ComputeOp op;
  std::vector<size_t> ins, outs;
};
std::vector<std::vector<float>> native_outputs(int threads, const std::vector<Shape>& shapes,
                                               const std::vector<DType>& dtypes,
                                               const std::vector<NativeLaunch>& launches,
                                               const LayerNode& layer) {
  cpu::set_cpu_threads(threads);
  test::KernelHarness h;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<size_t> ids;
  for (size_t i = 0; i < shapes.size(); ++i) {
    ids.push_back(h.tensor(shapes[i], dtypes[i]));
    if (dtypes[i] == DType::BF16) {
      auto* bits = reinterpret_cast<uint16_t*>(h.f32(ids.back()));
      for (int64_t k = 0; k < h.elements(ids.back()); ++k) bits[k] = float_to_bf16_bits(u(rng));
    } else {
      h.fill_random(ids.back(), rng, 0.5f, 1.5f);
    }
  }
  const cpu::OwnKernels& own = cpu::best_own_kernels();
  std::vector<std::vector<float>> result;
  for (const NativeLaunch& l : launches) {
    GraphNode node;
    node.layer = 0;
    node.op = l.op;
    std::vector<size_t> in, out;
    for (size_t i : l.ins) in.push_back(ids[i]);
    for (size_t i : l.outs) out.push_back(ids[i]);
    const KernelArgs a = h.args(in, out, &node, &layer);
    const cpu::Kernel k = cpu::launch_kernel(a, own, true);
    if (k == cpu::compute_kernel(l.op, own)) return {};  // not a native kernel's launch
    k(a);
    for (size_t i : l.outs) {
      const float* f = h.f32(ids[i]);
      const int64_t n = h.elements(ids[i]);
      result.emplace_back(f, f + (dtypes[i] == DType::BF16 ? (n + 1) / 2 : n));
    }
  }
  return result;
}

// The native kernels' launches on one thread and on two: the same bits.
void compare_native(const std::vector<Shape>& shapes, const std::vector<DType>& dtypes,
                    const std::vector<NativeLaunch>& launches, const LayerNode& layer) {
  const auto one = native_outputs(1, shapes, dtypes, launches, layer);
  QVERIFY2(!one.empty(), "the backend would not run a native kernel on these launches");
  const auto two = native_outputs(2, shapes, dtypes, launches, layer);
  QCOMPARE(two.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i)
    QVERIFY2(std::memcmp(one[i].data(), two[i].data(), one[i].size() * sizeof(float)) == 0,
             qPrintable(QStringLiteral("output %1 differs on 2 threads").arg(i)));
}

}  // namespace

class TestCpuKernelThreads : public QObject {
  Q_OBJECT

 private slots:
  void cleanupTestCase() { cpu::set_cpu_threads(2); }

  void batchNormForward() {
    LayerNode bn;
    bn.type = LayerType::BatchNorm2d;
    const Shape c{1, 1, 1, kX.c};
    compare(ComputeOp::BN_FWD_TRAIN, {kX, c, c, c, c}, {kX, {1, 1, 2, kX.c}, c, c}, &bn);
  }

  void batchNormBackward() {
    LayerNode bn;
    bn.type = LayerType::BatchNorm2d;
    const Shape c{1, 1, 1, kX.c};
    // saved statistics are random too: the kernel only combines them
    compare(ComputeOp::BN_BWD, {kX, c, {1, 1, 2, kX.c}, kX}, {c, c, kX}, &bn);
  }

  // Rows split over the threads; the parameter gradients in fixed parts.
  void layerNorm() {
    const Shape c{1, 1, 1, kX.c}, saved{kX.n, kX.h, kX.w, 2};
    compare(ComputeOp::LAYER_NORM_FWD, {kX, c, c}, {kX, saved});
    compare(ComputeOp::LAYER_NORM_BWD, {kX, c, saved, kX}, {c, c, kX});
  }

  // Queries, keys and values of (sample, head, token) units over the threads,
  // with dropout on the probabilities (drawn per query and key, not per thread).
  void attention() {
    LayerNode layer;
    layer.type = LayerType::Linear;
    layer.params.heads = 4;
    layer.params.attention_dropout = 0.2;
    const Shape x{8, 1, 64, 64}, qkv{8, 1, 64, 192}, lse{8, 1, 64, 4};
    compare(ComputeOp::ATTENTION_FWD, {qkv}, {x, lse}, &layer);
    compare(ComputeOp::ATTENTION_BWD, {qkv, x, lse, x}, {qkv}, &layer);
  }

  // The native BF16 kernels (cpu_kernels.h): attention on AMX tiles a
  // (sample, head) pair a thread; LayerNorm's rows over the threads and its
  // parameter gradients in fixed parts; GELU elementwise.
  void nativeAttention() {
    if (!cpu::native_kernel_runs_here(ComputeOp::ATTENTION_FWD))
      QSKIP("no AMX tiles here (the CPU lacks AMX-BF16 or the OS did not grant them)");
    LayerNode layer;
    layer.type = LayerType::Linear;
    layer.params.heads = 4;
    layer.params.attention_dropout = 0.2;
    const Shape x{8, 1, 64, 64}, qkv{8, 1, 64, 192}, lse{8, 1, 64, 4};
    const DType h = DType::BF16, f = DType::FP32;
    compare_native(
        {qkv, x, lse, x, qkv}, {h, h, f, h, h},
        {{ComputeOp::ATTENTION_FWD, {0}, {1, 2}}, {ComputeOp::ATTENTION_BWD, {0, 1, 2, 3}, {4}}},
        layer);
  }

  void nativeLayerNormAndGelu() {
    if (!cpu::native_kernel_runs_here(ComputeOp::LAYER_NORM_FWD)) QSKIP("no AVX-512 BF16 here");
    const Shape c{1, 1, 1, kX.c}, saved{kX.n, kX.h, kX.w, 2};
    const DType h = DType::BF16, f = DType::FP32;
    LayerNode ln;
    ln.type = LayerType::LayerNorm;
    // x, gamma, beta, y, saved, dy, dgamma, dbeta, dx
    compare_native({kX, c, c, kX, saved, kX, c, c, kX}, {h, f, f, h, f, h, f, f, h},
                   {{ComputeOp::LAYER_NORM_FWD, {0, 1, 2}, {3, 4}},
                    {ComputeOp::LAYER_NORM_BWD, {0, 1, 4, 5}, {6, 7, 8}}},
                   ln);
    LayerNode gelu;
    gelu.type = LayerType::GELU;
    compare_native(
        {kX, kX, kX, kX}, {h, h, h, h},
        {{ComputeOp::ACTIVATION_FWD, {0}, {1}}, {ComputeOp::ACTIVATION_BWD, {0, 2}, {3}}}, gelu);
  }

  void reluBackward() { compare(ComputeOp::RELU_BWD, {kX, kX}, {kX}); }

  void maxPool() {
    LayerNode pool;
    pool.type = LayerType::MaxPool2d;
    pool.params.kernel_h = pool.params.kernel_w = 3;
    pool.params.stride_h = pool.params.stride_w = 2;
    pool.params.pad_h = pool.params.pad_w = 1;
    const Shape y{kX.n, 14, 14, kX.c};
    compare(ComputeOp::MAXPOOL_FWD, {kX}, {y}, &pool);
    compare(ComputeOp::MAXPOOL_BWD, {kX, y, y}, {kX}, &pool);
  }
};

QTEST_APPLESS_MAIN(TestCpuKernelThreads)
#include "test_cpu_kernel_threads.moc"
