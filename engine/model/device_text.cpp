// SPDX-License-Identifier: GPL-3.0-or-later
// Device strings: "cpu:2", "cpu", "cuda:0", "cuda:0-3", "cuda:0,2".
#include <string>
#include <string_view>

#include <renaissance/project_io.h>
#include <renaissance/project_limits.h>
#include "model/json_text.h"

namespace tr {

namespace {

using json_text::quote;
using namespace limits;

// Digits only, at most nine, so the value always fits.
bool parse_count(std::string_view text, int& out) {
  if (text.empty() || text.size() > 9) return false;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

}  // namespace

bool parse_device_set(std::string_view text, DeviceSet& out, std::string& error) {
  bool printable = text.size() <= 32 && std::all_of(text.begin(), text.end(),
                                                    [](char c) { return c > 0x20 && c < 0x7F; });
  std::string shown = printable ? std::string(text) : quote(text);
  auto fail = [&](const std::string& why) {
    error = shown + ": " + why;
    return false;
  };
  DeviceSet result;
  if (text == "cpu") {
    out = result;
    error.clear();
    return true;
  }
  if (text.rfind("cpu:", 0) == 0) {
    int n = 0;
    if (!parse_count(text.substr(4), n))
      return fail("expected cpu:N with N the number of ranks, e.g. cpu:4");
    if (n == 0) return fail("at least one rank: cpu:1, cpu:2, cpu:3...");
    if (n > kMaxRanks) return fail("at most " + std::to_string(kMaxRanks) + " ranks");
    result.kind = DeviceKind::CPU;
    result.ids.clear();
    for (int i = 0; i < n; ++i) result.ids.push_back(i);
    out = std::move(result);
    error.clear();
    return true;
  }
  if (text.rfind("cuda:", 0) == 0) {
    result.kind = DeviceKind::CUDA;
    result.ids.clear();
    std::string_view rest = text.substr(5);
    bool seen[kMaxDeviceId + 1] = {};
    const std::string form = "expected cuda:IDS with IDS like 0, 0-3 or 0,2";
    while (true) {
      size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      size_t dash = item.find('-');
      int first = 0, last = 0;
      if (dash == std::string_view::npos) {
        if (!parse_count(item, first)) return fail(form);
        last = first;
      } else if (!parse_count(item.substr(0, dash), first) ||
                 !parse_count(item.substr(dash + 1), last)) {
        return fail(form);
      }
      if (first > kMaxDeviceId || last > kMaxDeviceId)
        return fail("device ids go from 0 to " + std::to_string(kMaxDeviceId));
      if (first > last)
        return fail("the range " + std::string(item) + " runs backwards; write " +
                    std::to_string(last) + "-" + std::to_string(first));
      for (int id = first; id <= last; ++id) {
        if (seen[id]) return fail("device " + std::to_string(id) + " is listed twice");
        seen[id] = true;
        result.ids.push_back(id);
      }
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    out = std::move(result);
    error.clear();
    return true;
  }
  return fail("expected cpu, cpu:N or cuda:IDS (e.g. cpu:4, cuda:0-3, cuda:0,2)");
}

}  // namespace tr
