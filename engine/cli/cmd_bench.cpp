// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli bench`: times training steps after a warm-up and prints
// one JSON line (median ms per step, images per second) for bench/ scripts.
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include <renaissance/error.h>
#include <renaissance/training.h>
#include "commands.h"
#include "training_setup.h"

namespace tr::cli {

namespace {

constexpr const char* kBenchUsage =
    "usage: renaissance-cli bench <project.json> [--steps N] [--warmup W] [--batch B]\n"
    "         [--threads T] [--devices cpu:N|cuda:I-J] [--precision fp32|amp|bf16] [--data DIR]\n"
    "         [--rewrites on|off] [--recompute on|off|matmuls] [--memory-packing on|off]\n"
    "         [--validation-micro-batch fit|as-written|N] [--memory-budget BYTES]\n"
    "         [--feature-layout nhwc|blocked]\n"
    "         [--streams 5|1] [--sharding none|optimizer|optimizer+gradients]\n"
    "         [--mesh data=N,tensor=M]\n"
    "         [--capture on|off] [--conv-algorithms fastest|deterministic]\n"
    "         [--resident-batch] [--allow-fallback] [--json]\n"
    "  Trains W + N steps (no validation) and reports the median time of the last N,\n"
    "  and how much of it waited for the input pipeline. --resident-batch trains every\n"
    "  step on one batch left on the device (as PyTorch's benchmark does): the device\n"
    "  alone, without the input pipeline.\n"
    "  On CUDA devices, --streams 1 runs all five streams' work on one CUDA stream,\n"
    "  --capture off launches each captured graph's work one launch at a time, and\n"
    "  --conv-algorithms deterministic keeps cuDNN to algorithms that repeat bit for bit.\n"
    "  CUDA devices that are not usable here are an error (a figure for them must not\n"
    "  come from the CPU); --allow-fallback measures as many CPU ranks instead, and the\n"
    "  JSON's \"backend\" says which ran.\n";

}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
  std::set<std::string> with_value = setup_options();
  with_value.insert("steps");
  with_value.insert("warmup");
  for (const std::string& o : cuda_measure_options()) with_value.insert(o);
  const ParsedArgs a =
      parse_args(args, with_value, {"json", "help", "allow-fallback", "resident-batch"});
  if (const int code =
          usage_exit_code(a, kBenchUsage, 1, "bench", "the project file (bench <project.json>)");
      code >= 0)
    return code;
  const int64_t steps =
      a.values.count("steps") ? positive_integer("steps", a.values.at("steps")) : 20;
  const int64_t warmup =
      a.values.count("warmup") ? positive_integer("warmup", a.values.at("warmup")) : 3;
  TrainingJob job = prepare_training(a.positional[0], a, a.has("allow-fallback"));
  const CompiledPlan& cp = job.plan();
  if (!job.device_note().empty()) std::fprintf(stderr, "note: %s\n", job.device_note().c_str());
  TrainOptions options;
  // Only the steps are timed. The step limit would end the run with a
  // validation (after the last timed step, so the figures would not change,
  // but it would add its time to every bench): none.
  options.validate = false;
  options.max_steps = warmup + steps;
  options.epochs = 1000000;  // max_steps ends it
  options.resident_batch = a.has("resident-batch");
  const TrainReport report = job.train(options);
  // Steps run on across epochs, so only a stop can leave fewer.
  if (static_cast<int64_t>(report.step_seconds.size()) < warmup + steps)
    throw std::runtime_error("training stopped after " +
                             std::to_string(report.step_seconds.size()) + " of " +
                             std::to_string(warmup + steps) + " steps");
  std::vector<double> timed(report.step_seconds.begin() + warmup, report.step_seconds.end());
  std::sort(timed.begin(), timed.end());
  const double median_ms = 1000 * timed[timed.size() / 2];
  // How much of a step waited for the input pipeline's next batch.
  std::vector<double> waits(report.input_wait_seconds.begin() + warmup,
                            report.input_wait_seconds.end());
  std::sort(waits.begin(), waits.end());
  const double median_wait_ms = waits.empty() ? 0.0 : 1000 * waits[waits.size() / 2];
  const double batch = static_cast<double>(cp.project().training.global_batch);
  const double flops_per_step =
      3.0 * static_cast<double>(cp.model_flops()) * static_cast<double>(cp.world_size());
  nlohmann::json j = {
      {"project", cp.project().name},
      {"backend", job.context().backend},
      {"streams", a.values.count("streams") ? a.values.at("streams") : "5"},
      {"capture", a.values.count("capture") ? a.values.at("capture") : "on"},
      {"conv_algorithms",
       a.values.count("conv-algorithms") ? a.values.at("conv-algorithms") : "fastest"},
      {"devices", cp.project().training.devices.str()},
      {"sharding", sharding_name(cp.project().training.sharding)},
      {"mesh_tensor", cp.project().training.tensor_ranks},
      {"fell_back", job.fell_back()},
      {"plan_bytes_per_device", cp.bytes_per_device()},
      {"threads", job.context().cpu_threads},
      {"cpu_kernels", job.context().cpu_kernels},
      {"batch", cp.project().training.global_batch},
      {"steps", steps},
      {"warmup", warmup},
      {"resident_batch", options.resident_batch},
      {"median_ms_per_step", median_ms},
      {"median_input_wait_ms", median_wait_ms},
      {"min_ms_per_step", 1000 * timed.front()},
      {"images_per_s", batch / (median_ms / 1000)},
      {"train_gflop_per_s", flops_per_step / (median_ms / 1000) / 1e9}};
  if (a.has("json")) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "%s: %.2f ms/step (median of %lld; %.2f ms of it waiting for the input), %.0f "
        "images/s, %.1f GFLOP/s%s\n",
        cp.project().name.c_str(), median_ms, static_cast<long long>(steps), median_wait_ms,
        j["images_per_s"].get<double>(), j["train_gflop_per_s"].get<double>(),
        options.resident_batch ? " (one resident batch)" : "");
  }
  return 0;
}

}  // namespace tr::cli
