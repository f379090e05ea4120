// SPDX-License-Identifier: GPL-3.0-or-later
#include "options.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <renaissance/error.h>

namespace tr::cli {

ParsedArgs parse_args(const std::vector<std::string>& args, const std::set<std::string>& with_value,
                      const std::set<std::string>& flags) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      if (!a.empty() && a[0] == '-' && a != "-") throw UsageError("unknown option '" + a + "'");
      out.positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::string value;
    const auto eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flags.count(name)) {
      if (inline_value) throw UsageError("option '--" + name + "' takes no value");
      out.flags.insert(name);
    } else if (with_value.count(name)) {
      if (!inline_value) {
        if (i + 1 >= args.size()) throw UsageError("option '--" + name + "' needs a value");
        value = args[++i];
      }
      out.values[name] = value;
    } else {
      throw UsageError("unknown option '--" + name + "'");
    }
  }
  return out;
}

int usage_exit_code(const ParsedArgs& args, const char* usage, size_t positional,
                    const std::string& command, const std::string& expected) {
  if (args.has("help")) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (args.positional.size() != positional)
    wrong_arguments(args.positional, positional, command, expected);
  return -1;
}

void wrong_arguments(const std::vector<std::string>& given, size_t wanted,
                     const std::string& command, const std::string& expected) {
  const std::string help = "; 'renaissance-cli " + command + " --help' shows its usage";
  if (given.size() < wanted) throw UsageError("missing " + expected + help);
  std::string extra;
  for (size_t i = wanted; i < given.size(); ++i)
    extra += (extra.empty() ? "'" : " '") + given[i] + "'";
  throw UsageError("unexpected argument" + std::string(given.size() - wanted > 1 ? "s " : " ") +
                   extra + ": " + command + " takes " + (wanted ? "only " + expected : expected) +
                   help);
}

long long positive_integer(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v <= 0)
    throw UsageError("option '--" + option + "' takes a positive integer, got '" + text + "'");
  return v;
}

// "16GiB", "512MiB", "1.5G", "100000000": bytes.
uint64_t byte_count(const std::string& option, const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::pair<const char*, double> units[] = {{"", 1},
                                                  {"b", 1},
                                                  {"k", 1e3},
                                                  {"kb", 1e3},
                                                  {"kib", 1024.0},
                                                  {"m", 1e6},
                                                  {"mb", 1e6},
                                                  {"mib", 1048576.0},
                                                  {"g", 1e9},
                                                  {"gb", 1e9},
                                                  {"gib", 1073741824.0},
                                                  {"t", 1e12},
                                                  {"tb", 1e12},
                                                  {"tib", 1099511627776.0}};
  for (const auto& [name, scale] : units)
    if (used > 0 && unit == name && value > 0 && value * scale < 1.8e19)
      return static_cast<uint64_t>(value * scale);
  throw UsageError("--" + option + " " + text +
                   ": expected a positive number of bytes, optionally with a unit (KiB, MiB, "
                   "GiB, TiB, or k, M, G, T), e.g. 16GiB");
}

}  // namespace tr::cli
