// SPDX-License-Identifier: GPL-3.0-or-later
// PNG files for the tests that read images (libpng's simplified API), and
// the pixel pattern they are filled with.
#pragma once

#include <QtTest>

#include <png.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tr::test {

// width x height x channels pixels, channel c of (x, y) = (x * 40 + y * 7 + c * 90 + seed) mod 256.
inline std::vector<uint8_t> pattern(int w, int h, int c, int seed = 0) {
  std::vector<uint8_t> p(static_cast<size_t>(w * h * c));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        p[static_cast<size_t>((y * w + x) * c + k)] =
            static_cast<uint8_t>((x * 40 + y * 7 + k * 90 + seed) % 256);
  return p;
}

// c: 1 grey, 3 RGB, 4 RGBA.
inline void write_png(const std::string& path, int w, int h, int c,
                      const std::vector<uint8_t>& px) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(w);
  image.height = static_cast<png_uint_32>(h);
  image.format = c == 1 ? PNG_FORMAT_GRAY : c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  QVERIFY(png_image_write_to_file(&image, path.c_str(), 0, px.data(), 0, nullptr));
}

}  // namespace tr::test
