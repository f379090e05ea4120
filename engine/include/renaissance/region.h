// SPDX-License-Identifier: GPL-3.0-or-later
// Region: the semantic partitions of a rank's arena, laid out in enum order.
// The order is part of the design (ENGINE.md §2): W/E/A/G/H/M/V share one kind
// order so that "same kind across series" spans line up for RANGE ops, the
// gradient series is followed by R_RESULT so one span covers the deep bucket
// plus the result block, and B_NEXT_MEAN/B_NEXT_VAR are adjacent.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tr {

// Kinds of trainable tensor, in the order every parameter series uses.
// Conv biases live with their convolution's kind (first or deep), so the two
// gradient buckets stay exactly two contiguous spans.
enum class ParamKind : uint8_t { BN_BIAS, BN_WEIGHT, FC_BIAS, FC_WEIGHT, FIRST_CONV, DEEP_CONV };
inline constexpr int kParamKinds = 6;

// Series that hold one tensor per trainable parameter, all in ParamKind order.
enum class ParamSeries : uint8_t {
  W,  // FP32 master weights
  E,  // EMA of the weights (FP32)
  A,  // FP16 weights for AMP (exactly half of W)
  G,  // FP32 gradients
  H,  // FP16 gradients for AMP (exactly half of G)
  M,  // optimizer first moment / momentum (FP32)
  V,  // optimizer second moment (FP32)
};

// clang-format off: one line per series reads better than one per region
enum class Region : uint8_t {
  // B: batch-norm running statistics and inference parameters
  B_PREV_MEAN,
  B_PREV_VAR,
  B_NEXT_MEAN,
  B_NEXT_VAR,
  B_EQ_SCALE,
  B_EQ_BIAS,
  // W: FP32 master weights
  W_BN_BIAS,
  W_BN_WEIGHT,
  W_FC_BIAS,
  W_FC_WEIGHT,
  W_FIRST_CONV,
  W_DEEP_CONV,
  // E: EMA weights
  E_BN_BIAS,
  E_BN_WEIGHT,
  E_FC_BIAS,
  E_FC_WEIGHT,
  E_FIRST_CONV,
  E_DEEP_CONV,
  // A: FP16 weights (AMP)
  A_BN_BIAS,
  A_BN_WEIGHT,
  A_FC_BIAS,
  A_FC_WEIGHT,
  A_FIRST_CONV,
  A_DEEP_CONV,
  // G: FP32 gradients, then the per-batch result right after (deep bucket)
  G_BN_BIAS,
  G_BN_WEIGHT,
  G_FC_BIAS,
  G_FC_WEIGHT,
  G_FIRST_CONV,
  G_DEEP_CONV,
  // R: per-batch loss/top-1/top-5/count, and its accumulation over validation
  R_RESULT,
  R_RESULT_ACCUMULATED,
  R_CONFUSION,  // validation confusion counts (true class x predicted class)
  // H: FP16 gradients (AMP), cast to G in one pass per bucket
  H_BN_BIAS,
  H_BN_WEIGHT,
  H_FC_BIAS,
  H_FC_WEIGHT,
  H_FIRST_CONV,
  H_DEEP_CONV,
  // M, V: optimizer moments
  M_BN_BIAS,
  M_BN_WEIGHT,
  M_FC_BIAS,
  M_FC_WEIGHT,
  M_FIRST_CONV,
  M_DEEP_CONV,
  V_BN_BIAS,
  V_BN_WEIGHT,
  V_FC_BIAS,
  V_FC_WEIGHT,
  V_FIRST_CONV,
  V_DEEP_CONV,
  // N: LARS per-tensor norms (weight norm, gradient norm)
  N_FC,
  N_FIRST_CONV,
  N_DEEP_CONV,
  // I: input double buffers and labels, and the labels of the batch being computed
  I_A_DATA,
  I_B_DATA,
  I_A_LABEL,
  I_B_LABEL,
  I_ACTIVE_LABEL,
  // F: features and gradient slots
  F_FEATURE_FP32,
  F_FEATURE_FP16,
  F_GRAD_SLOT_FP32,
  F_GRAD_SLOT_FP16,
  // S: scalars (lr, loss scale, step), BN batch statistics saved for backward, masks
  S_SCALARS,
  S_BN_SAVED,
  S_MASK,
  // T: temporaries
  T_SCRATCH,
  NUM_REGIONS
};
// clang-format on
inline constexpr int kNumRegions = static_cast<int>(Region::NUM_REGIONS);

std::string_view region_name(Region r) noexcept;
std::optional<Region> region_from_name(std::string_view name) noexcept;
// One-letter series of a region ("W", "G", ...), for grouping in views.
char region_series(Region r) noexcept;
// What a region holds, in words for people ("FP32 master weights: FC
// bias"), beside its engine name.
std::string_view region_title(Region r) noexcept;
// What a series holds ("FP32 master weights" for 'W'); empty for no series.
std::string_view region_series_title(char series) noexcept;
// The region of `kind` within a parameter series.
Region param_region(ParamSeries series, ParamKind kind) noexcept;
// Features, gradient slots (F) and scratch (T): the bytes one step uses and
// the next does not need, which a packed plan shares between tensors whose
// lifetimes do not overlap. Every other region keeps its bytes for the run.
constexpr bool is_step_local(Region r) noexcept {
  return r == Region::F_FEATURE_FP32 || r == Region::F_FEATURE_FP16 ||
         r == Region::F_GRAD_SLOT_FP32 || r == Region::F_GRAD_SLOT_FP16 || r == Region::T_SCRATCH;
}

constexpr int region_index(Region r) noexcept {
  return static_cast<int>(r);
}

}  // namespace tr
