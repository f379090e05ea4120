// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cuda/host_collectives.h"

#include <stdexcept>
#include <utility>

namespace tr::cuda {

namespace {

std::string describe(const HostBatch& b) {
  std::string s;
  for (const HostCollective& c : b.calls) {
    if (!s.empty()) s += ", ";
    s += c.kind == HostCollectiveKind::BROADCAST
             ? "broadcast from " + std::to_string(c.root)
             : std::string(c.kind == HostCollectiveKind::ALL_REDUCE_MEAN ? "mean" : "sum") +
                   " all-reduce";
    s += " of " + std::to_string(c.bytes) + " bytes";
  }
  return "[" + s + "]";
}

bool same_calls(const HostBatch& a, const HostBatch& b) {
  if (a.calls.size() != b.calls.size()) return false;
  for (size_t i = 0; i < a.calls.size(); ++i) {
    const HostCollective &x = a.calls[i], &y = b.calls[i];
    if (x.kind != y.kind || x.bytes != y.bytes || x.root != y.root) return false;
  }
  return true;
}

}  // namespace

HostRendezvous::HostRendezvous(int world, Issue issue)
    : world_(world), issue_(std::move(issue)), pending_(static_cast<size_t>(world)) {}

void HostRendezvous::submit(int rank, HostBatch batch) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!aborted_.empty()) throw std::runtime_error(aborted_);
  if (failure_) std::rethrow_exception(failure_);
  pending_[static_cast<size_t>(rank)].push_back(std::move(batch));
  issue_ready();
}

void HostRendezvous::issue_ready() {
  for (;;) {
    for (const auto& q : pending_)
      if (q.empty()) return;
    std::vector<HostBatch> round;
    for (auto& q : pending_) {
      round.push_back(std::move(q.front()));
      q.pop_front();
    }
    try {
      for (int r = 1; r < world_; ++r)
        if (!same_calls(round[0], round[static_cast<size_t>(r)]))
          throw std::logic_error("CUDA backend: the ranks disagree on a host collective: rank 0 " +
                                 describe(round[0]) + ", rank " + std::to_string(r) + " " +
                                 describe(round[static_cast<size_t>(r)]));
      issue_(round);
    } catch (...) {
      failure_ = std::current_exception();
      issued_.notify_all();
      throw;
    }
    issued_.notify_all();
  }
}

void HostRendezvous::settle(int rank) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto& mine = pending_[static_cast<size_t>(rank)];
  issued_.wait(lock, [&] { return mine.empty() || !aborted_.empty() || failure_; });
  // A failed round leaves every rank without its collective: fatal for all.
  if (failure_) std::rethrow_exception(failure_);
  if (!mine.empty()) throw std::runtime_error(aborted_);
}

void HostRendezvous::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.empty()) aborted_ = reason.empty() ? "collectives aborted" : reason;
  }
  issued_.notify_all();
}

}  // namespace tr::cuda
