// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli plan`: compiles a project and prints its memory plan.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include <renaissance/compiled_plan.h>
#include <renaissance/dataset_probe.h>
#include <renaissance/devices.h>
#include <renaissance/error.h>
#include <renaissance/largest_batch.h>
#include <renaissance/layer_analysis.h>
#include <renaissance/plan_report.h>
#include <renaissance/project_io.h>
#include "commands.h"
#include "compile_choice.h"
#include "options.h"
#include "project_overrides.h"

namespace tr::cli {

namespace {

constexpr const char* kPlanUsage =
    "usage: renaissance-cli plan <project.json> [--json] [--graphs] [--layers [--csv]]\n"
    "                            [--out FILE]\n"
    "                            [--devices cpu:N|cuda:0-3] [--precision fp32|amp|bf16]\n"
    "                            [--batch B] [--epochs N] [--seed S] [--rewrites on|off]\n"
    "                            [--sharding none|optimizer|optimizer+gradients]\n"
    "                            [--mesh data=N,tensor=M]\n"
    "                            [--recompute on|off|matmuls] [--memory-packing on|off]\n"
    "                            [--validation-micro-batch fit|as-written|N]\n"
    "                            [--memory-budget BYTES] [--max-batch [--memory BYTES]]\n"
    "                            [--feature-layout nhwc|blocked]\n"
    "  Compiles the project and prints the layers, the region and DTensor tables of\n"
    "  every shape variant, and the bytes each device needs.\n"
    "  --json      machine-readable plan instead of tables\n"
    "  --graphs    also print every ComputationGraph\n"
    "  --layers    the network analysed layer by layer instead: output shape,\n"
    "              parameters, forward FLOPs, each variant's activation bytes, what the\n"
    "              compiler did to it and warnings (with --json as JSON, with --csv as CSV)\n"
    "  --out FILE  write to FILE instead of standard output\n"
    "  --devices, --precision, --batch, --epochs, --seed, --sharding, --mesh override\n"
    "              the project's settings (--mesh tensor=2: pairs of ranks split the\n"
    "              transformer blocks, tensor parallel; data=N may be left out)\n"
    "  --rewrites off  no BN+ReLU fusion, no in-place gradients and no outputs computed\n"
    "               again in the backward (default on)\n"
    "  --recompute off  keeps LayerNorm and activation outputs that only weighted layers\n"
    "               read through the step instead of computing them again in the\n"
    "               backward (default on: less memory, some time); matmuls also computes\n"
    "               again the TokenLinears and convolutions that only attention, those\n"
    "               layers and other matrix products read (a ViT block keeps 3 token maps\n"
    "               instead of 10, for about a fifth more compute)\n"
    "  --memory-packing off  every feature, gradient slot and scratch tensor its own\n"
    "               bytes, sized for the largest variant (default on: tensors whose\n"
    "               lifetimes over the step do not overlap share bytes)\n"
    "  --validation-micro-batch  validation runs its batch as micro-batches of this\n"
    "               many samples a device, with the same metrics: fit (default) takes the\n"
    "               largest whose forward fits in the bytes training needs anyway and\n"
    "               whose batches cover the validation set; as-written the project's\n"
    "               validation batch; N at most that\n"
    "  --memory-budget BYTES  the planner recomputes batch-norm and convolution outputs\n"
    "               in the backward, the cheapest per byte first, the fewest that make\n"
    "               the plan fit in BYTES a device (e.g. 4GiB); plan lists them and\n"
    "               their cost\n"
    "  --feature-layout blocked  CPU feature maps of whole channel blocks as\n"
    "               [N, C/b, H, W, b], the layout oneDNN's convolutions take on this CPU\n"
    "               (b = 8 with AVX2, 16 with AVX-512; renaissance-cli devices), where\n"
    "               every op on them takes it (default nhwc: channels innermost)\n"
    "  --max-batch  also find the largest global batch whose plan fits the devices:\n"
    "               the host's available memory shared by the CPU ranks, a CUDA\n"
    "               device's memory, or --memory BYTES per device (e.g. 16GiB, 512MiB),\n"
    "               with --memory-budget BYTES when --memory is not given; once as\n"
    "               planned and once recomputing what it takes to fit\n";

// The bytes one rank may take: --memory, else what this machine has.
uint64_t memory_budget(const ParsedArgs& a, const CompiledPlan& cp, std::string* where) {
  const DeviceSet& devs = cp.project().training.devices;
  for (const char* option : {"memory", kMemoryBudgetOption})
    if (a.values.count(option)) {
      *where = "--" + std::string(option) + " " + a.values.at(option) + " per device";
      return byte_count(option, a.values.at(option));
    }
  const DeviceScan scan = scan_devices();
  const RankMemory m = memory_per_rank(devs, scan);
  if (!m.missing.empty())
    throw UsageError("--max-batch: " + m.missing +
                     "; give the device's memory with --memory BYTES");
  *where = devs.kind == DeviceKind::CPU
               ? human_bytes(scan.host_available_bytes) + " of host memory available, " +
                     human_bytes(m.bytes) + " per rank"
               : human_bytes(m.bytes) + " per device (" + devs.str() + ")";
  return m.bytes;
}

// Whether the plan fits the project's devices on this machine, with the numbers.
std::string fit_line(const CompiledPlan& cp) {
  const DeviceScan scan = scan_devices();
  const DeviceSet& devs = cp.project().training.devices;
  const uint64_t need = cp.bytes_per_device();
  if (devs.kind == DeviceKind::CPU) {
    const uint64_t all = need * static_cast<uint64_t>(cp.world_size());
    return "fits " + devs.str() + ": " +
           std::string(all <= scan.host_available_bytes ? "yes" : "NO") + " (" + human_bytes(all) +
           " for " + std::to_string(cp.world_size()) + " rank arena" +
           (cp.world_size() == 1 ? "" : "s") + ", " + human_bytes(scan.host_available_bytes) +
           " of host memory available)";
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
  with_value.insert(kPackingOption);
  with_value.insert(kValidationMicroBatchOption);
  with_value.insert(kRecomputeOption);
  with_value.insert(kMemoryBudgetOption);
  with_value.insert("memory");
  const ParsedArgs a =
      parse_args(args, with_value, {"json", "graphs", "help", "max-batch", "layers", "csv"});
  if (const int code =
          usage_exit_code(a, kPlanUsage, 1, "plan", "the project file (plan <project.json>)");
      code >= 0)
    return code;
  Project project = load_project(a.positional[0]);
  apply_overrides(a, project);
  // Image folders: the plan is for the images they hold now.
  if (const DatasetProbe probe = probe_dataset(project.dataset);
      !settle_dataset_sizes(project, probe))
    throw UsageError(probe.problem);

  const CompiledPlan cp = compile_plan(project, compile_options_from(a, project));
  if (a.values.count("memory") && !a.has("max-batch"))
    throw UsageError("--memory goes with --max-batch (the budget the search fits the plan to)");
  std::string text;
  const std::string fit = fit_line(cp);
  // The largest batch as planned, and recomputing what it takes to fit.
  BatchSearch search, recomputing;
  std::string budget_text;
  if (a.has("max-batch")) {
    const uint64_t budget = memory_budget(a, cp, &budget_text);
    CompileOptions as_planned = compile_options_from(a, project);
    as_planned.memory_budget = 0;
    Project unbudgeted = project;
    unbudgeted.training.memory_budget_mib = 0;
    search = largest_fitting_batch(unbudgeted, budget, as_planned);
    if (as_planned.recompute) {
      CompileOptions fitted = as_planned;
      fitted.memory_budget = budget;
      recomputing = largest_fitting_batch(project, budget, fitted);
    }
  }
  std::string search_line =
      !a.has("max-batch") ? std::string()
      : search.global_batch == 0
          ? "largest batch that fits (" + budget_text + "): none; at one sample per rank the " +
                "plan needs " + human_bytes(search.bytes_at_one) +
                " per device (the largest variant's batch sizes every variant's slots)"
          : "largest batch that fits (" + budget_text + "): global batch " +
                std::to_string(search.global_batch) + ", " + human_bytes(search.bytes_per_device) +
                " per device (" + std::to_string(search.compiles) + " compiles)";
  if (recomputing.global_batch > search.global_batch)
    search_line += "\nlargest batch that fits recomputing layer outputs (" +
                   recompute_summary(recomputing.plan) + "): global batch " +
                   std::to_string(recomputing.global_batch) + ", " +
                   human_bytes(recomputing.bytes_per_device) + " per device (" +
                   std::to_string(recomputing.compiles) + " compiles)";
  if (a.has("csv") && !a.has("layers"))
    throw UsageError("--csv goes with --layers (the layer table as CSV)");
  if (a.has("layers") && (a.has("graphs") || a.has("max-batch")))
    throw UsageError("--layers prints the layer table alone; leave out " +
                     std::string(a.has("graphs") ? "--graphs" : "--max-batch"));
  if (a.has("layers") && a.has("json") && a.has("csv"))
    throw UsageError("--json and --csv are two forms of the layer table; give one");
  if (a.has("layers")) {
    const LayerTable table = analyze_layers(cp);
    if (a.has("json"))
      text = layer_table_json(table).dump(2) + "\n";
    else if (a.has("csv"))
      text = layer_table_csv(table);
    else
      text = "layers of " + cp.project().name + " (batch " +
             std::to_string(
                 cp.variants()[static_cast<size_t>(cp.variant_index(VariantKind::Train))].batch) +
             " per device; activations by variant)\n" + layer_table_text(table);
  } else if (a.has("json")) {
    nlohmann::json j = plan_report_json(cp);
    j["fits"] = fit;
    if (a.has("max-batch"))
      j["max_batch"] = {{"global_batch", search.global_batch},
                        {"bytes_per_device", search.bytes_per_device},
                        {"budget", budget_text},
                        {"compiles", search.compiles},
                        {"recomputing",
                         {{"global_batch", recomputing.global_batch},
                          {"bytes_per_device", recomputing.bytes_per_device},
                          {"compiles", recomputing.compiles}}}};
    if (a.has("graphs")) j["graphs_text"] = graphs_report_text(cp);
    text = j.dump(2) + "\n";
  } else {
    text = plan_report_text(cp);
    text += fit + "\n";
    if (!search_line.empty()) text += search_line + "\n";
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
