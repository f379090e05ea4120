// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for tr::decode_image (engine/data/image_decode.h, over
// libpng and libjpeg-turbo): the input is an image file. Allowed outcomes: a
// DecodedImage of grey or RGB pixels, or a tr::UsageError with a message.
// Any other exception, a crash, a hang, a leak or a sanitizer report is a
// finding. Every decoded image is also fitted (fit_image) to its own size
// and channels, which must copy it exactly, and to other sizes and channel
// counts, whose buffers AddressSanitizer watches.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <renaissance/error.h>
#include "data/image_decode.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tr::fuzz::TempFile file("fuzz_image_decode", ".img");
  tr::DecodedImage image;
  try {
    image = tr::decode_image(file.write(data, size));
  } catch (const tr::UsageError& e) {
    FUZZ_CHECK(std::strlen(e.what()) > 0);
    return 0;
  }
  FUZZ_CHECK(image.width > 0 && image.height > 0);
  FUZZ_CHECK(image.channels == 1 || image.channels == 3);
  FUZZ_CHECK(image.pixels.size() ==
             static_cast<size_t>(image.width * image.height * image.channels));

  // Its own size and channels: an exact copy.
  std::vector<uint8_t> same(image.pixels.size());
  tr::fit_image(image, image.height, image.width, image.channels, same.data());
  FUZZ_CHECK(same == image.pixels);
  // Other sizes (smaller, larger, one row or column) in both channel counts;
  // for images small enough that this stays quick (the edges are the same).
  if (image.width * image.height > (int64_t{1} << 20)) return 0;
  const int64_t sizes[][2] = {
      {1, 1}, {3, 5}, {image.height, 1}, {1, image.width}, {image.height + 1, image.width + 2}};
  for (const auto& hw : sizes)
    for (const int64_t channels : {int64_t{1}, int64_t{3}}) {
      std::vector<uint8_t> out(static_cast<size_t>(hw[0] * hw[1] * channels));
      tr::fit_image(image, hw[0], hw[1], channels, out.data());
    }
  return 0;
}
