// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/region.h>

#include <array>

namespace tr {

namespace {

constexpr std::array<std::string_view, kNumRegions> kNames = {
#define TR_REGION(name, title) #name,
#define TR_SERIES_REGION(S, T, kind, title) #S "_" #kind,
#define TR_SERIES(S, T) TR_PARAM_KINDS(TR_SERIES_REGION, S, T)
    TR_REGIONS(TR_REGION, TR_SERIES)
#undef TR_SERIES
#undef TR_SERIES_REGION
#undef TR_REGION
};

// "Weights: BN shift": the series' title, then the kind's.
constexpr std::array<std::string_view, kNumRegions> kTitles = {
#define TR_REGION(name, title) title,
#define TR_SERIES_REGION(S, T, kind, title) T ": " title,
#define TR_SERIES(S, T) TR_PARAM_KINDS(TR_SERIES_REGION, S, T)
    TR_REGIONS(TR_REGION, TR_SERIES)
#undef TR_SERIES
#undef TR_SERIES_REGION
#undef TR_REGION
};

struct SeriesTitle {
  char series;
  std::string_view title;
};
constexpr SeriesTitle kSeriesTitles[] = {
    {'B', "batch-norm running statistics and inference parameters"},
    {'W', "FP32 master weights, updated by the optimizer"},
    {'E', "exponential moving average of the weights"},
    {'A', "16-bit copy of the weights (FP16 under AMP, bfloat16 under BF16)"},
    {'G', "FP32 gradients, in the two all-reduce buckets"},
    {'R', "per-batch results and validation totals"},
    {'H', "16-bit gradients (FP16 under AMP, bfloat16 under BF16), cast to G per bucket"},
    {'M', "optimizer first moment (momentum)"},
    {'V', "optimizer second moment (Adam)"},
    {'Q', "each rank's share of the summed gradients (ZeRO-2)"},
    {'N', "LARS per-tensor norms"},
    {'I', "input double buffers and labels"},
    {'F', "layer outputs and the gradients flowing back"},
    {'S', "scalars, batch statistics and masks saved for the backward"},
    {'T', "temporaries"},
};

constexpr Region kSeriesFirst[] = {Region::W_BN_BIAS, Region::E_BN_BIAS, Region::A_BN_BIAS,
                                   Region::G_BN_BIAS, Region::H_BN_BIAS, Region::M_BN_BIAS,
                                   Region::V_BN_BIAS, Region::Q_BN_BIAS};

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

std::optional<ParamKind> region_param_kind(Region r) noexcept {
  for (Region first : kSeriesFirst) {
    const int k = region_index(r) - region_index(first);
    if (k >= 0 && k < kParamKinds) return static_cast<ParamKind>(k);
  }
  return std::nullopt;
}

}  // namespace tr
