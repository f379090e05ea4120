// SPDX-License-Identifier: GPL-3.0-or-later
// A small parser for "--name value" and "--flag" options, with messages that
// say which option was wrong and what it takes.
#pragma once

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

// --help prints `usage` and gives 0; a wrong number of positional arguments
// prints it to stderr and gives 2; otherwise -1 (go on).
int usage_exit_code(const ParsedArgs& args, const char* usage, size_t positional);

// Parses a whole positive integer; UsageError naming the option otherwise.
long long positive_integer(const std::string& option, const std::string& text);

}  // namespace tr::cli
