// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's op -> kernel table and the launchers that unpack
// KernelArgs for the kernels in range_kernels.cu and optimizer_kernels.cu
// (the layer kernels' launchers are in compute_launchers.cpp, the linear
// layers' in linear_launchers.cpp, the convolutions' in conv_launchers.cpp).
#include "backends/cuda/cuda_kernels.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "backends/cuda/attention_launchers.h"
#include "backends/cuda/bn_launchers.h"
#include "backends/cuda/compute_launchers.h"
#include "backends/cuda/conv_launchers.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/layer_norm_launchers.h"
#include "backends/cuda/linear_launchers.h"
#include "backends/cuda/optimizer_kernels.h"
#include "backends/cuda/range_kernels.h"
#include "backends/cuda/token_launchers.h"
#include "runtime/lars_operands.h"

namespace tr::cuda {

namespace {

void launched(cudaError_t err, const char* what) {
  check_cuda(err, what, current_device());
}

int slot(ScalarSlot s) {
  return static_cast<int>(s);
}

ScalarSlots scalar_slots() {
  ScalarSlots s;
  s.lr = slot(ScalarSlot::LR);
  s.overflow = slot(ScalarSlot::OVERFLOW);
  s.loss_scale = slot(ScalarSlot::LOSS_SCALE);
  s.inv_loss_scale = slot(ScalarSlot::INV_LOSS_SCALE);
  s.clean_steps = slot(ScalarSlot::CLEAN_STEPS);
  s.adam_corr1 = slot(ScalarSlot::ADAM_CORR1);
  s.adam_corr2 = slot(ScalarSlot::ADAM_CORR2);
  s.updates = slot(ScalarSlot::UPDATES);
  return s;
}

const float* scalar_at(const KernelArgs& a, ScalarSlot s) {
  return a.scalars ? a.scalars + slot(s) : nullptr;
}

const OptimizerSpec& optimizer_of(const KernelArgs& a) {
  return a.constants().optimizer;
}

uint64_t common_floats(const SpanArg& x, const SpanArg& y) {
  return std::min(x.floats(), y.floats());
}

// The floats every span of an optimizer update covers.
uint64_t span_floats(const KernelArgs& a) {
  uint64_t n = a.in_spans[0].floats();
  for (const SpanArg& s : a.in_spans) n = std::min(n, s.floats());
  for (const SpanArg& s : a.out_spans) n = std::min(n, s.floats());
  return n;
}

void clear(const KernelArgs& a, cudaStream_t stream) {
  // A memset node in a captured graph; no kernel of our own needed.
  for (const SpanArg& s : a.out_spans)
    if (s.bytes) launched(cudaMemsetAsync(s.data, 0, s.bytes, stream), "cudaMemsetAsync (CLEAR)");
}

void copy(const KernelArgs& a, cudaStream_t stream) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  if (in.data == out.data) return;
  const uint64_t n = std::min(in.bytes, out.bytes);
  const auto s0 = reinterpret_cast<uintptr_t>(in.data), d0 = reinterpret_cast<uintptr_t>(out.data);
  // cudaMemcpy leaves overlapping copies undefined; the CPU twin memmoves.
  if (s0 < d0 + n && d0 < s0 + n) {
    launched(launch_overlapping_move(out.data, in.data, n, stream), "COPY (overlapping)");
    return;
  }
  if (n)
    launched(cudaMemcpyAsync(out.data, in.data, n, cudaMemcpyDeviceToDevice, stream),
             "cudaMemcpyAsync (COPY)");
}

void accumulate(const KernelArgs& a, cudaStream_t stream) {
  launched(launch_accumulate(a.out_spans[0].f32(), a.in_spans[0].f32(),
                             common_floats(a.in_spans[0], a.out_spans[0]), stream),
           "ACCUMULATE");
}

void scale(const KernelArgs& a, cudaStream_t stream) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans.empty() ? in : a.out_spans[0];
  launched(launch_scale(out.f32(), in.f32(), common_floats(in, out),
                        scalar_at(a, ScalarSlot::INV_LOSS_SCALE),
                        scalar_at(a, ScalarSlot::OVERFLOW), stream),
           "SCALE");
}

void sqrt_in_place(const KernelArgs& a, cudaStream_t stream) {
  const SpanArg& s = a.out_spans[0];
  launched(launch_sqrt(s.f32(), s.floats(), stream), "SQRT");
}

void nan_check(const KernelArgs& a, cudaStream_t stream) {
  float* overflow = a.scalars + slot(ScalarSlot::OVERFLOW);
  for (const SpanArg& s : a.in_spans)
    launched(launch_nan_check(s.f32(), s.floats(), overflow, stream), "NAN_CHECK");
}

void cast_fp32_to_fp16(const KernelArgs& a, cudaStream_t stream) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  launched(launch_cast_fp32_to_fp16(in.f32(), static_cast<uint16_t*>(out.data),
                                    std::min(in.bytes / 4, out.bytes / 2), stream),
           "CAST_FP32_TO_FP16");
}

void cast_fp16_to_fp32(const KernelArgs& a, cudaStream_t stream) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  launched(launch_cast_fp16_to_fp32(static_cast<const uint16_t*>(in.data), out.f32(),
                                    std::min(in.bytes / 2, out.bytes / 4), stream),
           "CAST_FP16_TO_FP32");
}

void cast_fp32_to_bf16(const KernelArgs& a, cudaStream_t stream) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  launched(launch_cast_fp32_to_bf16(in.f32(), static_cast<uint16_t*>(out.data),
                                    std::min(in.bytes / 4, out.bytes / 2), stream),
           "CAST_FP32_TO_BF16");
}

void cast_bf16_to_fp32(const KernelArgs& a, cudaStream_t stream) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  launched(launch_cast_bf16_to_fp32(static_cast<const uint16_t*>(in.data), out.f32(),
                                    std::min(in.bytes / 2, out.bytes / 4), stream),
           "CAST_BF16_TO_FP32");
}

void ema_update(const KernelArgs& a, cudaStream_t stream) {
  const double decay = a.constants().ema_decay;
  // 1 - d in double, as on the CPU: 1.0f - 0.999f is off by 1e-5 relative.
  launched(launch_ema(a.out_spans[0].f32(), a.in_spans[0].f32(),
                      common_floats(a.in_spans[0], a.out_spans[0]), static_cast<float>(decay),
                      static_cast<float>(1.0 - decay), scalar_at(a, ScalarSlot::OVERFLOW), stream),
           "EMA_UPDATE");
}

void sgd_update(const KernelArgs& a, cudaStream_t stream) {
  const OptimizerSpec& o = optimizer_of(a);
  const bool has_m = a.in_spans.size() > 2 && a.out_spans.size() > 1;
  SgdConstants c;
  c.momentum = static_cast<float>(o.momentum);
  c.weight_decay = static_cast<float>(o.weight_decay);
  c.nesterov = o.nesterov;
  launched(
      launch_sgd(a.out_spans[0].f32(), a.in_spans[1].f32(), has_m ? a.out_spans[1].f32() : nullptr,
                 span_floats(a), c, a.scalars, scalar_slots(), stream),
      "SGD_UPDATE");
}

void adam_update(const KernelArgs& a, cudaStream_t stream) {
  const OptimizerSpec& o = optimizer_of(a);
  AdamConstants c;
  c.beta1 = static_cast<float>(o.beta1);
  c.beta2 = static_cast<float>(o.beta2);
  c.one_minus_beta1 = static_cast<float>(1.0 - o.beta1);
  c.one_minus_beta2 = static_cast<float>(1.0 - o.beta2);
  c.weight_decay = static_cast<float>(o.weight_decay);
  c.eps = static_cast<float>(o.adam_eps);
  launched(launch_adam(a.out_spans[0].f32(), a.in_spans[1].f32(), a.out_spans[1].f32(),
                       a.out_spans[2].f32(), span_floats(a), c, a.scalars, scalar_slots(), stream),
           "ADAM_UPDATE");
}

// The descriptor batches of LARS_NORMS (`ms` null: weights with norms only)
// or LARS_UPDATE (every tensor; biases and unnormed ones with ratio 1).
std::vector<LarsBatch> lars_batches(const SpanArg& ws, const SpanArg& gs, const SpanArg* ms,
                                    const SpanArg& ns) {
  std::vector<LarsBatch> batches;
  // The tensor/norm pairing is every backend's (runtime/lars_operands.h).
  for (const LarsOperand& o : lars_operands(ws, gs, ms, ns)) {
    if (!ms && !o.norms) continue;
    if (batches.empty() || batches.back().count == kLarsBatch) batches.emplace_back();
    LarsBatch& b = batches.back();
    LarsTensor& d = b.t[b.count++];
    d.w = o.w;
    d.g = o.g;
    d.m = o.m;
    d.norms = o.norms;
    d.n = static_cast<uint64_t>(o.n);
    d.first_block = b.blocks;
    b.blocks += lars_blocks(d.n);
  }
  return batches;
}

std::vector<LarsBatch> lars_norms_batches(const KernelArgs& a) {
  return lars_batches(a.in_spans[0], a.in_spans[1], nullptr, a.out_spans[0]);
}

// Batches run one after another on the stream, so they share the partials.
uint64_t lars_partials_bytes(const std::vector<LarsBatch>& batches) {
  uint32_t blocks = 0;
  for (const LarsBatch& b : batches) blocks = std::max(blocks, b.blocks);
  return lars_norms_workspace_bytes(blocks);
}

uint64_t lars_norms_workspace(const KernelArgs& a) {
  if (!a.node || a.node->kind != NodeKind::RANGE || a.node->range_op != RangeOp::LARS_NORMS)
    return 0;
  return lars_partials_bytes(lars_norms_batches(a));
}

void lars_norms(const KernelArgs& a, cudaStream_t stream) {
  const std::vector<LarsBatch> batches = lars_norms_batches(a);
  if (batches.empty()) return;
  // Sized by cuda_workspace_bytes from the node; a launch without one is a bug.
  if (!a.workspace || a.workspace->bytes < lars_partials_bytes(batches))
    throw std::logic_error("LARS_NORMS: no stream workspace for the partial sums");
  const bool squares = a.node && a.node->data_sharded;
  for (const LarsBatch& b : batches)
    launched(launch_lars_norms(b, static_cast<double*>(a.workspace->data), squares, stream),
             "LARS_NORMS");
}

void lars_update(const KernelArgs& a, cudaStream_t stream) {
  const OptimizerSpec& o = optimizer_of(a);
  LarsConstants c;
  c.momentum = static_cast<float>(o.momentum);
  c.weight_decay = static_cast<float>(o.weight_decay);
  c.trust_coefficient = o.trust_coefficient;
  c.weight_decay_d = o.weight_decay;
  const SpanArg& ws = a.out_spans[0];
  for (const LarsBatch& b : lars_batches(ws, a.in_spans[1], &a.out_spans[1], a.in_spans[3]))
    launched(launch_lars_update(b, c, a.scalars, scalar_slots(), stream), "LARS_UPDATE");
}

void loss_scale_update(const KernelArgs& a, cudaStream_t stream) {
  launched(launch_loss_scale_update(a.scalars, scalar_slots(), kLossScaleGrowthInterval, stream),
           "LOSS_SCALE_UPDATE");
}

void adam_bias_correction(const KernelArgs& a, cudaStream_t stream) {
  const OptimizerSpec& o = optimizer_of(a);
  launched(launch_adam_bias_correction(a.scalars, scalar_slots(), o.beta1, o.beta2, stream),
           "ADAM_BIAS_CORRECTION");
}

void count_update(const KernelArgs& a, cudaStream_t stream) {
  launched(launch_count_update(a.scalars, scalar_slots(), stream), "COUNT_UPDATE");
}

}  // namespace

// No default: -Wswitch flags an op added to ops.h but not here.
CudaKernel cuda_compute_kernel(ComputeOp op) noexcept {
  switch (op) {
    case ComputeOp::COPY_LABELS:
      return compute::copy_labels;
    case ComputeOp::CONV_FWD:
      return conv::fwd;
    case ComputeOp::CONV_BWD:
      return conv::bwd;
    case ComputeOp::CONV_BWD_FIRST:
      return conv::bwd_first;
    case ComputeOp::LINEAR_FWD:
      return linear::fwd;
    case ComputeOp::LINEAR_BWD:
      return linear::bwd;
    case ComputeOp::LINEAR_BWD_FIRST:
      return linear::bwd_first;
    case ComputeOp::RELU_FWD:
      return compute::relu_fwd;
    case ComputeOp::RELU_BWD:
      return compute::relu_bwd;
    case ComputeOp::ACTIVATION_FWD:
      return compute::activation_fwd;
    case ComputeOp::ACTIVATION_BWD:
      return compute::activation_bwd;
    case ComputeOp::MAXPOOL_FWD:
      return compute::maxpool_fwd;
    case ComputeOp::MAXPOOL_BWD:
      return compute::maxpool_bwd;
    case ComputeOp::MAXPOOL_FWD_WHERE:
      return compute::maxpool_fwd_where;
    case ComputeOp::MAXPOOL_BWD_WHERE:
      return compute::maxpool_bwd_where;
    case ComputeOp::AVGPOOL_FWD:
      return compute::avgpool_fwd;
    case ComputeOp::AVGPOOL_BWD:
      return compute::avgpool_bwd;
    case ComputeOp::GAP_FWD:
      return compute::gap_fwd;
    case ComputeOp::GAP_BWD:
      return compute::gap_bwd;
    case ComputeOp::BN_FWD_TRAIN:
      return bn::fwd_train;
    case ComputeOp::BN_FWD_INFER:
      return bn::fwd_infer;
    case ComputeOp::BN_BWD:
      return bn::bwd;
    case ComputeOp::BN_RELU_FWD_TRAIN:
      return bn::relu_fwd_train;
    case ComputeOp::BN_RELU_FWD_INFER:
      return bn::relu_fwd_infer;
    case ComputeOp::BN_RELU_BWD:
      return bn::relu_bwd;
    case ComputeOp::LAYER_NORM_FWD:
      return layer_norm::fwd;
    case ComputeOp::LAYER_NORM_BWD:
      return layer_norm::bwd;
    case ComputeOp::ATTENTION_FWD:
      return attention::fwd;
    case ComputeOp::ATTENTION_BWD:
      return attention::bwd;
    case ComputeOp::POS_EMBED_FWD:
      return tokens::pos_embed_fwd;
    case ComputeOp::POS_EMBED_BWD:
      return tokens::pos_embed_bwd;
    case ComputeOp::CLASS_TOKEN_FWD:
      return tokens::class_token_fwd;
    case ComputeOp::CLASS_TOKEN_BWD:
      return tokens::class_token_bwd;
    case ComputeOp::TOKEN_POOL_FWD:
      return tokens::token_pool_fwd;
    case ComputeOp::TOKEN_POOL_BWD:
      return tokens::token_pool_bwd;
    case ComputeOp::DROPOUT_FWD:
      return compute::dropout_fwd;
    case ComputeOp::DROPOUT_BWD:
      return compute::dropout_bwd;
    case ComputeOp::IDENTITY:
      return compute::identity;
    case ComputeOp::FLATTEN_FWD:
    case ComputeOp::FLATTEN_BWD:
      return compute::flatten;
    case ComputeOp::ADD_FWD:
      return compute::add_fwd;
    case ComputeOp::ADD_BWD:
      return compute::add_bwd;
    case ComputeOp::ADD_RELU_FWD:
      return compute::add_relu_fwd;
    case ComputeOp::ADD_RELU_BWD:
      return compute::add_relu_bwd;
    case ComputeOp::CONCAT_FWD:
      return compute::concat_fwd;
    case ComputeOp::CONCAT_BWD:
      return compute::concat_bwd;
    case ComputeOp::SOFTMAX_CE_FWD_BWD:
      return compute::softmax_ce_fwd_bwd;
    case ComputeOp::SOFTMAX_CE_FWD:
      return compute::softmax_ce_fwd;
    case ComputeOp::LOSS_SCALE_UPDATE:
      return loss_scale_update;
    case ComputeOp::ADAM_BIAS_CORRECTION:
      return adam_bias_correction;
    case ComputeOp::COUNT_UPDATE:
      return count_update;
    case ComputeOp::H2D_INPUT:  // a host-to-arena copy the backend does itself
    case ComputeOp::NUM_COMPUTE_OPS:
      break;
  }
  return nullptr;
}

// No default: -Wswitch flags a range op added to ops.h but not here.
CudaKernel cuda_range_kernel(RangeOp op) noexcept {
  switch (op) {
    case RangeOp::CLEAR:
      return clear;
    case RangeOp::CAST_FP32_TO_FP16:
      return cast_fp32_to_fp16;
    case RangeOp::CAST_FP16_TO_FP32:
      return cast_fp16_to_fp32;
    case RangeOp::CAST_FP32_TO_BF16:
      return cast_fp32_to_bf16;
    case RangeOp::CAST_BF16_TO_FP32:
      return cast_bf16_to_fp32;
    case RangeOp::SCALE:
      return scale;
    case RangeOp::NAN_CHECK:
      return nan_check;
    case RangeOp::ALLREDUCE_MEAN:  // collectives: NCCL, in the backend
    case RangeOp::ALLREDUCE_SUM:
    case RangeOp::ALLGATHER:
    case RangeOp::ALLREDUCE_MAX:
    case RangeOp::REDUCE_SCATTER:
    case RangeOp::ALLGATHER_BATCH:
    case RangeOp::REDUCE_SCATTER_BATCH:
      return nullptr;
    case RangeOp::COPY:
      return copy;
    case RangeOp::ACCUMULATE:
      return accumulate;
    case RangeOp::SGD_UPDATE:
      return sgd_update;
    case RangeOp::ADAM_UPDATE:
      return adam_update;
    case RangeOp::EMA_UPDATE:
      return ema_update;
    case RangeOp::BN_EQ_PARAMS:
      return bn::eq_params;
    case RangeOp::LARS_NORMS:
      return lars_norms;
    case RangeOp::LARS_UPDATE:
      return lars_update;
    case RangeOp::SQRT:
      return sqrt_in_place;
    case RangeOp::NUM_RANGE_OPS:
      break;
  }
  return nullptr;
}

CudaKernel cuda_kernel(const GraphNode& node) noexcept {
  return node.kind == NodeKind::COMPUTE ? cuda_compute_kernel(node.op)
                                        : cuda_range_kernel(node.range_op);
}

std::string_view cuda_op_name(const GraphNode& node) noexcept {
  return node.kind == NodeKind::COMPUTE ? compute_op_name(node.op) : range_op_name(node.range_op);
}

uint64_t cuda_workspace_bytes(const KernelArgs& a, cudaStream_t stream) {
  return std::max({compute::workspace_bytes(a), layer_norm::workspace_bytes(a),
                   attention::workspace_bytes(a), linear::workspace_bytes(a),
                   conv::workspace_bytes(a, stream), lars_norms_workspace(a)});
}

}  // namespace tr::cuda
