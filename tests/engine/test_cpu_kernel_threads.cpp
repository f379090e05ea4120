// SPDX-License-Identifier: GPL-3.0-or-later
// The parallel paths of the CPU kernels (taken above half a million elements)
// give the same bits on one thread and on two, so a seed reproduces a run
// whatever the thread count.
#include <QtTest>

#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/batch_norm.h"
#include "backends/cpu/kernels/pooling.h"
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

void compare(void (*kernel)(const KernelArgs&), const std::vector<Shape>& ins,
             const std::vector<Shape>& outs, const LayerNode* layer = nullptr) {
  const auto one = outputs(1, kernel, ins, outs, layer);
  const auto two = outputs(2, kernel, ins, outs, layer);
  QCOMPARE(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i)
    QVERIFY2(std::memcmp(one[i].data(), two[i].data(), one[i].size() * sizeof(float)) == 0,
             qPrintable("output " + QString::number(i) + " differs between 1 and 2 threads"));
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
    compare(cpu::bn_fwd_train, {kX, c, c, c, c}, {kX, {1, 1, 2, kX.c}, c, c}, &bn);
  }

  void batchNormBackward() {
    LayerNode bn;
    bn.type = LayerType::BatchNorm2d;
    const Shape c{1, 1, 1, kX.c};
    // saved statistics are random too: the kernel only combines them
    compare(cpu::bn_bwd, {kX, c, {1, 1, 2, kX.c}, kX}, {c, c, kX}, &bn);
  }

  void reluBackward() { compare(cpu::relu_bwd, {kX, kX}, {kX}); }

  void maxPool() {
    LayerNode pool;
    pool.type = LayerType::MaxPool2d;
    pool.params.kernel_h = pool.params.kernel_w = 3;
    pool.params.stride_h = pool.params.stride_w = 2;
    pool.params.pad_h = pool.params.pad_w = 1;
    const Shape y{kX.n, 14, 14, kX.c};
    compare(cpu::maxpool_fwd, {kX}, {y}, &pool);
    compare(cpu::maxpool_bwd, {kX, y, y}, {kX}, &pool);
  }
};

QTEST_APPLESS_MAIN(TestCpuKernelThreads)
#include "test_cpu_kernel_threads.moc"
