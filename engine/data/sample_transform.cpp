// SPDX-License-Identifier: GPL-3.0-or-later
// Normalisation tables, crop/flip draws and the per-sample copy loop.
#include "data/sample_transform.h"

#include <stdexcept>

#include <cmath>
#include <string>

#include <renaissance/error.h>
#include "core/bf16_convert.h"
#include "core/counter_rng.h"
#include "data/half.h"

namespace tr {

namespace {

double per_channel(const std::vector<double>& v, int64_t c) {
  return v.size() == 1 ? v[0] : v[static_cast<size_t>(c)];
}

void check_count(const std::vector<double>& v, int64_t channels, const char* field) {
  if (v.size() != 1 && static_cast<int64_t>(v.size()) != channels) {
    throw UsageError("\"dataset." + std::string(field) + "\" has " + std::to_string(v.size()) +
                     " values; expected " + std::to_string(channels) +
                     " (one per channel) or 1 (all channels)");
  }
}

}  // namespace

SampleTransform::SampleTransform(Shape sample, const std::vector<double>& mean,
                                 const std::vector<double>& std, int64_t crop_padding, bool flip,
                                 uint64_t seed, int64_t out_channels)
    : sample_{1, sample.h, sample.w, sample.c},
      out_c_(out_channels > 0 ? out_channels : sample.c),
      padding_(crop_padding),
      flip_(flip),
      seed_(seed) {
  if (out_c_ < sample.c)
    throw std::invalid_argument("SampleTransform: " + std::to_string(out_c_) +
                                " output channels for samples of " + std::to_string(sample.c));
  check_count(mean, sample.c, "mean");
  check_count(std, sample.c, "std");
  if (crop_padding < 0) {
    throw UsageError("\"dataset.random_crop_padding\" is " + std::to_string(crop_padding) +
                     "; expected 0 (no crop) or more");
  }
  lut32_.resize(static_cast<size_t>(sample.c) * 256);
  lut16_.resize(lut32_.size());
  lut_bf16_.resize(lut32_.size());
  for (int64_t c = 0; c < sample.c; ++c) {
    const double m = per_channel(mean, c), s = per_channel(std, c);
    if (!(s > 0) || !std::isfinite(s) || !std::isfinite(m)) {
      throw UsageError("\"dataset.std\" / \"dataset.mean\" for channel " + std::to_string(c) +
                       " is " + std::to_string(s) + " / " + std::to_string(m) +
                       "; expected a finite mean and a positive std");
    }
    for (int v = 0; v < 256; ++v) {
      const auto i = static_cast<size_t>(c * 256 + v);
      lut32_[i] = static_cast<float>((v / 255.0 - m) / s);
      lut16_[i] = fp32_to_fp16(lut32_[i]);
      lut_bf16_[i] = float_to_bf16_bits(lut32_[i]);
    }
  }
}

Augmentation SampleTransform::draw(int64_t epoch, int64_t index) const noexcept {
  Augmentation a;
  if (padding_ == 0 && !flip_) return a;
  const auto r = counter_random(seed_, RngStream::Augment, static_cast<uint64_t>(index),
                                static_cast<uint32_t>(epoch));
  if (padding_ > 0) {
    const auto span = static_cast<uint32_t>(2 * padding_ + 1);
    a.dy = uniform_below(r[0], span);
    a.dx = uniform_below(r[1], span);
  }
  a.flip = flip_ && (r[2] >> 31) != 0;
  return a;
}

template <class T>
void SampleTransform::run(const uint8_t* hwc, const Augmentation& aug, const T* lut,
                          T* out) const noexcept {
  const int64_t H = sample_.h, W = sample_.w, C = sample_.c;
  // With no crop the offsets are `padding` and cancel out.
  const int64_t oy = padding_ ? aug.dy - padding_ : 0;
  const int64_t ox = padding_ ? aug.dx - padding_ : 0;
  for (int64_t y = 0; y < H; ++y) {
    const int64_t sy = y + oy;
    const bool row_inside = sy >= 0 && sy < H;
    for (int64_t x = 0; x < W; ++x) {
      const int64_t sx = (aug.flip ? W - 1 - x : x) + ox;
      T* dst = out + (y * W + x) * out_c_;
      if (row_inside && sx >= 0 && sx < W) {
        const uint8_t* src = hwc + (sy * W + sx) * C;
        for (int64_t c = 0; c < C; ++c) dst[c] = lut[c * 256 + src[c]];
      } else {
        for (int64_t c = 0; c < C; ++c) dst[c] = lut[c * 256];
      }
    }
  }
}

void SampleTransform::apply(const uint8_t* hwc, const Augmentation& aug,
                            float* out) const noexcept {
  run(hwc, aug, lut32_.data(), out);
}

void SampleTransform::apply(const uint8_t* hwc, const Augmentation& aug, DType dtype,
                            uint16_t* out) const noexcept {
  run(hwc, aug, dtype == DType::BF16 ? lut_bf16_.data() : lut16_.data(), out);
}

}  // namespace tr
