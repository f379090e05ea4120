// SPDX-License-Identifier: GPL-3.0-or-later
// Generation of synthetic samples from counter-based random numbers.
#include "data/synthetic.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <renaissance/error.h>
#include "core/counter_rng.h"

namespace tr {

namespace {

void require_positive(int64_t value, const char* field) {
  if (value <= 0) {
    throw UsageError("synthetic dataset: \"dataset." + std::string(field) + "\" is " +
                     std::to_string(value) + "; expected a positive number");
  }
}

}  // namespace

SyntheticSource::SyntheticSource(int64_t height, int64_t width, int64_t channels, int64_t classes,
                                 int64_t train_size, int64_t val_size, uint64_t seed)
    : height_(height),
      width_(width),
      channels_(channels),
      classes_(classes),
      train_size_(train_size),
      val_size_(val_size),
      seed_(seed) {
  require_positive(height, "height");
  require_positive(width, "width");
  require_positive(channels, "channels");
  require_positive(classes, "classes");
  require_positive(train_size, "train_size");
  require_positive(val_size, "val_size");
  if (classes > (int64_t{1} << 31) - 1) {
    throw UsageError("synthetic dataset: \"dataset.classes\" is " + std::to_string(classes) +
                     "; expected at most 2147483647");
  }
  if (train_size >= (int64_t{1} << 62) || val_size >= (int64_t{1} << 62)) {
    throw UsageError("synthetic dataset: sizes must stay below 2^62 samples");
  }
  cell_ = std::max<int64_t>(1, std::min(height, width) / 8);
  grid_h_ = (height + cell_ - 1) / cell_;
  grid_w_ = (width + cell_ - 1) / cell_;
}

int64_t SyntheticSource::size(Split split) const {
  return split == Split::Train ? train_size_ : val_size_;
}

uint64_t SyntheticSource::sample_id(Split split, int64_t index) noexcept {
  return static_cast<uint64_t>(index) | (split == Split::Train ? 0 : uint64_t{1} << 62);
}

void SyntheticSource::check_index(Split split, int64_t index) const {
  if (index < 0 || index >= size(split)) {
    throw std::out_of_range("SyntheticSource: " + std::string(split_name(split)) + " index " +
                            std::to_string(index) + " outside [0, " + std::to_string(size(split)) +
                            ")");
  }
}

int32_t SyntheticSource::label(Split split, int64_t index) const {
  check_index(split, index);
  const auto r = counter_random(seed_, RngStream::SyntheticLabel, sample_id(split, index));
  return static_cast<int32_t>(uniform_below(r[0], static_cast<uint32_t>(classes_)));
}

void SyntheticSource::read(Split split, int64_t index, uint8_t* out_hwc) const {
  const auto klass = static_cast<uint64_t>(label(split, index));

  // The class prototype: one byte per (block, channel), 16 bytes per Philox block.
  const size_t grid_bytes = static_cast<size_t>(grid_h_ * grid_w_ * channels_);
  std::vector<uint8_t> grid(grid_bytes);
  for (size_t i = 0; i < grid_bytes; i += 16) {
    const auto r =
        counter_random(seed_, RngStream::SyntheticPrototype, klass, static_cast<uint32_t>(i / 16));
    for (size_t j = 0; j < 16 && i + j < grid_bytes; ++j) {
      grid[i + j] = static_cast<uint8_t>(r[j / 4] >> (8 * (j % 4)));
    }
  }

  const uint64_t id = sample_id(split, index);
  Philox4x32::Counter noise{};
  size_t p = 0;
  for (int64_t y = 0; y < height_; ++y) {
    const uint8_t* grid_row = grid.data() + (y / cell_) * grid_w_ * channels_;
    for (int64_t x = 0; x < width_; ++x) {
      const uint8_t* proto = grid_row + (x / cell_) * channels_;
      for (int64_t c = 0; c < channels_; ++c, ++p) {
        if (p % 16 == 0) {
          noise =
              counter_random(seed_, RngStream::SyntheticNoise, id, static_cast<uint32_t>(p / 16));
        }
        const uint32_t byte = (noise[(p % 16) / 4] >> (8 * (p % 4))) & 0xFFu;
        const int delta = static_cast<int>((byte * (2 * kNoise + 1)) >> 8) - kNoise;
        out_hwc[p] = static_cast<uint8_t>(std::clamp(int{proto[c]} + delta, 0, 255));
      }
    }
  }
}

std::string SyntheticSource::describe() const {
  return "synthetic data (seed " + std::to_string(seed_) + ", " + std::to_string(train_size_) +
         " train, " + std::to_string(val_size_) + " val, " + std::to_string(height_) + "x" +
         std::to_string(width_) + "x" + std::to_string(channels_) + ", " +
         std::to_string(classes_) + " classes)";
}

}  // namespace tr
