// SPDX-License-Identifier: GPL-3.0-or-later
#include "project_overrides.h"

#include <algorithm>

#include <renaissance/error.h>
#include <renaissance/project_io.h>

namespace tr::cli {

const std::set<std::string>& override_options() {
  static const std::set<std::string> names{"devices", "precision", "batch", "epochs",        "seed",
                                           "sync-bn", "sharding",  "mesh",  "feature-layout"};
  return names;
}

namespace {

// --mesh data=D,tensor=T (either may be left out: data is what the devices
// leave, tensor 1); data times tensor must be the rank count.
void apply_mesh(const std::string& text, TrainingSpec& t) {
  const std::string usage =
      "option '--mesh' takes data=N,tensor=M (e.g. data=2,tensor=2), got '" + text + "'";
  int64_t data = 0, tensor = 1;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw UsageError(usage);
    const std::string name = item.substr(0, eq);
    if (name != "data" && name != "tensor")
      throw UsageError(usage + ": the mesh has the dimensions data and tensor, not '" + name + "'");
    const int64_t n = positive_integer("mesh", item.substr(eq + 1));
    (name == "data" ? data : tensor) = n;
    at = comma + 1;
  }
  const int world = t.devices.world_size();
  if (data > 0 && data * tensor != world)
    throw UsageError("option '--mesh': data=" + std::to_string(data) + " x tensor=" +
                     std::to_string(tensor) + " is " + std::to_string(data * tensor) +
                     " ranks, but " + t.devices.str() + " has " + std::to_string(world));
  t.tensor_ranks = tensor;
}

}  // namespace

void apply_overrides(const ParsedArgs& a, Project& project, int nodes) {
  TrainingSpec& t = project.training;
  const int64_t before = t.devices.world_size();
  if (a.values.count("devices")) {
    std::string error;
    if (!parse_device_set(a.values.at("devices"), t.devices, error))
      throw UsageError("option '--devices': " + error);
  }
  // A validation batch is per device: keep the global one (and so the
  // memory per device in proportion) when the rank count changes, over
  // every node's devices (the file's devices are one machine's); where the
  // ranks do not divide it, the largest below it whose batches cover the
  // validation set, or failing that the largest below it.
  const int64_t after = t.devices.world_size() * nodes;
  if (after != before)
    for (VariantSpec& v : project.variants) {
      if (v.kind != VariantKind::Validation || v.batch <= 0) continue;
      const int64_t global = v.batch * before, samples = project.dataset.val_size;
      int64_t b = global / after;
      if (global % after != 0 && samples > 0)
        for (int64_t c = b + 1; c >= 1; --c)
          if (samples % (c * after) == 0) {
            b = c;
            break;
          }
      v.batch = std::max<int64_t>(1, b);
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
  if (a.values.count("feature-layout")) {
    const std::string& v = a.values.at("feature-layout");
    if (v != "blocked" && v != "nhwc")
      throw UsageError("option '--feature-layout' takes blocked or nhwc, got '" + v + "'");
    t.feature_layout = v == "blocked" ? FeatureLayout::Blocked : FeatureLayout::Nhwc;
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
  if (a.values.count("mesh")) apply_mesh(a.values.at("mesh"), t);
  const int world = t.devices.world_size();
  if (t.data_ranks() == 0)
    throw UsageError("mesh tensor=" + std::to_string(t.tensor_ranks) + " does not divide the " +
                     std::to_string(world) + " ranks of " + t.devices.str());
  // Every rank takes its own share (a tensor-parallel group's ranks too),
  // every node's.
  const int64_t ranks = static_cast<int64_t>(world) * nodes;
  if (t.global_batch % ranks != 0) {
    const int64_t below = t.global_batch / ranks * ranks, above = below + ranks;
    throw UsageError("global batch " + std::to_string(t.global_batch) + " does not divide by " +
                     (nodes > 1 ? std::to_string(nodes) + " nodes x " : std::string()) +
                     std::to_string(world) + " ranks (" + t.devices.str() + "); --batch " +
                     (below > 0 ? std::to_string(below) + " or " : std::string()) +
                     std::to_string(above) + " does");
  }
}

}  // namespace tr::cli
