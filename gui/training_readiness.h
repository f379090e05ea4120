// SPDX-License-Identifier: GPL-3.0-or-later
// check_training_readiness: what stops a sound design from training, found
// before anything is allocated: a dataset that cannot be read, a global batch
// larger than the training set, a memory plan larger than the chosen
// devices, a precision the devices cannot run (bf16 without a CPU's BF16
// instructions or on a GPU before compute capability 8.0). Each is a Diagnostic naming the setting
// to change, with the numbers; what cannot be checked here (CUDA devices absent) is a note.
#pragma once

#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/dataset_probe.h>
#include <renaissance/devices.h>
#include <renaissance/error.h>
#include <renaissance/project.h>

namespace tr::gui {

struct TrainingReadiness {
  std::vector<Diagnostic> blocking;
  std::vector<Diagnostic> notes;
  bool ok() const { return blocking.empty(); }
};

// `probe` is probe_dataset(project.dataset); `plan` is the project compiled
// as it is now, or null when it does not compile (the compiler's problems
// are listed elsewhere).
TrainingReadiness check_training_readiness(const Project& project, const DatasetProbe& probe,
                                           const CompiledPlan* plan, const DeviceScan& scan);

}  // namespace tr::gui
