// SPDX-License-Identifier: GPL-3.0-or-later
// The ranges the project loader accepts for each kind of value. Editors
// (the workbench's panels) bound their fields by the same numbers, so every
// value a user can type also loads back.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tr::limits {

inline constexpr int64_t kMaxExtent = 65536;      // heights, widths, channels
inline constexpr int64_t kMaxFeatures = 1 << 20;  // Conv out_channels, Linear out_features, classes
inline constexpr int64_t kMaxKernel = 64;
inline constexpr int64_t kMaxStride = 65536;
inline constexpr int64_t kMaxPadding = 65536;
inline constexpr int64_t kMaxBatch = int64_t{1} << 24;
inline constexpr int64_t kMaxSamples = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxEpochs = 100000;
inline constexpr size_t kMaxNodeIdLength = 64;
inline constexpr int kMaxDeviceId = 63;
inline constexpr int kMaxRanks = 64;

}  // namespace tr::limits
