// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingSession: one compiled project running on one backend. It owns the
// arenas' contents (initial weights and scalars), captures every graph of
// every rank once, and runs the step schedule of ENGINE.md §6 and the
// validation pass as launches of captured graphs only. Each rank is driven by
// its own host thread; every method taking `rank` is called from that rank's
// thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "compile/compiler.h"
#include "data/batch.h"
#include "runtime/backend.h"
#include "runtime/graph_atlas.h"
#include "runtime/graph_capture.h"
#include "runtime/weight_init.h"

namespace tr {

struct StepMetrics {
  double loss = 0;  // mean over the global batch
  double top1 = 0;  // fraction
  double top5 = 0;
  double samples = 0;
  bool overflow = false;  // a NaN/Inf gradient or loss was seen
  double loss_scale = 0;  // AMP: the dynamic loss scale after the step; 0 without AMP
};

// Host staging buffers a rank's TRANSFER graphs copy from: [variant][A/B].
struct RankStaging {
  std::vector<std::array<TransferHost, 2>> per_variant;
};

// The tensors that carry over from one step to the next (and go into a
// checkpoint), in address order: BN running statistics, master and EMA
// weights, optimizer moments.
std::vector<DTensorId> persistent_tensors(const CompiledProject& cp);

class TrainingSession {
 public:
  // `cp` and `backend` must outlive the session.
  TrainingSession(const CompiledProject& cp, Backend& backend);
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  const CompiledProject& compiled() const noexcept { return cp_; }
  // Ranks over all nodes; the methods take this process's local ranks.
  int world() const noexcept { return world_; }
  int local_ranks() const noexcept { return local_; }

  // Allocates the arenas, writes the initial weights and scalars into (local)
  // rank 0 and broadcasts them from global rank 0 to every rank.
  void initialize(uint64_t seed);
  // Replaces the state (tensors of persistent_tensors(cp), and the scalars
  // when `scalars` is not empty: ScalarSlot::COUNT values) in rank 0 and
  // broadcasts it to every rank. Call after initialize, before training.
  void load_state(const std::vector<InitialTensor>& tensors, const std::vector<float>& scalars);

  // Captures every graph of `rank`; TRANSFER graphs read from `staging`, which
  // must stay at the same addresses for the life of the session (a variant
  // without staging buffers gets no TRANSFER graphs).
  void capture(int rank, const RankStaging& staging);

  // Enqueues the step schedule for the batch already in device buffer
  // `buffer` (variant `variant`) and returns without waiting for it. `next`
  // (may be null) is the batch to transfer while this one computes. The
  // step's first work waits for the step before to finish on the device, so
  // the host may enqueue step s + 1 before it takes step s's result: the
  // device never idles while the host reads a result, reports it and stages
  // the next batch. At most two steps are unfinished at a time.
  void enqueue_step(int rank, int variant, int buffer, const Batch* next, int next_variant,
                    double lr, int64_t step);
  // Blocks until step `step` (enqueued, not yet finished) is done; its metrics.
  StepMetrics finish_step(int rank, int64_t step);
  // Launches the transfer of `batch` into its device buffer (the first batch of an epoch).
  void transfer(int rank, int variant, int buffer);

  // Validation: reset the accumulated metrics and refresh the BN inference
  // parameters. With `ema_weights` the EMA weights (E) stand in for the
  // master weights (W) until end_validation puts W back.
  void begin_validation(int rank, bool ema_weights = false);
  // One validation batch in `buffer` (already staged in host memory): transfer and infer.
  void validate_batch(int rank, int variant, int buffer);
  // All-reduce and read the accumulated validation metrics (and restore W).
  StepMetrics end_validation(int rank);

  // Reads a DTensor of `rank` back to the host (FP32 tensors), for tests and checkpoints;
  // a feature map in channel blocks comes back NHWC.
  std::vector<float> read_tensor(int rank, DTensorId id, int variant = 0);
  // ZeRO-1: `rank`'s moment shards (runtime/moment_shards.h), and under
  // tensor parallel its parts of the split tensors (plan/tensor_shards.h),
  // read on its own streams; load_shards writes every local rank's ZeRO
  // shards (after load_state).
  std::map<DTensorId, std::vector<float>> read_shards(int rank);
  void load_shards(const std::vector<std::map<DTensorId, std::vector<float>>>& shards);
  // The S_SCALARS tensor of `rank` (ScalarSlot::COUNT values).
  std::vector<float> read_scalars(int rank);
  // The last validation's confusion counts (after end_validation: every
  // rank's, summed), classes x classes, row = true label, column = predicted.
  std::vector<int64_t> read_confusion(int rank);

 private:
  // Runs a compute graph once, uncaptured (Backend::warm_up_before_capture).
  void warm_up(const ResolvedGraph& rg);
  struct RankState;
  void launch(int rank, GraphId id, int variant, StreamKind stream);
  void launch_if(int rank, GraphId id, int variant, StreamKind stream);
  // The 16-bit weight copy (A) from the master weights, on UPDATE; nothing under FP32.
  void cast_weights(int rank, int variant);
  // The result tensor `id` and the scalars into host slot `slot` (0 or 1),
  // on UPDATE after everything before; take_result waits for them.
  void enqueue_result(int rank, DTensorId id, int slot);
  StepMetrics take_result(int rank, int slot);
  void replicate_from_rank0();
  void copy_weights(int rank, ByteRange from_device, float* to_host, const char* label);
  void restore_weights(int rank, ByteRange to_device, float* from_host, const char* label);

  const CompiledProject& cp_;
  Backend& backend_;
  int world_;  // global
  int local_;  // this process's ranks
  std::vector<std::unique_ptr<RankState>> ranks_;
};

}  // namespace tr
