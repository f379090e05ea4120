// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the IDX reader (engine/data/idx_reader.h): the input
// is an IDX file, gzip-compressed or plain, read as an image file and as a
// label file (10 classes), header only and whole. Allowed outcomes: a tensor
// (a header), or a tr::UsageError with a message. Any other exception, a
// crash, a hang, a leak or a sanitizer report is a finding. What the readers
// accept must agree with the header reader: the same counts and sizes, and
// labels within the classes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <renaissance/error.h>
#include "data/idx_reader.h"
#include "fuzz_support.h"

namespace {

constexpr int64_t kClasses = 10;

// Calls read(); true when it returned, false for a UsageError (with a message).
template <typename Read>
bool accepted(Read read) {
  try {
    read();
    return true;
  } catch (const tr::UsageError& e) {
    FUZZ_CHECK(std::strlen(e.what()) > 0);
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tr::fuzz::TempFile file("fuzz_idx_reader", ".idx");
  const std::string& path = file.write(data, size);

  tr::IdxHeader image_header, label_header;
  const bool image_header_ok =
      accepted([&] { image_header = tr::read_idx_header(path, /*images=*/true); });
  const bool label_header_ok =
      accepted([&] { label_header = tr::read_idx_header(path, /*images=*/false); });
  FUZZ_CHECK(!(image_header_ok && label_header_ok));  // the magic says which it is

  tr::Tensor images;
  if (accepted([&] { images = tr::read_idx_images(path); })) {
    FUZZ_CHECK(image_header_ok);
    const tr::Shape s = images.shape();
    FUZZ_CHECK(s.n == image_header.count && s.h == image_header.rows &&
               s.w == image_header.columns && s.c == 1);
    FUZZ_CHECK(images.dtype() == tr::DType::INT8);
  }
  tr::Tensor labels;
  if (accepted([&] { labels = tr::read_idx_labels(path, kClasses); })) {
    FUZZ_CHECK(label_header_ok);
    FUZZ_CHECK(labels.shape() == (tr::Shape{label_header.count, 1, 1, 1}));
    FUZZ_CHECK(labels.dtype() == tr::DType::INT32);
    const int32_t* v = labels.data<int32_t>();
    for (int64_t i = 0; i < labels.elements(); ++i) FUZZ_CHECK(v[i] >= 0 && v[i] < kClasses);
  }
  return 0;
}
