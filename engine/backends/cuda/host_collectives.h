// SPDX-License-Identifier: GPL-3.0-or-later
// The rendezvous behind the CUDA backend's host-issued collectives. NCCL
// requires that one host thread driving several devices puts the calls of all
// of them in one ncclGroupStart/End (a lone rank's call may block for the
// others), and the Backend contract lets a single thread issue for every
// rank. So each rank's calls (one call, or one group_start..group_end) queue
// here until every rank has submitted its matching batch; then the batches of
// all ranks go to NCCL in one group. A rank's later work on its streams must
// wait for that (settle), or it would run ahead of its collective.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <renaissance/stream_kind.h>

namespace tr::cuda {

enum class HostCollectiveKind : uint8_t { ALL_REDUCE_SUM, ALL_REDUCE_MEAN, BROADCAST };

struct HostCollective {
  HostCollectiveKind kind = HostCollectiveKind::ALL_REDUCE_SUM;
  void* data = nullptr;  // in place, in the rank's arena
  uint64_t bytes = 0;
  int root = 0;  // BROADCAST
};

struct HostBatch {
  StreamKind stream = StreamKind::UPDATE;
  std::vector<HostCollective> calls;
};

class HostRendezvous {
 public:
  // Issues one batch per rank (index = rank) as one NCCL group.
  using Issue = std::function<void(const std::vector<HostBatch>&)>;

  HostRendezvous(int world, Issue issue);

  // Queues `batch` for `rank`; when every rank has one queued, issues them
  // (on this thread). Throws std::logic_error when the ranks' batches do not
  // match, std::runtime_error after abort.
  void submit(int rank, HostBatch batch);
  // Blocks until every batch `rank` submitted has been issued.
  void settle(int rank);
  // Wakes every waiter with `reason`; later submits and settles throw it.
  void abort(const std::string& reason);

 private:
  void issue_ready();  // with mutex_ held

  const int world_;
  Issue issue_;
  std::mutex mutex_;
  std::condition_variable issued_;
  std::vector<std::deque<HostBatch>> pending_;
  std::string aborted_;
  std::exception_ptr failure_;  // an issue that failed, reported to every rank
};

}  // namespace tr::cuda
