// SPDX-License-Identifier: GPL-3.0-or-later
// The run store's schema: its version, the application id that marks a file
// as a run store, and the forward migrations from every older version.
#pragma once

#include <cstdint>

namespace tr::store {

class SqliteDb;

// PRAGMA application_id of every run store ("RnWb"), so a foreign SQLite
// file is never mistaken for one (and never migrated).
constexpr int32_t kStoreApplicationId = 0x526e5762;

// PRAGMA user_version of a store this build writes. 1: runs, step and epoch
// metrics; 2: checkpoints, tags, notes; 3: loss scale per step, per-class
// accuracy and confusion matrix per epoch; 4: the resumptions of a run;
// 5: how many of its batches each epoch trained (an epoch cut short);
// 6: the file of the weights a run ended with.
constexpr int kStoreSchemaVersion = 6;

// Brings a store from `from_version` (0: an empty database) to
// kStoreSchemaVersion. The caller holds a write transaction.
void migrate_store(SqliteDb& db, int from_version);

}  // namespace tr::store
