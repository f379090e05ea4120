// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile_choice.h"

#include <renaissance/devices.h>
#include <renaissance/error.h>

namespace tr::cli {

namespace {

// The option's value as a switch; on when it is absent.
bool switch_value(const ParsedArgs& args, const char* option) {
  const auto it = args.values.find(option);
  if (it == args.values.end() || it->second == "on") return true;
  if (it->second != "off")
    throw UsageError(
        std::string("option '--") + option + "' takes " +
        (option == std::string(kRecomputeOption) ? "on, off or matmuls" : "on or off") + ", got '" +
        it->second + "'");
  return false;
}

}  // namespace

CompileOptions compile_options_from(const ParsedArgs& args, const Project& project) {
  CompileOptions o;
  o.fuse_bn_relu = o.fuse_add_relu = o.in_place_dx = o.pool_where =
      switch_value(args, kRewritesOption);
  // --recompute matmuls: on, and the matrix products too.
  const auto it = args.values.find(kRecomputeOption);
  const bool matmuls = it != args.values.end() && it->second == "matmuls";
  if (matmuls && !o.in_place_dx)
    throw UsageError("option '--recompute matmuls' needs the rewrites; drop '--rewrites off'");
  o.recompute = o.in_place_dx && (matmuls || switch_value(args, kRecomputeOption));
  o.recompute_matmuls = matmuls;
  o.pack_memory = switch_value(args, kPackingOption);
  if (const auto v = args.values.find(kValidationMicroBatchOption); v != args.values.end()) {
    if (v->second == "as-written")
      o.validation_micro_batch = CompileOptions::kAsWritten;
    else if (v->second != "fit")
      o.validation_micro_batch = positive_integer(kValidationMicroBatchOption, v->second);
  }
  o.channel_block = feature_channel_block(project);  // --feature-layout is an override
  if (const auto v = args.values.find(kMemoryBudgetOption); v != args.values.end()) {
    if (!o.recompute)
      throw UsageError("option '--memory-budget' recomputes features to fit; drop '--" +
                       std::string(o.in_place_dx ? "recompute" : "rewrites") + " off'");
    o.memory_budget = byte_count(kMemoryBudgetOption, v->second);
  }
  return o;
}

}  // namespace tr::cli
