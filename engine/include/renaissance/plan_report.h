// SPDX-License-Identifier: GPL-3.0-or-later
// Reports of a compiled plan for people (tables) and tools (JSON), used by
// `renaissance-cli plan` and the workbench's memory export.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include <renaissance/compiled_plan.h>

namespace tr {

// Layers, then per variant the region table and the DTensor table, then the
// bytes each device needs.
std::string plan_report_text(const CompiledPlan& plan);

// {"total_bytes", "bytes_per_device", "world_size", "parameters", "layers",
//  "variants": [{"name","kind","batch","total_bytes","regions":[...],"tensors":[...]}],
//  "graphs": [...]}
nlohmann::json plan_report_json(const CompiledPlan& plan);

// What the plan would take with --memory-packing off (= bytes_per_device
// when it is off).
uint64_t unpacked_bytes_per_device(const CompiledPlan& plan);

// What a memory budget made the plan recompute, for a person: "recomputes 8
// of 16 layer outputs in the backward (s1_bn1 .. s3_bn2): 24.5 MiB of
// saved features, +0.61% of a step's FLOPs"; empty when it recomputes none.
std::string recompute_summary(const CompiledPlan& plan);
// A step's FLOPs (forward, and the backward's two products, as 3x the
// forward) that the recomputation adds, as a fraction of it.
double recompute_flops_share(const CompiledPlan& plan);

// All graphs as text, grouped by variant.
std::string graphs_report_text(const CompiledPlan& plan);

// "1.23 MiB"
std::string human_bytes(uint64_t bytes);

// The sharded tensors of a plan (placement S(0), training.sharding): the
// bytes one rank holds of them, and what the whole tensors would take
// (0: nothing is sharded); and the optimizer state and gradients one rank
// keeps for the whole run, against what it would keep unsharded (the
// moments whole, the gradients G and H with bytes of their own).
struct ShardedBytes {
  uint64_t per_rank = 0, whole = 0;
  uint64_t moments = 0, moments_whole = 0;
  uint64_t gradients = 0, gradients_whole = 0;
  // ZeRO-2: the full gradients' bytes, which live in the step-local pool.
  uint64_t pooled_gradients = 0;
};
ShardedBytes sharded_bytes(const MemoryPlan& plan);

// Tensor parallel: the bytes one rank holds of the layers' parameters (every
// series: weights, their copies, gradients, moments) and of their features
// (outputs and gradient slots, each in its own slot as an unpacked plan
// has it), beside what one rank holding all of them would; and sequence
// parallel's communication buffers over the group's batch (gathered inputs
// and gradients, partial sums), each alive from its collective to its
// reader, which one rank has no need of.
struct TensorSplitBytes {
  uint64_t params = 0, params_whole = 0;
  uint64_t features = 0, features_whole = 0;
  uint64_t communication = 0;
};
TensorSplitBytes tensor_split_bytes(const MemoryPlan& plan, int tensor_ranks);

}  // namespace tr
