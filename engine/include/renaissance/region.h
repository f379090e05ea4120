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

// The kinds of trainable tensor, in the order every parameter series uses:
// one line per kind, its name and what it holds. Every parameter series
// (TR_REGIONS below) has one region per kind, W_BN_BIAS .. V_DEEP_CONV, so
// a new kind of weight is one line here and no hand-written regions. Conv
// biases live with their convolution's kind (first or deep), so the two
// gradient buckets stay exactly two contiguous spans.
#define TR_PARAM_KINDS(X, S, T)     \
  X(S, T, BN_BIAS, "norm shift")    \
  X(S, T, BN_WEIGHT, "norm scale")  \
  X(S, T, FC_BIAS, "FC bias")       \
  X(S, T, FC_WEIGHT, "FC matrix")   \
  X(S, T, FIRST_CONV, "first conv") \
  X(S, T, DEEP_CONV, "deeper convs")

// Every region in layout order: R(name, title) for one region,
// SERIES(letter, title) for a parameter series (a region per ParamKind).
#define TR_REGIONS(R, SERIES)                                                         \
  /* B: batch-norm running statistics and inference parameters */                     \
  R(B_PREV_MEAN, "BN running mean (before the step)")                                 \
  R(B_PREV_VAR, "BN running variance (before the step)")                              \
  R(B_NEXT_MEAN, "BN running mean (after the step)")                                  \
  R(B_NEXT_VAR, "BN running variance (after the step)")                               \
  R(B_EQ_SCALE, "BN inference scale")                                                 \
  R(B_EQ_BIAS, "BN inference shift")                                                  \
  SERIES(W, "Weights")        /* FP32 master weights */                               \
  SERIES(E, "EMA weights")    /* EMA of the weights */                                \
  SERIES(A, "16-bit weights") /* FP16 (AMP) or BF16 weight copy */                    \
  SERIES(G, "Gradients")      /* FP32 gradients, then the result (deep bucket) */     \
  /* R: per-batch loss/top-1/top-5/count, and its accumulation over validation */     \
  R(R_RESULT, "Batch result (loss, top-1, top-5)")                                    \
  R(R_RESULT_ACCUMULATED, "Validation totals")                                        \
  R(R_CONFUSION, "Confusion counts")                                                  \
  SERIES(H, "16-bit gradients") /* cast to G in one pass per bucket */                \
  SERIES(M, "Momentum")         /* optimizer first moment */                          \
  SERIES(V, "Second moment")    /* optimizer second moment */                         \
  SERIES(Q, "Gradient shards")  /* ZeRO-2: each rank's share of the summed buckets */ \
  /* N: LARS per-tensor norms (weight norm, gradient norm) */                         \
  R(N_FC, "LARS norms: FC")                                                           \
  R(N_FIRST_CONV, "LARS norms: first conv")                                           \
  R(N_DEEP_CONV, "LARS norms: deeper convs")                                          \
  /* I: input double buffers and labels, and the labels of the batch computed */      \
  R(I_A_DATA, "Input buffer A")                                                       \
  R(I_B_DATA, "Input buffer B")                                                       \
  R(I_A_LABEL, "Labels A")                                                            \
  R(I_B_LABEL, "Labels B")                                                            \
  R(I_ACTIVE_LABEL, "Labels of the batch computed")                                   \
  /* F: features and gradient slots */                                                \
  R(F_FEATURE_FP32, "Features (FP32)")                                                \
  R(F_FEATURE_FP16, "Features (FP16)")                                                \
  R(F_GRAD_SLOT_FP32, "Gradient slots (FP32)")                                        \
  R(F_GRAD_SLOT_FP16, "Gradient slots (FP16)")                                        \
  R(F_FEATURE_BF16, "Features (BF16)")                                                \
  R(F_GRAD_SLOT_BF16, "Gradient slots (BF16)")                                        \
  /* S: scalars, BN batch statistics saved for backward, masks */                     \
  R(S_SCALARS, "Scalars (learning rate, loss scale, step)")                           \
  R(S_BN_SAVED, "Statistics for the backward (normalisation, attention)")             \
  R(S_MASK, "Dropout and pooling masks")                                              \
  /* T: temporaries */                                                                \
  R(T_SCRATCH, "Scratch")

enum class ParamKind : uint8_t {
#define TR_PARAM_KIND(S, T, kind, title) kind,
  TR_PARAM_KINDS(TR_PARAM_KIND, , )
#undef TR_PARAM_KIND
};
#define TR_COUNT_KIND(S, T, kind, title) +1
inline constexpr int kParamKinds = 0 TR_PARAM_KINDS(TR_COUNT_KIND, , );
#undef TR_COUNT_KIND

// The normalisation layers' (batch norm's, layer norm's) scale and shift:
// FP32 at every precision (no 16-bit copy).
constexpr bool is_bn_param(ParamKind k) noexcept {
  return k == ParamKind::BN_BIAS || k == ParamKind::BN_WEIGHT;
}

// Series that hold one tensor per trainable parameter, all in ParamKind order.
enum class ParamSeries : uint8_t {
  W,  // FP32 master weights
  E,  // EMA of the weights (FP32)
  A,  // FP16 (AMP) or BF16 weight copy (half of W, batch norm's left out)
  G,  // FP32 gradients
  H,  // FP16 (AMP) or BF16 weight gradients (half of G, batch norm's left out)
  M,  // optimizer first moment / momentum (FP32)
  V,  // optimizer second moment (FP32)
  Q,  // ZeRO-2: each rank's share of the summed gradients, one shard per bucket (FP32)
};

enum class Region : uint8_t {
#define TR_REGION(name, title) name,
#define TR_SERIES_REGION(S, T, kind, title) S##_##kind,
#define TR_SERIES(S, T) TR_PARAM_KINDS(TR_SERIES_REGION, S, T)
  TR_REGIONS(TR_REGION, TR_SERIES)
#undef TR_SERIES
#undef TR_SERIES_REGION
#undef TR_REGION
      NUM_REGIONS
};
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
// The kind a parameter series' region holds; nullopt outside the series.
std::optional<ParamKind> region_param_kind(Region r) noexcept;
// Features, gradient slots (F), scratch (T), and what a forward saves for
// its backward (statistics, dropout masks): the bytes one step uses and the
// next does not need, which a packed plan shares between tensors whose
// lifetimes do not overlap. Every other region keeps its bytes for the run,
// but the gradients of a plan that shards them (MemoryPlan::step_local).
constexpr bool is_step_local(Region r) noexcept {
  return r == Region::F_FEATURE_FP32 || r == Region::F_FEATURE_FP16 ||
         r == Region::F_GRAD_SLOT_FP32 || r == Region::F_GRAD_SLOT_FP16 ||
         r == Region::F_FEATURE_BF16 || r == Region::F_GRAD_SLOT_BF16 || r == Region::T_SCRATCH ||
         r == Region::S_BN_SAVED || r == Region::S_MASK;
}

constexpr int region_index(Region r) noexcept {
  return static_cast<int>(r);
}

}  // namespace tr
