// SPDX-License-Identifier: GPL-3.0-or-later
// GraphId: the subgraphs a training step and an evaluation are made of
// (ENGINE.md §3), in the order the step schedule launches them.
#pragma once

#include <cstdint>
#include <string_view>

namespace tr {

enum class GraphId : uint8_t {
  TRANSFER_A,
  TRANSFER_B,
  FIRST_LAYER_FWD_A,
  FIRST_LAYER_FWD_B,
  ZERO_GRAD,
  DEEP_FWD_BWD,
  FIRST_LAYER_BWD_A,
  FIRST_LAYER_BWD_B,
  CAST_DEEP_GRAD_FP16_TO_FP32,
  CAST_DEEP_GRAD_BF16_TO_FP32,
  DEEP_COMM,
  CAST_FIRST_GRAD_FP16_TO_FP32,
  CAST_FIRST_GRAD_BF16_TO_FP32,
  FIRST_COMM,
  METRIC_ACCUMULATE,
  NAN_CHECK_AND_GRAD_SCALING,
  STATS_COMM,
  UPDATE_STATS,
  OPTIMIZER,
  LARS_NORM_SUM,  // ZeRO-2: LARS's layer norms from every rank's share of the gradients
  LARS_FC_OPT,
  LARS_FIRST_CONV_OPT,
  LARS_DEEP_CONV_OPT,
  WEIGHT_GATHER,  // ZeRO-1: each rank's updated share of the weights to every rank
  EMA_UPDATE,
  CAST_MAIN_FP32_TO_FP16,
  CAST_MAIN_FP32_TO_BF16,
  RESET_METRICS,
  UPDATE_BN_INF_PARAMS,
  INF_MAIN_A,
  INF_MAIN_B,
  VAL_RESULT_COMM,
  NUM_GRAPH_IDS
};
inline constexpr int kNumGraphIds = static_cast<int>(GraphId::NUM_GRAPH_IDS);

std::string_view graph_id_name(GraphId id) noexcept;

}  // namespace tr
