// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/json_text.h"

#include <algorithm>
#include <cmath>

namespace tr::json_text {

namespace {

// Cuts to about `max` bytes without splitting a UTF-8 sequence.
std::string truncate(std::string s, size_t max) {
  if (s.size() <= max) return s;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  s += "...";
  return s;
}

}  // namespace

// Strings from the file are quoted JSON-style so control characters and
// stray quotes cannot garble the message.
std::string quote(std::string_view s) {
  return json(truncate(std::string(s), 64)).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return quote(v.get_ref<const std::string&>());
    case json::value_t::array: {
      if (v.empty()) return "[]";
      bool small = v.size() <= 8 && std::all_of(v.begin(), v.end(), [](const json& e) {
                     return !e.is_structured() &&
                            (!e.is_string() || e.get_ref<const std::string&>().size() <= 40);
                   });
      if (small) {
        std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
        if (s.size() <= 40) return s;
      }
      return "an array of " + std::to_string(v.size()) + " values";
    }
    case json::value_t::object:
      return v.empty() ? "{}" : "an object";
    case json::value_t::binary:
      return "binary data";
    case json::value_t::discarded:
      return "nothing";
    default:
      return v.dump();
  }
}

std::string number_text(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15)
    return std::to_string(static_cast<int64_t>(d));
  return json(d).dump();
}

std::string int_phrase(int64_t lo, int64_t hi) {
  std::string bound = hi == kInt64Max ? "" : " (at most " + std::to_string(hi) + ")";
  if (lo == 1) return "a positive integer" + bound;
  if (lo == 0) return "a non-negative integer" + bound;
  return "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
}

// which is the commonest typo in key names.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The known name closest to `word` within two edits, or empty.
std::string_view closest(std::string_view word, const std::vector<std::string_view>& known) {
  std::string_view best;
  size_t best_distance = 3;
  for (std::string_view k : known) {
    size_t longer = std::max(word.size(), k.size());
    if (longer - std::min(word.size(), k.size()) > 2) continue;  // cheap bound first
    size_t d = edit_distance(word, k);
    // Two edits turn any two-letter word into any other; demand some overlap.
    if (d < best_distance && d * 2 <= longer) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

std::string join_path(std::string_view base, std::string_view field) {
  if (base.empty()) return std::string(field);
  if (field.empty()) return std::string(base);
  if (field.front() == '[') return std::string(base) + std::string(field);
  return std::string(base) + "." + std::string(field);
}

std::string index_path(std::string_view base, size_t i) {
  return std::string(base) + "[" + std::to_string(i) + "]";
}

std::string list_names(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  return out;
}

bool to_int(const json& v, int64_t& out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(kInt64Max)) return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return false;
    if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return false;
    out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

bool to_uint64(const json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0) return false;
    out = static_cast<uint64_t>(i);
    return true;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < 0 || d >= 18446744073709551616.0)
      return false;
    out = static_cast<uint64_t>(d);
    return true;
  }
  return false;
}

const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

}  // namespace tr::json_text
