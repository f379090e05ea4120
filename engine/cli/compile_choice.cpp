// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/compile_choice.h"

#include "core/error.h"

namespace tr::cli {

CompileOptions compile_options_from(const ParsedArgs& args) {
  CompileOptions o;
  const auto it = args.values.find(kRewritesOption);
  if (it == args.values.end() || it->second == "on") return o;
  if (it->second != "off")
    throw UsageError("option '--rewrites' takes on or off, got '" + it->second + "'");
  o.fuse_bn_relu = false;
  o.in_place_dx = false;
  return o;
}

}  // namespace tr::cli
