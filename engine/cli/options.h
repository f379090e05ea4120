// SPDX-License-Identifier: GPL-3.0-or-later
// A small parser for "--name value" and "--flag" options, with messages that
// say which option was wrong and what it takes.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tr::cli {

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // --name value
  std::set<std::string> flags;                // --flag
  bool has(const std::string& name) const { return values.count(name) || flags.count(name); }
};

// `with_value` and `flags` list the accepted options without "--".
// Throws UsageError on an unknown option or a missing value.
ParsedArgs parse_args(const std::vector<std::string>& args, const std::set<std::string>& with_value,
                      const std::set<std::string>& flags);

// --help prints `usage` and gives 0; otherwise -1 (go on). A wrong number of
// positional arguments is a UsageError saying in one line what is missing or
// left over, with `expected` naming what the command takes ("a project file
// (<project.json>)") and `command` ("train") where its help is.
int usage_exit_code(const ParsedArgs& args, const char* usage, size_t positional,
                    const std::string& command, const std::string& expected);

// The one line a wrong count of positional arguments gets.
[[noreturn]] void wrong_arguments(const std::vector<std::string>& given, size_t wanted,
                                  const std::string& command, const std::string& expected);

// Parses a whole positive integer; UsageError naming the option otherwise.
long long positive_integer(const std::string& option, const std::string& text);

// "16GiB", "512MiB", "1.5G", "100000000": bytes; UsageError naming the option otherwise.
uint64_t byte_count(const std::string& option, const std::string& text);

}  // namespace tr::cli
