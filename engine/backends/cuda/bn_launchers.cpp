// SPDX-License-Identifier: GPL-3.0-or-later
// Launchers for the batch-norm kernels in batch_norm_kernels.cu.
#include "backends/cuda/bn_launchers.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/batch_norm_kernels.h"
#include "backends/cuda/cuda_check.h"
#include "runtime/bn_eq_operands.h"

namespace tr::cuda::bn {

namespace {

void launched(cudaError_t err, const char* what) {
  check_cuda(err, what, current_device());
}

// An output slot can be absent (no gradient towards that input).
float* out_or_null(const KernelArgs& a, size_t i) {
  return i < a.out.size() ? a.out[i].f32() : nullptr;
}

// The CPU stages FP16 operands through FP32; these kernels would read them
// as FP32, so until FP16 kernels exist an AMP plan must fail loudly.
void require_fp32(const KernelArgs& a, const char* op) {
  auto half = [](const TensorArg& t) { return t.data && t.desc && t.desc->dtype == DType::FP16; };
  for (const TensorArg& t : a.in)
    if (half(t)) throw std::logic_error(std::string("CUDA backend: no FP16 kernel for ") + op);
  for (const TensorArg& t : a.out)
    if (half(t)) throw std::logic_error(std::string("CUDA backend: no FP16 kernel for ") + op);
}

// SyncBatchNorm on the CPU sums the statistics across ranks from inside the
// kernel (KernelArgs::rank_sum). A CUDA kernel cannot call NCCL, so on CUDA
// the op must be split into a statistics kernel, an NCCL all-reduce and an
// apply kernel in the graph; until that split exists, refuse the launch
// rather than normalise with this rank's statistics alone.
void refuse_rank_sum(const KernelArgs& a, const char* op) {
  if (a.rank_sum)
    throw std::logic_error(std::string("CUDA backend: ") + op +
                           " with SyncBatchNorm needs the split stats / all-reduce / apply graph, "
                           "which the CUDA backend does not build yet");
}

int64_t rows_of(const Shape& s) {
  return s.n * s.h * s.w;
}

const LayerParams& layer_params(const KernelArgs& a) {
  static const LayerParams defaults{};
  return a.layer ? a.layer->params : defaults;
}

void* workspace_of(const KernelArgs& a, const Shape& s, const char* op) {
  const uint64_t need = bn_workspace_bytes(rows_of(s), s.c);
  if (need == 0) return nullptr;
  if (!a.workspace || a.workspace->bytes < need)
    throw std::logic_error(std::string("CUDA backend: ") + op + " launched without its workspace");
  return a.workspace->data;
}

void train(const KernelArgs& a, bool relu, cudaStream_t stream, const char* op) {
  refuse_rank_sum(a, op);
  require_fp32(a, op);
  const Shape& s = a.in[0].shape();
  BnTrain b;
  b.x = a.in[0].f32();
  b.gamma = a.in[1].f32();
  b.beta = a.in[2].f32();
  b.prev_mean = a.in[3].f32();
  b.prev_var = a.in[4].f32();
  b.y = a.out[0].f32();
  b.saved = a.out[1].f32();
  b.next_mean = a.out[2].f32();
  b.next_var = a.out[3].f32();
  b.rows = rows_of(s);
  b.channels = s.c;
  b.eps = layer_params(a).eps;
  b.momentum = layer_params(a).momentum;
  b.relu = relu;
  b.workspace = workspace_of(a, s, op);
  launched(launch_bn_train(b, stream), op);
}

void infer(const KernelArgs& a, bool relu, cudaStream_t stream, const char* op) {
  require_fp32(a, op);
  const Shape& s = a.in[0].shape();
  BnInfer b;
  b.x = a.in[0].f32();
  b.scale = a.in[1].f32();
  b.bias = a.in[2].f32();
  b.y = a.out[0].f32();
  b.rows = rows_of(s);
  b.channels = s.c;
  b.relu = relu;
  launched(launch_bn_infer(b, stream), op);
}

void backward(const KernelArgs& a, bool relu, cudaStream_t stream, const char* op) {
  refuse_rank_sum(a, op);
  require_fp32(a, op);
  const Shape& s = a.in[0].shape();
  BnBackward b;
  b.x = a.in[0].f32();
  b.gamma = a.in[1].f32();
  b.beta = relu ? a.in[2].f32() : nullptr;
  b.saved = a.in[relu ? 3 : 2].f32();
  b.dy = a.in[relu ? 4 : 3].f32();
  b.dgamma = out_or_null(a, 0);
  b.dbeta = out_or_null(a, 1);
  b.dx = out_or_null(a, 2);
  b.acc_dgamma = a.accumulate(0);
  b.acc_dbeta = a.accumulate(1);
  b.acc_dx = a.accumulate(2);
  b.rows = rows_of(s);
  b.channels = s.c;
  b.relu = relu;
  if (!b.dgamma && !b.dbeta && !b.dx) return;
  b.workspace = workspace_of(a, s, op);
  launched(launch_bn_backward(b, stream), op);
}

}  // namespace

void fwd_train(const KernelArgs& a, cudaStream_t stream) {
  train(a, false, stream, "BN_FWD_TRAIN");
}
void relu_fwd_train(const KernelArgs& a, cudaStream_t stream) {
  train(a, true, stream, "BN_RELU_FWD_TRAIN");
}
void fwd_infer(const KernelArgs& a, cudaStream_t stream) {
  infer(a, false, stream, "BN_FWD_INFER");
}
void relu_fwd_infer(const KernelArgs& a, cudaStream_t stream) {
  infer(a, true, stream, "BN_RELU_FWD_INFER");
}
void bwd(const KernelArgs& a, cudaStream_t stream) {
  backward(a, false, stream, "BN_BWD");
}
void relu_bwd(const KernelArgs& a, cudaStream_t stream) {
  backward(a, true, stream, "BN_RELU_BWD");
}

void eq_params(const KernelArgs& a, cudaStream_t stream) {
  const std::vector<BnEqLayer> layers = bn_eq_layers(a);
  launched(launch_bn_eq_params(layers.data(), static_cast<int>(layers.size()), stream),
           "BN_EQ_PARAMS");
}

uint64_t workspace_bytes(const KernelArgs& a) {
  if (!a.node || a.node->kind != NodeKind::COMPUTE || a.in.empty() || !a.in[0].desc) return 0;
  switch (a.node->op) {
    case ComputeOp::BN_FWD_TRAIN:
    case ComputeOp::BN_RELU_FWD_TRAIN:
    case ComputeOp::BN_BWD:
    case ComputeOp::BN_RELU_BWD: {
      const Shape& s = a.in[0].shape();
      return bn_workspace_bytes(rows_of(s), s.c);
    }
    default:
      return 0;
  }
}

}  // namespace tr::cuda::bn
