// SPDX-License-Identifier: GPL-3.0-or-later
// Our own kernels' op -> kernel table. This file and the kernels are
// compiled three times, for any x86-64, for AVX2 and for AVX-512
// (kernel_builds.h).
#include "backends/cpu/own_kernels.h"

#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/add_relu.h"
#include "backends/cpu/kernels/attention.h"
#include "backends/cpu/kernels/batch_norm.h"
#include "backends/cpu/kernels/dropout.h"
#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/kernels/layer_norm.h"
#include "backends/cpu/kernels/optimizers.h"
#include "backends/cpu/kernels/pooling.h"
#include "backends/cpu/kernels/range_ops.h"
#include "backends/cpu/kernels/softmax_ce.h"
#include "backends/cpu/kernels/tokens.h"

namespace tr::cpu {

// Switches without a default, so -Wswitch flags an op added to ops.h but not here.
Kernel own_compute_kernel(ComputeOp op) noexcept {
  switch (op) {
    case ComputeOp::H2D_INPUT:  // a host-to-arena copy the backend does itself
    case ComputeOp::CONV_FWD:   // oneDNN's (cpu_kernels.cpp)
    case ComputeOp::CONV_BWD:
    case ComputeOp::CONV_BWD_FIRST:
    case ComputeOp::LINEAR_FWD:
    case ComputeOp::LINEAR_BWD:
    case ComputeOp::LINEAR_BWD_FIRST:
      return nullptr;
    case ComputeOp::COPY_LABELS:
      return copy_labels;
    case ComputeOp::BN_FWD_TRAIN:
      return bn_fwd_train;
    case ComputeOp::BN_FWD_INFER:
      return bn_fwd_infer;
    case ComputeOp::BN_BWD:
      return bn_bwd;
    case ComputeOp::BN_RELU_FWD_TRAIN:
      return bn_relu_fwd_train;
    case ComputeOp::BN_RELU_FWD_INFER:
      return bn_relu_fwd_infer;
    case ComputeOp::BN_RELU_BWD:
      return bn_relu_bwd;
    case ComputeOp::LAYER_NORM_FWD:
      return layer_norm_fwd;
    case ComputeOp::LAYER_NORM_BWD:
      return layer_norm_bwd;
    case ComputeOp::ATTENTION_FWD:
      return attention_fwd;
    case ComputeOp::ATTENTION_BWD:
      return attention_bwd;
    case ComputeOp::POS_EMBED_FWD:
      return pos_embed_fwd;
    case ComputeOp::POS_EMBED_BWD:
      return pos_embed_bwd;
    case ComputeOp::CLASS_TOKEN_FWD:
      return class_token_fwd;
    case ComputeOp::CLASS_TOKEN_BWD:
      return class_token_bwd;
    case ComputeOp::TOKEN_POOL_FWD:
      return token_pool_fwd;
    case ComputeOp::TOKEN_POOL_BWD:
      return token_pool_bwd;
    case ComputeOp::RELU_FWD:
      return relu_fwd;
    case ComputeOp::RELU_BWD:
      return relu_bwd;
    case ComputeOp::ACTIVATION_FWD:
      return activation_fwd;
    case ComputeOp::ACTIVATION_BWD:
      return activation_bwd;
    case ComputeOp::MAXPOOL_FWD:
      return maxpool_fwd;
    case ComputeOp::MAXPOOL_BWD:
      return maxpool_bwd;
    case ComputeOp::MAXPOOL_FWD_WHERE:
      return maxpool_fwd_where;
    case ComputeOp::MAXPOOL_BWD_WHERE:
      return maxpool_bwd_where;
    case ComputeOp::AVGPOOL_FWD:
      return avgpool_fwd;
    case ComputeOp::AVGPOOL_BWD:
      return avgpool_bwd;
    case ComputeOp::GAP_FWD:
      return gap_fwd;
    case ComputeOp::GAP_BWD:
      return gap_bwd;
    case ComputeOp::DROPOUT_FWD:
      return dropout_fwd;
    case ComputeOp::DROPOUT_BWD:
      return dropout_bwd;
    case ComputeOp::IDENTITY:
      return identity;
    case ComputeOp::FLATTEN_FWD:
      return flatten_fwd;
    case ComputeOp::FLATTEN_BWD:
      return flatten_bwd;
    case ComputeOp::ADD_FWD:
      return add_fwd;
    case ComputeOp::ADD_BWD:
      return add_bwd;
    case ComputeOp::ADD_RELU_FWD:
      return add_relu_fwd;
    case ComputeOp::ADD_RELU_BWD:
      return add_relu_bwd;
    case ComputeOp::CONCAT_FWD:
      return concat_fwd;
    case ComputeOp::CONCAT_BWD:
      return concat_bwd;
    case ComputeOp::SOFTMAX_CE_FWD_BWD:
      return softmax_ce_fwd_bwd;
    case ComputeOp::SOFTMAX_CE_FWD:
      return softmax_ce_fwd;
    case ComputeOp::LOSS_SCALE_UPDATE:
      return loss_scale_update;
    case ComputeOp::ADAM_BIAS_CORRECTION:
      return adam_bias_correction;
    case ComputeOp::COUNT_UPDATE:
      return count_update;
    case ComputeOp::NUM_COMPUTE_OPS:
      break;
  }
  return nullptr;
}

Kernel own_range_kernel(RangeOp op) noexcept {
  switch (op) {
    case RangeOp::CLEAR:
      return range_clear;
    case RangeOp::CAST_FP32_TO_FP16:
      return range_cast_fp32_to_fp16;
    case RangeOp::CAST_FP16_TO_FP32:
      return range_cast_fp16_to_fp32;
    case RangeOp::CAST_FP32_TO_BF16:
      return range_cast_fp32_to_bf16;
    case RangeOp::CAST_BF16_TO_FP32:
      return range_cast_bf16_to_fp32;
    case RangeOp::SCALE:
      return range_scale;
    case RangeOp::NAN_CHECK:
      return range_nan_check;
    case RangeOp::ALLREDUCE_MEAN:  // collectives: the backend's communicator runs them
    case RangeOp::ALLREDUCE_SUM:
    case RangeOp::ALLGATHER:
    case RangeOp::ALLREDUCE_MAX:
    case RangeOp::REDUCE_SCATTER:
    case RangeOp::ALLGATHER_BATCH:
    case RangeOp::REDUCE_SCATTER_BATCH:
      return nullptr;
    case RangeOp::COPY:
      return range_copy;
    case RangeOp::ACCUMULATE:
      return range_accumulate;
    case RangeOp::BN_EQ_PARAMS:
      return range_bn_eq_params;
    case RangeOp::SGD_UPDATE:
      return sgd_update;
    case RangeOp::ADAM_UPDATE:
      return adam_update;
    case RangeOp::LARS_NORMS:
      return lars_norms;
    case RangeOp::LARS_UPDATE:
      return lars_update;
    case RangeOp::EMA_UPDATE:
      return range_ema_update;
    case RangeOp::SQRT:
      return range_sqrt;
    case RangeOp::NUM_RANGE_OPS:
      break;
  }
  return nullptr;
}

}  // namespace tr::cpu
