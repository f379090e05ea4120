// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/trainer.h"

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "data/batch_pipeline.h"
#include "runtime/lr_schedule.h"
#include "runtime/training_session.h"

namespace tr {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TransferHost host_of(const Batch& b) {
  return {b.images.data<std::byte>(), b.labels.data<std::byte>()};
}

struct Shared {
  std::mutex mutex;
  TrainReport report;
  std::exception_ptr error;
};

class RankLoop {
 public:
  RankLoop(const CompiledProject& cp, Backend& backend, TrainingSession& session,
           const DataSource& data, const TrainOptions& options, const TrainCallbacks& callbacks,
           Shared& shared, int rank)
      : cp_(cp),
        backend_(backend),
        session_(session),
        options_(options),
        callbacks_(callbacks),
        shared_(shared),
        rank_(rank),
        train_variant_(cp.variant_index(VariantKind::Train)),
        last_variant_(cp.variant_index(VariantKind::LastBatch)),
        val_variant_(cp.variant_index(VariantKind::Validation)) {
    const Project& p = cp.project;
    const DType dtype = p.training.precision == Precision::AMP ? DType::FP16 : DType::FP32;
    train_ = std::make_unique<BatchPipeline>(
        data, Split::Train,
        make_batch_spec(p.dataset, Split::Train, p.training.global_batch, p.training.seed, dtype),
        cp.world_size, rank);
    if (val_variant_ >= 0 && options.validate) {
      const int64_t val_global =
          cp.variants[static_cast<size_t>(val_variant_)].batch * cp.world_size;
      if (data.size(Split::Val) % val_global != 0)
        throw UsageError(
            "the validation set's " + std::to_string(data.size(Split::Val)) +
            " samples do not split into batches of " + std::to_string(val_global) +
            " (validation batch x devices); choose a validation batch that divides it");
      val_ = std::make_unique<BatchPipeline>(
          data, Split::Val,
          make_batch_spec(p.dataset, Split::Val, val_global, p.training.seed, dtype), cp.world_size,
          rank);
    }
    RankStaging staging;
    staging.per_variant.resize(cp.variants.size());
    for (size_t v = 0; v < cp.variants.size(); ++v) {
      const BatchPipeline* src =
          cp.variants[v].kind == VariantKind::Validation ? val_.get() : train_.get();
      if (!src) continue;
      staging.per_variant[v] = {host_of(src->staging(0)), host_of(src->staging(1))};
    }
    session_.capture(rank_, staging);
  }

  void run() {
    const int64_t epochs = options_.epochs > 0 ? options_.epochs : cp_.project.training.epochs;
    int64_t step = 0;
    bool stopped = false;
    for (int64_t epoch = 0; epoch < epochs && !stopped; ++epoch) {
      if (epoch > 0) train_->start_epoch(epoch);
      EpochReport er;
      er.epoch = epoch;
      double loss_sum = 0, top1_sum = 0, samples = 0;
      const auto t_epoch = Clock::now();
      const int64_t batches = train_->batches_per_epoch();
      const Batch* batch = train_->next();
      if (batch) session_.transfer(rank_, variant_of(*batch), batch->buffer);
      while (batch) {
        if ((options_.stop && options_.stop->load()) ||
            (options_.max_steps >= 0 && step >= options_.max_steps)) {
          stopped = true;
          break;
        }
        const bool profile = step >= options_.profile_begin && step < options_.profile_end;
        if (rank_ == 0 && step == options_.profile_begin) backend_.set_profiling(true);
        const auto t_step = Clock::now();
        const Batch* next = train_->next();
        const double position = static_cast<double>(epoch) +
                                static_cast<double>(batch->index) / static_cast<double>(batches);
        const double lr = learning_rate(cp_.project.training.optimizer,
                                        cp_.project.training.schedule, epochs, position);
        const StepMetrics m = session_.train_step(rank_, variant_of(*batch), batch->buffer, next,
                                                  next ? variant_of(*next) : 0, lr, step);
        if (m.overflow && cp_.project.training.precision == Precision::FP32)
          throw std::runtime_error("the loss or a gradient became NaN or infinite at step " +
                                   std::to_string(step) + " (epoch " + std::to_string(epoch + 1) +
                                   "); lower the learning rate");
        const double dt = seconds_since(t_step);
        if (rank_ == 0 && profile && step + 1 == options_.profile_end) {
          backend_.set_profiling(false);
          auto spans = backend_.take_profile();
          std::lock_guard<std::mutex> lock(shared_.mutex);
          shared_.report.profile.insert(shared_.report.profile.end(), spans.begin(), spans.end());
        }
        train_->release(batch);
        loss_sum += m.loss * m.samples;
        top1_sum += m.top1 * m.samples;
        samples += m.samples;
        if (rank_ == 0) {
          StepReport sr{step, epoch, batch->index, batches, m.loss, m.top1, lr, dt, batch->partial};
          {
            std::lock_guard<std::mutex> lock(shared_.mutex);
            shared_.report.step_seconds.push_back(dt);
            shared_.report.steps = step + 1;
          }
          if (callbacks_.on_step) callbacks_.on_step(sr);
        }
        ++step;
        batch = next;
      }
      if (batch) train_->release(batch);
      er.seconds = seconds_since(t_epoch);
      // m.samples already counts every rank (the result is all-reduced)
      er.images_per_s = er.seconds > 0 ? samples / er.seconds : 0;
      if (samples > 0) {
        er.train_loss = loss_sum / samples;
        er.train_top1 = top1_sum / samples;
      }
      if (val_ && !stopped) validate(er);
      if (rank_ == 0) {
        {
          std::lock_guard<std::mutex> lock(shared_.mutex);
          shared_.report.epochs.push_back(er);
        }
        if (callbacks_.on_epoch) callbacks_.on_epoch(er);
      }
    }
    if (rank_ == 0) {
      std::lock_guard<std::mutex> lock(shared_.mutex);
      shared_.report.stopped = stopped;
    }
  }

 private:
  int variant_of(const Batch& b) const {
    return b.partial && last_variant_ >= 0 ? last_variant_ : train_variant_;
  }

  void validate(EpochReport& er) {
    val_->start_epoch(er.epoch);
    session_.begin_validation(rank_);
    for (const Batch* b = val_->next(); b; b = val_->next()) {
      session_.validate_batch(rank_, val_variant_, b->buffer);
      val_->release(b);
    }
    const StepMetrics m = session_.end_validation(rank_);
    er.val_loss = m.loss;
    er.val_top1 = m.top1;
    er.val_top5 = m.top5;
    er.validated = true;
  }

  const CompiledProject& cp_;
  Backend& backend_;
  TrainingSession& session_;
  const TrainOptions& options_;
  const TrainCallbacks& callbacks_;
  Shared& shared_;
  int rank_;
  int train_variant_, last_variant_, val_variant_;
  std::unique_ptr<BatchPipeline> train_, val_;
};

}  // namespace

TrainReport train(const CompiledProject& cp, Backend& backend, const DataSource& data,
                  const TrainOptions& options, const TrainCallbacks& callbacks) {
  const Shape s = data.sample_shape();
  const Shape in = cp.analysis.nodes[static_cast<size_t>(cp.analysis.input_node)].output;
  if (s.h != in.h || s.w != in.w || s.c != in.c)
    throw UsageError("the dataset's samples are " + std::to_string(s.h) + "x" +
                     std::to_string(s.w) + "x" + std::to_string(s.c) +
                     " but the model's Input is " + std::to_string(in.h) + "x" +
                     std::to_string(in.w) + "x" + std::to_string(in.c));
  if (data.classes() != cp.project.dataset.classes)
    throw UsageError("the dataset has " + std::to_string(data.classes()) +
                     " classes but the project expects " +
                     std::to_string(cp.project.dataset.classes));
  if (cp.project.training.precision == Precision::AMP && backend.name() == "cpu")
    throw UsageError(
        "precision amp needs FP16 kernels, which the CPU backend does not have; train with "
        "--precision fp32 (the plan of an AMP project can still be inspected with 'plan')");
  TrainingSession session(cp, backend);
  session.initialize(cp.project.training.seed);
  Shared shared;
  std::vector<std::unique_ptr<RankLoop>> loops;
  for (int r = 0; r < cp.world_size; ++r) {
    loops.push_back(
        std::make_unique<RankLoop>(cp, backend, session, data, options, callbacks, shared, r));
  }
  if (cp.world_size == 1) {
    loops[0]->run();
  } else {
    std::vector<std::thread> threads;
    for (auto& loop : loops)
      threads.emplace_back([&shared, l = loop.get()] {
        try {
          l->run();
        } catch (...) {
          std::lock_guard<std::mutex> lock(shared.mutex);
          if (!shared.error) shared.error = std::current_exception();
        }
      });
    for (std::thread& t : threads) t.join();
    if (shared.error) std::rethrow_exception(shared.error);
  }
  return std::move(shared.report);
}

}  // namespace tr
