// SPDX-License-Identifier: GPL-3.0-or-later
// StreamKind: the five streams every rank runs work on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tr {

enum class StreamKind : uint8_t { TRANS, COMP_1, COMP_2, COMP_3, UPDATE };
inline constexpr int kNumStreams = 5;

// The stream's place in a rank's per-stream arrays.
constexpr size_t stream_index(StreamKind s) noexcept {
  return static_cast<size_t>(s);
}

constexpr std::string_view stream_kind_name(StreamKind s) noexcept {
  switch (s) {
    case StreamKind::TRANS:
      return "TRANS";
    case StreamKind::COMP_1:
      return "COMP_1";
    case StreamKind::COMP_2:
      return "COMP_2";
    case StreamKind::COMP_3:
      return "COMP_3";
    case StreamKind::UPDATE:
      return "UPDATE";
  }
  return "?";
}

}  // namespace tr
