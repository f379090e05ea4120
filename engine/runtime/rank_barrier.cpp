// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/rank_barrier.h"

namespace tr {

RankBarrier::RankBarrier(int count) : count_(count) {
  if (count < 1) throw std::invalid_argument("RankBarrier: count must be at least 1");
}

void RankBarrier::arrive_and_wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) throw CollectiveAborted(reason_);
  if (++arrived_ == count_) {
    arrived_ = 0;
    ++round_;
    cv_.notify_all();
    return;
  }
  const uint64_t round = round_;
  cv_.wait(lock, [&] { return round_ != round || aborted_; });
  // A round that completed before the abort still counts as passed.
  if (round_ == round) throw CollectiveAborted(reason_);
}

void RankBarrier::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
    reason_ = "another rank stopped: " + reason;
  }
  cv_.notify_all();
}

bool RankBarrier::aborted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return aborted_;
}

}  // namespace tr
