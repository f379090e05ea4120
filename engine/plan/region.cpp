// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/region.h>

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

constexpr std::array<std::string_view, kNumRegions> kTitles = {
    "BN running mean (before the step)",
    "BN running variance (before the step)",
    "BN running mean (after the step)",
    "BN running variance (after the step)",
    "BN inference scale",
    "BN inference shift",
    "Weights: BN shift",
    "Weights: BN scale",
    "Weights: FC bias",
    "Weights: FC matrix",
    "Weights: first conv",
    "Weights: deeper convs",
    "EMA weights: BN shift",
    "EMA weights: BN scale",
    "EMA weights: FC bias",
    "EMA weights: FC matrix",
    "EMA weights: first conv",
    "EMA weights: deeper convs",
    "FP16 weights: BN shift",
    "FP16 weights: BN scale",
    "FP16 weights: FC bias",
    "FP16 weights: FC matrix",
    "FP16 weights: first conv",
    "FP16 weights: deeper convs",
    "Gradients: BN shift",
    "Gradients: BN scale",
    "Gradients: FC bias",
    "Gradients: FC matrix",
    "Gradients: first conv",
    "Gradients: deeper convs",
    "Batch result (loss, top-1, top-5)",
    "Validation totals",
    "Confusion counts",
    "FP16 gradients: BN shift",
    "FP16 gradients: BN scale",
    "FP16 gradients: FC bias",
    "FP16 gradients: FC matrix",
    "FP16 gradients: first conv",
    "FP16 gradients: deeper convs",
    "Momentum: BN shift",
    "Momentum: BN scale",
    "Momentum: FC bias",
    "Momentum: FC matrix",
    "Momentum: first conv",
    "Momentum: deeper convs",
    "Second moment: BN shift",
    "Second moment: BN scale",
    "Second moment: FC bias",
    "Second moment: FC matrix",
    "Second moment: first conv",
    "Second moment: deeper convs",
    "LARS norms: FC",
    "LARS norms: first conv",
    "LARS norms: deeper convs",
    "Input buffer A",
    "Input buffer B",
    "Labels A",
    "Labels B",
    "Labels of the batch computed",
    "Features (FP32)",
    "Features (FP16)",
    "Gradient slots (FP32)",
    "Gradient slots (FP16)",
    "Scalars (learning rate, loss scale, step)",
    "BN batch statistics for the backward",
    "Dropout and pooling masks",
    "Scratch",
};

struct SeriesTitle {
  char series;
  std::string_view title;
};
constexpr SeriesTitle kSeriesTitles[] = {
    {'B', "batch-norm running statistics and inference parameters"},
    {'W', "FP32 master weights, updated by the optimizer"},
    {'E', "exponential moving average of the weights"},
    {'A', "FP16 copy of the weights (mixed precision)"},
    {'G', "FP32 gradients, in the two all-reduce buckets"},
    {'R', "per-batch results and validation totals"},
    {'H', "FP16 gradients (mixed precision), cast to G per bucket"},
    {'M', "optimizer first moment (momentum)"},
    {'V', "optimizer second moment (Adam)"},
    {'N', "LARS per-tensor norms"},
    {'I', "input double buffers and labels"},
    {'F', "layer outputs and the gradients flowing back"},
    {'S', "scalars, batch statistics and masks saved for the backward"},
    {'T', "temporaries"},
};

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

std::string_view region_title(Region r) noexcept {
  int i = region_index(r);
  return i >= 0 && i < kNumRegions ? kTitles[static_cast<size_t>(i)] : "?";
}

std::string_view region_series_title(char series) noexcept {
  for (const SeriesTitle& s : kSeriesTitles)
    if (s.series == series) return s.title;
  return {};
}

Region param_region(ParamSeries series, ParamKind kind) noexcept {
  return static_cast<Region>(region_index(kSeriesFirst[static_cast<int>(series)]) +
                             static_cast<int>(kind));
}

}  // namespace tr
