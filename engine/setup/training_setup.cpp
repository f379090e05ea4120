// SPDX-License-Identifier: GPL-3.0-or-later
#include "setup/training_setup.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/devices.h"
#include "data/dataset.h"

namespace tr {

TrainingSetup prepare_training(Project project, const SetupOptions& options) {
  TrainingSetup out;
  if (project.training.devices.kind == DeviceKind::CUDA) {
    // Until a CUDA device runs this build, the same plan trains on as many
    // CPU ranks and the user is told so.
    const DeviceScan scan = scan_devices();
    const int world = project.training.devices.world_size();
    out.device_note = project.training.devices.str() + " requested; " +
                      (scan.cuda.empty() ? scan.cuda_status
                                         : std::string("this build trains on the CPU backend")) +
                      "; training on cpu:" + std::to_string(world) + " instead";
    project.training.devices.kind = DeviceKind::CPU;
    project.training.devices.ids.clear();
    for (int i = 0; i < world; ++i) project.training.devices.ids.push_back(i);
  }
  if (options.cpu_threads > 0) cpu::set_cpu_threads(options.cpu_threads);
  const uint64_t seed = project.training.seed;
  out.compiled = std::make_unique<CompiledProject>(compile_project(project, options.compile));
  out.data = load_dataset(out.compiled->project.dataset, options.data_dir, seed);
  cpu::CpuBackendOptions o;
  o.world = out.compiled->world_size;
  out.backend = cpu::make_cpu_backend(o);
  return out;
}

}  // namespace tr
