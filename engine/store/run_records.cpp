// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/run_records.h>

#include <cmath>

#include "store/sqlite_db.h"

namespace tr::store {

namespace {

constexpr std::string_view kStatusNames[] = {"running", "finished", "stopped", "failed",
                                             "interrupted"};

}  // namespace

std::string_view run_status_name(RunStatus s) noexcept {
  return kStatusNames[static_cast<int>(s)];
}

std::optional<RunStatus> parse_run_status(std::string_view text) noexcept {
  for (size_t i = 0; i < std::size(kStatusNames); ++i)
    if (kStatusNames[i] == text) return static_cast<RunStatus>(i);
  return std::nullopt;
}

bool ended_early(RunStatus s) noexcept {
  return s == RunStatus::Stopped || s == RunStatus::Interrupted || s == RunStatus::Failed;
}

void check_resumable(const RunDetail& d) {
  const std::string id = "run " + std::to_string(d.summary.id);
  if (d.summary.status == RunStatus::Running)
    throw StoreError(id + " is still being recorded by process " + std::to_string(d.writer_pid) +
                     " on " + d.writer_host + "; it can be resumed once it has ended");
  if (d.summary.status == RunStatus::Finished)
    throw StoreError(id +
                     " finished; to train it further start a new run from one of its "
                     "checkpoints (train --resume FILE --epochs N, or --init-from FILE)");
}

int64_t confusion_classes(size_t entries) noexcept {
  const auto k = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(entries))));
  return static_cast<size_t>(k * k) == entries ? k : -1;
}

std::vector<double> per_class_accuracy(const std::vector<int64_t>& confusion) {
  const int64_t k = confusion_classes(confusion.size());
  if (k < 0)
    throw StoreError("a confusion matrix must be square (classes x classes), got " +
                     std::to_string(confusion.size()) + " entries");
  std::vector<double> out(static_cast<size_t>(k), 0.0);
  for (int64_t r = 0; r < k; ++r) {
    int64_t row = 0;
    for (int64_t c = 0; c < k; ++c) row += confusion[static_cast<size_t>(r * k + c)];
    if (row > 0)
      out[static_cast<size_t>(r)] =
          static_cast<double>(confusion[static_cast<size_t>(r * k + r)]) / static_cast<double>(row);
  }
  return out;
}

}  // namespace tr::store
