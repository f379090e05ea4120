// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/concat_slices.h"

namespace tr {

bool concat_slices(const std::vector<TensorArg>& parts, int64_t total, std::vector<int64_t>& from,
                   std::string& error) {
  int64_t known = 0;
  int absent = 0;
  for (const TensorArg& t : parts) {
    if (t.data)
      known += t.desc->shape.c;
    else
      ++absent;
  }
  // Two absent parts could split what is left any way: nothing says where.
  if (absent > 1 || (absent == 0 && known != total) || known > total) {
    error = "the parts' channels (" + std::to_string(known) + " known, " + std::to_string(absent) +
            " absent) do not add up to the " + std::to_string(total) + " of the concatenation";
    return false;
  }
  from.clear();
  int64_t at = 0;
  for (const TensorArg& t : parts) {
    from.push_back(at);
    at += t.data ? t.desc->shape.c : total - known;
  }
  return true;
}

}  // namespace tr
