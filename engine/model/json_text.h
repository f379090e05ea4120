// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers for reading project JSON and saying what is wrong with it: values
// quoted and described for messages, field paths, "did you mean" and the
// integer conversions that accept 3.0 for 3.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tr::json_text {

using json = nlohmann::json;

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Strings from the file, quoted JSON-style so control characters and stray
// quotes cannot garble the message (cut to about 64 bytes).
std::string quote(std::string_view s);
// A value as a message shows it: short ones in full, else their kind.
std::string describe(const json& v);
std::string number_text(double d);
// "a positive integer (at most 64)", "an integer in 2..10", ...
std::string int_phrase(int64_t lo, int64_t hi);

struct Range {
  double lo = -kInf;
  bool lo_open = false;
  double hi = kInf;
  bool hi_open = false;

  bool contains(double d) const {
    if (lo_open ? !(d > lo) : !(d >= lo)) return false;
    if (hi_open ? !(d < hi) : !(d <= hi)) return false;
    return true;
  }
  // "> 0", ">= 0", "in [0, 1)"; "any number" when unbounded.
  std::string bounds() const {
    if (lo == -kInf && hi == kInf) return "any number";
    if (hi == kInf) return std::string(lo_open ? "> " : ">= ") + number_text(lo);
    return std::string("in ") + (lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) +
           (hi_open ? ")" : "]");
  }
  // "a number > 0", "a number in [0, 1)", "a number".
  std::string phrase() const {
    return lo == -kInf && hi == kInf ? "a number" : "a number " + bounds();
  }
};

constexpr Range kAnyNumber{};
constexpr Range kPositive{0, true, kInf, false};
constexpr Range kNonNegative{0, false, kInf, false};
constexpr Range kUnitClosed{0, false, 1, false};
constexpr Range kUnitHalfOpen{0, false, 1, true};
constexpr Range kUnitOpen{0, true, 1, true};

// Optimal string alignment distance: a swapped pair of letters counts once,

// The known word nearest to `word` (for "did you mean"), or empty.
std::string_view closest(std::string_view word, const std::vector<std::string_view>& known);
std::string join_path(std::string_view base, std::string_view field);
std::string index_path(std::string_view base, size_t i);
std::string list_names(const std::vector<std::string_view>& names);

// JSON does not distinguish 3 from 3.0, so an integral float is accepted
// wherever an integer is expected.
bool to_int(const json& v, int64_t& out);
bool to_uint64(const json& v, uint64_t& out);
const json* member(const json& obj, const char* key);

template <typename Enum>
struct Choice {
  std::string_view name;
  Enum value;
};

}  // namespace tr::json_text
