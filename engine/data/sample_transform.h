// SPDX-License-Identifier: GPL-3.0-or-later
// SampleTransform: 8-bit HWC pixels -> one normalised, augmented sample of a
// batch, (x/255 - mean[c]) / std[c], with a random crop and flip that are a
// pure function of (seed, epoch, sample index).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <renaissance/dtype.h>
#include <renaissance/shape.h>

namespace tr {

struct Augmentation {
  int64_t dy = 0, dx = 0;  // crop offset into the padded image, 0..2*padding
  bool flip = false;       // horizontal
  bool operator==(const Augmentation&) const = default;
};

class SampleTransform {
 public:
  // mean/std: one value per channel, or one value for all channels. Throws
  // UsageError on a count mismatch, a non-positive std or negative padding.
  // `out_channels` (>= the sample's, 0: the same) is the pixel stride of
  // the output; the lanes past the sample's channels are left as they are.
  SampleTransform(Shape sample, const std::vector<double>& mean, const std::vector<double>& std,
                  int64_t crop_padding, bool flip, uint64_t seed, int64_t out_channels = 0);

  // Depends on the sample index, not on its batch or rank, so any world
  // size augments a sample identically.
  Augmentation draw(int64_t epoch, int64_t index) const noexcept;

  // Writes out_per_sample() values. The crop pads with black (pixel 0,
  // i.e. -mean/std after normalisation), like torchvision's RandomCrop.
  void apply(const uint8_t* hwc, const Augmentation& aug, float* out) const noexcept;
  // 16-bit values of `dtype` (FP16 or BF16): exactly the FP32 result, rounded
  // once (fp32_to_fp16, float_to_bf16_bits).
  void apply(const uint8_t* hwc, const Augmentation& aug, DType dtype,
             uint16_t* out) const noexcept;

  const Shape& sample() const noexcept { return sample_; }
  int64_t out_per_sample() const noexcept { return sample_.h * sample_.w * out_c_; }
  // The normalised value of pixel value v in channel c.
  float normalised(int64_t c, uint8_t v) const noexcept { return lut32_[c * 256 + v]; }

 private:
  template <class T>
  void run(const uint8_t* hwc, const Augmentation& aug, const T* lut, T* out) const noexcept;

  Shape sample_;
  int64_t out_c_;
  int64_t padding_;
  bool flip_;
  uint64_t seed_;
  // 256 entries per channel: computing in double once and looking up keeps
  // the result independent of the compiler's float contraction choices.
  std::vector<float> lut32_;
  std::vector<uint16_t> lut16_;
  std::vector<uint16_t> lut_bf16_;
};

}  // namespace tr
