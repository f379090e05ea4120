// SPDX-License-Identifier: GPL-3.0-or-later
// In-process collectives between the rank threads of one CPU backend, with
// NCCL's semantics: every rank calls the same collectives in the same order,
// buffers are reduced in place, and the result is identical on every rank
// (ranks are summed in rank order, so it is also deterministic). A group
// (ncclGroupStart/End) is one rendezvous for several calls. Ranks that
// disagree about a call get an error naming it, and abort() releases ranks
// waiting for a partner that failed. With a ProcessGroup the ranks span
// processes, each with the same number of rank threads: after the threads
// meet, one of them exchanges every rank's buffers with the other
// processes, and the reductions run over all ranks in global rank order,
// so the bits are those of one process with all the ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/process_group.h"
#include "runtime/kernel_args.h"
#include "runtime/rank_barrier.h"

namespace tr::cpu {

// ALL_GATHER: each rank's share of the buffer (core/data_shard.h) to every rank.
// REDUCE_SCATTER_MEAN: the mean of every rank's buffer, of which each rank
// gets its share (core/data_shard.h) at `out`.
// GATHER_BLOCKS: every rank's `bytes` at `data` into `out`, rank r's at
// r * bytes (sequence parallel's gather of the group's samples).
// REDUCE_SCATTER_SUM_BLOCKS: the sum of every rank's `bytes` at `data`, of
// which rank r gets block r (bytes / world) at `out`.
enum class CollectiveKind : uint8_t {
  ALL_REDUCE_SUM,
  ALL_REDUCE_MEAN,
  ALL_REDUCE_MAX,
  BROADCAST,
  ALL_GATHER,
  REDUCE_SCATTER_MEAN,
  GATHER_BLOCKS,
  REDUCE_SCATTER_SUM_BLOCKS
};

// One call of a group. All-reduces work on FP32 (bytes a multiple of 4)
// but for the tensor-parallel collectives of 16-bit features (ALL_REDUCE_SUM
// and the two block kinds of FP16 or BF16: sums taken in FP32, rounded once).
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::ALL_REDUCE_SUM;
  void* data = nullptr;
  uint64_t bytes = 0;
  int root = 0;            // BROADCAST
  std::string_view label;  // for messages; must outlive the call
  void* out = nullptr;     // REDUCE_SCATTER_MEAN and the block kinds: where this rank's result goes
  DType dtype = DType::FP32;
};

class Collectives {
 public:
  // `world` rank threads in this process; `processes` (or none) the others'.
  explicit Collectives(int world, std::shared_ptr<ProcessGroup> processes = nullptr);
  int world() const noexcept { return world_; }  // this process's ranks
  int global_world() const noexcept;

  // Runs `calls` as one group. Throws std::logic_error on every rank when
  // the ranks' groups differ, CollectiveAborted after abort().
  void run(int rank, const std::vector<CollectiveCall>& calls);
  // In-place sum (or mean) of `count` floats at `data` across all ranks.
  void all_reduce(int rank, float* data, uint64_t count, bool mean);
  // Copies rank `root`'s `bytes` at `data` into every other rank's `data`.
  void broadcast(int rank, void* data, uint64_t bytes, int root);

  void abort(const std::string& reason) { barrier_.abort(reason); }

 private:
  // Empty when every rank posted the same group; else what differs.
  std::string mismatch() const;
  // Local rank 0's part across processes: every rank's buffers of every
  // call from every process, then each local rank's results.
  void across_processes();
  // Throws, saying how the processes' groups `calls` differ.
  [[noreturn]] void disagreement(const std::vector<CollectiveCall>& calls);
  // Every call of the group, once the processes agree on them.
  void exchange(const std::vector<CollectiveCall>& calls);
  // Call k of every rank's group, when it is an all-reduce.
  void all_reduce_across(size_t k);

  int world_;
  std::shared_ptr<ProcessGroup> processes_;
  std::string failure_;  // a failed exchange between processes: final
  // all_reduce_across's buffers, kept between calls (local rank 0's thread
  // alone uses them).
  std::vector<uint8_t> send_, received_, mine_, gathered_;
  std::vector<const std::vector<CollectiveCall>*> posted_;
  RankBarrier barrier_;
};

// One rank's in-kernel sum over the collectives (SyncBatchNorm).
class CollectiveRankSum final : public RankSum {
 public:
  CollectiveRankSum(Collectives& collectives, int rank) : collectives_(collectives), rank_(rank) {}
  void sum(float* data, uint64_t count) const override {
    collectives_.all_reduce(rank_, data, count, false);
  }

 private:
  Collectives& collectives_;
  int rank_;
};

}  // namespace tr::cpu
