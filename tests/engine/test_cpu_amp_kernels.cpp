// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CPU kernels on FP16 storage (AMP): the stream
// workspace the FP32 staging of a kernel needs (and its refusal without one),
// and the array conversions underneath, bit for bit against the reference
// conversion. Every op's FP16 values against a plain reference, on every
// backend: engine.backend_ops (its fp16 rows).
#include <QtTest>

#include <bit>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels/dense.h"
#include "backends/cpu/kernels/half_arrays.h"
#include "backends/cpu/kernels/half_convert.h"
#include "resolved_params.h"

using namespace tr;
using cpu::float_to_half_bits;
using cpu::half_bits_to_float;

namespace {

// A quiet NaN in FP16: what padding lanes hold before a conversion writes them.
constexpr uint16_t kHalfNaN = 0x7E00;

// FP16 tensors with real DTensor descriptors (region, padding) and their memory.
class Tensors {
 public:
  size_t add(const Shape& shape, Region region) {
    auto d = std::make_unique<DTensor>();
    d->id = static_cast<DTensorId>(descs_.size());
    d->shape = shape;
    d->dtype = DType::FP16;
    d->region = region;
    d->slot_bytes = DTensor::slot_bytes_for(d->shape, d->dtype, d->region);
    storage_.emplace_back(d->slot_bytes / 8 + 1, 0);
    descs_.push_back(std::move(d));
    return descs_.size() - 1;
  }
  TensorArg arg(size_t i) { return {storage_[i].data(), descs_[i].get()}; }

 private:
  std::vector<std::unique_ptr<DTensor>> descs_;
  std::vector<std::vector<uint64_t>> storage_;
};

}  // namespace

class TestCpuAmpKernels : public QObject {
  Q_OBJECT

 private slots:
  void stagingNeedsAWorkspaceOfTheRightSize() {
    // A convolution on FP16 features stages them through FP32 copies.
    Tensors t;
    const std::vector<size_t> ids{t.add({2, 6, 6, 5}, Region::F_FEATURE_FP16),
                                  t.add({3, 3, 3, 5}, Region::A_DEEP_CONV)};
    const size_t y = t.add({2, 3, 3, 3}, Region::F_FEATURE_FP16);
    LayerNode layer;
    layer.id = "layer";
    layer.type = LayerType::Conv2d;
    layer.params.out_channels = 3;
    layer.params.kernel_h = layer.params.kernel_w = 3;
    layer.params.stride_h = layer.params.stride_w = 2;
    layer.params.pad_h = layer.params.pad_w = 1;
    layer.params.bias = false;
    GraphNode node;
    node.op = ComputeOp::CONV_FWD;
    KernelArgs a;
    a.node = &node;
    a.layer_params = test::resolved(layer);
    for (size_t i : ids) a.in.push_back(t.arg(i));
    a.out.push_back(t.arg(y));
    // x [2,6,6,5], w [3,3,3,5], y [2,3,3,3] as FP32, each rounded up to 64 bytes
    QCOMPARE(cpu::kernel_workspace_bytes(a), uint64_t{1472 + 576 + 256});
    try {
      cpu::conv_fwd(a);
      QFAIL("no workspace accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("CONV_FWD") && QString(e.what()).contains("'layer'") &&
                   QString(e.what()).contains("workspace"),
               e.what());
    }
    std::vector<uint64_t> memory(64);
    StreamWorkspace small{memory.data(), 512};
    a.workspace = &small;
    try {
      cpu::conv_fwd(a);
      QFAIL("a small workspace accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("needs 2304 bytes"), e.what());
    }
  }

  void halvesWidenExactly() {
    // Every FP16 bit pattern, through the array path (F16C where present).
    qDebug("F16C path: %s", cpu::half_arrays_use_f16c() ? "yes" : "no");
    std::vector<uint16_t> all(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    std::vector<float> out(all.size());
    cpu::widen_half(all.data(), out.data(), static_cast<int64_t>(all.size()));
    for (size_t i = 0; i < all.size(); ++i) {
      const float want = half_bits_to_float(all[i]);
      // A NaN stays a NaN; F16C also quiets a signaling one.
      if (std::isnan(want)) {
        QVERIFY2(std::isnan(out[i]), qPrintable(QString::number(i, 16)));
        continue;
      }
      QVERIFY2(std::bit_cast<uint32_t>(out[i]) == std::bit_cast<uint32_t>(want),
               qPrintable(QString::number(i, 16)));
    }
  }

  void floatsNarrowToNearestEven() {
    std::mt19937 rng(5);
    std::vector<float> in;
    // Specials, ties (the bit just below FP16's mantissa set), the overflow
    // edge, subnormals, then random bit patterns over the whole range.
    for (float f : {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e-8f, 3e-8f,
                    5.96e-8f, 6.1e-5f, INFINITY, -INFINITY, NAN})
      in.push_back(f);
    for (uint32_t m = 0; m < 4096; ++m) in.push_back(std::bit_cast<float>(0x3F800000u + m));
    std::uniform_int_distribution<uint32_t> bits;
    while (in.size() < (size_t{1} << 20)) in.push_back(std::bit_cast<float>(bits(rng)));
    std::vector<uint16_t> out(in.size());
    cpu::narrow_to_half(in.data(), out.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); ++i)
      QVERIFY2(out[i] == float_to_half_bits(in[i]),
               qPrintable(QString::number(std::bit_cast<uint32_t>(in[i]), 16)));
  }

  void paddedRowsRoundTrip() {
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    // Strides of the input buffers (4) and of features (8, 16); rows large
    // enough for the threaded path on the last shape.
    for (int64_t rows : {int64_t{3}, int64_t{70000}})
      for (int64_t stride : {int64_t{4}, int64_t{8}, int64_t{16}})
        for (int64_t c = 1; c <= stride; ++c) {
          if (rows > 3 && c != stride - 1) continue;
          std::vector<float> compact(static_cast<size_t>(rows * c));
          for (float& x : compact) x = u(rng);
          std::vector<uint16_t> padded(static_cast<size_t>(rows * stride), kHalfNaN);
          cpu::narrow_to_half_rows(compact.data(), padded.data(), stride, rows, c);
          std::vector<float> back(compact.size() + 8, 7.0f);
          cpu::widen_half_rows(padded.data(), stride, back.data(), rows, c);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = 0; k < stride; ++k) {
              const uint16_t h = padded[static_cast<size_t>(r * stride + k)];
              if (k >= c) {
                QVERIFY2(h == 0, "padding lane not zeroed");
                continue;
              }
              const float x = compact[static_cast<size_t>(r * c + k)];
              QCOMPARE(h, float_to_half_bits(x));
              QCOMPARE(back[static_cast<size_t>(r * c + k)], half_bits_to_float(h));
            }
          // Nothing written past the compact rows.
          QCOMPARE(back[compact.size()], 7.0f);
        }
  }
};

QTEST_APPLESS_MAIN(TestCpuAmpKernels)
#include "test_cpu_amp_kernels.moc"
