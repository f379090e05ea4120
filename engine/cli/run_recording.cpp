// SPDX-License-Identifier: GPL-3.0-or-later
#include "run_recording.h"

#include <cstdio>

#include <renaissance/error.h>
#include <renaissance/store_location.h>

namespace tr::cli {

RunRecording::RunRecording(const ParsedArgs& a, const CompiledPlan& plan,
                           const TrainingContext& context, const TrainOptions& options, bool here,
                           int64_t resume_run) {
  if (a.has("no-store")) {
    if (a.values.count("store"))
      throw UsageError("options '--store' and '--no-store' contradict each other; give one");
    return;
  }
  if (!here) return;
  const std::string path =
      store::resolve_store_path(a.values.count("store") ? a.values.at("store") : std::string());
  // Said once each, from the recorder's thread; training does not wait for it.
  store::RecorderOptions told;
  told.on_trouble = [](const std::string& problem) {
    std::fprintf(stderr, "warning: %s\n", problem.c_str());
  };
  told.on_recovered = [](const std::string& news) {
    std::fprintf(stderr, "note: %s\n", news.c_str());
  };
  if (resume_run > 0) {
    recorder_ =
        std::make_unique<store::TrainingRecorder>(path, resume_run, plan, context, options, told);
    const store::ResumeRecord& r = recorder_->resumed();
    std::printf("continuing run %lld in %s from step %lld", static_cast<long long>(resume_run),
                path.c_str(), static_cast<long long>(r.from_step));
    if (r.retrained_steps > 0)
      std::printf(" (%lld step%s recorded after that checkpoint are trained again)",
                  static_cast<long long>(r.retrained_steps), r.retrained_steps == 1 ? "" : "s");
    std::printf("\n");
  } else {
    recorder_ = std::make_unique<store::TrainingRecorder>(path, plan, context, options, told);
    std::printf("recording run %lld in %s\n", static_cast<long long>(recorder_->run_id()),
                path.c_str());
  }
  std::fflush(stdout);
}

void RunRecording::attach(TrainCallbacks& callbacks) {
  if (recorder_) recorder_->attach(callbacks);
}

void RunRecording::ended(const TrainReport& report) {
  if (recorder_) warn(recorder_->ended(report));
}

void RunRecording::failed(const std::string& error) {
  if (recorder_) warn(recorder_->failed(error));
}

void RunRecording::warn(const std::string& problem) const {
  if (!problem.empty())
    std::fprintf(stderr, "warning: run %lld was not fully recorded in %s: %s\n",
                 static_cast<long long>(recorder_->run_id()), recorder_->store_path().c_str(),
                 problem.c_str());
}

}  // namespace tr::cli
