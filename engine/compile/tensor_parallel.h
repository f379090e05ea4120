// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor parallel over the device mesh's `tensor` dimension: which layers
// of a compiled model split over the tensor ranks, and how (the Megatron
// pairing). A Linear or TokenLinear whose output reaches another of its
// type through elementwise layers only splits by its outputs (column
// parallel: each rank computes its share of the features), the second by
// its inputs (row parallel: each rank's product is a partial sum that an
// all-reduce completes, the bias added once); a multi-head attention's
// input projection splits by heads, its attention keeps its ranks' heads,
// its output projection is row parallel. Everything else stays whole, and
// sequence parallel (Megatron's, along the batch): each tensor rank
// computes the whole layers for its own samples only, a column layer's
// input is gathered over the group first (the group's samples), and a row
// layer's partial products are reduce-scattered (each rank keeping the sum
// for its own samples), so no rank holds a whole layer's features for the
// group's batch beyond the communication buffers.
#pragma once

#include <string>
#include <vector>

#include <renaissance/project.h>
#include <renaissance/shape_inference.h>

namespace tr {

enum class TensorSplit : uint8_t {
  Whole,   // every tensor rank holds and computes all of it
  Column,  // its weight Shard(0) (outputs), its features Shard(C)
  Local,   // between a column and a row layer: its features Shard(C) (an activation, attention)
  Row,     // its weight Shard(C) (inputs), its output a partial sum all-reduced
};

struct LayerSplit {
  TensorSplit split = TensorSplit::Whole;
  // Column: its outputs as this many blocks each split over the ranks (an
  // attention's input projection: queries, keys, values).
  int blocks = 1;
  // Whole: why a Linear-like layer stays whole, for the plan ("" otherwise).
  std::string why_whole;
};

std::string_view tensor_split_name(TensorSplit s) noexcept;  // "whole", "column", ...

// The split of every node of `model` (composite layers expanded) over
// `tensor_ranks`; throws ProjectError (field training.mesh.tensor) naming
// the layer when a split cannot divide its features or heads, or when
// nothing in the model splits.
std::vector<LayerSplit> plan_tensor_parallel(const Project& model, const ModelAnalysis& analysis,
                                             int tensor_ranks);

// The model one tensor rank computes: column layers with their share of the
// outputs, attention with its share of the heads.
Project tensor_rank_model(const Project& model, const std::vector<LayerSplit>& splits,
                          int tensor_ranks);

// The shapes of `a`, the tensor-rank model analysed at a rank's own batch,
// as sequence parallel runs it: the split layers over the group's batch
// (a column layer reading its gathered input), but a row layer's output,
// which is the rank's samples of the sum.
void group_batch_shapes(ModelAnalysis& a, const std::vector<LayerSplit>& splits, int tensor_ranks);

}  // namespace tr
