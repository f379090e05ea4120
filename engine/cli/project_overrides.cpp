// SPDX-License-Identifier: GPL-3.0-or-later
#include "project_overrides.h"

#include <renaissance/error.h>
#include <renaissance/project_io.h>

namespace tr::cli {

const std::set<std::string>& override_options() {
  static const std::set<std::string> names{"devices", "precision", "batch",   "epochs",
                                           "seed",    "sync-bn",   "sharding"};
  return names;
}

void apply_overrides(const ParsedArgs& a, Project& project) {
  TrainingSpec& t = project.training;
  if (a.values.count("devices")) {
    const int64_t before = t.devices.world_size();
    std::string error;
    if (!parse_device_set(a.values.at("devices"), t.devices, error))
      throw UsageError("option '--devices': " + error);
    // A validation batch is per device: keep the global one (and so the
    // memory per device in proportion) when the rank count changes.
    const int64_t after = t.devices.world_size();
    for (VariantSpec& v : project.variants)
      if (v.kind == VariantKind::Validation && v.batch > 0 && (v.batch * before) % after == 0)
        v.batch = v.batch * before / after;
  }
  if (a.values.count("precision")) {
    const std::string& p = a.values.at("precision");
    bool known = false;
    for (Precision q : {Precision::FP32, Precision::AMP, Precision::BF16})
      if (p == precision_name(q)) {
        t.precision = q;
        known = true;
      }
    if (!known) throw UsageError("option '--precision' takes fp32, amp or bf16, got '" + p + "'");
  }
  if (a.values.count("sync-bn")) {
    const std::string& v = a.values.at("sync-bn");
    if (v != "on" && v != "off")
      throw UsageError("option '--sync-bn' takes on or off, got '" + v + "'");
    t.sync_batch_norm = v == "on";
  }
  if (a.values.count("sharding")) {
    const std::string& v = a.values.at("sharding");
    if (v != "none" && v != "optimizer" && v != "optimizer+gradients")
      throw UsageError("option '--sharding' takes none, optimizer or optimizer+gradients, got '" +
                       v + "'");
    t.sharding = v == "none"        ? Sharding::None
                 : v == "optimizer" ? Sharding::Optimizer
                                    : Sharding::OptimizerAndGradients;
  }
  if (a.flags.count("eval-ema")) t.ema = true;
  if (a.values.count("batch")) t.global_batch = positive_integer("batch", a.values.at("batch"));
  if (a.values.count("epochs")) t.epochs = positive_integer("epochs", a.values.at("epochs"));
  if (a.values.count("seed")) {
    const std::string& s = a.values.at("seed");
    if (s == "0") {
      t.seed = 0;
    } else {
      t.seed = static_cast<uint64_t>(positive_integer("seed", s));
    }
  }
  const int world = t.devices.world_size();
  if (t.global_batch % world != 0)
    throw UsageError("global batch " + std::to_string(t.global_batch) + " does not divide by " +
                     std::to_string(world) + " devices");
}

}  // namespace tr::cli
