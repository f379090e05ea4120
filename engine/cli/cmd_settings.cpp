// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli settings`: the dataset and training settings a project
// may set, from the engine's settings table, as the Markdown table
// docs/project-format.md shows.
#include <cstdio>

#include <renaissance/error.h>
#include <renaissance/setting_spec.h>
#include "commands.h"
#include "options.h"

namespace tr::cli {

int cmd_settings(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {}, {});
  if (!a.positional.empty()) throw UsageError("settings takes no arguments");
  std::fputs(settings_table_markdown().c_str(), stdout);
  return 0;
}

}  // namespace tr::cli
