// SPDX-License-Identifier: GPL-3.0-or-later
// SyntheticSource: learnable stand-in data of any shape and size, generated
// per sample on demand, so even an ImageNet-sized configuration (1.28 M
// samples of 224x224x3) costs no memory and no start-up time.
#pragma once

#include <cstdint>

#include "data/data_source.h"

namespace tr {

// Each class has a fixed prototype image (a coarse grid of random blocks,
// about 8 per side, so it survives small crops and flips well enough to be
// recognised); a sample is its class prototype plus independent per-pixel
// noise of +-kNoise, clamped to 0..255. A network (even a linear one) can fit
// it and the validation split (same prototypes, fresh noise and labels)
// measures generalisation. Everything is a pure function of
// (seed, split, index, pixel): same seed, same bytes, on any machine.
class SyntheticSource final : public DataSource {
 public:
  static constexpr int kNoise = 48;

  SyntheticSource(int64_t height, int64_t width, int64_t channels, int64_t classes,
                  int64_t train_size, int64_t val_size, uint64_t seed);

  Shape sample_shape() const override { return {1, height_, width_, channels_}; }
  int64_t classes() const override { return classes_; }
  int64_t size(Split split) const override;
  void read(Split split, int64_t index, uint8_t* out_hwc) const override;
  int32_t label(Split split, int64_t index) const override;
  std::string describe() const override;

  uint64_t seed() const noexcept { return seed_; }

 private:
  void check_index(Split split, int64_t index) const;
  // The 64-bit counter word that identifies one sample of one split.
  static uint64_t sample_id(Split split, int64_t index) noexcept;

  int64_t height_, width_, channels_, classes_, train_size_, val_size_;
  uint64_t seed_;
  int64_t cell_;             // prototype block edge in pixels
  int64_t grid_h_, grid_w_;  // blocks per column / row
};

}  // namespace tr
