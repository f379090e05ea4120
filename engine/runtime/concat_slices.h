// SPDX-License-Identifier: GPL-3.0-or-later
// Where each input's channels lie in a concatenation, from its operands,
// found the same way by every backend: CONCAT_FWD's inputs (port order) or
// CONCAT_BWD's outputs, one of which may be absent (its width is what the
// others leave of the total).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernel_args.h"

namespace tr {

// The first channel of each part in the concatenated tensor of `total`
// channels, one per part, or (returning false) what does not fit in `error`.
bool concat_slices(const std::vector<TensorArg>& parts, int64_t total, std::vector<int64_t>& from,
                   std::string& error);

}  // namespace tr
