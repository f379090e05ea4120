// SPDX-License-Identifier: GPL-3.0-or-later
// The settings table (renaissance/setting_spec.h): one row a setting, and
// the optimizers' table, and the Markdown the docs show of them.
#include <renaissance/setting_spec.h>

#include <cstdio>
#include <limits>

#include <renaissance/project_limits.h>
#include "model/json_text.h"

namespace tr {

namespace {

using json_text::kInf;
using json_text::number_text;
using limits::kMaxBatch;
using limits::kMaxEpochs;
using limits::kMaxExtent;
using limits::kMaxFeatures;
using limits::kMaxPadding;
using limits::kMaxSamples;

constexpr OptimizerInfo kOptimizers[] = {
    {.kind = OptimizerKind::SGD,
     .name = "sgd",
     .title = "SGD",
     .description = "Stochastic gradient descent with momentum (and Nesterov's, if asked)"},
    {.kind = OptimizerKind::Adam,
     .name = "adam",
     .title = "Adam",
     .description =
         "Adam: a step scaled per weight by running averages of the gradient and its square",
     .first_moment = true,
     .second_moment = true},
    {.kind = OptimizerKind::LARS,
     .name = "lars",
     .title = "LARS",
     .description = "SGD with momentum whose step is scaled per layer by the ratio of the "
                    "weights' norm to the gradient's (for large batches)",
     .first_moment = true,
     .layer_norms = true},
};
static_assert(std::size(kOptimizers) == 3 && kOptimizers[0].kind == OptimizerKind::SGD &&
                  kOptimizers[1].kind == OptimizerKind::Adam &&
                  kOptimizers[2].kind == OptimizerKind::LARS,
              "kOptimizers lists the optimizers in their enum order");

constexpr SettingChoice kSchedules[] = {
    {"constant", "Constant", static_cast<int>(ScheduleKind::Constant)},
    {"step", "Step", static_cast<int>(ScheduleKind::Step)},
    {"cosine", "Cosine", static_cast<int>(ScheduleKind::Cosine)},
};
constexpr SettingChoice kPrecisions[] = {
    {"fp32", "FP32", static_cast<int>(Precision::FP32)},
    {"amp", "AMP (mixed FP16/FP32)", static_cast<int>(Precision::AMP)},
    {"bf16", "BF16 (bfloat16, FP32 master weights)", static_cast<int>(Precision::BF16)},
};
constexpr SettingChoice kShardings[] = {
    {"none", "None: every rank holds all of the optimizer's state",
     static_cast<int>(Sharding::None)},
    {"optimizer", "Optimizer state (ZeRO-1)", static_cast<int>(Sharding::Optimizer)},
    {"optimizer+gradients", "Optimizer state and gradients (ZeRO-2)",
     static_cast<int>(Sharding::OptimizerAndGradients)},
};
constexpr SettingChoice kFeatureLayouts[] = {
    {"nhwc", "NHWC: channels innermost", static_cast<int>(FeatureLayout::Nhwc)},
    {"blocked", "Channel blocks (oneDNN's convolutions' layout)",
     static_cast<int>(FeatureLayout::Blocked)},
};
constexpr SettingChoice kBadImages[] = {
    {"stop", "Stop the load", 0},
    {"skip", "Leave it out", 1},
};

constexpr unsigned bit(OptimizerKind k) {
  return 1u << static_cast<unsigned>(k);
}
constexpr unsigned bit(ScheduleKind k) {
  return 1u << static_cast<unsigned>(k);
}

std::vector<SettingChoice> optimizer_choices() {
  std::vector<SettingChoice> out;
  for (const OptimizerInfo& o : kOptimizers)
    out.push_back({o.name, o.title, static_cast<int>(o.kind)});
  return out;
}

std::vector<SettingChoice> dataset_choices() {
  std::vector<SettingChoice> out;
  for (const DatasetKindInfo& k : dataset_kinds())
    out.push_back({k.name, k.title, static_cast<int>(k.kind)});
  return out;
}

std::vector<SettingSpec> make_settings() {
  static const std::vector<SettingChoice> optimizers = optimizer_choices();
  static const std::vector<SettingChoice> datasets = dataset_choices();
  using K = SettingKind;
  using G = SettingGroup;
  return {
      // The dataset.
      {.key = "dataset.kind",
       .kind = K::Choice,
       .group = G::Data,
       .label = "Dataset",
       .help = "Fashion-MNIST, CIFAR-10 or CIFAR-100 from their files, images in one folder per "
               "class, or generated images of any shape (for trying a design without data)",
       .choices = datasets,
       .choice_what = "dataset kind",
       .choice_get = [](const Project& p) { return static_cast<int>(p.dataset.kind); },
       .choice_set = [](Project& p, int v) { p.dataset.kind = static_cast<DatasetKind>(v); }},
      // One row, whose key in the file is the kind's folder key (path, dir,
      // train_dir); the form calls it dataset.path.
      {.key = "dataset.path",
       .kind = K::Path,
       .group = G::Data,
       .label = "Folder",
       .help = "The folder of the dataset's files (Fashion-MNIST's four IDX files, CIFAR's "
               "binary batches, an image folder's training images: one subfolder per class); "
               "empty: the default location",
       .dataset = DatasetScope::Files,
       .write = WriteWhen::Set,
       .folder = true,
       .kind_key = true,
       .text_ref = [](Project& p) -> std::string& { return p.dataset.path; }},
      {.key = "dataset.val_dir",
       .kind = K::Path,
       .group = G::Data,
       .label = "Validation folder",
       .help = "One subfolder per class, named as in the training folder, of PNG or JPEG images",
       .dataset = DatasetScope::ImageFolder,
       .write = WriteWhen::Set,
       .folder = true,
       .text_ref = [](Project& p) -> std::string& { return p.dataset.val_path; }},
      {.key = "dataset.on_bad_image",
       .kind = K::Choice,
       .group = G::Data,
       .label = "Unreadable image",
       .help = "What a damaged or truncated image does: stop the load, naming it, or be left out "
               "(and listed when training starts)",
       .choices = kBadImages,
       .choice_what = "what an unreadable image does",
       .dataset = DatasetScope::ImageFolder,
       .write = WriteWhen::Set,
       .choice_get = [](const Project& p) { return p.dataset.skip_bad_images ? 1 : 0; },
       .choice_set = [](Project& p, int v) { p.dataset.skip_bad_images = v != 0; }},
      {.key = "dataset.height",
       .group = G::Data,
       .label = "Height",
       .help = "Image height in pixels (images are resized to it)",
       .min = 1,
       .max = kMaxExtent,
       .dataset = DatasetScope::Shape,
       .int_ref = [](Project& p) -> int64_t& { return p.dataset.height; }},
      {.key = "dataset.width",
       .group = G::Data,
       .label = "Width",
       .help = "Image width in pixels",
       .min = 1,
       .max = kMaxExtent,
       .dataset = DatasetScope::Shape,
       .int_ref = [](Project& p) -> int64_t& { return p.dataset.width; }},
      {.key = "dataset.channels",
       .group = G::Data,
       .label = "Channels",
       .help = "Colour channels: 1 grey, 3 colour",
       .min = 1,
       .max = kMaxExtent,
       .dataset = DatasetScope::Shape,
       .int_ref = [](Project& p) -> int64_t& { return p.dataset.channels; }},
      {.key = "dataset.classes",
       .group = G::Data,
       .label = "Classes",
       .help = "How many classes; for image folders the number of class folders",
       .min = 2,
       .max = kMaxFeatures,
       .dataset = DatasetScope::Shape,
       .int_ref = [](Project& p) -> int64_t& { return p.dataset.classes; }},
      {.key = "dataset.class_names",
       .kind = K::Names,
       .group = G::Data,
       .label = "Class names",
       .help = "What the classes are called, in label order (an imported model's, from its "
               "file); readable image folders name them instead, and without either they are "
               "class 0, class 1, ...",
       .dataset = DatasetScope::Shape,
       .write = WriteWhen::Set,
       .names_ref = [](Project& p) -> std::vector<std::string>& { return p.dataset.class_names; }},
      {.key = "dataset.train_size",
       .group = G::Data,
       .label = "Training images",
       .help = "Generated training samples per epoch",
       .min = 1,
       .max = kMaxSamples,
       .dataset = DatasetScope::Sizes,
       .int_ref = [](Project& p) -> int64_t& { return p.dataset.train_size; }},
      {.key = "dataset.val_size",
       .group = G::Data,
       .label = "Validation images",
       .help = "Generated validation samples",
       .min = 1,
       .max = kMaxSamples,
       .dataset = DatasetScope::Sizes,
       .int_ref = [](Project& p) -> int64_t& { return p.dataset.val_size; }},
      {.key = "dataset.mean",
       .kind = K::Values,
       .group = G::Data,
       .label = "Mean",
       .help = "Per channel, subtracted from the inputs (pixel / 255); default: the dataset's "
               "usual statistics",
       .lo = -kInf,
       .hi = kInf,
       .values_ref = [](Project& p) -> std::vector<double>& { return p.dataset.mean; },
       .usual = [](const DatasetKindInfo& k, size_t c) { return k.mean[c]; }},
      {.key = "dataset.std",
       .kind = K::Values,
       .group = G::Data,
       .label = "Standard deviation",
       .help = "Per channel, what the inputs are divided by; default: the dataset's usual "
               "statistics",
       .lo = 0,
       .hi = kInf,
       .lo_open = true,
       .values_ref = [](Project& p) -> std::vector<double>& { return p.dataset.std; },
       .usual = [](const DatasetKindInfo& k, size_t c) { return k.std[c]; }},
      {.key = "dataset.random_crop_padding",
       .group = G::Data,
       .label = "Random crop padding",
       .help = "Pad the training images by this many pixels, then crop back at a random offset",
       .min = 0,
       .max = kMaxPadding,
       .zero_text = "off",
       .int_ref = [](Project& p) -> int64_t& { return p.dataset.random_crop_padding; }},
      {.key = "dataset.random_flip",
       .kind = K::Bool,
       .group = G::Data,
       .label = "Random horizontal flip",
       .help = "Mirror half of the training images",
       .bool_ref = [](Project& p) -> bool& { return p.dataset.random_flip; }},

      // Training: the optimizer.
      {.key = "training.optimizer.type",
       .kind = K::Choice,
       .group = G::Optimizer,
       .label = "Optimizer",
       .help = "How the gradients change the weights (the optimizers' table below)",
       .choices = optimizers,
       .choice_what = "optimizer",
       .choice_get = [](const Project& p) { return static_cast<int>(p.training.optimizer.kind); },
       .choice_set = [](Project& p,
                        int v) { p.training.optimizer.kind = static_cast<OptimizerKind>(v); }},
      {.key = "training.optimizer.lr",
       .kind = K::Number,
       .group = G::Optimizer,
       .label = "Learning rate",
       .help = "The peak learning rate the schedule starts from",
       .lo = 0,
       .hi = kInf,
       .lo_open = true,
       .number_ref = [](Project& p) -> double& { return p.training.optimizer.lr; }},
      {.key = "training.optimizer.momentum",
       .kind = K::Number,
       .group = G::Optimizer,
       .label = "Momentum",
       .help = "How much of the last step each step keeps",
       .lo = 0,
       .hi = 1,
       .hi_open = true,
       .step = 0.01,
       .optimizers = bit(OptimizerKind::SGD) | bit(OptimizerKind::LARS),
       .number_ref = [](Project& p) -> double& { return p.training.optimizer.momentum; }},
      {.key = "training.optimizer.weight_decay",
       .kind = K::Number,
       .group = G::Optimizer,
       .label = "Weight decay",
       .help = "L2 penalty on the weights",
       .lo = 0,
       .hi = kInf,
       .number_ref = [](Project& p) -> double& { return p.training.optimizer.weight_decay; }},
      {.key = "training.optimizer.nesterov",
       .kind = K::Bool,
       .group = G::Optimizer,
       .label = "Nesterov momentum",
       .help = "Look ahead along the momentum",
       .optimizers = bit(OptimizerKind::SGD),
       .bool_ref = [](Project& p) -> bool& { return p.training.optimizer.nesterov; }},
      {.key = "training.optimizer.beta1",
       .kind = K::Number,
       .group = G::Optimizer,
       .label = "Beta 1",
       .help = "Decay of Adam's average of the gradient (first moment)",
       .lo = 0,
       .hi = 1,
       .hi_open = true,
       .step = 0.01,
       .optimizers = bit(OptimizerKind::Adam),
       .number_ref = [](Project& p) -> double& { return p.training.optimizer.beta1; }},
      {.key = "training.optimizer.beta2",
       .kind = K::Number,
       .group = G::Optimizer,
       .label = "Beta 2",
       .help = "Decay of Adam's average of the squared gradient (second moment)",
       .lo = 0,
       .hi = 1,
       .hi_open = true,
       .step = 0.001,
       .optimizers = bit(OptimizerKind::Adam),
       .number_ref = [](Project& p) -> double& { return p.training.optimizer.beta2; }},
      {.key = "training.optimizer.eps",
       .kind = K::Number,
       .group = G::Optimizer,
       .label = "Epsilon",
       .help = "Added to Adam's denominator",
       .lo = 0,
       .hi = kInf,
       .lo_open = true,
       .optimizers = bit(OptimizerKind::Adam),
       .number_ref = [](Project& p) -> double& { return p.training.optimizer.adam_eps; }},
      {.key = "training.optimizer.trust_coefficient",
       .kind = K::Number,
       .group = G::Optimizer,
       .label = "Trust coefficient",
       .help = "Scales LARS's layer-wise trust ratio",
       .lo = 0,
       .hi = kInf,
       .lo_open = true,
       .optimizers = bit(OptimizerKind::LARS),
       .number_ref = [](Project& p) -> double& { return p.training.optimizer.trust_coefficient; }},

      // The schedule.
      {.key = "training.schedule.type",
       .kind = K::Choice,
       .group = G::Schedule,
       .label = "Schedule",
       .help = "The learning rate over the run: constant, decayed in steps, or a cosine",
       .choices = kSchedules,
       .choice_what = "schedule",
       .choice_get = [](const Project& p) { return static_cast<int>(p.training.schedule.kind); },
       .choice_set = [](Project& p,
                        int v) { p.training.schedule.kind = static_cast<ScheduleKind>(v); }},
      {.key = "training.schedule.warmup_epochs",
       .kind = K::Number,
       .group = G::Schedule,
       .label = "Warm-up epochs",
       .help = "Epochs of linear ramp from 0 to the learning rate",
       .lo = 0,
       .hi = kInf,
       .step = 1,
       .number_ref = [](Project& p) -> double& { return p.training.schedule.warmup_epochs; }},
      {.key = "training.schedule.min_lr",
       .kind = K::Number,
       .group = G::Schedule,
       .label = "Final learning rate",
       .help = "Where the cosine ends",
       .lo = 0,
       .hi = kInf,
       .schedules = bit(ScheduleKind::Cosine),
       .number_ref = [](Project& p) -> double& { return p.training.schedule.min_lr; }},
      {.key = "training.schedule.step_epochs",
       .group = G::Schedule,
       .label = "Decay every",
       .help = "Epochs between decays",
       .min = 1,
       .max = kMaxEpochs,
       .schedules = bit(ScheduleKind::Step),
       .suffix = " epochs",
       .int_ref = [](Project& p) -> int64_t& { return p.training.schedule.step_epochs; }},
      {.key = "training.schedule.gamma",
       .kind = K::Number,
       .group = G::Schedule,
       .label = "Decay factor",
       .help = "What each decay multiplies the learning rate by",
       .lo = 0,
       .hi = kInf,
       .lo_open = true,
       .schedules = bit(ScheduleKind::Step),
       .number_ref = [](Project& p) -> double& { return p.training.schedule.gamma; }},

      // The run.
      {.key = "training.epochs",
       .group = G::Run,
       .label = "Epochs",
       .help = "Passes over the training set",
       .min = 1,
       .max = kMaxEpochs,
       .int_ref = [](Project& p) -> int64_t& { return p.training.epochs; }},
      {.key = "training.global_batch",
       .group = G::Run,
       .label = "Global batch",
       .help = "Samples per step over all ranks; it divides by the number of ranks",
       .min = 1,
       .max = kMaxBatch,
       .int_ref = [](Project& p) -> int64_t& { return p.training.global_batch; }},
      {.key = "training.devices",
       .kind = K::Devices,
       .group = G::Precision,
       .label = "Devices",
       .help = "cpu:N (N ranks), or CUDA devices (cuda:0-3, cuda:0,2); the "
               "workbench's toolbar chooses them",
       .devices_ref = [](Project& p) -> DeviceSet& { return p.training.devices; }},
      {.key = "training.precision",
       .kind = K::Choice,
       .group = G::Precision,
       .label = "Precision",
       .help = "FP32 throughout; AMP: FP16 storage with a dynamic loss scale; BF16: bfloat16 "
               "storage with FP32's range, FP32 master weights and no loss scale (on the CPU it "
               "needs AVX-512 BF16 or AMX, which renaissance-cli devices lists)",
       .choices = kPrecisions,
       .choice_what = "precision",
       .choice_get = [](const Project& p) { return static_cast<int>(p.training.precision); },
       .choice_set = [](Project& p, int v) { p.training.precision = static_cast<Precision>(v); }},
      {.key = "training.seed",
       .kind = K::Seed,
       .group = G::Run,
       .label = "Seed",
       .help = "The initial weights, the shuffling and the augmentation",
       .seed_ref = [](Project& p) -> uint64_t& { return p.training.seed; }},
      {.key = "training.ema.enabled",
       .kind = K::Bool,
       .group = G::Run,
       .label = "Average of the weights (EMA)",
       .help = "Keep an exponential moving average of the weights, which validation can use",
       .bool_ref = [](Project& p) -> bool& { return p.training.ema; }},
      {.key = "training.ema.decay",
       .kind = K::Number,
       .group = G::Run,
       .label = "EMA decay",
       .help = "The weight of the past in the average",
       .lo = 0,
       .hi = 1,
       .lo_open = true,
       .hi_open = true,
       .step = 0.001,
       .needs_ema = true,
       .number_ref = [](Project& p) -> double& { return p.training.ema_decay; }},
      {.key = "training.sync_batch_norm",
       .kind = K::Bool,
       .group = G::Precision,
       .label = "Synchronised BatchNorm",
       .help = "BatchNorm statistics over the global batch, summed across ranks inside each BN "
               "layer, instead of over each rank's share; no effect with one rank",
       .write = WriteWhen::Set,
       .bool_ref = [](Project& p) -> bool& { return p.training.sync_batch_norm; }},
      {.key = "training.sharding",
       .kind = K::Choice,
       .group = G::Precision,
       .label = "Sharding",
       .help = "What the ranks split instead of each holding all of it: with `optimizer` "
               "(ZeRO-1) each rank keeps the momentum and Adam's moments of its share of the "
               "weights, updates that share and gathers the rest; with `optimizer+gradients` "
               "(ZeRO-2) the gradients are reduce-scattered too, each rank keeping the sum of its "
               "share only; the same training bit for bit (LARS to rounding), needs more than "
               "one rank",
       .choices = kShardings,
       .choice_what = "sharding",
       .write = WriteWhen::Set,
       .choice_get = [](const Project& p) { return static_cast<int>(p.training.sharding); },
       .choice_set = [](Project& p, int v) { p.training.sharding = static_cast<Sharding>(v); }},
      {.key = "training.memory_budget_mib",
       .group = G::Precision,
       .label = "Memory budget",
       .help = "The memory one device's plan may take: over it, the plan drops batch-norm "
               "and convolution outputs and computes them again in the backward, the cheapest "
               "per byte first, "
               "the fewest that make it fit (the same training bit for bit, some more time); 0: "
               "no budget, nothing extra recomputed",
       .min = 0,
       .max = 16 * 1024 * 1024,
       .write = WriteWhen::Set,
       .zero_text = "none",
       .suffix = " MiB",
       .int_ref = [](Project& p) -> int64_t& { return p.training.memory_budget_mib; }},
      {.key = "training.feature_layout",
       .kind = K::Choice,
       .group = G::Precision,
       .label = "Feature layout",
       .help = "How a CPU plan lays out its FP32 feature maps: `nhwc` (channels innermost, "
               "the same bits as ever), or `blocked`, in the channel blocks oneDNN's "
               "convolutions take (8 channels with AVX2, 16 with AVX-512; renaissance-cli "
               "devices names it), often faster on convolution-heavy models, the same values "
               "within rounding; the same bytes. CUDA plans are NHWC either way",
       .choices = kFeatureLayouts,
       .choice_what = "feature layout",
       .write = WriteWhen::Set,
       .choice_get = [](const Project& p) { return static_cast<int>(p.training.feature_layout); },
       .choice_set = [](Project& p,
                        int v) { p.training.feature_layout = static_cast<FeatureLayout>(v); }},
      {.key = "training.mesh.tensor",
       .group = G::Precision,
       .label = "Tensor-parallel ranks",
       .help = "The device mesh's `tensor` dimension: this many consecutive ranks split each "
               "transformer block (attention by heads, the MLP's first Linear by its outputs and "
               "the second by its inputs) over their samples together; each computes the rest "
               "of the model, whole, for its own samples (sequence parallel). It divides the "
               "devices into data-parallel groups (cpu:4 with 2: a 2x2 mesh, data=2 x "
               "tensor=2); 1: data parallel only",
       .min = 1,
       .max = 64,
       .write = WriteWhen::Set,
       .int_ref = [](Project& p) -> int64_t& { return p.training.tensor_ranks; }},
      {.key = "training.init_from",
       .kind = K::Path,
       .group = G::Run,
       .label = "Start from weights",
       .help = "A checkpoint to start from (fine-tuning): every weight and BatchNorm statistic "
               "of the same name and shape is taken from it, the rest start fresh, the optimizer "
               "state and position are a new run's; relative to the project file's folder. An "
               "ONNX import sets it; train --init-from overrides it, a resumed run ignores it",
       .write = WriteWhen::Set,
       .text_ref = [](Project& p) -> std::string& { return p.training.init_from; }},
  };
}

}  // namespace

// "> 0", "in [0, 1)", "1..100000"
std::string setting_bounds_text(const SettingSpec& s) {
  switch (s.kind) {
    case SettingKind::Int:
      return std::to_string(s.min) + ".." + std::to_string(s.max);
    case SettingKind::Number:
    case SettingKind::Values:
      return json_text::Range{s.lo, s.lo_open, s.hi, s.hi_open}.bounds();
    case SettingKind::Bool:
      return "true or false";
    case SettingKind::Choice: {
      std::string out;
      for (const SettingChoice& c : s.choices)
        out += (out.empty() ? "" : ", ") + std::string("`") + std::string(c.name) + "`";
      return out;
    }
    case SettingKind::Text:
    case SettingKind::Path:
      return "a string";
    case SettingKind::Seed:
      return "0..18446744073709551615";
    case SettingKind::Devices:
      return "`cpu:N`, `cuda:0-3`, `cuda:0,2`";
    case SettingKind::Names:
      return "one name per class";
  }
  return {};
}

namespace {

std::string default_text(const SettingSpec& s) {
  static Project defaults;
  switch (s.kind) {
    case SettingKind::Int:
      return std::to_string(s.int_ref(defaults));
    case SettingKind::Number:
      return number_text(s.number_ref(defaults));
    case SettingKind::Bool:
      return s.bool_ref(defaults) ? "true" : "false";
    case SettingKind::Choice:
      for (const SettingChoice& c : s.choices)
        if (c.value == s.choice_get(defaults)) return "`" + std::string(c.name) + "`";
      return {};
    case SettingKind::Seed:
      return std::to_string(s.seed_ref(defaults));
    case SettingKind::Devices:
      return "`" + s.devices_ref(defaults).str() + "`";
    case SettingKind::Values:
      return "the dataset's usual";
    case SettingKind::Text:
    case SettingKind::Path:
    case SettingKind::Names:
      return "none";
  }
  return {};
}

// "sgd, lars", "step", "with training.ema.enabled", "image-folder"
std::string applies_text(const SettingSpec& s) {
  std::string out;
  const auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  if (s.optimizers) {
    std::string names;
    for (const OptimizerInfo& o : kOptimizers)
      if (s.optimizers & bit(o.kind)) names += (names.empty() ? "" : ", ") + std::string(o.name);
    add(names);
  }
  if (s.schedules) {
    std::string names;
    for (const SettingChoice& c : kSchedules)
      if (s.schedules & (1u << static_cast<unsigned>(c.value)))
        names += (names.empty() ? "" : ", ") + std::string(c.name);
    add(names + " schedule");
  }
  if (s.needs_ema) add("with `training.ema.enabled`");
  if (s.kind_key) {
    // Each kind's key for it.
    std::string kinds;
    for (const DatasetKindInfo& k : dataset_kinds())
      if (k.files)
        kinds += (kinds.empty() ? "" : ", ") + std::string(k.name) + " (`" + k.folder_key + "`)";
    add(kinds);
  } else if (s.dataset != DatasetScope::Any) {
    add(dataset_scope_text(s.dataset));
  }
  return out.empty() ? "all" : out;
}

}  // namespace

std::span<const SettingSpec> project_settings() noexcept {
  static const std::vector<SettingSpec> settings = make_settings();
  return settings;
}

const SettingSpec* find_setting(std::string_view key) noexcept {
  for (const SettingSpec& s : project_settings())
    if (s.key == key) return &s;
  return nullptr;
}

bool setting_in_dataset(const SettingSpec& s, DatasetKind kind) {
  const DatasetKindInfo& info = dataset_kind_info(kind);
  switch (s.dataset) {
    case DatasetScope::Any:
      return true;
    case DatasetScope::Files:
      return info.files;
    case DatasetScope::ImageFolder:
      return kind == DatasetKind::ImageFolder;
    case DatasetScope::Shape:
      return !info.fixed_shape;
    case DatasetScope::Sizes:
      return !info.fixed_shape && !info.counted;
  }
  return true;
}

std::string dataset_scope_text(DatasetScope scope) {
  std::string out;
  for (const DatasetKindInfo& k : dataset_kinds()) {
    SettingSpec probe;
    probe.dataset = scope;
    if (scope == DatasetScope::Any || !setting_in_dataset(probe, k.kind)) continue;
    out += (out.empty() ? "" : ", ") + std::string(k.name);
  }
  // "a, b and c"
  if (const size_t last = out.rfind(", "); last != std::string::npos) out.replace(last, 2, " and ");
  return out;
}

bool setting_applies(const SettingSpec& s, const Project& p) {
  const TrainingSpec& t = p.training;
  if (s.optimizers && !(s.optimizers & bit(t.optimizer.kind))) return false;
  if (s.schedules && !(s.schedules & bit(t.schedule.kind))) return false;
  if (s.needs_ema && !t.ema) return false;
  return setting_in_dataset(s, p.dataset.kind);
}

std::span<const OptimizerInfo> optimizer_kinds() noexcept {
  return kOptimizers;
}

const OptimizerInfo& optimizer_info(OptimizerKind kind) noexcept {
  return kOptimizers[static_cast<size_t>(kind)];
}

std::string settings_table_markdown() {
  std::string out = "| key | default | allowed | for | what it does |\n|---|---|---|---|---|\n";
  for (const SettingSpec& s : project_settings()) {
    std::string key = "`" + std::string(s.key) + "`";
    if (s.kind_key) {
      key.clear();
      for (const DatasetKindInfo& k : dataset_kinds())
        if (k.files && key.find(std::string("`dataset.") + k.folder_key + "`") == std::string::npos)
          key += (key.empty() ? "" : ", ") + std::string("`dataset.") + k.folder_key + "`";
    }
    out += "| " + key + " | " + default_text(s) + " | " + setting_bounds_text(s) + " | " +
           applies_text(s) + " | " + std::string(s.help) +
           (s.write == WriteWhen::Set ? "; written only when set" : "") + " |\n";
  }
  out += "\n| optimizer | what it is |\n|---|---|\n";
  for (const OptimizerInfo& o : kOptimizers)
    out += "| `" + std::string(o.name) + "` | " + std::string(o.description) + " |\n";
  return out;
}

}  // namespace tr
