// SPDX-License-Identifier: GPL-3.0-or-later
// Launchers for the batch-norm kernels in batch_norm_kernels.cu.
#include "backends/cuda/bn_launchers.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/batch_norm_kernels.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_rank_sum.h"
#include "backends/cuda/operand_checks.h"
#include "runtime/bn_eq_operands.h"

namespace tr::cuda::bn {

namespace {

void launched(cudaError_t err, const char* what) {
  check_cuda(err, what, current_device());
}

// An output slot can be absent (no gradient towards that input).
void* out_or_null(const KernelArgs& a, size_t i) {
  return i < a.out.size() ? a.out[i].data : nullptr;
}

const TensorArg& out_or_none(const KernelArgs& a, size_t i) {
  static const TensorArg none{};
  return i < a.out.size() ? a.out[i] : none;
}

// Statistics stay FP32 under AMP, as on the CPU.
// SyncBatchNorm's sums: the backend binds a DeviceRankSum (an NCCL
// all-reduce on a stream) to the BN training launches; the kernels call it
// between their passes.
BnRankSum device_rank_sum(const KernelArgs& a, const char* op) {
  if (!a.rank_sum) return {};
  const auto* d = dynamic_cast<const DeviceRankSum*>(a.rank_sum);
  if (!d)
    throw std::logic_error(std::string("CUDA backend: ") + op +
                           " was bound a host RankSum; SyncBatchNorm on CUDA sums on the device");
  BnRankSum r;
  r.context = d;
  r.sum = [](const void* context, float* data, uint64_t count, cudaStream_t stream) {
    static_cast<const DeviceRankSum*>(context)->enqueue_sum(data, count, stream);
  };
  return r;
}

int64_t rows_of(const Shape& s) {
  return s.n * s.h * s.w;
}

void* workspace_of(const KernelArgs& a, const Shape& s, const char* op) {
  const uint64_t need = bn_workspace_bytes(rows_of(s), s.c);
  if (need == 0) return nullptr;
  if (!a.workspace || a.workspace->bytes < need)
    throw std::logic_error(std::string("CUDA backend: ") + op + " launched without its workspace");
  return a.workspace->data;
}

void train(const KernelArgs& a, bool relu, cudaStream_t stream, const char* op) {
  const Shape& s = a.in[0].shape();
  BnTrain b;
  b.rank_sum = device_rank_sum(a, op);
  b.elem = feature_elem(op, a, {{&a.in[0], "x"}, {&a.out[0], "y"}},
                        {{&a.in[1], "gamma"}, {&a.in[2], "beta"}});
  require_f32(op, a, a.in[3], "the running mean");
  require_f32(op, a, a.in[4], "the running variance");
  for (size_t i = 1; i < 4; ++i) require_f32(op, a, a.out[i], "a statistics output");
  b.x = a.in[0].data;
  b.gamma = a.in[1].f32();
  b.beta = a.in[2].f32();
  b.prev_mean = a.in[3].f32();
  b.prev_var = a.in[4].f32();
  b.y = a.out[0].data;
  b.saved = a.out[1].f32();
  b.next_mean = a.out[2].f32();
  b.next_var = a.out[3].f32();
  b.rows = rows_of(s);
  b.channels = s.c;
  b.stride = a.in[0].desc->padded_c();
  b.eps = a.params().eps;
  b.momentum = a.params().momentum;
  b.relu = relu;
  b.workspace = workspace_of(a, s, op);
  launched(launch_bn_train(b, stream), op);
}

void infer(const KernelArgs& a, bool relu, cudaStream_t stream, const char* op) {
  const Shape& s = a.in[0].shape();
  BnInfer b;
  // The inference scale and bias come from the FP32 master weights.
  b.elem = feature_elem(op, a, {{&a.in[0], "x"}, {&a.out[0], "y"}}, {});
  require_f32(op, a, a.in[1], "the inference scale");
  require_f32(op, a, a.in[2], "the inference bias");
  b.x = a.in[0].data;
  b.scale = a.in[1].f32();
  b.bias = a.in[2].f32();
  b.y = a.out[0].data;
  b.rows = rows_of(s);
  b.channels = s.c;
  b.stride = a.in[0].desc->padded_c();
  b.relu = relu;
  launched(launch_bn_infer(b, stream), op);
}

void backward(const KernelArgs& a, bool relu, cudaStream_t stream, const char* op) {
  const Shape& s = a.in[0].shape();
  const TensorArg& dy = a.in[relu ? 4 : 3];
  const TensorArg none{};
  BnBackward b;
  b.rank_sum = device_rank_sum(a, op);
  b.elem = feature_elem(op, a, {{&a.in[0], "x"}, {&dy, "dy"}, {&out_or_none(a, 2), "dx"}},
                        {{&a.in[1], "gamma"},
                         {relu ? &a.in[2] : &none, "beta"},
                         {&out_or_none(a, 0), "dgamma"},
                         {&out_or_none(a, 1), "dbeta"}});
  require_f32(op, a, a.in[relu ? 3 : 2], "the saved statistics");
  b.x = a.in[0].data;
  b.gamma = a.in[1].f32();
  b.beta = relu ? a.in[2].f32() : nullptr;
  b.saved = a.in[relu ? 3 : 2].f32();
  b.dy = dy.data;
  b.dgamma = static_cast<float*>(out_or_null(a, 0));
  b.dbeta = static_cast<float*>(out_or_null(a, 1));
  b.dx = out_or_null(a, 2);
  b.acc_dgamma = a.accumulate(0);
  b.acc_dbeta = a.accumulate(1);
  b.acc_dx = a.accumulate(2);
  b.rows = rows_of(s);
  b.channels = s.c;
  b.stride = a.in[0].desc->padded_c();
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
