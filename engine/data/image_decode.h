// SPDX-License-Identifier: GPL-3.0-or-later
// PNG and JPEG files into pixels (libpng, libjpeg-turbo), and the fit of an
// image to a model's input: its channels and its height and width.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tr {

struct DecodedImage {
  int64_t width = 0, height = 0, channels = 0;  // channels: 1 (grey) or 3 (RGB)
  std::vector<uint8_t> pixels;                  // HWC, 8 bits per channel
};

// Decodes a PNG or a JPEG (told apart by their first bytes, whatever the file
// is called) into grey or RGB: palettes expanded, 16-bit samples reduced to
// 8, an alpha channel composited on black. Throws UsageError "<path>: <what
// was wrong>" for a missing or unreadable file, another format, or a damaged
// or truncated image.
DecodedImage decode_image(const std::string& path);

// Writes `in` as height x width x channels bytes to out_hwc: 1 channel is the
// luma of RGB (ITU-R BT.601 weights), 3 channels repeat a grey image; the
// size by bilinear interpolation between pixel centres (the convention of
// OpenCV's INTER_LINEAR and of PyTorch's interpolate without align_corners),
// an exact copy when it already matches.
void fit_image(const DecodedImage& in, int64_t height, int64_t width, int64_t channels,
               uint8_t* out_hwc);

}  // namespace tr
