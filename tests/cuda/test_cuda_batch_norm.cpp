// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CUDA batch-norm kernels: the stream workspace the
// statistics ask for, the refusal of a host-side rank sum or a missing
// workspace, SyncBatchNorm across devices (the statistics of the global batch
// through a device-side sum, against the CPU over the whole batch), a backward
// that skips absent outputs, and BN_EQ_PARAMS over more layers than one launch
// takes, laid out in another order than the layers. Tolerances: statistics
// 1e-5 relative; y, dgamma, dbeta, dx 1e-5 relative plus 1e-6 of the tensor's
// largest magnitude (cancellation in dx); BN_EQ_PARAMS 1e-6 relative plus 1e-7
// absolute. Every op's values against a plain reference, in FP32 and FP16:
// engine.backend_ops. The workspace sizing and the refusals run without a device.
#include <QtTest>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_rank_sum.h"
#include "compute_mirror.h"
#include "cuda_test_util.h"

using namespace tr;
using tr::test::ComputeMirror;
using tr::test::node_for;

namespace {

constexpr double kRel = 1e-5;
constexpr double kPeakFraction = 1e-6;
constexpr int kLargeMeanChannel = 1;

LayerNode bn_layer(double eps = 1e-5, double momentum = 0.1) {
  LayerNode l;
  l.id = "bn";
  l.type = LayerType::BatchNorm2d;
  l.params.eps = eps;
  l.params.momentum = momentum;
  return l;
}

double peak(ComputeMirror& m, size_t t) {
  double p = 0.0;
  for (int64_t i = 0; i < m.elements(t); ++i) p = std::max(p, std::fabs(double(m.f32(t)[i])));
  return p;
}

QString far(ComputeMirror& m, size_t t, const char* what, double rel, double abs) {
  return m.mismatch(t, what, rel, abs);
}

QString far_scaled(ComputeMirror& m, size_t t, const char* what) {
  return far(m, t, what, kRel, kPeakFraction * peak(m, t));
}

// Empty when the device's slot equals the CPU's byte for byte.
QString differs(const ComputeMirror& m, size_t t, const char* what) {
  for (uint64_t i = 0; i < m.bytes(t); ++i)
    if (m.gpu_bytes(t)[i] != m.cpu_bytes(t)[i])
      return QString("%1: byte %2 differs").arg(what).arg(i);
  return {};
}

#define EXPECT_NONE(diff)                   \
  do {                                      \
    const QString e_ = (diff);              \
    QVERIFY2(e_.isEmpty(), qPrintable(e_)); \
  } while (0)

// Every tensor of one BN layer, mirrored.
struct Bn {
  Shape s;
  size_t x, gamma, beta, prev_mean, prev_var, y, saved, next_mean, next_var, dy, dgamma, dbeta, dx;

  Bn(ComputeMirror& m, const Shape& shape, std::mt19937& rng) : s(shape) {
    const Shape ch{1, 1, 1, s.c};
    x = m.tensor(s);
    gamma = m.tensor(ch);
    beta = m.tensor(ch);
    prev_mean = m.tensor(ch);
    prev_var = m.tensor(ch);
    y = m.tensor(s);
    saved = m.tensor({1, 1, 2, s.c});
    next_mean = m.tensor(ch);
    next_var = m.tensor(ch);
    dy = m.tensor(s);
    dgamma = m.tensor(ch);
    dbeta = m.tensor(ch);
    dx = m.tensor(s);
    // Per-channel offsets and spreads, so channels differ.
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> offset(static_cast<size_t>(s.c)), spread(static_cast<size_t>(s.c));
    for (int64_t c = 0; c < s.c; ++c) {
      offset[static_cast<size_t>(c)] = c == kLargeMeanChannel ? 1e4f : u(rng);
      spread[static_cast<size_t>(c)] = 1.5f + u(rng);
    }
    for (int64_t i = 0; i < m.elements(x); ++i) {
      const size_t c = static_cast<size_t>(i % s.c);
      m.f32(x)[i] = offset[c] + spread[c] * u(rng);
    }
    m.fill(gamma, rng, 0.5f, 1.5f);
    m.f32(gamma)[0] = -0.75f;  // a negative gamma flips the ReLU's side
    m.fill(beta, rng, -0.5f, 0.5f);
    m.fill(prev_mean, rng);
    m.fill(prev_var, rng, 0.5f, 1.5f);
    m.fill(dy, rng);
    m.fill(dgamma, rng);  // what accumulating outputs add onto
    m.fill(dbeta, rng);
    m.fill(dx, rng);
  }
  int64_t rows() const { return s.n * s.h * s.w; }
};

const Shape kShapes[] = {
    {4, 5, 7, 37},    // 37 channels: two tiles, the second mostly idle
    {2, 3, 3, 3},     // fewer channels than a warp
    {1, 1, 1, 5},     // one row: the unbiased variance falls back to the biased
    {32, 56, 56, 8},  // N*H*W = 100352: hundreds of row slices
    {8, 28, 28, 96},  // three full tiles
};

// Every tensor of one BN layer as an AMP plan lays them out: FP16 features
// and gradients, FP32 scale, shift and their gradients (no 16-bit copy).
struct HalfBn {
  Shape s;
  size_t x, gamma, beta, prev_mean, prev_var, y, saved, next_mean, next_var, dy, dgamma, dbeta, dx;

  HalfBn(ComputeMirror& m, const Shape& shape, std::mt19937& rng) : s(shape) {
    const Shape ch{1, 1, 1, s.c};
    constexpr DType h = DType::FP16;
    x = m.tensor(s, h);
    gamma = m.tensor(ch, DType::FP32, Region::W_BN_WEIGHT);
    beta = m.tensor(ch, DType::FP32, Region::W_BN_BIAS);
    prev_mean = m.tensor(ch);
    prev_var = m.tensor(ch);
    y = m.tensor(s, h);
    saved = m.tensor({1, 1, 2, s.c});
    next_mean = m.tensor(ch);
    next_var = m.tensor(ch);
    dy = m.tensor(s, h);
    dgamma = m.tensor(ch, DType::FP32, Region::G_BN_WEIGHT);
    dbeta = m.tensor(ch, DType::FP32, Region::G_BN_BIAS);
    dx = m.tensor(s, h);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> offset(static_cast<size_t>(s.c)), spread(static_cast<size_t>(s.c));
    for (int64_t c = 0; c < s.c; ++c) {
      // A mean well above the spread, within what half resolves.
      offset[static_cast<size_t>(c)] = c == kLargeMeanChannel ? 50.0f : u(rng);
      spread[static_cast<size_t>(c)] = 1.5f + u(rng);
    }
    for (int64_t i = 0; i < m.elements(x); ++i) {
      const size_t c = static_cast<size_t>(i % s.c);
      m.set_half(x, i, offset[c] + spread[c] * u(rng));
    }
    m.fill(gamma, rng, 0.5f, 1.5f);
    m.f32(gamma)[0] = -0.75f;  // a negative gamma flips the ReLU's side
    m.fill(beta, rng, -0.5f, 0.5f);
    m.fill(prev_mean, rng);
    m.fill(prev_var, rng, 0.5f, 1.5f);
    m.fill_half(dy, rng);
    m.fill(dgamma, rng);
    m.fill(dbeta, rng);
    m.fill_half(dx, rng);
    for (size_t t : {x, y, dy, dx}) m.poison_padding(t);
  }
};

const Shape kHalfShapes[] = {
    {4, 5, 7, 37},    // 37 channels: rows padded to 40
    {2, 3, 3, 3},     // 3 channels: rows padded to 8
    {1, 1, 1, 5},     // one row
    {8, 28, 28, 96},  // no padding
};

class FakeRankSum final : public RankSum {
 public:
  void sum(float*, uint64_t) const override {}
};

// SyncBatchNorm over two identical ranks: every sum doubles. The CPU twin's
// host sums, and the device's (through the host, synchronously: the test
// does not capture), each recording the counts it was asked to sum.
class DoublingRankSum final : public RankSum {
 public:
  void sum(float* data, uint64_t count) const override {
    counts.push_back(count);
    for (uint64_t i = 0; i < count; ++i) data[i] *= 2.0f;
  }
  mutable std::vector<uint64_t> counts;
};

class DoublingDeviceRankSum final : public cuda::DeviceRankSum {
 public:
  void enqueue_sum(float* data, uint64_t count, cudaStream_t stream) const override {
    counts.push_back(count);
    std::vector<float> host(count);
    test::cuda_ok(cudaMemcpyAsync(host.data(), data, count * 4, cudaMemcpyDeviceToHost, stream),
                  "download (sum)");
    test::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    for (float& v : host) v *= 2.0f;
    test::cuda_ok(cudaMemcpyAsync(data, host.data(), count * 4, cudaMemcpyHostToDevice, stream),
                  "upload (sum)");
    test::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  mutable std::vector<uint64_t> counts;
};

}  // namespace

class TestCudaBatchNorm : public QObject {
  Q_OBJECT

 private slots:
  void workspaceIsAskedForTheStatistics() {
    DTensor x;
    x.shape = {4, 5, 7, 37};
    GraphNode train = node_for(ComputeOp::BN_FWD_TRAIN), bwd = node_for(ComputeOp::BN_RELU_BWD),
              infer = node_for(ComputeOp::BN_FWD_INFER);
    KernelArgs a;
    a.in.push_back({nullptr, &x});
    a.node = &train;
    QVERIFY(cuda::cuda_workspace_bytes(a) >= 2 * 37 * sizeof(double));
    a.node = &bwd;
    QVERIFY(cuda::cuda_workspace_bytes(a) >= 2 * 37 * sizeof(double));
    a.node = &infer;
    QCOMPARE(cuda::cuda_workspace_bytes(a), uint64_t{0});
  }

  // Both refusals come before any CUDA call: no device needed.
  void hostRankSumAndMissingWorkspaceAreRefused() {
    DTensor x, c;
    x.shape = {2, 3, 3, 4};
    c.shape = {1, 1, 1, 4};
    const FakeRankSum rank_sum;
    const LayerNode layer = bn_layer();
    for (ComputeOp op : {ComputeOp::BN_FWD_TRAIN, ComputeOp::BN_RELU_FWD_TRAIN, ComputeOp::BN_BWD,
                         ComputeOp::BN_RELU_BWD}) {
      GraphNode n = node_for(op);
      KernelArgs a;
      a.node = &n;
      a.layer_params = test::resolved(layer);
      for (int i = 0; i < 5; ++i) a.in.push_back({nullptr, i == 0 ? &x : &c});
      for (int i = 0; i < 4; ++i) a.out.push_back({reinterpret_cast<void*>(256), i == 0 ? &x : &c});
      a.rank_sum = &rank_sum;
      try {
        cuda::cuda_compute_kernel(op)(a, nullptr);
        QFAIL("a host RankSum was not refused");
      } catch (const std::logic_error& e) {
        QVERIFY2(std::strstr(e.what(), "host RankSum"), e.what());
      }
      a.rank_sum = nullptr;
      QVERIFY_THROWS_EXCEPTION(std::logic_error, cuda::cuda_compute_kernel(op)(a, nullptr));
    }
  }

  // SyncBatchNorm's split (statistics, two sums, apply; sums, one sum, dx)
  // against the CPU twin's in-kernel sums, over two identical ranks: the same
  // mean and variance, the unbiased running variance of twice the rows, and
  // the sums asked for with the CPU's counts (C + 1, C; 2C + 1).
  void syncBatchNormMatchesCpu() {
    TR_REQUIRE_CUDA_DEVICE();
    for (const Shape& s : kShapes)
      for (const bool relu : {false, true}) {
        const ComputeOp fwd = relu ? ComputeOp::BN_RELU_FWD_TRAIN : ComputeOp::BN_FWD_TRAIN;
        const ComputeOp bwd = relu ? ComputeOp::BN_RELU_BWD : ComputeOp::BN_BWD;
        const char* name = compute_op_name(fwd).data();
        std::mt19937 rng(27);
        ComputeMirror m;
        Bn b(m, s, rng);
        const LayerNode layer = bn_layer();
        DoublingRankSum host_sum;
        DoublingDeviceRankSum device_sum;
        GraphNode f = node_for(fwd);
        m.run(
            [&](bool d) {
              KernelArgs a = m.args(d, {b.x, b.gamma, b.beta, b.prev_mean, b.prev_var},
                                    {b.y, b.saved, b.next_mean, b.next_var}, &f, &layer);
              a.rank_sum = d ? static_cast<const RankSum*>(&device_sum) : &host_sum;
              return a;
            },
            fwd);
        const std::vector<uint64_t> fwd_counts{uint64_t(s.c) + 1, uint64_t(s.c)};
        QCOMPARE(device_sum.counts, fwd_counts);
        QCOMPARE(host_sum.counts, fwd_counts);
        EXPECT_NONE(far(m, b.saved, name, kRel, 1e-6));
        EXPECT_NONE(far(m, b.next_mean, name, kRel, 1e-6));
        EXPECT_NONE(far(m, b.next_var, name, kRel, 1e-6));
        EXPECT_NONE(far_scaled(m, b.y, name));
        GraphNode n = node_for(bwd);
        std::vector<size_t> ins{b.x, b.gamma, b.saved, b.dy};
        if (relu) ins.insert(ins.begin() + 2, b.beta);
        device_sum.counts.clear();
        host_sum.counts.clear();
        m.run(
            [&](bool d) {
              KernelArgs a = m.args(d, ins, {b.dgamma, b.dbeta, b.dx}, &n, &layer);
              a.rank_sum = d ? static_cast<const RankSum*>(&device_sum) : &host_sum;
              return a;
            },
            bwd);
        const std::vector<uint64_t> bwd_counts{2 * uint64_t(s.c) + 1};
        QCOMPARE(device_sum.counts, bwd_counts);
        QCOMPARE(host_sum.counts, bwd_counts);
        EXPECT_NONE(far_scaled(m, b.dgamma, name));
        EXPECT_NONE(far_scaled(m, b.dbeta, name));
        EXPECT_NONE(far_scaled(m, b.dx, name));
      }
  }

  void backwardSkipsAbsentOutputs() {
    TR_REQUIRE_CUDA_DEVICE();
    std::mt19937 rng(24);
    ComputeMirror m;
    Bn b(m, {4, 5, 7, 37}, rng);
    const LayerNode layer = bn_layer();
    GraphNode f = node_for(ComputeOp::BN_FWD_TRAIN);
    m.run(
        [&](bool d) {
          return m.args(d, {b.x, b.gamma, b.beta, b.prev_mean, b.prev_var},
                        {b.y, b.saved, b.next_mean, b.next_var}, &f, &layer);
        },
        ComputeOp::BN_FWD_TRAIN);
    const size_t none = ComputeMirror::kAbsent;
    GraphNode n = node_for(ComputeOp::BN_BWD);
    auto run = [&](std::vector<size_t> outs) {
      m.run(
          [&](bool d) {
            return m.args(d, {b.x, b.gamma, b.saved, b.dy}, outs, &n, &layer);
          },
          ComputeOp::BN_BWD);
    };
    run({b.dgamma, b.dbeta, none});  // the first layer: no dx
    EXPECT_NONE(far_scaled(m, b.dgamma, "dgamma"));
    EXPECT_NONE(differs(m, b.dx, "dx (absent)"));
    run({none, none, b.dx});  // frozen parameters
    EXPECT_NONE(far_scaled(m, b.dx, "dx"));
    EXPECT_NONE(differs(m, b.dgamma, "dgamma (absent)"));
  }

  void eqParamsMatchCpu();
};

// BN_EQ_PARAMS over 20 layers (two launches of up to 16), whose tensors lie
// in the spans in another order than the layers, one layer without weights
// (skipped: its outputs keep their bytes), and per-layer eps.
void TestCudaBatchNorm::eqParamsMatchCpu() {
  TR_REQUIRE_CUDA_DEVICE();
  constexpr int kLayers = 20;
  ModelGraph model;
  std::vector<DTensor> tensors;
  tensors.reserve(6 * kLayers);
  uint64_t at = 0;
  auto add = [&](Region r, int owner, int64_t c) {
    DTensor t;
    t.region = r;
    t.owner = owner;
    t.shape = {1, 1, 1, c};
    t.offset = at;
    at += static_cast<uint64_t>(c) * 4;
    at = (at + 255) / 256 * 256;
    tensors.push_back(t);
  };
  auto channels = [](int l) { return int64_t{1} + 13 * l; };
  for (int l = 0; l < kLayers; ++l) {
    model.nodes.push_back(bn_layer(l % 2 ? 1e-3 : 1e-5));
    add(Region::B_PREV_MEAN, l, channels(l));
    add(Region::B_PREV_VAR, l, channels(l));
  }
  const uint64_t weights_at = at;
  for (int l = kLayers - 1; l >= 0; --l) {
    if (l == 7) continue;
    add(Region::W_BN_WEIGHT, l, channels(l));
    add(Region::W_BN_BIAS, l, channels(l));
  }
  const uint64_t out_at = at;
  for (int l = 0; l < kLayers; ++l) {
    add(Region::B_EQ_SCALE, l, channels(l));
    add(Region::B_EQ_BIAS, l, channels(l));
  }
  const uint64_t bytes = at;
  std::vector<float> host(bytes / 4);
  std::mt19937 rng(25);
  std::uniform_real_distribution<float> u(0.05f, 2.0f);
  for (float& f : host) f = u(rng);
  void* device = nullptr;
  test::cuda_ok(cudaMalloc(&device, bytes), "cudaMalloc");
  test::cuda_ok(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice), "upload");
  auto span = [&](bool d, uint64_t lo, uint64_t hi) {
    SpanArg s;
    s.data = (d ? static_cast<uint8_t*>(device) : reinterpret_cast<uint8_t*>(host.data())) + lo;
    s.bytes = hi - lo;
    s.offset = lo;
    for (const DTensor& t : tensors)
      if (t.offset >= lo && t.offset < hi) s.tensors.push_back(&t);
    return s;
  };
  auto make = [&](bool d) {
    KernelArgs a;
    a.layer_params = test::resolved_bn_eq(model);
    a.in_spans = {span(d, 0, weights_at), span(d, weights_at, out_at)};
    a.out_spans = {span(d, out_at, bytes)};
    return a;
  };
  cuda::cuda_range_kernel(RangeOp::BN_EQ_PARAMS)(make(true), nullptr);
  cpu::range_kernel(RangeOp::BN_EQ_PARAMS)(make(false));
  std::vector<float> result(host.size());
  test::cuda_ok(cudaMemcpy(result.data(), device, bytes, cudaMemcpyDeviceToHost), "download");
  (void)cudaFree(device);
  for (size_t i = 0; i < host.size(); ++i)
    QVERIFY2(std::fabs(result[i] - host[i]) <= 1e-6 * std::fabs(host[i]) + 1e-7,
             qPrintable(QString("BN_EQ_PARAMS: float %1: device %2, CPU %3")
                            .arg(i)
                            .arg(double(result[i]), 0, 'g', 9)
                            .arg(double(host[i]), 0, 'g', 9)));
}

QTEST_GUILESS_MAIN(TestCudaBatchNorm)
#include "test_cuda_batch_norm.moc"
