// SPDX-License-Identifier: GPL-3.0-or-later
// Batch and BatchSpec: what the input pipeline produces and how it is asked to.
#pragma once

#include <cstdint>
#include <vector>

#include <renaissance/dtype.h>
#include <renaissance/project.h>
#include "data/data_source.h"
#include "data/host_tensor.h"

namespace tr {

struct BatchSpec {
  int64_t batch = 128;  // the GLOBAL batch: all ranks together; must divide by the world size
  bool shuffle = true;
  uint64_t seed = 42;                       // shuffle and augmentation; the same on every rank
  int64_t epoch = 0;                        // the epoch the pipeline starts in
  std::vector<double> mean{0.0}, std{1.0};  // per channel, or one value for all
  int64_t random_crop_padding = 0;          // 0: no crop
  bool random_flip = false;
  DType dtype = DType::FP32;  // FP32 or FP16
  bool drop_last = false;     // skip the last partial batch instead of yielding it
  int fill_threads = 1;       // threads that decode one batch (results do not depend on it)
  // Channels per pixel in the staging images, when the device pads them (FP16
  // inputs to 4): the padding lanes stay zero and one contiguous copy moves a
  // batch. 0: the sample's own channels.
  int64_t padded_channels = 0;
};

// Training: shuffle plus the dataset's augmentation; validation: fixed
// order, no augmentation, every sample (drop_last off).
BatchSpec make_batch_spec(const DatasetSpec& dataset, Split split, int64_t global_batch,
                          uint64_t seed, DType dtype);

// One host staging buffer. Its tensors have the full local batch as
// capacity so they are allocated (and, on CUDA, page-locked) once; a partial
// last batch fills only the first `size` rows, the rest hold stale data.
struct Batch {
  Tensor images;      // [local_batch, H, W, C or padded_channels], dtype of the spec, normalised
  Tensor labels;      // INT32 [local_batch, 1, 1, 1]
  int64_t size = 0;   // valid samples on this rank
  int64_t index = 0;  // batch number within the epoch
  int64_t epoch = 0;
  int buffer = 0;        // 0: A, 1: B; batch k of an epoch always uses buffer k % 2
  bool partial = false;  // the last, smaller batch (the runtime's last_batch variant)

  Shape shape() const noexcept {
    return {size, images.shape().h, images.shape().w, images.shape().c};
  }
  size_t image_bytes() const noexcept {
    return static_cast<size_t>(shape().elements()) * dtype_size(images.dtype());
  }
  size_t label_bytes() const noexcept { return static_cast<size_t>(size) * sizeof(int32_t); }
};

}  // namespace tr
