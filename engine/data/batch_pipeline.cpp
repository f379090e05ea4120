// SPDX-License-Identifier: GPL-3.0-or-later
// The prefetch thread, the A/B slot state machine and batch filling.
#include "data/batch_pipeline.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <renaissance/error.h>

namespace tr {

namespace {

BatchSpec checked(BatchSpec spec) {
  if (spec.dtype != DType::FP32 && !is_16bit_float(spec.dtype)) {
    throw UsageError("input batches must be fp32, fp16 or bf16, not " +
                     std::string(dtype_name(spec.dtype)));
  }
  if (spec.fill_threads < 1) spec.fill_threads = 1;
  return spec;
}

}  // namespace

BatchPipeline::BatchPipeline(const DataSource& source, Split split, BatchSpec spec, int world_size,
                             int rank)
    : source_(source),
      split_(split),
      spec_(checked(std::move(spec))),
      world_(world_size),
      rank_(rank),
      transform_(source.sample_shape(), spec_.mean, spec_.std, spec_.random_crop_padding,
                 spec_.random_flip, spec_.seed, spec_.padded_channels),
      plan_(source.size(split), spec_.batch, world_size, rank, spec_.drop_last, spec_.shuffle,
            spec_.seed, spec_.epoch) {
  const Shape s = source.sample_shape();
  const int64_t local = plan_.local_batch();
  for (int i = 0; i < 2; ++i) {
    // Zero-filled once so no row (e.g. past a partial batch) is ever
    // uninitialised memory; whole pages, as a device backend page-locks each
    // buffer on its own.
    const int64_t c = spec_.padded_channels > 0 ? spec_.padded_channels : s.c;
    buffers_[static_cast<size_t>(i)].images =
        Tensor::whole_pages({local, s.h, s.w, c}, spec_.dtype);
    buffers_[static_cast<size_t>(i)].labels = Tensor::whole_pages({local, 1, 1, 1}, DType::INT32);
    buffers_[static_cast<size_t>(i)].buffer = i;
  }
  producer_ = std::thread([this] { produce(); });
}

BatchPipeline::~BatchPipeline() {
  stop();
}

void BatchPipeline::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  producer_cv_.notify_all();
  consumer_cv_.notify_all();
  if (producer_.joinable() && producer_.get_id() != std::this_thread::get_id()) producer_.join();
}

bool BatchPipeline::cancelled(uint64_t generation) const noexcept {
  return stop_.load(std::memory_order_relaxed) ||
         generation_.load(std::memory_order_relaxed) != generation;
}

void BatchPipeline::produce() {
  std::unique_lock lock(mutex_);
  for (;;) {
    // Batch k always goes to buffer k % 2, which batch k-2 must have left.
    producer_cv_.wait(lock, [&] {
      return stop_ || (!error_ && next_fill_ < plan_.batches() &&
                       slots_[static_cast<size_t>(next_fill_ % 2)] == Slot::Free);
    });
    if (stop_) return;
    const int64_t index = next_fill_++;
    const auto slot = static_cast<size_t>(index % 2);
    const EpochPlan plan = plan_;
    const uint64_t generation = generation_;
    slots_[slot] = Slot::Filling;
    lock.unlock();

    bool done = false;
    std::exception_ptr error;
    try {
      done = fill(buffers_[slot], plan, index, generation);
    } catch (...) {
      error = std::current_exception();
    }

    lock.lock();
    const bool current = !stop_ && generation == generation_;
    if (error && current) error_ = error;
    slots_[slot] = (done && current) ? Slot::Ready : Slot::Free;
    consumer_cv_.notify_all();
  }
}

bool BatchPipeline::fill(Batch& batch, const EpochPlan& plan, int64_t index, uint64_t generation) {
  const int64_t size = plan.batch_size(index);
  batch.size = size;
  batch.index = index;
  batch.epoch = plan.epoch();
  batch.partial = plan.is_partial(index);
  const int threads = static_cast<int>(std::min<int64_t>(spec_.fill_threads, size));
  if (threads <= 1) {
    fill_range(batch, plan, index, 0, size, generation);
  } else {
    // Samples are independent, so splitting them changes no byte of the result.
    std::vector<std::thread> workers;
    std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
    const int64_t per = (size + threads - 1) / threads;
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = t * per, end = std::min(size, begin + per);
      workers.emplace_back([&, t, begin, end] {
        try {
          fill_range(batch, plan, index, begin, end, generation);
        } catch (...) {
          errors[static_cast<size_t>(t)] = std::current_exception();
        }
      });
    }
    for (auto& w : workers) w.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  }
  return !cancelled(generation);
}

void BatchPipeline::fill_range(Batch& batch, const EpochPlan& plan, int64_t index, int64_t begin,
                               int64_t end, uint64_t generation) {
  const int64_t per_sample = transform_.out_per_sample();
  std::vector<uint8_t> pixels(static_cast<size_t>(transform_.sample().per_sample()));
  int32_t* labels = batch.labels.data<int32_t>();
  for (int64_t i = begin; i < end; ++i) {
    if (cancelled(generation)) return;
    const int64_t sample = plan.sample(index, i);
    source_.read(split_, sample, pixels.data());
    labels[i] = source_.label(split_, sample);
    const Augmentation aug = transform_.draw(plan.epoch(), sample);
    if (is_16bit_float(spec_.dtype)) {
      transform_.apply(pixels.data(), aug, spec_.dtype,
                       batch.images.data<uint16_t>() + i * per_sample);
    } else {
      transform_.apply(pixels.data(), aug, batch.images.data<float>() + i * per_sample);
    }
  }
}

const Batch* BatchPipeline::next() {
  std::unique_lock lock(mutex_);
  if (stop_ || next_hand_ >= plan_.batches()) return nullptr;
  const auto slot = static_cast<size_t>(next_hand_ % 2);
  if (slots_[slot] == Slot::Held) {
    throw UsageError("BatchPipeline::next(): both staging buffers are held (batch " +
                     std::to_string(buffers_[slot].index) +
                     " was never released); release a batch before asking for the next one");
  }
  consumer_cv_.wait(lock, [&] { return stop_ || error_ || slots_[slot] == Slot::Ready; });
  if (stop_) return nullptr;
  // Batches filled before the failure are still handed out, so the error
  // surfaces at the batch it belongs to.
  if (slots_[slot] != Slot::Ready) std::rethrow_exception(error_);
  slots_[slot] = Slot::Held;
  ++next_hand_;
  return &buffers_[slot];
}

void BatchPipeline::release(const Batch* batch) {
  {
    std::lock_guard lock(mutex_);
    const auto it =
        std::find_if(buffers_.begin(), buffers_.end(), [&](const Batch& b) { return &b == batch; });
    if (it == buffers_.end() || slots_[static_cast<size_t>(it - buffers_.begin())] != Slot::Held) {
      throw UsageError(
          "BatchPipeline::release(): not a batch this pipeline handed out and "
          "still holds (released twice?)");
    }
    slots_[static_cast<size_t>(it - buffers_.begin())] = Slot::Free;
  }
  producer_cv_.notify_all();
}

void BatchPipeline::start_epoch(int64_t epoch, int64_t first_batch) {
  {
    std::lock_guard lock(mutex_);
    for (const Slot s : slots_) {
      if (s == Slot::Held) {
        throw UsageError("BatchPipeline::start_epoch(" + std::to_string(epoch) +
                         "): a batch of the current epoch is still held; release it first");
      }
    }
    // A buffer still Filling finishes (or gives up) on its own and is then
    // freed because its generation is stale.
    ++generation_;
    for (Slot& s : slots_) {
      if (s == Slot::Ready) s = Slot::Free;
    }
    plan_ = EpochPlan(source_.size(split_), spec_.batch, world_, rank_, spec_.drop_last,
                      spec_.shuffle, spec_.seed, epoch);
    if (first_batch < 0 || first_batch > plan_.batches())
      throw UsageError("BatchPipeline::start_epoch(" + std::to_string(epoch) + ", " +
                       std::to_string(first_batch) + "): the epoch has " +
                       std::to_string(plan_.batches()) + " batches");
    next_fill_ = first_batch;
    next_hand_ = first_batch;
    error_ = nullptr;
  }
  producer_cv_.notify_all();
}

int BatchPipeline::prefetched() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(std::count(slots_.begin(), slots_.end(), Slot::Ready));
}

}  // namespace tr
