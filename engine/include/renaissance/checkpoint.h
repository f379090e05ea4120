// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoint files (docs/checkpoint-format.md): the training state a run
// continues from: persistent tensors (master and EMA weights, optimizer
// moments, BN running statistics), the loss scale, the position (epoch,
// batch, step: the state of every counter-based random stream), and the
// project as it was. The state is replicated across ranks, so a checkpoint
// does not depend on the world size it was saved from.
#pragma once

#include <string>

#include <renaissance/checkpoint_values.h>

namespace tr {

// Writes to `path` through a temporary file (`path`.tmp) that is synced to
// the disk before a rename puts it in place, and syncs the folder after: a
// crash, a kill or a power cut at any point leaves the previous checkpoint
// or this one under `path`, whole. Throws UsageError naming the file and the
// system's reason (a full disk, a folder gone), the previous one untouched.
void write_checkpoint(const Checkpoint& checkpoint, const std::string& path);

// Throws UsageError naming the file and what is wrong with it (missing,
// not a checkpoint, newer format, truncated, damaged header or tensor data).
Checkpoint read_checkpoint(const std::string& path);

}  // namespace tr
