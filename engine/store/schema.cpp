// SPDX-License-Identifier: GPL-3.0-or-later
#include "store/schema.h"

#include <string>

#include "store/sqlite_db.h"

namespace tr::store {

namespace {

// Each script takes the store from the version before it to `version`.
// The configuration texts (kilobytes for a large project) live apart from
// `runs`, whose row every commit updates and every list reads.
// Released scripts never change: stores in the field were made by them, and
// the migration tests rebuild the old versions by hand to hold them to that.
struct Migration {
  int version;
  const char* sql;
};

constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  status TEXT NOT NULL
    CHECK (status IN ('running', 'finished', 'stopped', 'failed', 'interrupted')),
  started_at REAL NOT NULL,
  ended_at REAL,
  updated_at REAL NOT NULL,
  devices TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  precision TEXT NOT NULL,
  seed INTEGER NOT NULL,
  engine_version TEXT NOT NULL,
  git_commit TEXT NOT NULL,
  writer_host TEXT NOT NULL,
  writer_pid INTEGER NOT NULL,
  writer_start TEXT NOT NULL,
  error TEXT,
  steps INTEGER NOT NULL DEFAULT 0,
  epochs INTEGER NOT NULL DEFAULT 0,
  final_train_loss REAL,
  final_train_top1 REAL,
  final_val_loss REAL,
  final_val_top1 REAL,
  final_val_top5 REAL
);
CREATE INDEX runs_by_status ON runs(status);
CREATE TABLE run_configs (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  hyper_json TEXT NOT NULL,
  project_json TEXT NOT NULL
);
CREATE TABLE step_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  epoch INTEGER NOT NULL,
  loss REAL,
  top1 REAL,
  lr REAL,
  images_per_s REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;
CREATE TABLE epoch_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch INTEGER NOT NULL,
  train_loss REAL,
  train_top1 REAL,
  val_loss REAL,
  val_top1 REAL,
  val_top5 REAL,
  images_per_s REAL,
  seconds REAL,
  ended_at REAL,
  PRIMARY KEY (run_id, epoch)
) WITHOUT ROWID;
)sql"},
    {2, R"sql(
CREATE TABLE checkpoints (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  epoch INTEGER,
  step INTEGER,
  metrics_json TEXT,
  created_at REAL NOT NULL
);
CREATE INDEX checkpoints_by_run ON checkpoints(run_id);
CREATE TABLE tags (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY (run_id, tag)
) WITHOUT ROWID;
CREATE TABLE notes (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  text TEXT NOT NULL,
  created_at REAL NOT NULL
);
CREATE INDEX notes_by_run ON notes(run_id);
)sql"},
    {3, R"sql(
ALTER TABLE step_metrics ADD COLUMN loss_scale REAL;
ALTER TABLE epoch_metrics ADD COLUMN per_class_accuracy TEXT;
ALTER TABLE epoch_metrics ADD COLUMN confusion TEXT;
)sql"},
    {4, R"sql(
CREATE TABLE run_resumes (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  resumed_at REAL NOT NULL,
  previous_status TEXT NOT NULL,
  last_update REAL NOT NULL,
  checkpoint_path TEXT NOT NULL,
  from_step INTEGER NOT NULL,
  retrained_steps INTEGER NOT NULL,
  writer_pid INTEGER NOT NULL
);
CREATE INDEX run_resumes_by_run ON run_resumes(run_id);
)sql"},
    {5, R"sql(
ALTER TABLE epoch_metrics ADD COLUMN steps INTEGER;
ALTER TABLE epoch_metrics ADD COLUMN batches INTEGER;
)sql"},
    {6, R"sql(
ALTER TABLE runs ADD COLUMN final_weights TEXT;
)sql"},
};

static_assert(std::size(kMigrations) == kStoreSchemaVersion,
              "one migration script per schema version");

}  // namespace

void migrate_store(SqliteDb& db, int from_version) {
  if (from_version == 0)
    db.exec(("PRAGMA application_id = " + std::to_string(kStoreApplicationId)).c_str());
  for (const Migration& m : kMigrations) {
    if (m.version <= from_version) continue;
    db.exec(m.sql);
    // PRAGMA takes no bound parameters; the value is our own constant.
    db.exec(("PRAGMA user_version = " + std::to_string(m.version)).c_str());
  }
}

}  // namespace tr::store
