// SPDX-License-Identifier: GPL-3.0-or-later
// Project: node labels, id lookup, device-set text and the enum names used in files.
#include <renaissance/project.h>

#include <renaissance/setting_spec.h>

namespace tr {

std::string LayerNode::label() const {
  std::string out = "'" + id + "' (";
  out += layer_type_name(type);
  out += ")";
  return out;
}

int ModelGraph::find(const std::string& id) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].id == id) return static_cast<int>(i);
  return -1;
}

std::string DeviceSet::str() const {
  if (kind == DeviceKind::CPU) return "cpu:" + std::to_string(ids.size());
  std::string out = "cuda:";
  if (ids.empty()) return out;
  bool contiguous = true;
  for (size_t i = 1; i < ids.size(); ++i)
    if (ids[i] != ids[i - 1] + 1) contiguous = false;
  if (ids.size() == 1) return out + std::to_string(ids[0]);
  // A range only when it reads back as the same ordered list; any other order
  // is kept as given because the order maps ranks to devices.
  if (contiguous) return out + std::to_string(ids.front()) + "-" + std::to_string(ids.back());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(ids[i]);
  }
  return out;
}

std::string_view variant_kind_name(VariantKind k) noexcept {
  switch (k) {
    case VariantKind::Train:
      return "train";
    case VariantKind::LastBatch:
      return "last_batch";
    case VariantKind::Validation:
      return "validation";
  }
  return "?";
}

std::string_view optimizer_name(OptimizerKind k) noexcept {
  return optimizer_info(k).name;
}

std::string_view schedule_name(ScheduleKind k) noexcept {
  switch (k) {
    case ScheduleKind::Constant:
      return "constant";
    case ScheduleKind::Step:
      return "step";
    case ScheduleKind::Cosine:
      return "cosine";
  }
  return "?";
}

std::string TrainingSpec::global_batch_problem() const {
  // A tensor-parallel group's ranks each take their own share too.
  const int ranks = devices.world_size();
  if (ranks <= 0 || global_batch % ranks == 0) return {};
  return "global_batch " + std::to_string(global_batch) + " is not divisible by the " +
         std::to_string(ranks) + " ranks of " + devices.str() + "; every rank takes the same share";
}

std::string_view sharding_name(Sharding s) noexcept {
  switch (s) {
    case Sharding::None:
      return "none";
    case Sharding::Optimizer:
      return "optimizer";
    case Sharding::OptimizerAndGradients:
      return "optimizer+gradients";
  }
  return "?";
}

std::string_view feature_layout_name(FeatureLayout l) noexcept {
  return l == FeatureLayout::Blocked ? "blocked" : "nhwc";
}

std::string_view precision_name(Precision p) noexcept {
  switch (p) {
    case Precision::FP32:
      return "fp32";
    case Precision::AMP:
      return "amp";
    case Precision::BF16:
      return "bf16";
  }
  return "?";
}

}  // namespace tr
