// SPDX-License-Identifier: GPL-3.0-or-later
#include "training_readiness.h"

#include <filesystem>
#include <string>

#include <renaissance/largest_batch.h>
#include <renaissance/plan_report.h>
#include <renaissance/project_io.h>
#include "device_fit.h"

namespace tr::gui {

namespace {

Diagnostic about(const Project& project, const std::string& field, std::string message) {
  Diagnostic d;
  d.file = project.source_path;
  d.field = field;
  d.message = std::move(message);
  return d;
}

}  // namespace

TrainingReadiness check_training_readiness(const Project& project, const DatasetProbe& probe,
                                           const CompiledPlan* plan, const DeviceScan& scan) {
  TrainingReadiness r;
  const TrainingSpec& t = project.training;
  if (!probe.ok) {
    r.blocking.push_back(about(project, probe.field, probe.problem));
  } else if (t.global_batch > probe.train_size) {
    r.blocking.push_back(
        about(project, "training.global_batch",
              "the global batch of " + std::to_string(t.global_batch) + " is larger than the " +
                  std::to_string(probe.train_size) +
                  " training images of the dataset, so an epoch would have no full step; lower the "
                  "global batch to at most " +
                  std::to_string(probe.train_size)));
  }
  if (const std::string why = precision_problem(t.precision, t.devices, scan); !why.empty())
    r.blocking.push_back(about(project, "training.precision", why));
  if (!t.init_from.empty()) {
    // Said before training, not when the run would read it.
    const std::string file = resolve_project_path(project, t.init_from);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      r.blocking.push_back(
          about(project, "training.init_from",
                "the starting weights " + file +
                    (std::filesystem::exists(file, ec) ? " are not a file" : " do not exist") +
                    "; choose a checkpoint (a run's final weights, an imported model's) or clear "
                    "\"Start from weights\" to start from fresh weights"));
  }
  if (plan) {
    const DeviceFit fit = check_device_fit(*plan, scan);
    if (fit.checked && !fit.fits) {
      // What to lower it to: the largest batch whose plan fits; or the
      // budget under which recomputation makes it fit.
      const uint64_t room = memory_per_rank(t.devices, scan).bytes;
      const BatchSearch best = largest_fitting_batch(project, room, plan->options());
      std::string what = fit.text.toStdString() + "; ";
      if (plan->options().recompute && plan->memory_budget() == 0) {
        CompileOptions o = plan->options();
        o.memory_budget = room >> 20 << 20;  // the field's whole MiB
        const CompiledPlan fitted = compile_plan(project, o);
        if (fitted.fits_budget())
          what += "it fits with recomputation: set Memory budget to " + std::to_string(room >> 20) +
                  " MiB (the plan then " + recompute_summary(fitted) + "); or ";
      }
      what += "lower the global batch";
      what += best.global_batch > 0
                  ? " (the largest that fits is " + std::to_string(best.global_batch) + ")"
                  : "";
      what += " or the validation batch in \"variants\"";
      what += t.devices.kind == DeviceKind::CPU && t.devices.world_size() > 1
                  ? ", train on fewer ranks"
                  : "";
      what += t.precision == Precision::FP32
                  ? ", or choose AMP precision, whose features take half the bytes"
                  : "";
      r.blocking.push_back(about(project, "training.global_batch", std::move(what)));
    } else if (!fit.checked) {
      r.notes.push_back(about(project, "training.devices", fit.text.toStdString()));
    }
  }
  return r;
}

}  // namespace tr::gui
