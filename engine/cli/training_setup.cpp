// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/training_setup.h"

#include <cstdio>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/devices.h"
#include "cli/compile_choice.h"
#include "cli/project_overrides.h"
#include "core/error.h"
#include "data/dataset.h"
#include "model/project_io.h"
#include "runtime/checkpoint.h"

namespace tr::cli {

std::set<std::string> setup_options() {
  std::set<std::string> s = override_options();
  s.insert("data");
  s.insert("threads");
  s.insert(kRewritesOption);
  return s;
}

TrainingSetup prepare_training(const std::string& project_path, const ParsedArgs& a) {
  TrainingSetup out;
  Project project = load_project(project_path);
  apply_overrides(a, project);
  if (project.training.devices.kind == DeviceKind::CUDA) {
    // The CUDA backend lands with its own issue; until a device runs, the
    // same plan trains on CPU ranks and the user is told so.
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
  if (a.values.count("threads"))
    cpu::set_cpu_threads(static_cast<int>(positive_integer("threads", a.values.at("threads"))));
  out.compiled =
      std::make_unique<CompiledProject>(compile_project(project, compile_options_from(a)));
  const std::string data_dir = a.values.count("data") ? a.values.at("data") : std::string();
  out.data = load_dataset(out.compiled->project.dataset, data_dir, project.training.seed);
  cpu::CpuBackendOptions o;
  o.world = out.compiled->world_size;
  out.backend = cpu::make_cpu_backend(o);
  return out;
}

void read_checkpoint_options(const ParsedArgs& a, TrainOptions& options) {
  if (a.values.count("checkpoint-dir")) {
    options.checkpoint_dir = a.values.at("checkpoint-dir");
    if (options.checkpoint_dir.empty())
      throw UsageError("option '--checkpoint-dir' needs a folder name");
  }
  if (a.values.count("resume")) {
    const std::string& path = a.values.at("resume");
    auto c = std::make_shared<Checkpoint>(read_checkpoint(path));
    std::printf("resuming from %s: epoch %lld, batch %lld, step %lld (saved on %d rank%s)\n",
                path.c_str(), static_cast<long long>(c->position.epoch + 1),
                static_cast<long long>(c->position.batch + 1),
                static_cast<long long>(c->position.step), c->world_size,
                c->world_size == 1 ? "" : "s");
    options.resume = std::move(c);
    options.resume_source = path;
  }
  options.eval_ema = a.has("eval-ema");
}

}  // namespace tr::cli
