// SPDX-License-Identifier: GPL-3.0-or-later
// RankBarrier: the rendezvous of the rank threads (collectives, the
// trainer's profiling boundaries) that can be called off. When one rank
// fails it never arrives, and a plain std::barrier would leave every other
// rank blocked for ever; abort() wakes them with CollectiveAborted instead.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

namespace tr {

// A rank gave up waiting for the others because one of them failed; the
// message names the original failure.
class CollectiveAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RankBarrier {
 public:
  explicit RankBarrier(int count);
  int count() const noexcept { return count_; }
  // Blocks until `count` threads have arrived in this round. Throws
  // CollectiveAborted once abort() was called (also to threads already waiting).
  void arrive_and_wait();
  // Final: every present and future wait throws.
  void abort(const std::string& reason);
  bool aborted() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  const int count_;
  int arrived_ = 0;
  uint64_t round_ = 0;
  bool aborted_ = false;
  std::string reason_;
};

}  // namespace tr
