// SPDX-License-Identifier: GPL-3.0-or-later
// Defaults that turn a project's dataset settings into pipeline settings.
#include "data/batch.h"

#include <algorithm>
#include <thread>

namespace tr {

namespace {

// Threads to decode one batch: one per ~2 M pixels, up to the machine's. A
// Fashion-MNIST batch (0.1 M) stays on the prefetch thread itself; a
// 256-image ImageNet-size batch (38 M pixels, about a second on one core)
// spreads over every core, or the host would starve a GPU.
int fill_threads_for(const DatasetSpec& d, int64_t global_batch) {
  constexpr int64_t kPixelsPerThread = int64_t{2} << 20;
  const int64_t pixels = global_batch * d.height * d.width * d.channels;
  const int64_t hw = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::clamp<int64_t>(pixels / kPixelsPerThread, 1, hw));
}

}  // namespace

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
  s.fill_threads = fill_threads_for(dataset, global_batch);
  return s;
}

}  // namespace tr
