// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CUDA RANGE kernels: a copy between overlapping
// spans, bit for bit against the CPU's. Every range op's values against a
// plain reference, on this backend and the CPU (the collectives over two
// ranks included): engine.backend_ops.
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
};

QTEST_GUILESS_MAIN(TestCudaRangeKernels)
#include "test_cuda_range_kernels.moc"
