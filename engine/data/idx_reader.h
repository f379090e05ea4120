// SPDX-License-Identifier: GPL-3.0-or-later
// Reader for IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or
// plain, that checks everything a damaged or mixed-up file can get wrong.
#pragma once

#include <cstdint>
#include <string>

#include "data/host_tensor.h"

namespace tr {

// Every failure throws UsageError "<path>: <what was wrong>; <what was expected>".
// `missing_hint`, when given, is appended to the "no such file" message (the
// dataset loader says how to install the data or where to point at it).

// An unsigned-byte image file (magic 0x00000803) -> INT8 tensor
// [count, rows, cols, 1] whose bytes are the pixels 0..255 (read them as uint8_t).
Tensor read_idx_images(const std::string& path, const std::string& missing_hint = "");

// An unsigned-byte label file (magic 0x00000801) -> INT32 tensor [count, 1, 1, 1],
// every label checked to lie in [0, classes).
Tensor read_idx_labels(const std::string& path, int64_t classes,
                       const std::string& missing_hint = "");

// Only the header of an image file (rows and columns set) or a label file
// (count only), checked as the readers check it: cheap enough to look at a
// dataset every time its settings change.
struct IdxHeader {
  int64_t count = 0, rows = 0, columns = 0;
};
IdxHeader read_idx_header(const std::string& path, bool images,
                          const std::string& missing_hint = "");

// Images and labels must pair up one to one.
void check_idx_pair(const std::string& images_path, const Tensor& images,
                    const std::string& labels_path, const Tensor& labels);

}  // namespace tr
