// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for what the run store makes of the JSON texts it keeps
// (engine/store/): a run's training settings (hyper_json) and project
// (project_json), read back by RunStore::run and flattened by compare_runs;
// an epoch's per-class accuracy and confusion matrix, parsed by
// RunStore::epochs. The input is those four texts, separated by NUL bytes
// (missing ones are empty; empty training settings are stored as "{}"). The
// target records a run with them in a store of its own (a temporary file:
// begin_run takes the first two, raw SQL puts the other two in the epoch
// row, as a hand-edited store could hold anything), then reads it back,
// compares it with a run of valid texts and exports its curves. Allowed
// outcomes: none but success; the readers ignore what is not JSON of the
// expected shape. Any exception, a crash, a hang, a leak or a sanitizer
// report is a finding.
#include <sqlite3.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <renaissance/run_compare.h>
#include <renaissance/run_export.h>
#include <renaissance/run_records.h>
#include <renaissance/run_store.h>
#include "fuzz_support.h"

namespace {

using tr::store::EpochRecord;
using tr::store::RunStart;
using tr::store::RunStatus;
using tr::store::RunStore;

// The texts a trainer records, for the run every fuzzed one is compared with.
constexpr const char* kHyper =
    R"({"cpu_threads":1,"devices":"cpu:1","ema":{"decay":0.999,"enabled":false},"epochs":2,)"
    R"("global_batch":64,"optimizer":{"lr":0.05,"momentum":0.9,"nesterov":false,"type":"sgd",)"
    R"("weight_decay":0.0005},"precision":"fp32","schedule":{"type":"cosine"},"seed":3})";
constexpr const char* kProject =
    R"({"format":1,"name":"fuzz","model":{"nodes":[{"id":"input","type":"Input",)"
    R"("params":{"height":4,"width":4,"channels":1},"pos":[0,0]}],"edges":[]},)"
    R"("training":{"epochs":2},"description":"the baseline"})";

std::vector<std::string> split_at_nul(const uint8_t* data, size_t size, size_t parts) {
  std::vector<std::string> out(parts);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t at = 0;
  for (size_t i = 0; i < parts && at <= text.size(); ++i) {
    const size_t end = i + 1 == parts ? text.size() : std::min(text.find('\0', at), text.size());
    out[i] = std::string(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

EpochRecord epoch_zero() {
  EpochRecord e;
  e.train_loss = 1.5;
  e.train_top1 = 0.5;
  e.val_loss = 1.25;
  e.val_top1 = 0.625;
  e.images_per_s = 100;
  e.seconds = 2;
  e.confusion = {3, 1, 0, 4};
  return e;
}

int64_t record(RunStore& store, const std::string& hyper, const std::string& project) {
  RunStart start;
  start.name = "fuzz";
  start.hyper_json = hyper;
  start.project_json = project;
  start.devices = "cpu:1";
  start.precision = "fp32";
  const int64_t run = store.begin_run(start);
  const EpochRecord e = epoch_zero();
  store.append(run, {}, {&e, 1});
  store.end_run(run, RunStatus::Finished);
  return run;
}

// The store, a run of valid texts, and a second connection for the raw SQL.
struct Fixture {
  tr::fuzz::TempFile file{"fuzz_run_store_json", ".sqlite"};
  tr::fuzz::TempFile wal{"fuzz_run_store_json", ".sqlite-wal"};  // removed at exit
  tr::fuzz::TempFile shm{"fuzz_run_store_json", ".sqlite-shm"};
  std::unique_ptr<RunStore> store;
  sqlite3* raw = nullptr;
  sqlite3_stmt* set_epoch = nullptr;
  int64_t baseline = 0;

  Fixture() {
    std::remove(file.path().c_str());
    store = std::make_unique<RunStore>(file.path());
    baseline = record(*store, kHyper, kProject);
    FUZZ_CHECK(sqlite3_open_v2(file.path().c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) ==
               SQLITE_OK);
    sqlite3_busy_timeout(raw, 10000);
    FUZZ_CHECK(sqlite3_prepare_v2(raw,
                                  "UPDATE epoch_metrics SET per_class_accuracy = ?2, "
                                  "confusion = ?3 WHERE run_id = ?1",
                                  -1, &set_epoch, nullptr) == SQLITE_OK);
  }
  ~Fixture() {
    sqlite3_finalize(set_epoch);
    sqlite3_close(raw);
    store.reset();
  }
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  void set_epoch_texts(int64_t run, const std::string& accuracy, const std::string& confusion) {
    sqlite3_reset(set_epoch);
    sqlite3_bind_int64(set_epoch, 1, run);
    sqlite3_bind_text64(set_epoch, 2, accuracy.data(), accuracy.size(), SQLITE_TRANSIENT,
                        SQLITE_UTF8);
    sqlite3_bind_text64(set_epoch, 3, confusion.data(), confusion.size(), SQLITE_TRANSIENT,
                        SQLITE_UTF8);
    FUZZ_CHECK(sqlite3_step(set_epoch) == SQLITE_DONE);
    FUZZ_CHECK(sqlite3_changes(raw) == 1);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture f;
  const std::vector<std::string> texts = split_at_nul(data, size, 4);
  const std::string& hyper = texts[0];
  const std::string& project = texts[1];
  const int64_t run = record(*f.store, hyper, project);
  f.set_epoch_texts(run, texts[2], texts[3]);

  const tr::store::RunDetail d = f.store->run(run);
  FUZZ_CHECK(d.hyper_json == (hyper.empty() ? std::string("{}") : hyper));
  FUZZ_CHECK(d.project_json == project);
  const std::vector<EpochRecord> epochs = f.store->epochs(run);
  FUZZ_CHECK(epochs.size() == 1 && epochs[0].epoch == 0);

  // One metric where higher is better, one where lower is.
  for (const char* metric : {"val_top1", "train_loss"}) {
    const tr::store::RunComparison c = tr::store::compare_runs(*f.store, {f.baseline, run}, metric);
    FUZZ_CHECK(c.runs.size() == 2 && c.final_metric.size() == 2);
    FUZZ_CHECK(c.metric_by_epoch.size() == 1);
    for (const tr::store::ConfigDifference& diff : c.differences) {
      FUZZ_CHECK(diff.values.size() == 2 && diff.values[0] != diff.values[1]);
    }
  }
  std::ostringstream csv;
  tr::store::write_curves_csv(*f.store, {run}, csv);
  FUZZ_CHECK(csv.str().rfind(tr::store::kCurvesCsvHeader, 0) == 0);
  FUZZ_CHECK(!f.store->list_runs().empty());

  f.store->delete_run(run);
  return 0;
}
