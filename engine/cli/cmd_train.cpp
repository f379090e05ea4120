// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli train`: trains a project on the CPU ranks (or the CUDA
// devices) it names, a progress line per epoch, with optional profile trace
// and JSON summary.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include <renaissance/error.h>
#include <renaissance/profile_export.h>
#include <renaissance/project_io.h>
#include <renaissance/run_resume.h>
#include <renaissance/store_location.h>
#include <renaissance/training.h>
#include "commands.h"
#include "run_recording.h"
#include "stop_signals.h"
#include "training_setup.h"

namespace tr::cli {

namespace {

constexpr const char* kTrainUsage =
    "usage: renaissance-cli train <project.json> [--epochs N] [--batch B] [--seed S]\n"
    "       renaissance-cli train --resume-run ID [--store PATH] [--devices ...]\n"
    "         [--devices cpu:N] [--precision fp32|amp|bf16] [--threads T] [--data DIR]\n"
    "         [--max-steps N] [--profile-steps A:B] [--trace out.json] [--summary out.json]\n"
    "  --batch is the global batch; --data overrides the dataset's folder;\n"
    "  --profile-steps A:B records steps A..B-1 (written by --trace as Chrome trace JSON);\n"
    "  --summary writes the per-epoch figures as JSON.\n"
    "  --max-steps N ends the run after N steps in all (a resumed run counts on):\n"
    "  finished, validated (unless --no-validation) and checkpointed as at an epoch end.\n"
    "  --checkpoint-dir DIR saves a checkpoint at every epoch end and on a stop;\n"
    "  --resume FILE continues from one (any --devices count); --init-from FILE starts\n"
    "  a new run from its weights (of any project: tensors of another name or shape,\n"
    "  such as a last layer for another class count, start fresh); --eval-ema keeps an\n"
    "  EMA of the weights (training.ema.decay) and validates on it.\n"
    "  --resume-run ID continues a stopped or interrupted recorded run from its\n"
    "  latest checkpoint, as the same run (its project, options and checkpoint\n"
    "  folder; its curves go on from the checkpoint's step).\n"
    "  Every run is recorded in the run store (see 'runs'): --store PATH names it,\n"
    "  --no-store skips recording.\n"
    "  --rewrites off compiles without BN+ReLU fusion, in-place gradients and outputs\n"
    "  computed again in the backward; --recompute off keeps those outputs instead (more\n"
    "  memory, less time), --recompute matmuls also computes again the matrix products\n"
    "  that only attention, those layers and other matrix products read (less memory,\n"
    "  more time);\n"
    "  --memory-packing off gives every step-local tensor its own bytes.\n"
    "  --memory-budget BYTES (e.g. 4GiB): the plan recomputes batch-norm and convolution\n"
    "  outputs in the backward, the fewest that make it fit in BYTES a device (the same\n"
    "  losses, some time); a plan that cannot fit is refused before training.\n"
    "  --feature-layout blocked: CPU feature maps in the channel blocks oneDNN's\n"
    "  convolutions take ([N, C/b, H, W, b]; nhwc, the default: channels innermost).\n"
    "  --validation-micro-batch fit|as-written|N: validation in micro-batches of N a\n"
    "  device (fit, the default: the largest that fits in training's bytes).\n"
    "  --sync-bn on|off: BatchNorm statistics over the global batch (SyncBatchNorm)\n"
    "  or per rank (the project's training.sync_batch_norm otherwise).\n"
    "  --sharding none|optimizer|optimizer+gradients: with optimizer (ZeRO-1) each rank\n"
    "  keeps the optimizer state of its share of the weights only, with\n"
    "  optimizer+gradients (ZeRO-2) also only the summed gradients of that share\n"
    "  (the project's training.sharding otherwise).\n"
    "  --mesh data=N,tensor=M: the device mesh (the project's training.mesh.tensor\n"
    "  otherwise): groups of M consecutive ranks split each transformer block, tensor\n"
    "  parallel (attention by heads, the MLP by features), over their samples together,\n"
    "  each rank computing the rest for its own (data may be left out; N x M is the\n"
    "  rank count, and every rank takes its share of the batch).\n"
    "  --conv-algorithms deterministic keeps CUDA convolutions to cuDNN algorithms\n"
    "  that repeat bit for bit (default fastest: the fastest measured).\n"
    "  Across processes and machines (one process a node, docs/multi-node.md; CUDA\n"
    "  devices over NCCL, CPU ranks over Gloo):\n"
    "  --nodes N --node-rank R --rendezvous HOST:PORT [--rendezvous-timeout S]\n"
    "  on every machine, R = 0..N-1; node 0 listens on PORT of HOST (its address),\n"
    "  the others connect there; every node waits up to S seconds (default 300)\n"
    "  for all to join. Each node trains on its --devices; the global batch splits\n"
    "  over all nodes' devices. Node 0 writes the checkpoints and records the run.\n"
    "  --launcher auto|env|slurm|none: the same from a launcher's environment, each\n"
    "  process a node: env reads torchrun's RANK, WORLD_SIZE, MASTER_ADDR and\n"
    "  MASTER_PORT; slurm reads srun's SLURM_PROCID, SLURM_NTASKS and the job's first\n"
    "  node (SLURM_JOB_NODELIST; MASTER_ADDR and MASTER_PORT when exported, else port\n"
    "  29500 + SLURM_JOB_ID mod 1000); auto (the default without --nodes) either when\n"
    "  it says there are several processes; none ignores them.\n"
    "  Ctrl-C (SIGINT) or SIGTERM stops training after the step on its way (and\n"
    "  the validation under way, if any), on every node of a run across machines: a\n"
    "  checkpoint when --checkpoint-dir is set, the run recorded as stopped, exit\n"
    "  status 130 (SIGINT) or 143 (SIGTERM). A second signal, half a second or more\n"
    "  after the first, ends the process at once.\n";

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f || !(f << text) || !f.flush()) throw UsageError("cannot write '" + path + "'");
}

// The line that says why training stopped and how to go on from there.
void print_stop(const TrainReport& report, int signal, const TrainOptions& options, bool leads,
                int64_t run) {
  const auto steps = static_cast<long long>(report.steps);
  const std::string how =
      signal ? "on " + signal_name(signal) + " after " + std::to_string(steps) + " steps"
             : "after " + std::to_string(steps) + " steps, as another node was asked to";
  std::string where;
  if (options.checkpoint_dir.empty())
    where = "no checkpoint (--checkpoint-dir DIR keeps one)";
  else if (!leads)
    where = "node 0 saved the checkpoint";
  else if (!report.checkpoints.empty() && run > 0)
    where = "continue with --resume-run " + std::to_string(run) + " (or --resume " +
            report.checkpoints.back() + ")";
  else if (!report.checkpoints.empty())
    where = "continue with --resume " + report.checkpoints.back();
  else
    where = "no checkpoint was written";
  std::printf("stopped %s; %s\n", how.c_str(), where.c_str());
}

// --resume-run ID: the recorded run and the checkpoint it continues from.
// Across nodes each reads them from the store node 0 records into (on a
// filesystem they share), and the rendezvous checks they start alike.
store::RunResume find_resumable_run(const ParsedArgs& a, const MultiNodeOptions& nodes) {
  for (const char* o : {"resume", "init-from", "no-store"})
    if (a.has(o))
      throw UsageError(std::string("option '--resume-run' continues a recorded run from its own "
                                   "checkpoint and records into it; it does not take '--") +
                       o + "'");
  const int64_t id = positive_integer("resume-run", a.values.at("resume-run"));
  const std::string path =
      store::resolve_store_path(a.values.count("store") ? a.values.at("store") : std::string());
  if (nodes.node_rank > 0 && !std::filesystem::exists(path))
    throw UsageError("node " + std::to_string(nodes.node_rank) + " finds no run store at '" + path +
                     "': --resume-run reads the run from the store node 0 records into, so every "
                     "node needs it (--store PATH on a filesystem they share); or give every node "
                     "--resume FILE, the checkpoint node 0 saved");
  const store::RunStore s(path);
  store::RunResume r = store::find_run_resume(s, id);
  for (const std::string& u : r.unusable)
    std::printf("note: %s; taking an earlier one\n", u.c_str());
  const TrainPosition& at = r.checkpoint->position;
  std::printf("resuming run %lld (%s) from %s: epoch %lld, batch %lld, step %lld\n",
              static_cast<long long>(id),
              std::string(store::run_status_name(r.run.summary.status)).c_str(),
              r.checkpoint_path.c_str(), static_cast<long long>(at.epoch + 1),
              static_cast<long long>(at.batch + 1), static_cast<long long>(at.step));
  return r;
}

Project resumed_project(const store::RunResume& r) {
  return parse_project(r.run.project_json,
                       "run " + std::to_string(r.run.summary.id) + "'s recorded project");
}

}  // namespace

int cmd_train(const std::vector<std::string>& args) {
  std::set<std::string> with_value = setup_options();
  for (const char* o : {"max-steps", "profile-steps", "trace", "summary", "store", "checkpoint-dir",
                        "resume", "init-from", "resume-run"})
    with_value.insert(o);
  for (const std::string& o : node_options()) with_value.insert(o);
  const ParsedArgs a =
      parse_args(args, with_value, {"help", "no-validation", "no-store", "eval-ema"});
  const bool resume_run = a.values.count("resume-run") > 0;
  if (resume_run && !a.has("help") && !a.positional.empty())
    throw UsageError("--resume-run takes the project from run " + a.values.at("resume-run") +
                     "; leave out '" + a.positional.front() + "'");
  if (const int code = usage_exit_code(a, kTrainUsage, resume_run ? 0 : 1, "train",
                                       "the project file (train <project.json>, or --resume-run "
                                       "ID to continue a recorded run)");
      code >= 0)
    return code;
  TrainOptions options;
  if (a.values.count("max-steps"))
    options.max_steps = positive_integer("max-steps", a.values.at("max-steps"));
  options.validate = !a.has("no-validation");
  if (a.values.count("profile-steps")) {
    const std::string& v = a.values.at("profile-steps");
    const auto colon = v.find(':');
    if (colon == std::string::npos)
      throw UsageError("option '--profile-steps' takes A:B (steps A to B-1), got '" + v + "'");
    const std::string lo = v.substr(0, colon);
    options.profile_begin = lo == "0" ? 0 : positive_integer("profile-steps", lo);
    options.profile_end = positive_integer("profile-steps", v.substr(colon + 1));
    if (options.profile_end <= options.profile_begin)
      throw UsageError("option '--profile-steps': B must be larger than A in '" + v + "'");
  }
  if (a.values.count("trace") && options.profile_begin < 0) {
    options.profile_begin = 1;  // skip the first step, which warms caches
    options.profile_end = 3;
  }

  MultiNodeOptions nodes = read_node_options(a, true);
  std::optional<store::RunResume> run_to_resume;
  if (resume_run) run_to_resume = find_resumable_run(a, nodes);
  read_checkpoint_options(a, options);
  if (run_to_resume) store::apply_run_resume(*run_to_resume, options);
  if (options.resume)
    nodes.starting_point = "resuming at step " + std::to_string(options.resume->position.step);
  TrainingJob job = run_to_resume
                        ? prepare_training(resumed_project(*run_to_resume), a, true, nodes)
                        : prepare_training(a.positional[0], a, true, nodes);
  const CompiledPlan& cp = job.plan();
  const TrainingContext& context = job.context();
  if (!job.device_note().empty()) std::fprintf(stderr, "note: %s\n", job.device_note().c_str());
  if (!run_to_resume) apply_project_init_from(cp.project(), options);  // --init-from wins
  const int64_t epochs = cp.project().training.epochs;
  // Tensor parallel: the plan is one tensor rank's share of the model.
  const int tensor = cp.tensor_ranks();
  const std::string mesh = tensor > 1 ? " as mesh data=" + std::to_string(cp.data_ranks()) +
                                            " x tensor=" + std::to_string(tensor)
                                      : std::string();
  std::printf("training %s: %lld parameters%s, %s, global batch %lld on %s%s, %lld epoch%s\n",
              cp.project().name.c_str(), static_cast<long long>(cp.analysis().total_params),
              tensor > 1 ? " on each tensor rank" : "", context.dataset.c_str(),
              static_cast<long long>(cp.project().training.global_batch),
              cp.project().training.devices.str().c_str(), mesh.c_str(),
              static_cast<long long>(epochs), epochs == 1 ? "" : "s");
  if (context.global_world != context.ranks) {
    std::printf("global ranks %d-%d of %d on this node%s\n", context.first_rank,
                context.first_rank + context.ranks - 1, context.global_world,
                context.leads ? "; this node saves checkpoints and records the run"
                              : "; node 0 saves checkpoints and records the run");
  }
  std::fflush(stdout);

  double elapsed = 0;
  int64_t epochs_run = 0;  // a resumed run starts past epoch 1
  TrainCallbacks cb;
  cb.on_epoch = [&](const EpochReport& e) {
    elapsed += e.seconds;
    const double eta =
        elapsed / static_cast<double>(++epochs_run) * static_cast<double>(epochs - e.epoch - 1);
    std::printf("epoch %lld/%lld", static_cast<long long>(e.epoch + 1),
                static_cast<long long>(epochs));
    if (!e.complete())
      std::printf(" (cut short: %lld of %lld steps)", static_cast<long long>(e.steps),
                  static_cast<long long>(e.batches));
    std::printf("  loss %.4f  top-1 %.2f%%", e.train_loss, 100 * e.train_top1);
    if (e.validated)
      std::printf("  val_loss %.4f  val_top-1 %.2f%%  val_top-5 %.2f%%", e.val_loss,
                  100 * e.val_top1, 100 * e.val_top5);
    std::printf("  %.0f img/s  %s  ETA %s\n", e.images_per_s, clock_text(e.seconds).c_str(),
                clock_text(eta).c_str());
    std::fflush(stdout);
  };
  cb.on_init_from = [&](int64_t loaded, const std::vector<std::string>& fresh) {
    std::printf("starting from %s: %lld weight and statistics tensor%s taken",
                options.init_from_source.c_str(), static_cast<long long>(loaded),
                loaded == 1 ? "" : "s");
    if (fresh.empty())
      std::printf(", none fresh\n");
    else {
      std::printf(", %zu fresh:\n", fresh.size());
      for (const std::string& f : fresh) std::printf("  %s\n", f.c_str());
    }
    std::fflush(stdout);
  };
  cb.on_checkpoint = [](const CheckpointReport& k) {
    if (k.error.empty()) return;
    std::fprintf(stderr, "warning: %s; training goes on, the checkpoints before it are kept\n",
                 k.error.c_str());
  };
  job.check(options);
  RunRecording recording(a, cp, context, options, context.leads,
                         run_to_resume ? run_to_resume->run.summary.id : 0);
  recording.attach(cb);
  // A recorded run keeps the weights it ends with, so predict, onnx export
  // and the workbench's Try the Model find them without a checkpoint folder.
  options.final_weights = recording.final_weights_path();
  // From here to the end a signal stops training at a step boundary and the
  // run is still recorded; before, there is nothing to save and the default
  // action (ending the process) is what a user waiting for a rendezvous wants.
  const StopSignals signals;
  options.stop = signals.flag();
  TrainReport report;
  try {
    report = job.train(options, cb);
  } catch (const std::exception& e) {
    recording.failed(e.what());
    throw;
  }
  recording.ended(report);
  for (const std::string& path : report.checkpoints) std::printf("checkpoint %s\n", path.c_str());
  if (!report.final_weights.empty())
    std::printf("final weights %s\n", report.final_weights.c_str());
  if (!report.final_weights_error.empty())
    std::fprintf(stderr, "warning: the final weights were not kept: %s\n",
                 report.final_weights_error.c_str());
  if (report.stopped)
    print_stop(report, signals.received(), options, context.leads, recording.run_id());
  else if (report.reached_max_steps)
    std::printf("finished at --max-steps %lld\n", static_cast<long long>(report.steps));

  if (a.values.count("trace")) {
    write_file(a.values.at("trace"), chrome_trace_json(report.profile));
    for (const StreamOverlap& o : stream_overlaps(report.profile))
      if (o.overlap_us > 0)
        std::printf("overlap rank %d %s/%s: %.1f us (%.0f%% of %s)\n", o.rank,
                    std::string(stream_kind_name(o.a)).c_str(),
                    std::string(stream_kind_name(o.b)).c_str(), o.overlap_us,
                    100 * o.overlap_us / std::max(1e-9, std::min(o.busy_a_us, o.busy_b_us)),
                    o.busy_a_us < o.busy_b_us ? std::string(stream_kind_name(o.a)).c_str()
                                              : std::string(stream_kind_name(o.b)).c_str());
    for (const GraphOverlap& o : comm_overlaps(report.profile))
      std::printf("overlap rank %d DEEP_COMM under FIRST_LAYER_BWD: %.1f of %.1f us (%.0f%%)\n",
                  o.rank, o.overlap_us, o.busy_a_us, 100 * o.fraction_of_a());
    for (const GraphOverlap& o : hidden_communication(report.profile))
      std::printf(
          "communication rank %d: %.1f us of collectives, %.1f us of them (%.0f%%) hidden under "
          "kernels on other streams, %.1f us of kernels in all\n",
          o.rank, o.busy_a_us, o.overlap_us, 100 * o.fraction_of_a(), o.busy_b_us);
  }
  if (a.values.count("summary")) {
    nlohmann::json s;
    s["project"] = cp.project().name;
    s["epochs"] = nlohmann::json::array();
    for (const EpochReport& e : report.epochs) {
      nlohmann::json j = {{"epoch", e.epoch + 1},           {"steps", e.steps},
                          {"batches", e.batches},           {"complete", e.complete()},
                          {"train_loss", e.train_loss},     {"train_top1", e.train_top1},
                          {"images_per_s", e.images_per_s}, {"seconds", e.seconds}};
      if (e.validated) {
        j["val_loss"] = e.val_loss;
        j["val_top1"] = e.val_top1;
        j["val_top5"] = e.val_top5;
      }
      s["epochs"].push_back(std::move(j));
    }
    s["final"] = s["epochs"].empty() ? nlohmann::json::object() : s["epochs"].back();
    s["final"]["steps"] = report.steps;
    s["final"]["stopped"] = report.stopped;
    s["final"]["reached_max_steps"] = report.reached_max_steps;
    write_file(a.values.at("summary"), s.dump(2) + "\n");
  }
  // A signal that came after training had ended still says the process was stopped.
  return signals.received() ? signal_exit_code(signals.received()) : 0;
}

}  // namespace tr::cli
