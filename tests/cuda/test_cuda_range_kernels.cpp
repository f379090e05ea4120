// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA RANGE and scalar kernels against their CPU twins: the same random
// arena runs through the CPU kernel on the host and the CUDA kernel on the
// device, and the two arenas must agree (bit for bit for clears, copies,
// casts and flags; within 1e-6 of the O(1) operands for arithmetic, where the
// GPU may fuse a multiply-add the CPU rounds twice). Overflowed steps must be
// skipped on both.
#include <QtTest>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../engine/resolved_params.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cuda/cuda_kernels.h"
#include "cuda_test_util.h"

using namespace tr;

namespace {

constexpr uint64_t kScalarBytes = 256;  // S_SCALARS at offset 0, as a region
constexpr uint64_t kFloats = 10007;     // odd: the vector loops leave a tail

void ok(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

// The same arena on the host (for the CPU twin) and on the device, spans at
// the same offsets: span k starts at a 256-byte boundary plus `shift` bytes.
class MirrorArena {
 public:
  MirrorArena(int spans, uint64_t span_bytes, uint64_t shift)
      : span_bytes_(span_bytes), shift_(shift) {
    stride_ = (span_bytes + shift + 255) / 256 * 256 + 256;
    bytes_ = kScalarBytes + stride_ * static_cast<uint64_t>(spans);
    host_.assign(bytes_ / 8 + 1, 0);
    ok(cudaSetDevice(0), "cudaSetDevice");
    ok(cudaMalloc(&device_, bytes_), "cudaMalloc");
    ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~MirrorArena() {
    (void)cudaFree(device_);
    (void)cudaStreamDestroy(stream_);
  }
  MirrorArena(const MirrorArena&) = delete;
  MirrorArena& operator=(const MirrorArena&) = delete;

  uint8_t* host() { return reinterpret_cast<uint8_t*>(host_.data()); }
  uint64_t bytes() const { return bytes_; }
  uint64_t offset(int span) const {
    return kScalarBytes + stride_ * static_cast<uint64_t>(span) + shift_;
  }
  float* host_f32(int span) { return reinterpret_cast<float*>(host() + offset(span)); }
  float& scalar(ScalarSlot s) { return reinterpret_cast<float*>(host())[static_cast<int>(s)]; }

  // Span `span` (or `bytes` bytes from `at`) in the host or device copy.
  SpanArg span(bool on_device, int span) const { return raw(on_device, offset(span), span_bytes_); }
  SpanArg raw(bool on_device, uint64_t at, uint64_t bytes) const {
    SpanArg s;
    s.data = base(on_device) + at;
    s.bytes = bytes;
    s.offset = at;
    return s;
  }
  float* scalars(bool on_device) const { return reinterpret_cast<float*>(base(on_device)); }

  // Random floats in [lo, hi) everywhere but the scalars.
  void fill(std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> u(lo, hi);
    float* f = reinterpret_cast<float*>(host() + kScalarBytes);
    for (uint64_t i = 0; i < (bytes_ - kScalarBytes) / 4; ++i) f[i] = u(rng);
  }

  // Copies the host arena to the device, runs `cpu` on the host and `gpu` on
  // the device with args made by `make`, and returns the device arena.
  std::vector<uint8_t> run(const std::function<KernelArgs(bool on_device)>& make,
                           cpu::Kernel cpu_kernel, cuda::CudaKernel gpu_kernel) {
    if (!cpu_kernel || !gpu_kernel) throw std::logic_error("missing kernel");
    ok(cudaMemcpyAsync(device_, host(), bytes_, cudaMemcpyHostToDevice, stream_), "upload");
    gpu_kernel(make(true), stream_);
    cpu_kernel(make(false));
    std::vector<uint8_t> out(bytes_);
    ok(cudaMemcpyAsync(out.data(), device_, bytes_, cudaMemcpyDeviceToHost, stream_), "download");
    ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return out;
  }

 private:
  uint8_t* base(bool on_device) const {
    return on_device ? static_cast<uint8_t*>(device_)
                     : reinterpret_cast<uint8_t*>(const_cast<uint64_t*>(host_.data()));
  }

  uint64_t span_bytes_, shift_, stride_ = 0, bytes_ = 0;
  std::vector<uint64_t> host_;
  void* device_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

KernelArgs args_of(std::vector<SpanArg> in, std::vector<SpanArg> out, float* scalars,
                   const TrainingSpec* training = nullptr) {
  KernelArgs a;
  a.in_spans = std::move(in);
  a.out_spans = std::move(out);
  a.scalars = scalars;
  a.training = test::resolved(training);
  return a;
}

void expect_same_bytes(const std::vector<uint8_t>& device, const uint8_t* host, uint64_t bytes) {
  for (uint64_t i = 0; i < bytes; ++i)
    if (device[i] != host[i])
      QFAIL(qPrintable(
          QString("byte %1 differs: device %2, CPU %3").arg(i).arg(device[i]).arg(host[i])));
}

// Within 1e-6 relative to the larger of |CPU| and 1 (operands are O(1)).
void expect_close(const std::vector<uint8_t>& device, const uint8_t* host, uint64_t bytes) {
  for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
    float d, h;
    std::memcpy(&d, device.data() + i, 4);
    std::memcpy(&h, host + i, 4);
    if (std::isnan(d) && std::isnan(h)) continue;
    if (std::fabs(d - h) > 1e-6 * std::max(1.0f, std::fabs(h)))
      QFAIL(qPrintable(QString("float at byte %1 differs: device %2, CPU %3")
                           .arg(i)
                           .arg(static_cast<double>(d), 0, 'g', 9)
                           .arg(static_cast<double>(h), 0, 'g', 9)));
  }
}

// Parameters the way a plan lays them out for LARS: W, G and M spans of one
// layout, weights and biases (".bias": ratio 1), a BN layer without norms,
// tensors of several blocks and over 64 normed weights, so the kernels see
// more than one descriptor batch; and the N span with one norm pair per
// normed weight, in another order than the weights. Offsets are relative to
// each span (SpanArg::offset 0), which is all the kernels use them for.
struct LarsLayout {
  std::vector<DTensor> params, norms;
  uint64_t floats = 0;

  LarsLayout() {
    std::vector<int> normed;
    auto add = [&](const std::string& name, int owner, int64_t n) {
      DTensor t;
      t.name = name;
      t.owner = owner;
      t.shape = {1, 1, 1, n};
      t.offset = floats * 4;
      floats += static_cast<uint64_t>(n);
      params.push_back(t);
    };
    add("conv1.weight", 1, 10007);
    add("conv1.bias", 1, 13);
    add("bn1.weight", 2, 64);
    add("bn1.bias", 2, 64);
    add("conv2.weight", 3, 70001);
    add("conv2.bias", 3, 7);
    for (int i = 0; i < 70; ++i) add("blk" + std::to_string(i) + ".weight", 10 + i, 37 + i);
    add("fc.weight", 5, 5000);
    add("fc.bias", 5, 5);
    for (const DTensor& t : params)
      if (t.owner != 2 && t.name.ends_with(".weight")) normed.push_back(t.owner);
    std::reverse(normed.begin(), normed.end());
    for (size_t k = 0; k < normed.size(); ++k) {
      DTensor t;
      t.name = "norms" + std::to_string(k);
      t.owner = normed[k];
      t.shape = {1, 1, 1, 2};
      t.offset = 8 * k;
      norms.push_back(t);
    }
  }

  // Span `k` of `m` holding `tensors`, at relative offsets.
  static SpanArg span(const MirrorArena& m, bool on_device, int k,
                      const std::vector<DTensor>& tensors) {
    SpanArg s = m.span(on_device, k);
    s.offset = 0;
    for (const DTensor& t : tensors) s.tensors.push_back(&t);
    return s;
  }
};

cpu::Kernel cpu_range(RangeOp op) {
  return cpu::range_kernel(op);
}
cuda::CudaKernel gpu_range(RangeOp op) {
  return cuda::cuda_range_kernel(op);
}

}  // namespace

class TestCudaRangeKernels : public QObject {
  Q_OBJECT

 private slots:
  void clear() {
    TR_REQUIRE_CUDA_DEVICE();
    for (uint64_t shift : {0, 4}) {
      MirrorArena m(3, kFloats * 4, shift);
      std::mt19937 rng(1);
      m.fill(rng);
      auto dev = m.run(
          [&](bool d) {
            return args_of({}, {m.span(d, 0), m.span(d, 2)}, m.scalars(d));
          },
          cpu_range(RangeOp::CLEAR), gpu_range(RangeOp::CLEAR));
      expect_same_bytes(dev, m.host(), m.bytes());
      QCOMPARE(m.host_f32(0)[kFloats - 1], 0.0f);
    }
  }

  void copy() {
    TR_REQUIRE_CUDA_DEVICE();
    for (uint64_t shift : {0, 4}) {
      MirrorArena m(2, kFloats * 4, shift);
      std::mt19937 rng(2);
      m.fill(rng);
      auto dev =
          m.run([&](bool d) { return args_of({m.span(d, 0)}, {m.span(d, 1)}, m.scalars(d)); },
                cpu_range(RangeOp::COPY), gpu_range(RangeOp::COPY));
      expect_same_bytes(dev, m.host(), m.bytes());
    }
  }

  void copy_overlapping() {
    TR_REQUIRE_CUDA_DEVICE();
    // Forward and backward moves by a few bytes and by more than a block's chunk.
    for (uint64_t by : {12, 3000}) {
      for (bool up : {true, false}) {
        MirrorArena m(2, kFloats * 4, 0);
        std::mt19937 rng(3);
        m.fill(rng);
        const uint64_t lo = m.offset(0), n = kFloats * 4;
        auto dev = m.run(
            [&](bool d) {
              return args_of({m.raw(d, up ? lo : lo + by, n)}, {m.raw(d, up ? lo + by : lo, n)},
                             m.scalars(d));
            },
            cpu_range(RangeOp::COPY), gpu_range(RangeOp::COPY));
        expect_same_bytes(dev, m.host(), m.bytes());
      }
    }
  }

  void accumulate() {
    TR_REQUIRE_CUDA_DEVICE();
    for (uint64_t shift : {0, 4}) {
      MirrorArena m(2, kFloats * 4, shift);
      std::mt19937 rng(4);
      m.fill(rng);
      auto dev =
          m.run([&](bool d) { return args_of({m.span(d, 0)}, {m.span(d, 1)}, m.scalars(d)); },
                cpu_range(RangeOp::ACCUMULATE), gpu_range(RangeOp::ACCUMULATE));
      expect_close(dev, m.host(), m.bytes());
    }
  }

  void scale() {
    TR_REQUIRE_CUDA_DEVICE();
    for (uint64_t shift : {0, 4})
      for (bool in_place : {true, false})
        for (float overflow : {0.0f, 1.0f}) {
          MirrorArena m(2, kFloats * 4, shift);
          std::mt19937 rng(5);
          m.fill(rng, -3000.0f, 3000.0f);
          m.scalar(ScalarSlot::INV_LOSS_SCALE) = 1.0f / 1024.0f;
          m.scalar(ScalarSlot::OVERFLOW) = overflow;
          const std::vector<float> before(m.host_f32(0), m.host_f32(0) + kFloats);
          auto dev = m.run(
              [&](bool d) {
                return in_place ? args_of({m.span(d, 0)}, {}, m.scalars(d))
                                : args_of({m.span(d, 0)}, {m.span(d, 1)}, m.scalars(d));
              },
              cpu_range(RangeOp::SCALE), gpu_range(RangeOp::SCALE));
          expect_same_bytes(dev, m.host(), m.bytes());
          // The twin itself: scaled, or left alone on overflow.
          if (in_place)
            QCOMPARE(m.host_f32(0)[7], overflow != 0.0f ? before[7] : before[7] / 1024.0f);
        }
  }

  void nan_check() {
    TR_REQUIRE_CUDA_DEVICE();
    struct Case {
      float poison;
      int span;
      float preset;
    };
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // Clean; inf in the first span; NaN in the second; a set flag never clears.
    for (const Case& c :
         {Case{0.0f, -1, 0.0f}, Case{-inf, 0, 0.0f}, Case{nan, 1, 0.0f}, Case{0.0f, -1, 1.0f}})
      for (uint64_t shift : {0, 4}) {
        MirrorArena m(2, kFloats * 4, shift);
        std::mt19937 rng(6);
        m.fill(rng, -65504.0f, 65504.0f);
        if (c.span >= 0) m.host_f32(c.span)[kFloats - 3] = c.poison;
        m.scalar(ScalarSlot::OVERFLOW) = c.preset;
        auto dev = m.run(
            [&](bool d) {
              return args_of({m.span(d, 0), m.span(d, 1)}, {}, m.scalars(d));
            },
            cpu_range(RangeOp::NAN_CHECK), gpu_range(RangeOp::NAN_CHECK));
        expect_same_bytes(dev, m.host(), m.bytes());
        QCOMPARE(m.scalar(ScalarSlot::OVERFLOW), c.span >= 0 || c.preset != 0.0f ? 1.0f : 0.0f);
      }
  }

  void cast_fp32_to_fp16() {
    TR_REQUIRE_CUDA_DEVICE();
    MirrorArena m(2, kFloats * 4, 0);
    std::mt19937 rng(7);
    // Magnitudes from FP16's subnormals to beyond its range.
    std::uniform_real_distribution<float> exponent(-27.0f, 17.0f), sign(-1.0f, 1.0f);
    float* x = m.host_f32(0);
    for (uint64_t i = 0; i < kFloats; ++i)
      x[i] = std::copysign(std::exp2(exponent(rng)), sign(rng));
    // Ties to even, the overflow threshold, zeros, infinities and quiet NaNs with payloads.
    const float specials[] = {1.0f + 0x1p-11f,
                              1.0f + 3 * 0x1p-11f,
                              65504.0f,
                              65519.0f,
                              65520.0f,
                              0x1p-25f,
                              0x1.8p-24f,
                              -0.0f,
                              0.0f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::bit_cast<float>(0x7FC12345u),
                              std::bit_cast<float>(0xFFE00001u)};
    for (size_t i = 0; i < std::size(specials); ++i) x[i] = specials[i];
    auto dev = m.run(
        [&](bool d) {
          // Half the bytes out: an FP32 span cast into an FP16 span.
          return args_of({m.span(d, 0)}, {m.raw(d, m.offset(1), kFloats * 2)}, m.scalars(d));
        },
        cpu_range(RangeOp::CAST_FP32_TO_FP16), gpu_range(RangeOp::CAST_FP32_TO_FP16));
    expect_same_bytes(dev, m.host(), m.bytes());
  }

  void cast_fp16_to_fp32() {
    TR_REQUIRE_CUDA_DEVICE();
    // Every FP16 bit pattern but the signaling NaNs, which the CPU's F16C path quiets.
    constexpr uint64_t n = 65536;
    MirrorArena m(2, n * 4, 0);
    auto* h = reinterpret_cast<uint16_t*>(m.host_f32(0));
    for (uint32_t i = 0; i < n; ++i) {
      const bool signaling = (i & 0x7C00u) == 0x7C00u && (i & 0x3FFu) != 0 && !(i & 0x200u);
      h[i] = static_cast<uint16_t>(signaling ? (i | 0x200u) : i);
    }
    auto dev = m.run(
        [&](bool d) {
          return args_of({m.raw(d, m.offset(0), n * 2)}, {m.span(d, 1)}, m.scalars(d));
        },
        cpu_range(RangeOp::CAST_FP16_TO_FP32), gpu_range(RangeOp::CAST_FP16_TO_FP32));
    expect_same_bytes(dev, m.host(), m.bytes());
  }

  void ema_update() {
    TR_REQUIRE_CUDA_DEVICE();
    TrainingSpec training;
    training.ema_decay = 0.999;
    for (uint64_t shift : {0, 4})
      for (float overflow : {0.0f, 1.0f}) {
        MirrorArena m(2, kFloats * 4, shift);
        std::mt19937 rng(8);
        m.fill(rng);
        m.scalar(ScalarSlot::OVERFLOW) = overflow;
        const float e7 = m.host_f32(1)[7];
        auto dev = m.run(
            [&](bool d) {
              return args_of({m.span(d, 0)}, {m.span(d, 1)}, m.scalars(d), &training);
            },
            cpu_range(RangeOp::EMA_UPDATE), gpu_range(RangeOp::EMA_UPDATE));
        expect_close(dev, m.host(), m.bytes());
        if (overflow != 0.0f) QCOMPARE(m.host_f32(1)[7], e7);
      }
  }

  void sgd_update() {
    TR_REQUIRE_CUDA_DEVICE();
    struct Case {
      double momentum;
      bool nesterov;
      float updates, overflow;
    };
    // No momentum; the first step (buffer = gradient); a later step; Nesterov; an overflow.
    for (const Case& c : {Case{0.0, false, 3, 0}, Case{0.9, false, 1, 0}, Case{0.9, false, 5, 0},
                          Case{0.9, true, 5, 0}, Case{0.9, true, 1, 0}, Case{0.9, false, 5, 1}}) {
      TrainingSpec training;
      training.optimizer.momentum = c.momentum;
      training.optimizer.nesterov = c.nesterov;
      training.optimizer.weight_decay = 5e-4;
      const bool has_m = c.momentum != 0.0;
      MirrorArena m(3, kFloats * 4, 0);
      std::mt19937 rng(9);
      m.fill(rng);
      m.scalar(ScalarSlot::LR) = 0.05f;
      m.scalar(ScalarSlot::UPDATES) = c.updates;
      m.scalar(ScalarSlot::OVERFLOW) = c.overflow;
      auto dev = m.run(
          [&](bool d) {
            std::vector<SpanArg> in = {m.span(d, 0), m.span(d, 1)}, out = {m.span(d, 0)};
            if (has_m) {
              in.push_back(m.span(d, 2));
              out.push_back(m.span(d, 2));
            }
            return args_of(in, out, m.scalars(d), &training);
          },
          cpu_range(RangeOp::SGD_UPDATE), gpu_range(RangeOp::SGD_UPDATE));
      expect_close(dev, m.host(), m.bytes());
    }
  }

  void adam_update() {
    TR_REQUIRE_CUDA_DEVICE();
    for (float overflow : {0.0f, 1.0f}) {
      TrainingSpec training;
      training.optimizer.kind = OptimizerKind::Adam;
      training.optimizer.weight_decay = 1e-4;
      MirrorArena m(4, kFloats * 4, 0);
      std::mt19937 rng(10);
      m.fill(rng);
      // V is a mean of squares.
      for (uint64_t i = 0; i < kFloats; ++i) m.host_f32(3)[i] = std::fabs(m.host_f32(3)[i]);
      m.scalar(ScalarSlot::LR) = 1e-3f;
      m.scalar(ScalarSlot::ADAM_CORR1) = static_cast<float>(1.0 - std::pow(0.9, 3));
      m.scalar(ScalarSlot::ADAM_CORR2) = static_cast<float>(1.0 - std::pow(0.999, 3));
      m.scalar(ScalarSlot::OVERFLOW) = overflow;
      auto dev = m.run(
          [&](bool d) {
            return args_of({m.span(d, 0), m.span(d, 1), m.span(d, 2), m.span(d, 3)},
                           {m.span(d, 0), m.span(d, 2), m.span(d, 3)}, m.scalars(d), &training);
          },
          cpu_range(RangeOp::ADAM_UPDATE), gpu_range(RangeOp::ADAM_UPDATE));
      expect_close(dev, m.host(), m.bytes());
    }
  }

  void lars_norms() {
    TR_REQUIRE_CUDA_DEVICE();
    const LarsLayout lay;
    GraphNode node;
    node.kind = NodeKind::RANGE;
    node.range_op = RangeOp::LARS_NORMS;
    for (uint64_t shift : {0, 4}) {
      MirrorArena m(4, lay.floats * 4, shift);  // W, G, M (unused), N
      std::mt19937 rng(11);
      m.fill(rng);
      StreamWorkspace ws;
      auto make = [&](bool d) {
        KernelArgs a =
            args_of({LarsLayout::span(m, d, 0, lay.params), LarsLayout::span(m, d, 1, lay.params)},
                    {LarsLayout::span(m, d, 3, lay.norms)}, m.scalars(d));
        a.node = &node;
        if (d) a.workspace = &ws;
        return a;
      };
      // The backend sizes the workspace from the node the same way.
      ws.bytes = cuda::cuda_workspace_bytes(make(true));
      QVERIFY(ws.bytes > 0);
      ok(cudaMalloc(&ws.data, ws.bytes), "cudaMalloc (workspace)");
      std::vector<uint8_t> dev;
      try {
        dev = m.run(make, cpu_range(RangeOp::LARS_NORMS), gpu_range(RangeOp::LARS_NORMS));
      } catch (...) {
        (void)cudaFree(ws.data);
        throw;
      }
      (void)cudaFree(ws.data);
      expect_close(dev, m.host(), m.bytes());
      // The twin wrote every pair: conv2.weight's norms are those of 70001 uniform values.
      const float* n = m.host_f32(3);
      for (size_t k = 0; k < lay.norms.size(); ++k) QVERIFY(n[2 * k] > 0.0f && n[2 * k + 1] > 0.0f);
    }
  }

  void lars_update() {
    TR_REQUIRE_CUDA_DEVICE();
    const LarsLayout lay;
    struct Case {
      float updates, overflow;
    };
    // The first step (buffer = scaled gradient); a later step; an overflowed step.
    for (const Case& c : {Case{1, 0}, Case{5, 0}, Case{5, 1}}) {
      TrainingSpec training;
      training.optimizer.kind = OptimizerKind::LARS;
      training.optimizer.momentum = 0.9;
      training.optimizer.weight_decay = 5e-4;
      training.optimizer.trust_coefficient = 0.02;
      MirrorArena m(4, lay.floats * 4, 0);  // W, G, M, N
      std::mt19937 rng(12);
      m.fill(rng);
      auto span = [&](bool d, int k) {
        return LarsLayout::span(m, d, k, k == 3 ? lay.norms : lay.params);
      };
      // Real norms from the CPU twin, then one pair zeroed (ratio 1 for that weight).
      cpu_range(RangeOp::LARS_NORMS)(
          args_of({span(false, 0), span(false, 1)}, {span(false, 3)}, m.scalars(false)));
      m.host_f32(3)[4] = 0.0f;
      m.scalar(ScalarSlot::LR) = 0.1f;
      m.scalar(ScalarSlot::UPDATES) = c.updates;
      m.scalar(ScalarSlot::OVERFLOW) = c.overflow;
      const std::vector<uint8_t> before(m.host(), m.host() + m.bytes());
      auto dev = m.run(
          [&](bool d) {
            return args_of({span(d, 0), span(d, 1), span(d, 2), span(d, 3)},
                           {span(d, 0), span(d, 2)}, m.scalars(d), &training);
          },
          cpu_range(RangeOp::LARS_UPDATE), gpu_range(RangeOp::LARS_UPDATE));
      if (c.overflow != 0.0f) {
        // Skipped on both: W and M (and all else) keep their bits.
        expect_same_bytes(dev, before.data(), m.bytes());
        expect_same_bytes(dev, m.host(), m.bytes());
      } else {
        expect_close(dev, m.host(), m.bytes());
        QVERIFY(std::memcmp(before.data(), m.host(), m.bytes()) != 0);
      }
    }
  }

  void loss_scale_update() {
    TR_REQUIRE_CUDA_DEVICE();
    struct Case {
      float scale, clean, overflow;
    };
    // Halve; never below 1; count a clean step; double after the growth interval.
    for (const Case& c :
         {Case{1024, 17, 1}, Case{1, 3, 1}, Case{1024, 1998, 0}, Case{1024, 1999, 0}}) {
      MirrorArena m(1, 256, 0);
      m.scalar(ScalarSlot::LOSS_SCALE) = c.scale;
      m.scalar(ScalarSlot::CLEAN_STEPS) = c.clean;
      m.scalar(ScalarSlot::OVERFLOW) = c.overflow;
      auto dev = m.run([&](bool d) { return args_of({}, {}, m.scalars(d)); },
                       cpu::compute_kernel(ComputeOp::LOSS_SCALE_UPDATE),
                       cuda::cuda_compute_kernel(ComputeOp::LOSS_SCALE_UPDATE));
      expect_same_bytes(dev, m.host(), m.bytes());
    }
  }

  void adam_bias_correction() {
    TR_REQUIRE_CUDA_DEVICE();
    TrainingSpec training;
    training.optimizer.kind = OptimizerKind::Adam;
    for (float updates : {0.0f, 1.0f, 7.0f, 1000.0f, 123456.0f}) {
      MirrorArena m(1, 256, 0);
      m.scalar(ScalarSlot::UPDATES) = updates;
      auto dev = m.run([&](bool d) { return args_of({}, {}, m.scalars(d), &training); },
                       cpu::compute_kernel(ComputeOp::ADAM_BIAS_CORRECTION),
                       cuda::cuda_compute_kernel(ComputeOp::ADAM_BIAS_CORRECTION));
      expect_close(dev, m.host(), m.bytes());
    }
  }

  void count_update() {
    TR_REQUIRE_CUDA_DEVICE();
    for (float overflow : {0.0f, 1.0f}) {
      MirrorArena m(1, 256, 0);
      m.scalar(ScalarSlot::UPDATES) = 41;
      m.scalar(ScalarSlot::OVERFLOW) = overflow;
      auto dev = m.run([&](bool d) { return args_of({}, {}, m.scalars(d)); },
                       cpu::compute_kernel(ComputeOp::COUNT_UPDATE),
                       cuda::cuda_compute_kernel(ComputeOp::COUNT_UPDATE));
      expect_same_bytes(dev, m.host(), m.bytes());
      QCOMPARE(m.scalar(ScalarSlot::UPDATES), overflow != 0.0f ? 41.0f : 42.0f);
    }
  }

  void table_has_no_kernel_for_collectives() {
    TR_REQUIRE_CUDA_DEVICE();
    QVERIFY(!cuda::cuda_range_kernel(RangeOp::ALLREDUCE_SUM));
    QVERIFY(!cuda::cuda_compute_kernel(ComputeOp::H2D_INPUT));
  }
};

QTEST_GUILESS_MAIN(TestCudaRangeKernels)
#include "test_cuda_range_kernels.moc"
