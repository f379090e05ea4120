// SPDX-License-Identifier: GPL-3.0-or-later
// predict_images: the images become the validation split of an in-memory
// dataset, so the model runs through the very inference graph (and input
// pipeline: normalisation, layout) validation uses; after each batch the
// logits are read back and turned into probabilities on the host.
#include <renaissance/predict.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <numeric>

#include <renaissance/dataset_kinds.h>
#include <renaissance/dataset_probe.h>
#include <renaissance/error.h>
#include "backends/cpu/cpu_backend.h"
#include "compile/compiler.h"
#include "data/batch_pipeline.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "runtime/checkpoint_state.h"
#include "runtime/training_session.h"

namespace tr {

namespace {

namespace fs = std::filesystem;

// The readable images, fitted, as a validation split (the training split is
// a copy: the compiled project needs one).
class ImagesSource final : public DataSource {
 public:
  ImagesSource(Shape sample, int64_t classes, std::vector<uint8_t> pixels, int64_t count)
      : sample_(sample), classes_(classes), pixels_(std::move(pixels)), count_(count) {}
  Shape sample_shape() const override { return sample_; }
  int64_t classes() const override { return classes_; }
  int64_t size(Split) const override { return count_; }
  void read(Split, int64_t index, uint8_t* out) const override {
    const int64_t per = sample_.per_sample();
    std::copy_n(pixels_.data() + index * per, per, out);
  }
  int32_t label(Split, int64_t) const override { return 0; }
  std::string describe() const override { return "the images to classify"; }

 private:
  Shape sample_;
  int64_t classes_;
  std::vector<uint8_t> pixels_;
  int64_t count_;
};

}  // namespace

std::vector<std::string> folder_class_names(const DatasetSpec& dataset) {
  if (dataset.kind != DatasetKind::ImageFolder) return {};
  const DatasetProbe probe = probe_dataset(dataset);
  if (probe.ok && static_cast<int64_t>(probe.class_names.size()) == dataset.classes)
    return probe.class_names;
  return {};
}

std::vector<std::string> class_names_of(const DatasetSpec& dataset) {
  std::vector<std::string> names = folder_class_names(dataset);
  return names.empty() ? dataset_class_names(dataset) : names;
}

std::string class_folder_form(const std::string& class_name) {
  std::string form;
  bool dash = false;
  for (const char ch : class_name) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c >= 0x80) {  // UTF-8 letters stay as they are
      if (dash && !form.empty()) form += '-';
      dash = false;
      form += static_cast<char>(std::tolower(c));
    } else {
      dash = true;
    }
  }
  return form;
}

namespace {

// The class a folder is named after: by its name, else by its folder form
// when exactly one class has that form; -1 when none.
int32_t class_of_folder(const std::string& folder, const std::vector<std::string>& class_names) {
  const auto exact = std::find(class_names.begin(), class_names.end(), folder);
  if (exact != class_names.end()) return static_cast<int32_t>(exact - class_names.begin());
  const std::string form = class_folder_form(folder);
  int32_t found = -1;
  for (size_t i = 0; i < class_names.size(); ++i)
    if (class_folder_form(class_names[i]) == form) {
      if (found >= 0) return -1;  // two classes read alike: only their exact names tell
      found = static_cast<int32_t>(i);
    }
  return found;
}

}  // namespace

std::vector<PredictImage> folder_images(const std::string& dir,
                                        const std::vector<std::string>& class_names) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw UsageError(dir + ": " + (fs::exists(dir, ec) ? "not a folder" : "no such folder"));
  std::vector<fs::path> folders;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && !e.path().filename().string().starts_with("."))
      folders.push_back(e.path());
  std::sort(folders.begin(), folders.end());
  std::vector<PredictImage> out;
  if (folders.empty())
    for (const std::string& f : image_files_in(dir)) out.push_back({f, -1});
  for (const fs::path& folder : folders) {
    const std::string name = folder.filename().string();
    const int32_t label = class_of_folder(name, class_names);
    if (label < 0) {
      std::string known, spelt;
      for (const std::string& c : class_names) {
        known += (known.empty() ? "" : ", ") + c;
        // A folder cannot hold every name ("T-shirt/top"): say how one is spelt.
        if (spelt.empty() && class_folder_form(c) != c)
          spelt = "; a folder may spell '" + c + "' as '" + class_folder_form(c) + "'";
      }
      throw UsageError(folder.string() + ": no class of the model is called '" + name +
                       "' (its classes: " + known + spelt + ")");
    }
    for (const std::string& f : image_files_in(folder.string())) out.push_back({f, label});
  }
  if (out.empty())
    throw UsageError(dir + " holds no PNG or JPEG images" +
                     (folders.empty() ? "" : " in its class folders"));
  return out;
}

PredictReport predict_images(const Project& project, const Checkpoint& checkpoint,
                             const std::vector<PredictImage>& images, int top) {
  PredictReport report;
  report.class_names = class_names_of(project.dataset);
  const int64_t classes = project.dataset.classes;
  const Shape sample{1, project.dataset.height, project.dataset.width, project.dataset.channels};
  if (sample.c != 1 && sample.c != 3)
    throw UsageError("images are fitted to 1 (grey) or 3 (RGB) channels, not the " +
                     std::to_string(sample.c) + " of \"dataset.channels\"");
  // Decode and fit every image; the readable ones are classified.
  const int64_t per = sample.per_sample();
  std::vector<uint8_t> pixels;
  std::vector<size_t> readable;
  report.predictions.resize(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    Prediction& p = report.predictions[i];
    p.file = images[i].file;
    p.label = images[i].label;
    try {
      const DecodedImage d = decode_image(images[i].file);
      pixels.resize(pixels.size() + static_cast<size_t>(per));
      fit_image(d, sample.h, sample.w, sample.c, pixels.data() + pixels.size() - per);
      readable.push_back(i);
    } catch (const UsageError& e) {
      p.error = e.what();
    }
  }
  if (readable.empty()) return report;
  // Batches of up to 64, the last padded with copies of the first image.
  const auto n = static_cast<int64_t>(readable.size());
  const int64_t batch = std::min<int64_t>(64, n);
  const int64_t padded = (n + batch - 1) / batch * batch;
  for (int64_t i = n; i < padded; ++i)
    pixels.insert(pixels.end(), pixels.begin(), pixels.begin() + per);
  Project p = project;
  // One rank: no mesh to split over, no optimizer state to shard (the
  // checkpoint's tensors are whole either way).
  p.training.devices = DeviceSet{};
  p.training.tensor_ranks = 1;
  p.training.sharding = Sharding::None;
  p.training.precision = Precision::FP32;
  p.training.ema = false;
  p.training.sync_batch_norm = false;
  p.training.global_batch = batch;
  p.dataset.train_size = p.dataset.val_size = padded;
  p.variants = {{"train", VariantKind::Train, 0, 0, 0},
                {"val", VariantKind::Validation, batch, 0, 0}};
  const CompiledProject cp = compile_project(p);
  const ImagesSource source(sample, classes, std::move(pixels), padded);
  auto backend = cpu::make_cpu_backend({1, true, false});
  TrainingSession session(cp, *backend);
  session.initialize(p.training.seed);
  std::vector<std::string> fresh;
  init_from_checkpoint(cp, session, checkpoint, "the checkpoint", fresh);
  if (!fresh.empty()) {
    std::string text = "the checkpoint does not fit the model of project '" + project.name + "':";
    for (size_t i = 0; i < fresh.size() && i < 6; ++i) text += "\n  " + fresh[i];
    throw UsageError(text);
  }
  int val_variant = -1;
  for (size_t v = 0; v < cp.variants.size(); ++v)
    if (cp.variants[v].kind == VariantKind::Validation) val_variant = static_cast<int>(v);
  BatchSpec spec = make_batch_spec(p.dataset, Split::Val, batch, p.training.seed, DType::FP32);
  BatchPipeline pipeline(source, Split::Val, spec, 1, 0);
  RankStaging staging;
  staging.per_variant.resize(cp.variants.size());
  auto host = [](const Batch& b) {
    return TransferHost{b.images.data<std::byte>(), b.labels.data<std::byte>()};
  };
  staging.per_variant[static_cast<size_t>(val_variant)] = {host(pipeline.staging(0)),
                                                           host(pipeline.staging(1))};
  session.capture(0, staging);
  // The logits: the output of the layer feeding the loss, in the validation plan.
  const ModelGraph& g = cp.project.model;
  std::string logits_name;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].type == LayerType::SoftmaxCrossEntropy)
      for (const Edge& e : g.edges)
        if (e.to == static_cast<int>(i))
          logits_name = g.nodes[static_cast<size_t>(e.from)].id + ".out";
  const MemoryPlan& plan = cp.plans.at(static_cast<size_t>(val_variant));
  DTensorId logits{};
  bool found = false;
  for (size_t i = 0; i < plan.dtensors().size() && !found; ++i)
    if (plan.dtensors()[i].name == logits_name &&
        plan.dtensors()[i].region == Region::F_FEATURE_FP32) {
      logits = static_cast<DTensorId>(i);
      found = true;
    }
  if (!found)
    throw std::logic_error("predict: the validation plan has no FP32 tensor " + logits_name);
  pipeline.start_epoch(0);
  session.begin_validation(0);
  std::vector<float> all;
  for (const Batch* b = pipeline.next(); b; b = pipeline.next()) {
    session.validate_batch(0, val_variant, b->buffer);
    const std::vector<float> v = session.read_tensor(0, logits, val_variant);
    all.insert(all.end(), v.begin(), v.end());
    pipeline.release(b);
  }
  session.end_validation(0);
  if (std::any_of(images.begin(), images.end(), [](const PredictImage& i) { return i.label >= 0; }))
    report.confusion.assign(static_cast<size_t>(classes * classes), 0);
  const int keep = std::clamp<int>(top, 1, static_cast<int>(classes));
  for (int64_t k = 0; k < n; ++k) {
    Prediction& pr = report.predictions[readable[static_cast<size_t>(k)]];
    const float* z = all.data() + k * classes;
    pr.logits.assign(z, z + classes);
    const double m = *std::max_element(z, z + classes);
    std::vector<double> prob(static_cast<size_t>(classes));
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += prob[static_cast<size_t>(c)] = std::exp(z[c] - m);
    std::vector<int32_t> order(static_cast<size_t>(classes));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return prob[static_cast<size_t>(a)] > prob[static_cast<size_t>(b)];
    });
    for (int j = 0; j < keep; ++j) {
      const int32_t c = order[static_cast<size_t>(j)];
      pr.top.push_back({c,
                        c < static_cast<int32_t>(report.class_names.size())
                            ? report.class_names[static_cast<size_t>(c)]
                            : "class " + std::to_string(c),
                        prob[static_cast<size_t>(c)] / sum});
    }
    if (pr.label >= 0 && pr.label < classes) {
      ++report.labelled;
      report.correct += pr.top.front().index == pr.label;
      ++report.confusion[static_cast<size_t>(pr.label * classes + pr.top.front().index)];
    }
  }
  return report;
}

}  // namespace tr
