// SPDX-License-Identifier: GPL-3.0-or-later
// The per-layer table of a compiled project (renaissance/layer_analysis.h):
// the analysis gives shapes, parameters and FLOPs; each variant's plan the
// bytes of the tensors a layer owns; the compiler's layer records the
// rewrites; the warnings are computed from all of them.
#include <renaissance/layer_analysis.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include <renaissance/layer_spec.h>
#include <renaissance/plan_report.h>
#include "compile/compiler.h"

namespace tr {

namespace {

// Beyond these shares of the network's, a layer is worth a look.
constexpr double kParameterShare = 0.5;
constexpr double kActivationShare = 0.4;

// Features and gradient slots (F), masks and saved statistics (S): what a
// step holds for a layer beyond its weights.
bool is_activation(Region r) {
  const char s = region_series(r);
  return s == 'F' || s == 'S';
}

std::string percent(double share) {
  return std::to_string(static_cast<int>(std::lround(100 * share))) + "%";
}

// A window (convolution, pooling) as large as its stride or larger, which
// should read every input row, but whose last position stops short of the
// input's last rows or columns (past the padding): they are never read. A
// window smaller than its stride (a 1x1 stride-2 shortcut) skips rows by
// design, so it is not flagged.
void window_warnings(const LayerNode& n, const NodeAnalysis& na, LayerRow& row) {
  if (n.type != LayerType::Conv2d && n.type != LayerType::MaxPool2d &&
      n.type != LayerType::AvgPool2d)
    return;
  if (na.inputs.empty()) return;
  const LayerParams& p = n.params;
  const Shape& in = na.inputs[0];
  const auto unread = [](int64_t extent, int64_t pad, int64_t kernel, int64_t stride) {
    const int64_t span = extent + 2 * pad - kernel;
    if (span < 0 || stride <= 0 || kernel < stride) return int64_t{0};
    return std::max(int64_t{0}, span % stride - pad);  // the padding goes unread first
  };
  const int64_t rows = unread(in.h, p.pad_h, p.kernel_h, p.stride_h);
  const int64_t cols = unread(in.w, p.pad_w, p.kernel_w, p.stride_w);
  if (rows == 0 && cols == 0) return;
  std::string what;
  if (rows > 0) what = "its last " + std::to_string(rows) + " row" + (rows == 1 ? "" : "s");
  if (cols > 0)
    what += std::string(what.empty() ? "its last " : " and ") + std::to_string(cols) + " column" +
            (cols == 1 ? "" : "s");
  row.warnings.push_back(what + " of the " + std::to_string(in.h) + "x" + std::to_string(in.w) +
                         " input are never read: the stride (" + std::to_string(p.stride_h) + "x" +
                         std::to_string(p.stride_w) +
                         ") steps past them; change the padding or the kernel to use them");
}

std::string rewrites_of(const CompiledProject& cp, int v) {
  const LayerTensors& t = cp.layers[static_cast<size_t>(v)];
  const auto id = [&](int node) { return cp.project.model.nodes[static_cast<size_t>(node)].id; };
  std::string s;
  if (t.fused_relu >= 0) s = "computes " + id(t.fused_relu) + " (fused)";
  if (t.fused_into >= 0) s = "computed by " + id(t.fused_into) + " (fused)";
  if (t.grad_in_place) s += std::string(s.empty() ? "" : ", ") + "gradient in place";
  if (t.recomputed != kNoTensor)
    s += std::string(s.empty() ? "" : ", ") + "output computed again in the backward";
  if (is_pool_where(cp, v))
    s += std::string(s.empty() ? "" : ", ") + "backward from where each maximum was";
  return s;
}

std::string fmt_int(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

LayerTable analyze_layers(const CompiledPlan& plan) {
  const CompiledProject& cp = plan.program();
  const Project& p = cp.project;
  LayerTable table;
  for (const ResolvedVariant& v : cp.variants) table.variants.push_back(v.name);
  table.activation_bytes.assign(cp.variants.size(), 0);
  table.parameters = cp.analysis.total_params;
  table.flops = cp.analysis.total_flops;
  const int train = cp.variant_index(VariantKind::Train);
  for (int v : cp.analysis.order) {
    const LayerNode& n = p.model.nodes[static_cast<size_t>(v)];
    const NodeAnalysis& na = cp.analysis.nodes[static_cast<size_t>(v)];
    LayerRow row;
    row.node = v;
    row.id = n.id;
    row.type = std::string(layer_type_name(n.type));
    row.settings = layer_summary(n);
    row.has_output = layer_output_ports(n.type) > 0 && na.known;
    row.output = na.output;
    row.parameters = na.params;
    row.flops = na.flops;
    row.rewrites = rewrites_of(cp, v);
    for (size_t vi = 0; vi < cp.plans.size(); ++vi) {
      uint64_t bytes = 0;
      for (const DTensor& t : cp.plans[vi].dtensors())
        if (t.owner == v && is_activation(t.region) && cp.plans[vi].in_use(t.id))
          bytes += t.slot_bytes;
      row.activation_bytes.push_back(bytes);
      table.activation_bytes[vi] += bytes;
    }
    window_warnings(n, na, row);
    // Channels a 16-bit feature is padded to on the device (ENGINE.md §1),
    // said where they are chosen (a convolution's or a Linear's outputs; not
    // the class scores, which the dataset fixes).
    const DTensorId out = cp.layers[static_cast<size_t>(v)].out;
    const bool chooses = (n.type == LayerType::Conv2d || n.type == LayerType::Linear) &&
                         cp.analysis.source_of(cp.analysis.loss_node, 0).node != v;
    if (chooses && out != kNoTensor && train >= 0) {
      const DTensor& t = cp.plans[static_cast<size_t>(train)].get_dtensor(out);
      if (t.padded_c() > t.shape.c)
        row.warnings.push_back("its " + std::to_string(t.shape.c) + " channels are padded to " +
                               std::to_string(t.padded_c()) + " on the device in " +
                               std::string(dtype_name(t.dtype)) + ": " +
                               percent(static_cast<double>(t.padded_c() - t.shape.c) /
                                       static_cast<double>(t.shape.c)) +
                               " more bytes for its output; a multiple of " +
                               std::to_string(t.alignment()) + " channels avoids it");
    }
    table.rows.push_back(std::move(row));
  }
  // Shares, once the totals are known.
  for (LayerRow& row : table.rows) {
    if (table.parameters > 0 && row.parameters > kParameterShare * table.parameters)
      row.warnings.push_back(
          "holds " +
          percent(static_cast<double>(row.parameters) / static_cast<double>(table.parameters)) +
          " of the network's parameters");
    if (train >= 0 && table.activation_bytes[static_cast<size_t>(train)] > 0) {
      const double share = static_cast<double>(row.activation_bytes[static_cast<size_t>(train)]) /
                           static_cast<double>(table.activation_bytes[static_cast<size_t>(train)]);
      if (share > kActivationShare)
        row.warnings.push_back("its activations are " + percent(share) +
                               " of the training step's (before packing)");
    }
  }
  return table;
}

std::string layer_table_text(const LayerTable& table) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-16s %-20s %-20s %-18s %12s %16s", "id", "type", "settings",
                "output", "parameters", "fwd FLOPs");
  out += buf;
  for (const std::string& v : table.variants) {
    std::snprintf(buf, sizeof buf, " %14s", (v + " act.").c_str());
    out += buf;
  }
  out += "\n";
  for (const LayerRow& r : table.rows) {
    std::snprintf(buf, sizeof buf, "  %-16s %-20s %-20s %-18s %12s %16s", r.id.c_str(),
                  r.type.c_str(), r.settings.c_str(), r.has_output ? r.output.str().c_str() : "-",
                  fmt_int(r.parameters).c_str(), fmt_int(r.flops).c_str());
    out += buf;
    for (uint64_t b : r.activation_bytes) {
      std::snprintf(buf, sizeof buf, " %14s", human_bytes(b).c_str());
      out += buf;
    }
    out += "\n";
    if (!r.rewrites.empty()) out += "      " + r.rewrites + "\n";
    for (const std::string& w : r.warnings) out += "      warning: " + w + "\n";
  }
  std::snprintf(buf, sizeof buf, "  %-16s %-20s %-20s %-18s %12s %16s", "total", "", "", "",
                fmt_int(table.parameters).c_str(), fmt_int(table.flops).c_str());
  out += buf;
  for (uint64_t b : table.activation_bytes) {
    std::snprintf(buf, sizeof buf, " %14s", human_bytes(b).c_str());
    out += buf;
  }
  return out + "\n";
}

std::string layer_table_csv(const LayerTable& table) {
  std::string out = "id,type,settings,output,parameters,forward_flops";
  for (const std::string& v : table.variants) out += "," + csv_field(v + "_activation_bytes");
  out += ",rewrites,warnings\n";
  for (const LayerRow& r : table.rows) {
    std::string warnings;
    for (const std::string& w : r.warnings) warnings += (warnings.empty() ? "" : "; ") + w;
    out += csv_field(r.id) + "," + csv_field(r.type) + "," + csv_field(r.settings) + "," +
           csv_field(r.has_output ? r.output.str() : std::string()) + "," +
           std::to_string(r.parameters) + "," + std::to_string(r.flops);
    for (uint64_t b : r.activation_bytes) out += "," + std::to_string(b);
    out += "," + csv_field(r.rewrites) + "," + csv_field(warnings) + "\n";
  }
  return out;
}

nlohmann::json layer_table_json(const LayerTable& table) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerRow& r : table.rows) {
    nlohmann::json l = {{"id", r.id},
                        {"type", r.type},
                        {"settings", r.settings},
                        {"parameters", r.parameters},
                        {"forward_flops", r.flops},
                        {"activation_bytes", r.activation_bytes},
                        {"warnings", r.warnings}};
    if (r.has_output) l["output"] = r.output.dims();
    if (!r.rewrites.empty()) l["rewrites"] = r.rewrites;
    layers.push_back(std::move(l));
  }
  return {{"variants", table.variants},
          {"layers", std::move(layers)},
          {"totals",
           {{"parameters", table.parameters},
            {"forward_flops", table.flops},
            {"activation_bytes", table.activation_bytes}}}};
}

}  // namespace tr
