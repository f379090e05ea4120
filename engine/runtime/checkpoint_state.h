// SPDX-License-Identifier: GPL-3.0-or-later
// Between a TrainingSession and a Checkpoint: rank 0's persistent state into
// a checkpoint, and a checkpoint, checked against the compiled project, into
// every rank. The state is replicated, so any rank count can save or load it.
#pragma once

#include <string>

#include <renaissance/checkpoint.h>
#include "compile/compiler.h"
#include "runtime/moment_shards.h"
#include "runtime/training_session.h"

namespace tr {

// Reads `rank`'s state (call from that rank's thread, between steps). Under
// ZeRO-1 `shards` holds every rank's moment shards, which each rank read on
// its own thread (TrainingSession::read_shards); null leaves the moments out.
Checkpoint take_checkpoint(const CompiledProject& cp, TrainingSession& session,
                           const TrainPosition& position, int rank = 0,
                           const RankShards* shards = nullptr);

// Throws UsageError naming `source` when the checkpoint cannot continue this
// project: another project, another seed or global batch (the data order
// depends on them), another optimizer, or tensors that are missing, extra or
// of another shape. An EMA copy missing from the checkpoint starts from the
// weights; one the project does not keep is ignored.
void check_checkpoint(const CompiledProject& cp, const Checkpoint& checkpoint,
                      const std::string& source);

// Checks, then loads the state into rank 0 and broadcasts it; returns where
// training continues. Call after TrainingSession::initialize, before capture.
TrainPosition restore_checkpoint(const CompiledProject& cp, TrainingSession& session,
                                 const Checkpoint& checkpoint, const std::string& source);

// Fine-tuning (TrainOptions::init_from): the weights (W, and the EMA from
// them) and BN running statistics of `checkpoint` that fit the project by
// name and shape, loaded into rank 0 and broadcast; optimizer moments, the
// position and the scalars stay a new run's. Returns how many tensors were
// loaded, and in `fresh` those that were not, with why. Throws UsageError
// naming `source` when not one tensor fits. Call after initialize.
int64_t init_from_checkpoint(const CompiledProject& cp, TrainingSession& session,
                             const Checkpoint& checkpoint, const std::string& source,
                             std::vector<std::string>& fresh);

}  // namespace tr
