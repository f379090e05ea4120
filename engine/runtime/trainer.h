// SPDX-License-Identifier: GPL-3.0-or-later
// The trainer: epochs of the step schedule over the input pipeline, the last
// partial batch through its variant, validation after every epoch, the
// learning-rate schedule, profiling of chosen steps and a stop request that
// takes effect after the step on its way (each step's result is read once
// the next is enqueued), checkpoints and resuming from one. One host
// thread per rank of this process; its rank 0 reports, and global rank 0
// (node 0 when training across machines) saves checkpoints. The data split
// follows global ranks. When one rank fails, the others of this process are
// released from their collectives and the first error reaches the caller.
#pragma once

#include <renaissance/training.h>

#include "compile/compiler.h"
#include "data/data_source.h"
#include "runtime/backend.h"

namespace tr {

// Throws UsageError for a dataset that does not match the project, a
// checkpoint that does not fit it (or is at max_steps already), or an
// unwritable checkpoint folder (creating it), before training anything.
void check_train_options(const CompiledProject& cp, const Backend& backend, const DataSource& data,
                         const TrainOptions& options);

// Throws what check_train_options does, and
// std::runtime_error when the loss becomes NaN (with the step number).
TrainReport train(const CompiledProject& cp, Backend& backend, const DataSource& data,
                  const TrainOptions& options, const TrainCallbacks& callbacks = {});

}  // namespace tr
