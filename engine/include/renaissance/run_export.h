// SPDX-License-Identifier: GPL-3.0-or-later
// CSV export of runs' step and epoch curves: one table, one row per step and
// per epoch, columns as docs/run-store.md describes them.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include <renaissance/run_store.h>

namespace tr::store {

// run_id,kind,epoch,step,loss,top1,lr,loss_scale,images_per_s,val_loss,val_top1,val_top5,seconds,
// epoch_steps,epoch_batches: an epoch row's batches trained of how many
// (fewer for an epoch cut short; empty where the store did not know them).
extern const char* const kCurvesCsvHeader;

// Throws StoreError for an unknown run before writing anything.
void write_curves_csv(const RunStore& store, const std::vector<int64_t>& runs, std::ostream& out);

}  // namespace tr::store
