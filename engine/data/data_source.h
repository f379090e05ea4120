// SPDX-License-Identifier: GPL-3.0-or-later
// DataSource: the interface the input pipeline reads samples through, so a
// dataset that fits in memory (Fashion-MNIST) and one that must never be
// materialised (synthetic ImageNet-sized data) look the same to it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <renaissance/shape.h>

namespace tr {

enum class Split { Train, Val };

constexpr std::string_view split_name(Split s) noexcept {
  return s == Split::Train ? "train" : "val";
}

// Samples are raw 8-bit pixels (0..255), HWC; normalisation and augmentation
// belong to the pipeline, so every source gets them identically.
// All const members must be safe to call from several threads at once: the
// pipeline's fill threads read samples concurrently.
class DataSource {
 public:
  virtual ~DataSource() = default;

  // [1, H, W, C] of one sample.
  virtual Shape sample_shape() const = 0;
  virtual int64_t classes() const = 0;
  virtual int64_t size(Split split) const = 0;
  // Writes sample_shape().per_sample() bytes to out_hwc.
  virtual void read(Split split, int64_t index, uint8_t* out_hwc) const = 0;
  // In [0, classes()).
  virtual int32_t label(Split split, int64_t index) const = 0;
  // One line for logs and the workbench: "Fashion-MNIST from /usr/share/...".
  virtual std::string describe() const = 0;
};

}  // namespace tr
