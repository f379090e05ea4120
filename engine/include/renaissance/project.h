// SPDX-License-Identifier: GPL-3.0-or-later
// Project: the in-memory form of a project file (format 1): the model graph,
// the dataset, the training settings and the shape variants.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <renaissance/layer_type.h>
#include <renaissance/training_values.h>

namespace tr {

// Layer hyper-parameters. One flat struct instead of one type per layer:
// the loader fills only the fields the layer type uses, the rest keep their
// defaults, and the designer edits them uniformly.
struct LayerParams {
  // Input
  int64_t height = 0, width = 0, channels = 0;
  // Conv2d (out_channels), Linear (out_features stored in out_channels)
  int64_t out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1;  // Conv2d, MaxPool2d, AvgPool2d
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  bool bias = true;  // Conv2d, Linear
  // Conv2d: channel groups, each convolving its share of the input channels
  // into its share of the outputs (1: dense; the input channels: depthwise).
  int64_t groups = 1;
  // BatchNorm2d
  double eps = 1e-5;
  double momentum = 0.1;
  // Dropout
  double p = 0.5;
  // LeakyReLU: the slope for x < 0
  double negative_slope = 0.01;
  // Concat: how many inputs it joins (ports 0 .. inputs - 1, in channel order)
  int64_t inputs = 2;
  // Attention: the heads the channels split into (each channels / heads wide)
  int64_t heads = 1;
  double attention_dropout = 0.0;  // SelfAttention: drops probabilities while training
  // TokenPool: the first token (a class token) or, when false, the mean
  bool class_token = true;

  bool operator==(const LayerParams&) const = default;
};

struct LayerNode {
  std::string id;  // unique, as the user sees it in the designer
  LayerType type = LayerType::Input;
  LayerParams params;
  double x = 0, y = 0;  // designer position; optional in the file
  bool has_position = false;
  // In a compiled model, a composite layer's part (a MultiHeadSelfAttention's
  // projections and attention) names the design's node it stands in for;
  // empty everywhere else. Never in a project file.
  std::string part_of;
  // The design's node this one is or stands in for.
  const std::string& design_id() const { return part_of.empty() ? id : part_of; }
  // "'conv1' (Conv2d)": how every message names the node.
  std::string label() const;
};

struct Edge {
  int from = 0;       // node index
  int from_port = 0;  // output port of `from`
  int to = 0;         // node index
  int to_port = 0;    // input port of `to`
};

struct ModelGraph {
  std::vector<LayerNode> nodes;
  std::vector<Edge> edges;
  int find(const std::string& id) const;  // -1 when absent
};

enum class DatasetKind { FashionMnist, Synthetic, Cifar10, Cifar100, ImageFolder };

struct DatasetSpec {
  DatasetKind kind = DatasetKind::FashionMnist;
  // The folder of a dataset read from files; empty: its default (dataset_kinds.h).
  std::string path;
  // Image folders: `path` is the training folder, this the validation one;
  // an unreadable image is left out rather than stopping the load.
  std::string val_path;
  bool skip_bad_images = false;
  int64_t height = 28, width = 28, channels = 1, classes = 10;
  // What the classes are called, in label order, where the project says so
  // (a model imported with its names); empty: the image folders' names or
  // the kind's (dataset_class_names). Only for kinds whose files do not fix them.
  std::vector<std::string> class_names;
  int64_t train_size = 60000, val_size = 10000;
  std::vector<double> mean{0.286041}, std{0.353024};  // per channel
  int64_t random_crop_padding = 0;                    // 0: no crop
  bool random_flip = false;

  bool operator==(const DatasetSpec&) const = default;
};

enum class ScheduleKind { Constant, Step, Cosine };

// What the data-parallel ranks split instead of each holding all of it:
// nothing, the optimizer's state (ZeRO stage 1: momentum and Adam's moments
// sharded over the ranks, each rank updating its share of the weights and
// gathering the rest), or that and the gradients (ZeRO stage 2: each
// bucket reduce-scattered, each rank keeping the sum of its share only).
enum class Sharding { None, Optimizer, OptimizerAndGradients };
// How a CPU plan lays out its FP32 feature maps: channels innermost (NHWC),
// or in the channel blocks oneDNN's convolutions take ([N, C/b, H, W, b];
// CompileOptions::channel_block). CUDA plans are NHWC either way.
enum class FeatureLayout { Nhwc, Blocked };
enum class DeviceKind { CPU, CUDA };

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::Cosine;
  double warmup_epochs = 0;
  double min_lr = 0;        // cosine floor
  int64_t step_epochs = 1;  // step: decay every this many epochs
  double gamma = 0.1;       // step: multiply by this

  bool operator==(const ScheduleSpec&) const = default;
};

struct DeviceSet {
  DeviceKind kind = DeviceKind::CPU;
  std::vector<int> ids{0};  // cpu:N means N ranks 0..N-1
  int world_size() const noexcept { return static_cast<int>(ids.size()); }
  std::string str() const;  // "cpu:2", "cuda:0-3"

  bool operator==(const DeviceSet&) const = default;
};

struct TrainingSpec {
  OptimizerSpec optimizer;
  ScheduleSpec schedule;
  int64_t epochs = 3;
  int64_t global_batch = 128;
  DeviceSet devices;
  Precision precision = Precision::FP32;
  uint64_t seed = 42;
  bool ema = false;
  double ema_decay = 0.999;
  // SyncBatchNorm: batch statistics (and their gradients) over the global
  // batch, summed across ranks inside each BN layer, instead of per rank.
  bool sync_batch_norm = false;
  Sharding sharding = Sharding::None;
  // The device mesh's `tensor` dimension (training.mesh.tensor): this many
  // consecutive ranks split the transformer blocks' Linear layers and heads
  // between them (tensor parallel) for their samples together, each rank
  // computing the other layers for its own (sequence parallel); the ranks
  // divide into devices / tensor_ranks data-parallel groups (`data`).
  int64_t tensor_ranks = 1;
  // Start from these weights (a checkpoint: an imported model's, a run's
  // final weights) wherever a tensor fits by name and shape: fine-tuning.
  // A relative path is relative to the project file's folder. Empty: fresh
  // weights from the seed.
  std::string init_from;
  // MiB one device's arena may take (0: no budget): the plan recomputes
  // saved features in the backward, the fewest that make it fit
  // (CompileOptions::memory_budget, which the CLI's --memory-budget sets
  // over this).
  int64_t memory_budget_mib = 0;
  FeatureLayout feature_layout = FeatureLayout::Nhwc;

  // What is wrong with the global batch for the data ranks ("" when they
  // share it evenly): the loader's words, which the workbench repeats.
  std::string global_batch_problem() const;
  // The mesh's `data` dimension: the groups whose gradients are averaged
  // (every rank when tensor_ranks is 1; the batch splits over every rank);
  // 0 when tensor_ranks does not divide the devices.
  int data_ranks() const noexcept {
    const int world = devices.world_size();
    return tensor_ranks > 0 && world % tensor_ranks == 0 ? world / static_cast<int>(tensor_ranks)
                                                         : 0;
  }

  bool operator==(const TrainingSpec&) const = default;
};

enum class VariantKind { Train, LastBatch, Validation };

// A shape variant as the file states it; the compiler resolves batch sizes.
struct VariantSpec {
  std::string name;
  VariantKind kind = VariantKind::Train;
  int64_t batch = 0;              // per device; 0 = derive (train, last batch)
  int64_t height = 0, width = 0;  // 0 = the Input node's resolution
};

struct Project {
  int format = 1;
  std::string name;
  std::string description;
  std::string source_path;  // where it was loaded from (for messages)
  ModelGraph model;
  DatasetSpec dataset;
  TrainingSpec training;
  std::vector<VariantSpec> variants;
};

std::string_view variant_kind_name(VariantKind k) noexcept;
std::string_view optimizer_name(OptimizerKind k) noexcept;
std::string_view schedule_name(ScheduleKind k) noexcept;
std::string_view precision_name(Precision p) noexcept;
std::string_view sharding_name(Sharding s) noexcept;  // as training.sharding spells it
std::string_view feature_layout_name(FeatureLayout l) noexcept;  // "nhwc", "blocked"

}  // namespace tr
