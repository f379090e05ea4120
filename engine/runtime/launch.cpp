// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/launch.h"

namespace tr {

namespace {

bool overlap(const ByteRange& a, const ByteRange& b) {
  return a.bytes > 0 && b.bytes > 0 && a.offset < b.end() && b.offset < a.end();
}

bool any_overlap(const std::vector<ByteRange>& xs, const std::vector<ByteRange>& ys) {
  for (const ByteRange& x : xs)
    for (const ByteRange& y : ys)
      if (overlap(x, y)) return true;
  return false;
}

}  // namespace

bool Footprint::conflicts_with(const Footprint& later) const {
  return any_overlap(writes, later.reads) || any_overlap(reads, later.writes) ||
         any_overlap(writes, later.writes);
}

}  // namespace tr
