// SPDX-License-Identifier: GPL-3.0-or-later
// Defaults that turn a project's dataset settings into pipeline settings.
#include "data/batch.h"

namespace tr {

BatchSpec make_batch_spec(const DatasetSpec& dataset, Split split, int64_t global_batch,
                          uint64_t seed, DType dtype) {
  BatchSpec s;
  s.batch = global_batch;
  s.seed = seed;
  s.mean = dataset.mean;
  s.std = dataset.std;
  s.dtype = dtype;
  const bool train = split == Split::Train;
  s.shuffle = train;
  s.random_crop_padding = train ? dataset.random_crop_padding : 0;
  s.random_flip = train && dataset.random_flip;
  s.drop_last = false;
  return s;
}

}  // namespace tr
