// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli plan`: compiles a project and prints its memory plan.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "backends/devices.h"
#include "cli/commands.h"
#include "cli/compile_choice.h"
#include "cli/options.h"
#include "cli/project_overrides.h"
#include "compile/compiler.h"
#include "compile/plan_report.h"
#include "core/error.h"
#include "model/project_io.h"

namespace tr::cli {

namespace {

constexpr const char* kUsage =
    "usage: renaissance-cli plan <project.json> [--json] [--graphs] [--out FILE]\n"
    "                            [--devices cpu:N|cuda:0-3] [--precision fp32|amp] [--batch B]\n"
    "                            [--epochs N] [--seed S] [--rewrites on|off]\n"
    "  Compiles the project and prints the layers, the region and DTensor tables of\n"
    "  every shape variant, and the bytes each device needs.\n"
    "  --json      machine-readable plan instead of tables\n"
    "  --graphs    also print every ComputationGraph\n"
    "  --out FILE  write to FILE instead of standard output\n"
    "  --devices, --precision, --batch, --epochs, --seed override the project's settings\n"
    "  --rewrites off  no BN+ReLU fusion and no in-place gradients (default on)\n";

// Whether the plan fits the project's devices on this machine, with the numbers.
std::string fit_line(const CompiledProject& cp) {
  const DeviceScan scan = scan_devices();
  const DeviceSet& devs = cp.project.training.devices;
  const uint64_t need = cp.bytes_per_device();
  if (devs.kind == DeviceKind::CPU) {
    const uint64_t all = need * static_cast<uint64_t>(cp.world_size);
    return "fits " + devs.str() + ": " +
           std::string(all <= scan.host_available_bytes ? "yes" : "NO") + " (" + human_bytes(all) +
           " for " + std::to_string(cp.world_size) + " rank arena(s), " +
           human_bytes(scan.host_available_bytes) + " of host memory available)";
  }
  std::string out = "fits " + devs.str() + ": ";
  if (scan.cuda.empty()) return out + "cannot check here (" + scan.cuda_status + ")";
  for (int id : devs.ids) {
    const auto it = std::find_if(scan.cuda.begin(), scan.cuda.end(),
                                 [&](const CudaDeviceInfo& d) { return d.index == id; });
    if (it == scan.cuda.end()) return out + "NO (cuda:" + std::to_string(id) + " is not present)";
    if (need > it->memory_bytes)
      return out + "NO (" + human_bytes(need) + " per device, cuda:" + std::to_string(id) +
             " has " + human_bytes(it->memory_bytes) + ")";
  }
  return out + "yes (" + human_bytes(need) + " per device)";
}

}  // namespace

int cmd_plan(const std::vector<std::string>& args) {
  std::set<std::string> with_value = override_options();
  with_value.insert("out");
  with_value.insert(kRewritesOption);
  const ParsedArgs a = parse_args(args, with_value, {"json", "graphs", "help"});
  if (const int code = usage_exit_code(a, kUsage, 1); code >= 0) return code;
  Project project = load_project(a.positional[0]);
  apply_overrides(a, project);

  const CompiledProject cp = compile_project(project, compile_options_from(a));
  std::string text;
  const std::string fit = fit_line(cp);
  if (a.has("json")) {
    nlohmann::json j = plan_report_json(cp);
    j["fits"] = fit;
    if (a.has("graphs")) j["graphs_text"] = graphs_report_text(cp);
    text = j.dump(2) + "\n";
  } else {
    text = plan_report_text(cp);
    text += fit + "\n";
    if (a.has("graphs")) text += "\n" + graphs_report_text(cp);
  }
  if (a.values.count("out")) {
    const std::string& path = a.values.at("out");
    std::ofstream f(path, std::ios::binary);
    if (!f || !(f << text) || !f.flush()) throw UsageError("cannot write '" + path + "'");
  } else {
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

}  // namespace tr::cli
