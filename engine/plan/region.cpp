// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/region.h"

#include <array>

namespace tr {

namespace {

// clang-format off
constexpr std::array<std::string_view, kNumRegions> kNames = {
    "B_PREV_MEAN", "B_PREV_VAR", "B_NEXT_MEAN", "B_NEXT_VAR", "B_EQ_SCALE", "B_EQ_BIAS",
    "W_BN_BIAS", "W_BN_WEIGHT", "W_FC_BIAS", "W_FC_WEIGHT", "W_FIRST_CONV", "W_DEEP_CONV",
    "E_BN_BIAS", "E_BN_WEIGHT", "E_FC_BIAS", "E_FC_WEIGHT", "E_FIRST_CONV", "E_DEEP_CONV",
    "A_BN_BIAS", "A_BN_WEIGHT", "A_FC_BIAS", "A_FC_WEIGHT", "A_FIRST_CONV", "A_DEEP_CONV",
    "G_BN_BIAS", "G_BN_WEIGHT", "G_FC_BIAS", "G_FC_WEIGHT", "G_FIRST_CONV", "G_DEEP_CONV",
    "R_RESULT", "R_RESULT_ACCUMULATED", "R_CONFUSION",
    "H_BN_BIAS", "H_BN_WEIGHT", "H_FC_BIAS", "H_FC_WEIGHT", "H_FIRST_CONV", "H_DEEP_CONV",
    "M_BN_BIAS", "M_BN_WEIGHT", "M_FC_BIAS", "M_FC_WEIGHT", "M_FIRST_CONV", "M_DEEP_CONV",
    "V_BN_BIAS", "V_BN_WEIGHT", "V_FC_BIAS", "V_FC_WEIGHT", "V_FIRST_CONV", "V_DEEP_CONV",
    "N_FC", "N_FIRST_CONV", "N_DEEP_CONV",
    "I_A_DATA", "I_B_DATA", "I_A_LABEL", "I_B_LABEL", "I_ACTIVE_LABEL",
    "F_FEATURE_FP32", "F_FEATURE_FP16", "F_GRAD_SLOT_FP32", "F_GRAD_SLOT_FP16",
    "S_SCALARS", "S_BN_SAVED", "S_MASK",
    "T_SCRATCH",
};
// clang-format on

constexpr Region kSeriesFirst[] = {Region::W_BN_BIAS, Region::E_BN_BIAS, Region::A_BN_BIAS,
                                   Region::G_BN_BIAS, Region::H_BN_BIAS, Region::M_BN_BIAS,
                                   Region::V_BN_BIAS};

}  // namespace

std::string_view region_name(Region r) noexcept {
  int i = region_index(r);
  return i >= 0 && i < kNumRegions ? kNames[static_cast<size_t>(i)] : "?";
}

std::optional<Region> region_from_name(std::string_view name) noexcept {
  for (int i = 0; i < kNumRegions; ++i)
    if (kNames[static_cast<size_t>(i)] == name) return static_cast<Region>(i);
  return std::nullopt;
}

char region_series(Region r) noexcept {
  return region_name(r)[0];
}

Region param_region(ParamSeries series, ParamKind kind) noexcept {
  return static_cast<Region>(region_index(kSeriesFirst[static_cast<int>(series)]) +
                             static_cast<int>(kind));
}

}  // namespace tr
