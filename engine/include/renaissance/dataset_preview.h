// SPDX-License-Identifier: GPL-3.0-or-later
// What a project's dataset holds, for the workbench's Data view: images per
// class in each split, the first training images of an epoch as the input
// pipeline makes them (shuffled, cropped and flipped as the project says,
// so the user sees what the network sees), and the per-channel mean and
// standard deviation of the training pixels, to normalise with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/project.h>

namespace tr {

struct DatasetSample {
  int32_t label = 0;
  // height x width x channels bytes: the pipeline's normalised values with
  // the normalisation undone, so padding a crop added shows as it is fed.
  std::vector<uint8_t> pixels;
};

struct DatasetPreview {
  std::string source;  // "Fashion-MNIST from /usr/share/datasets/fashion-mnist"
  int64_t height = 0, width = 0, channels = 0;
  std::vector<std::string> class_names;
  std::vector<int64_t> train_counts, val_counts;  // images per class
  std::vector<DatasetSample> samples;
  // Of the training split's pixels / 255, per channel (population figures),
  // over every training image, or over images spread evenly across the
  // split when it holds more than 2^28 pixels.
  std::vector<double> mean, std;
  int64_t images_measured = 0;
};

// Loads the project's dataset as training does (throws UsageError naming
// what is missing or wrong) and takes the first `samples` images of epoch
// `epoch`'s training order.
DatasetPreview preview_dataset(const Project& project, int samples, int64_t epoch = 0);

}  // namespace tr
