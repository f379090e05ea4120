// SPDX-License-Identifier: GPL-3.0-or-later
// Side-by-side comparison of runs: the configuration entries that differ
// between them, their final metrics, and one metric epoch by epoch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <renaissance/run_store.h>

namespace tr::store {

// A configuration entry ("training/optimizer/lr") with its value in each run;
// "-" where a run does not have it.
struct ConfigDifference {
  std::string key;
  std::vector<std::string> values;
};

struct RunComparison {
  std::vector<RunDetail> runs;
  std::vector<ConfigDifference> differences;  // only entries whose values differ
  std::string metric;
  // metric_by_epoch[epoch][i]: run i's value in that epoch, absent when it has none.
  std::vector<std::vector<std::optional<double>>> metric_by_epoch;
  std::vector<std::optional<double>> final_metric;  // per run: its last epoch's value
  std::optional<size_t> best;                       // index into runs
};

// train_loss, train_top1, val_loss, val_top1, val_top5, images_per_s.
const std::vector<std::string_view>& comparable_metrics() noexcept;
bool lower_is_better(std::string_view metric) noexcept;

// Throws StoreError for an unknown run or metric (naming the ones it takes).
RunComparison compare_runs(const RunStore& store, const std::vector<int64_t>& runs,
                           const std::string& metric = "val_top1");

// The value of `metric` in an epoch row, if it has one.
std::optional<double> epoch_metric(const EpochRecord& e, std::string_view metric);

}  // namespace tr::store
