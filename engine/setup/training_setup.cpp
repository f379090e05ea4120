// SPDX-License-Identifier: GPL-3.0-or-later
#include "setup/training_setup.h"

#include <string>

#include <renaissance/dataset_kinds.h>
#include <renaissance/dataset_probe.h>
#include <renaissance/devices.h>
#include <renaissance/error.h>
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cuda_plugin.h"
#include "data/dataset.h"
#include "net/multi_node.h"
#include "setup/plan_fit.h"

namespace tr {

namespace {

std::string device_list(const DeviceScan& scan) {
  std::string s;
  for (const CudaDeviceInfo& d : scan.cuda)
    s += (s.empty() ? "" : ", ") + std::to_string(d.index) + " (" + d.name + ")";
  return s;
}

// Why the requested CUDA devices cannot be used, empty when they can. A
// machine without any (or without the CUDA backend) falls back to the CPU;
// one that has devices but not the requested ones is a mistake to report.
std::string cuda_unavailable(const DeviceSet& devices, const DeviceScan& scan) {
  if (scan.cuda.empty()) return scan.cuda_status;
  for (int id : devices.ids)
    if (id < 0 || id >= static_cast<int>(scan.cuda.size()))
      throw UsageError(devices.str() + " requested, but this machine has no CUDA device " +
                       std::to_string(id) + "; it has " + device_list(scan));
  return {};
}

}  // namespace

TrainingSetup prepare_training(Project project, const SetupOptions& options) {
  TrainingSetup out;
  bool on_cuda = false;
  // Once: the scan loads the CUDA backend and asks the driver.
  const DeviceScan scan = scan_devices();
  if (project.training.devices.kind == DeviceKind::CUDA) {
    const std::string why = cuda_unavailable(project.training.devices, scan);
    on_cuda = why.empty();
    if (on_cuda) {
      out.device_note = "training on " + project.training.devices.str() + ": " + device_list(scan);
    } else if (!options.allow_cpu_fallback) {
      throw UsageError(project.training.devices.str() + " requested, but " + why +
                       "; a measurement of these devices will not run on the CPU instead "
                       "(--allow-fallback measures the CPU ranks and says so)");
    } else {
      // The same plan trains on as many CPU ranks, and the user is told so.
      out.fell_back = true;
      const int world = project.training.devices.world_size();
      out.device_note = project.training.devices.str() + " requested; " + why +
                        "; training on cpu:" + std::to_string(world) + " instead";
      project.training.devices.kind = DeviceKind::CPU;
      project.training.devices.ids.clear();
      for (int i = 0; i < world; ++i) project.training.devices.ids.push_back(i);
    }
  }
  // Once, here, before the dataset loads: with the devices the run trains
  // on after a fallback, which its message names.
  check_multi_node(options.nodes);
  if (const std::string problem =
          precision_problem(project.training.precision, project.training.devices, scan);
      !problem.empty())
    throw UsageError("project '" + project.name + "': " + problem);
  if (!on_cuda && (options.cuda_streams != 5 || !options.cuda_capture))
    throw UsageError(
        "one CUDA stream and uncaptured graphs are ways to measure the CUDA backend, "
        "but this run trains on " +
        project.training.devices.str() +
        (out.device_note.empty() ? "" : " (" + out.device_note + ")"));
  if (options.cpu_threads > 0) cpu::set_cpu_threads(options.cpu_threads);
  const uint64_t seed = project.training.seed;
  // Image folders are counted as they load (unreadable images may be left
  // out): load them first and compile for what they hold.
  const bool counted = dataset_kind_info(project.dataset.kind).counted;
  if (counted) {
    out.data = load_dataset(project.dataset, options.data_dir, seed);
    settle_dataset_sizes(project, out.data->size(Split::Train), out.data->size(Split::Val));
  }
  // The project's feature layout, unless the options name a channel block.
  CompileOptions compile = options.compile;
  if (compile.channel_block == 0) compile.channel_block = feature_channel_block(project);
  // One machine's plan is the compiler's own; across machines the net
  // layer compiles for every node's ranks.
  out.compiled = std::make_unique<CompiledProject>(
      options.nodes.across_nodes() ? compile_for_nodes(project, compile, options.nodes)
                                   : compile_project(project, compile));
  // Refused before any allocation, with both numbers.
  if (const std::string problem = plan_fit_problem(*out.compiled, scan); !problem.empty())
    throw UsageError("project '" + project.name + "' does not fit: " + problem);
  if (!counted) out.data = load_dataset(out.compiled->project.dataset, options.data_dir, seed);
  if (on_cuda) {
    cuda::CudaBackendOptions o;
    o.devices = out.compiled->project.training.devices.ids;
    o.nodes = options.nodes;
    o.streams = options.cuda_streams;
    o.capture = options.cuda_capture;
    o.deterministic_conv = options.cuda_deterministic_conv;
    o.sync_batch_norm = out.compiled->project.training.sync_batch_norm;
    o.tensor = out.compiled->tensor_ranks;
    if (options.nodes.across_nodes()) o.fingerprint = node_fingerprint(*out.compiled, options.nodes);
    // on_cuda means the scan found devices, so the backend is loaded.
    out.backend = cuda_plugin().table->make_backend(o);
    return out;
  }
  cpu::CpuBackendOptions o;
  // This process's ranks; across nodes, the others' through Gloo.
  o.world = out.compiled->project.training.devices.world_size();
  o.tensor = out.compiled->tensor_ranks;
  if (options.nodes.across_nodes())
    o.processes =
        connect_cpu_processes(options.nodes, o.world, node_fingerprint(*out.compiled, options.nodes));
  o.check_step_schedule = options.check_step_schedule;
  out.backend = cpu::make_cpu_backend(o);
  return out;
}

}  // namespace tr
