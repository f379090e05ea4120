// SPDX-License-Identifier: GPL-3.0-or-later
// Test helper for the CUDA compute kernels against their CPU twins: tensors
// with real DTensor descriptors, each held twice (host memory for the CPU
// kernel, device memory for the CUDA one) with the same initial bytes, so
// one KernelArgs recipe can run both and the results be compared. FP16
// tensors are laid out as an AMP plan lays them out (features and gradient
// slots with their channels padded to 8), and compared in half ulps.
#pragma once

#include <cuda_runtime_api.h>
#include <QString>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../engine/resolved_params.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels/half_convert.h"
#include "backends/cuda/cuda_kernels.h"
#include "runtime/kernel_args.h"

namespace tr::test {

inline void cuda_ok(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

// A compute node of `op` for KernelArgs::node: `accumulate_mask` bit i makes
// output i add onto what it holds; `layer` is the model node's index (the
// dropout kernels seed their masks with it).
inline GraphNode node_for(ComputeOp op, uint8_t accumulate_mask = 0, int layer = 2) {
  GraphNode n;
  n.kind = NodeKind::COMPUTE;
  n.op = op;
  n.layer = layer;
  n.accumulate_mask = accumulate_mask;
  return n;
}

class ComputeMirror {
 public:
  // An output slot that is not materialised (a null TensorArg).
  static constexpr size_t kAbsent = static_cast<size_t>(-1);

  ComputeMirror() {
    cuda_ok(cudaSetDevice(0), "cudaSetDevice");
    cuda_ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    void* scalars = nullptr;
    cuda_ok(cudaMalloc(&scalars, scalar_bytes()), "cudaMalloc (scalars)");
    device_scalars_ = static_cast<float*>(scalars);
  }
  ~ComputeMirror() {
    for (Tensor& t : tensors_) (void)cudaFree(t.device);
    (void)cudaFree(device_scalars_);
    (void)cudaFree(workspace_.data);
    (void)cudaStreamDestroy(stream_);
  }
  ComputeMirror(const ComputeMirror&) = delete;
  ComputeMirror& operator=(const ComputeMirror&) = delete;

  // A zero-filled tensor laid out as the planner would: INT8 tensors are
  // dropout masks in S_MASK, whose channels are padded to 8, and FP16 ones
  // features (F_FEATURE_FP16, channels padded to 8) unless `region` says
  // otherwise (A_FC_WEIGHT for a compact FP16 weight, I_A_DATA for an input).
  size_t tensor(const Shape& shape, DType dtype = DType::FP32,
                std::optional<Region> region = std::nullopt) {
    Tensor t;
    t.desc = std::make_unique<DTensor>();
    t.desc->id = static_cast<DTensorId>(tensors_.size());
    t.desc->shape = shape;
    t.desc->dtype = dtype;
    t.desc->region = region                 ? *region
                     : dtype == DType::INT8 ? Region::S_MASK
                     : dtype == DType::FP16 ? Region::F_FEATURE_FP16
                                            : Region::T_SCRATCH;
    t.desc->slot_bytes = DTensor::slot_bytes_for(shape, dtype, t.desc->region);
    t.host.assign(t.desc->slot_bytes / 8 + 1, 0);
    t.result.assign(t.host.size(), 0);
    cuda_ok(cudaMalloc(&t.device, t.desc->slot_bytes), "cudaMalloc (tensor)");
    tensors_.push_back(std::move(t));
    return tensors_.size() - 1;
  }

  const DTensor& desc(size_t i) const { return *tensors_[i].desc; }
  uint64_t bytes(size_t i) const { return tensors_[i].desc->slot_bytes; }
  int64_t elements(size_t i) const { return tensors_[i].desc->shape.elements(); }
  // The host copy: the inputs before a run, the CPU twin's results after.
  float* f32(size_t i) { return reinterpret_cast<float*>(tensors_[i].host.data()); }
  int32_t* i32(size_t i) { return reinterpret_cast<int32_t*>(tensors_[i].host.data()); }
  int8_t* i8(size_t i) { return reinterpret_cast<int8_t*>(tensors_[i].host.data()); }
  // The device copy after the last run.
  const float* gpu_f32(size_t i) const {
    return reinterpret_cast<const float*>(tensors_[i].result.data());
  }
  // Empty when every float of tensor `t` on the device is within
  // rel * |CPU| + abs of the CPU twin's (NaN matches NaN); else the first
  // that is not, named `what`.
  QString mismatch(size_t t, const char* what, double rel, double abs) {
    for (int64_t i = 0; i < elements(t); ++i) {
      const double g = gpu_f32(t)[i], c = f32(t)[i];
      if (std::isnan(g) && std::isnan(c)) continue;
      if (!(std::fabs(g - c) <= rel * std::fabs(c) + abs))
        return QString("%1: float %2 differs: device %3, CPU %4")
            .arg(what)
            .arg(i)
            .arg(g, 0, 'g', 9)
            .arg(c, 0, 'g', 9);
    }
    return {};
  }

  // ---- FP16 tensors: value j in the compact order, wherever the padding
  // puts it.
  uint64_t half_offset(size_t i, int64_t j) const {
    const DTensor& d = *tensors_[i].desc;
    const int64_t c = d.shape.c, pc = d.padded_c();
    return static_cast<uint64_t>(j / c * pc + j % c);
  }
  uint16_t* half_bits(size_t i) { return reinterpret_cast<uint16_t*>(tensors_[i].host.data()); }
  const uint16_t* gpu_half_bits(size_t i) const {
    return reinterpret_cast<const uint16_t*>(tensors_[i].result.data());
  }
  float half(size_t i, int64_t j) {
    return cpu::half_bits_to_float(half_bits(i)[half_offset(i, j)]);
  }
  void set_half(size_t i, int64_t j, float v) {
    half_bits(i)[half_offset(i, j)] = cpu::float_to_half_bits(v);
  }
  // Uniform values rounded to half; the padding lanes stay zero.
  void fill_half(size_t i, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> u(lo, hi);
    for (int64_t k = 0; k < elements(i); ++k) set_half(i, k, u(rng));
  }
  // NaN in every padding lane of FP16 tensor `i`: a kernel must neither read
  // them nor leave them in an output.
  void poison_padding(size_t i) {
    const DTensor& d = *tensors_[i].desc;
    const int64_t rows = d.shape.n * d.shape.h * d.shape.w, pc = d.padded_c();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = d.shape.c; k < pc; ++k) half_bits(i)[r * pc + k] = 0x7E00;
  }
  // Empty when every value of FP16 tensor `t` on the device is within `ulps`
  // half ulps of the CPU twin's or within `abs` of it (NaN matches NaN), and
  // every padding lane is zero on both sides; else the first that is not.
  QString half_mismatch(size_t t, const char* what, int ulps, double abs = 0.0) {
    const DTensor& d = *tensors_[t].desc;
    const int64_t rows = d.shape.n * d.shape.h * d.shape.w, pc = d.padded_c();
    for (int64_t i = 0; i < rows * pc; ++i) {
      const uint16_t g = gpu_half_bits(t)[i], c = half_bits(t)[i];
      if (i % pc >= d.shape.c) {
        if (g != 0 || c != 0)
          return QString("%1: padding lane %2 is not zero: device %3, CPU %4")
              .arg(what)
              .arg(i)
              .arg(g)
              .arg(c);
        continue;
      }
      const double gv = cpu::half_bits_to_float(g), cv = cpu::half_bits_to_float(c);
      if (std::isnan(gv) && std::isnan(cv)) continue;
      if (std::abs(ordered(g) - ordered(c)) <= ulps || std::fabs(gv - cv) <= abs) continue;
      return QString("%1: half %2 differs by %3 ulps: device %4, CPU %5")
          .arg(what)
          .arg(i)
          .arg(std::abs(ordered(g) - ordered(c)))
          .arg(gv, 0, 'g', 6)
          .arg(cv, 0, 'g', 6);
    }
    return {};
  }

  const uint8_t* gpu_bytes(size_t i) const {
    return reinterpret_cast<const uint8_t*>(tensors_[i].result.data());
  }
  const uint8_t* cpu_bytes(size_t i) const {
    return reinterpret_cast<const uint8_t*>(tensors_[i].host.data());
  }

  void fill(size_t i, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> u(lo, hi);
    for (int64_t k = 0; k < elements(i); ++k) f32(i)[k] = u(rng);
  }
  float& scalar(ScalarSlot s) { return host_scalars_[static_cast<size_t>(s)]; }
  // The stream the CUDA kernels run on (a test adopts it for cuBLAS handles).
  cudaStream_t stream() const { return stream_; }

  KernelArgs args(bool on_device, const std::vector<size_t>& ins, const std::vector<size_t>& outs,
                  const GraphNode* node, const LayerNode* layer = nullptr) const {
    KernelArgs a;
    a.node = node;
    a.layer_params = test::resolved(layer);
    for (size_t i : ins) a.in.push_back(arg(on_device, i));
    for (size_t i : outs) a.out.push_back(arg(on_device, i));
    a.scalars = on_device ? device_scalars_ : const_cast<float*>(host_scalars_.data());
    return a;
  }

  // Uploads every tensor and the scalars, runs the CUDA kernel on the device
  // copies (with the stream workspace it asks for) and the CPU kernel on the
  // host copies, and downloads the device copies.
  void run(const std::function<KernelArgs(bool on_device)>& make, ComputeOp op) {
    const cpu::Kernel cpu_kernel = cpu::compute_kernel(op);
    const cuda::CudaKernel gpu_kernel = cuda::cuda_compute_kernel(op);
    if (!cpu_kernel || !gpu_kernel)
      throw std::logic_error("no kernel for " + std::string(compute_op_name(op)));
    for (Tensor& t : tensors_)
      cuda_ok(cudaMemcpyAsync(t.device, t.host.data(), t.desc->slot_bytes, cudaMemcpyHostToDevice,
                              stream_),
              "upload");
    cuda_ok(cudaMemcpyAsync(device_scalars_, host_scalars_.data(), scalar_bytes(),
                            cudaMemcpyHostToDevice, stream_),
            "upload (scalars)");
    KernelArgs d = make(true);
    const uint64_t need = cuda::cuda_workspace_bytes(d, stream_);
    if (need > workspace_.bytes) {
      cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      (void)cudaFree(workspace_.data);
      workspace_ = {};
      cuda_ok(cudaMalloc(&workspace_.data, need), "cudaMalloc (workspace)");
      workspace_.bytes = need;
    }
    if (need) d.workspace = &workspace_;
    gpu_kernel(d, stream_);
    // Pageable uploads may still read the host copies the CPU twin writes.
    cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    // The CPU stages FP16 operands as FP32 in its own stream workspace.
    KernelArgs h = make(false);
    const uint64_t host_need = cpu::kernel_workspace_bytes(h);
    // 64-byte aligned, as the backends' workspaces are.
    host_workspace_.assign(host_need / 8 + 9, 0);
    const auto base = (reinterpret_cast<uintptr_t>(host_workspace_.data()) + 63) & ~uintptr_t{63};
    StreamWorkspace host_ws{reinterpret_cast<void*>(base), host_need};
    if (host_need) h.workspace = &host_ws;
    cpu_kernel(h);
    for (Tensor& t : tensors_)
      cuda_ok(cudaMemcpyAsync(t.result.data(), t.device, t.desc->slot_bytes, cudaMemcpyDeviceToHost,
                              stream_),
              "download");
    cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

 private:
  struct Tensor {
    std::unique_ptr<DTensor> desc;
    std::vector<uint64_t> host, result;  // 8-byte words: aligned for any dtype
    void* device = nullptr;
  };

  static uint64_t scalar_bytes() { return static_cast<uint64_t>(ScalarSlot::COUNT) * 4; }

  // Half bits as integers whose difference counts ulps across zero.
  static int ordered(uint16_t h) {
    const int mag = h & 0x7FFF;
    return (h & 0x8000) ? -mag : mag;
  }

  TensorArg arg(bool on_device, size_t i) const {
    if (i == kAbsent) return {};
    const Tensor& t = tensors_[i];
    void* data = on_device ? t.device : const_cast<uint64_t*>(t.host.data());
    return {data, t.desc.get()};
  }

  std::vector<Tensor> tensors_;
  std::vector<float> host_scalars_ = std::vector<float>(static_cast<size_t>(ScalarSlot::COUNT));
  float* device_scalars_ = nullptr;
  StreamWorkspace workspace_;
  std::vector<uint64_t> host_workspace_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace tr::test
