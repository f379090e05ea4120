// SPDX-License-Identifier: GPL-3.0-or-later
// The front ends' training facade (renaissance/training_job.h) over the
// engine's setup, trainer and backends.
#include <renaissance/training_job.h>

#include <utility>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/project_io.h>

#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/kernel_builds.h"
#include "runtime/trainer.h"
#include "setup/training_setup.h"

namespace tr {

void apply_project_init_from(const Project& project, TrainOptions& options) {
  if (project.training.init_from.empty() || options.resume || options.init_from) return;
  options.init_from_source = resolve_project_path(project, project.training.init_from);
  try {
    options.init_from =
        std::make_shared<const Checkpoint>(read_checkpoint(options.init_from_source));
  } catch (const UsageError& e) {
    throw UsageError(std::string("the project's starting weights (\"training.init_from\"): ") +
                     e.what());
  }
}

TrainingJob::TrainingJob(Project project, const SetupOptions& options)
    : setup_(std::make_unique<TrainingSetup>(prepare_training(std::move(project), options))),
      plan_(setup_->compiled) {
  const DataSource& data = *setup_->data;
  const Backend& backend = *setup_->backend;
  context_.dataset = data.describe();
  context_.train_samples = data.size(Split::Train);
  context_.validation_samples = data.size(Split::Val);
  context_.cpu_threads = cpu::cpu_threads();
  context_.backend = backend.name();
  if (context_.backend == "cpu") context_.cpu_kernels = cpu::best_own_kernels().isa;
  context_.first_rank = backend.global_rank(0);
  context_.ranks = backend.world_size();
  context_.global_world = backend.global_world();
  context_.leads = backend.leads();
}

TrainingJob::TrainingJob(TrainingJob&&) noexcept = default;
TrainingJob& TrainingJob::operator=(TrainingJob&&) noexcept = default;
TrainingJob::~TrainingJob() = default;

const std::string& TrainingJob::device_note() const noexcept {
  return setup_->device_note;
}
bool TrainingJob::fell_back() const noexcept {
  return setup_->fell_back;
}

void TrainingJob::check(const TrainOptions& options) const {
  check_train_options(*setup_->compiled, *setup_->backend, *setup_->data, options);
}

TrainReport TrainingJob::train(const TrainOptions& options, const TrainCallbacks& callbacks) {
  return tr::train(*setup_->compiled, *setup_->backend, *setup_->data, options, callbacks);
}

}  // namespace tr
