// SPDX-License-Identifier: GPL-3.0-or-later
// preview_dataset: counts every label, sums the training pixels (in
// integers, so the figures do not depend on the order; every image up to a
// budget, an even spread of them beyond), and runs the
// training input pipeline for one batch of the epoch asked for.
#include <renaissance/dataset_preview.h>

#include <algorithm>
#include <cmath>

#include <renaissance/dataset_kinds.h>
#include <renaissance/dataset_probe.h>
#include <renaissance/error.h>
#include "data/batch.h"
#include "data/batch_pipeline.h"
#include "data/dataset.h"
#include "data/image_folder.h"

namespace tr {

DatasetPreview preview_dataset(const Project& project, int samples, int64_t epoch) {
  const DatasetSpec& spec = project.dataset;
  const std::unique_ptr<DataSource> source = load_dataset(spec, "", project.training.seed);
  DatasetPreview p;
  p.source = source->describe();
  const Shape shape = source->sample_shape();
  p.height = shape.h;
  p.width = shape.w;
  p.channels = shape.c;
  const int64_t classes = source->classes();
  if (const auto* folder = dynamic_cast<const ImageFolderSource*>(source.get()))
    p.class_names = folder->class_names();
  else
    p.class_names = dataset_class_names(spec);
  p.train_counts.assign(static_cast<size_t>(classes), 0);
  p.val_counts.assign(static_cast<size_t>(classes), 0);
  for (Split split : {Split::Train, Split::Val}) {
    std::vector<int64_t>& counts = split == Split::Train ? p.train_counts : p.val_counts;
    for (int64_t i = 0; i < source->size(split); ++i) {
      const int32_t label = source->label(split, i);
      if (label >= 0 && label < classes) ++counts[static_cast<size_t>(label)];
    }
  }

  // Per channel: the sum of the pixels and of their squares.
  const int64_t per = shape.per_sample();
  std::vector<uint8_t> pixels(static_cast<size_t>(per));
  std::vector<uint64_t> sum(static_cast<size_t>(shape.c), 0), squares(sum);
  // Every image up to a budget of pixels (Fashion-MNIST's and CIFAR's
  // training sets whole), else images spread evenly over the split: a
  // synthetic ImageNet would take hours to read whole, and a sample of
  // thousands of images gives the same figures to three digits.
  constexpr int64_t kPixelBudget = int64_t{1} << 28;
  const int64_t all = source->size(Split::Train);
  const int64_t train = per > 0 ? std::min(all, std::max<int64_t>(1, kPixelBudget / per)) : 0;
  for (int64_t j = 0; j < train; ++j) {
    source->read(Split::Train, j * all / train, pixels.data());
    for (int64_t k = 0; k < per; ++k) {
      const uint64_t v = pixels[static_cast<size_t>(k)];
      sum[static_cast<size_t>(k % shape.c)] += v;
      squares[static_cast<size_t>(k % shape.c)] += v * v;
    }
  }
  p.images_measured = train;
  const double n = static_cast<double>(train) * static_cast<double>(shape.h * shape.w);
  for (int64_t c = 0; c < shape.c && train > 0; ++c) {
    const double mean = static_cast<double>(sum[static_cast<size_t>(c)]) / n / 255.0;
    const double square = static_cast<double>(squares[static_cast<size_t>(c)]) / n / 65025.0;
    p.mean.push_back(mean);
    p.std.push_back(std::sqrt(std::max(0.0, square - mean * mean)));
  }

  // The first batch of the epoch, as training's pipeline makes it.
  const int64_t count = std::min<int64_t>(samples, train);
  if (count <= 0) return p;
  BatchSpec b = make_batch_spec(spec, Split::Train, count, project.training.seed, DType::FP32);
  b.epoch = epoch;
  BatchPipeline pipeline(*source, Split::Train, b, 1, 0);
  const Batch* batch = pipeline.next();
  if (!batch) return p;
  const float* v = batch->images.data<float>();
  const int32_t* labels = batch->labels.data<int32_t>();
  const auto channel_value = [&](const std::vector<double>& list, int64_t c) {
    return list.size() == 1 ? list[0] : list[static_cast<size_t>(c)];
  };
  for (int64_t s = 0; s < batch->size; ++s) {
    DatasetSample d;
    d.label = labels[s];
    d.pixels.resize(static_cast<size_t>(per));
    for (int64_t k = 0; k < per; ++k) {
      const int64_t c = k % shape.c;
      const double x = v[s * per + k] * channel_value(b.std, c) + channel_value(b.mean, c);
      d.pixels[static_cast<size_t>(k)] =
          static_cast<uint8_t>(std::clamp(std::lround(x * 255.0), 0L, 255L));
    }
    p.samples.push_back(std::move(d));
  }
  pipeline.release(batch);
  return p;
}

}  // namespace tr
