// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli layers`: the layer types a project may use, from the
// engine's layer table, as the Markdown table docs/project-format.md shows.
#include <cstdio>

#include <renaissance/error.h>
#include <renaissance/layer_spec.h>
#include "commands.h"
#include "options.h"

namespace tr::cli {

int cmd_layers(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {}, {});
  if (!a.positional.empty()) throw UsageError("layers takes no arguments");
  std::fputs(layer_table_markdown().c_str(), stdout);
  return 0;
}

}  // namespace tr::cli
