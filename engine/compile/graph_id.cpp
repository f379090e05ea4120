// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/graph_id.h>

#include <array>

namespace tr {

std::string_view graph_id_name(GraphId id) noexcept {
  static constexpr std::array<std::string_view, kNumGraphIds> kNames = {
      "TRANSFER_A",
      "TRANSFER_B",
      "FIRST_LAYER_FWD_A",
      "FIRST_LAYER_FWD_B",
      "ZERO_GRAD",
      "DEEP_FWD_BWD",
      "FIRST_LAYER_BWD_A",
      "FIRST_LAYER_BWD_B",
      "CAST_DEEP_GRAD_FP16_TO_FP32",
      "CAST_DEEP_GRAD_BF16_TO_FP32",
      "DEEP_COMM",
      "CAST_FIRST_GRAD_FP16_TO_FP32",
      "CAST_FIRST_GRAD_BF16_TO_FP32",
      "FIRST_COMM",
      "METRIC_ACCUMULATE",
      "NAN_CHECK_AND_GRAD_SCALING",
      "STATS_COMM",
      "UPDATE_STATS",
      "OPTIMIZER",
      "LARS_NORM_SUM",
      "LARS_FC_OPT",
      "LARS_FIRST_CONV_OPT",
      "LARS_DEEP_CONV_OPT",
      "WEIGHT_GATHER",
      "EMA_UPDATE",
      "CAST_MAIN_FP32_TO_FP16",
      "CAST_MAIN_FP32_TO_BF16",
      "RESET_METRICS",
      "UPDATE_BN_INF_PARAMS",
      "INF_MAIN_A",
      "INF_MAIN_B",
      "VAL_RESULT_COMM",
  };
  const auto i = static_cast<size_t>(id);
  return i < kNames.size() ? kNames[i] : "?";
}

}  // namespace tr
