// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <renaissance/error.h>
#include "data/batch_pipeline.h"
#include "runtime/checkpoint_state.h"
#include "runtime/lr_schedule.h"
#include "runtime/pinned_host.h"
#include "runtime/rank_barrier.h"
#include "runtime/training_session.h"

namespace tr {

namespace {

// Consecutive AMP-skipped steps after which training stops with an error.
constexpr int kMaxSkippedSteps = 32;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TransferHost host_of(const Batch& b) {
  return {b.images.data<std::byte>(), b.labels.data<std::byte>()};
}

std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an unknown error";
  }
}

// Why the step loop ends before a step.
enum class Halt { None, StepLimit, Stop };

// Validation runs whole batches of `batch` samples on each of `world` ranks:
// they must cover the set exactly. Refused with the nearest batch that does
// (or why none can).
void check_validation_batches(int64_t samples, int64_t batch, int world) {
  const int64_t global = batch * world;
  if (samples % global == 0) return;
  std::string fix;
  for (int64_t b = batch - 1; b > 0 && fix.empty(); --b)
    if (samples % (b * world) == 0) fix = "a validation batch of " + std::to_string(b) + " does";
  if (fix.empty())
    fix = "no validation batch on " + std::to_string(world) + " rank" + (world == 1 ? "" : "s") +
          " covers " + std::to_string(samples) + " samples; train on a rank count that divides " +
          "it, or without validation (--no-validation)";
  throw UsageError("the validation set's " + std::to_string(samples) +
                   " samples do not split into batches of " + std::to_string(global) +
                   " (validation batch " + std::to_string(batch) + " x " + std::to_string(world) +
                   " rank" + (world == 1 ? "" : "s") + "); " + fix);
}

struct Shared {
  explicit Shared(int world) : barrier(world), shards(static_cast<size_t>(world)) {}

  // Every rank must end before the same step, or the others would wait in
  // that step's collectives for ever. The first rank to ask about a step
  // reads the flag and the others get its answer, kept until the last has
  // asked: a rank launches its steps ahead of their execution, so it may ask
  // about step s+1 before another has asked about s. A stop request wins
  // over the step limit: a user who asks to stop does not want the
  // validation that ends a run.
  Halt halt_before(int64_t step, const TrainOptions& o, Backend& backend, int rank) {
    bool stop = false;
    if (backend.global_world() != backend.world_size()) {
      // Across nodes a stop asked for on one machine must reach all: the
      // processes vote before every step, while their rank threads wait.
      barrier.arrive_and_wait();
      if (rank == 0) vote = backend.any_process(o.stop && o.stop->load());
      barrier.arrive_and_wait();
      stop = vote;
    } else {
      std::lock_guard<std::mutex> lock(vote_mutex);
      const auto at = votes.try_emplace(step, Vote{o.stop && o.stop->load(), 0}).first;
      stop = at->second.stop;
      if (++at->second.asked == backend.world_size()) votes.erase(at);
    }
    if (stop) return Halt::Stop;
    if (o.max_steps >= 0 && step >= o.max_steps) return Halt::StepLimit;
    return Halt::None;
  }

  std::mutex mutex;
  TrainReport report;
  std::exception_ptr error;
  RankBarrier barrier;  // this process's ranks: profiling boundaries, stop votes across nodes
  RankShards shards;    // ZeRO-1: every rank's moment shards, for a checkpoint
  // This process's ranks: each step's answer until every rank has it.
  struct Vote {
    bool stop;
    int asked;
  };
  std::mutex vote_mutex;
  std::map<int64_t, Vote> votes;
  // Across processes: rank 0's answer, read between two barriers.
  bool vote = false;
};

class RankLoop {
 public:
  RankLoop(const CompiledProject& cp, Backend& backend, TrainingSession& session,
           const DataSource& data, const TrainOptions& options, const TrainCallbacks& callbacks,
           Shared& shared, int rank, const TrainPosition& start)
      : cp_(cp),
        backend_(backend),
        session_(session),
        options_(options),
        callbacks_(callbacks),
        shared_(shared),
        rank_(rank),
        global_rank_(backend.global_rank(rank)),
        start_(start),
        train_variant_(cp.variant_index(VariantKind::Train)),
        last_variant_(cp.variant_index(VariantKind::LastBatch)),
        val_variant_(cp.variant_index(VariantKind::Validation)) {
    const Project& p = cp.project;
    const DType dtype = storage_dtype(p.training.precision);
    // The host batches take the device's layout (16-bit inputs padded to 4
    // channels), so a transfer is one contiguous copy.
    const int64_t padded_c = cp.plans.front().get_dtensor(cp.engine.input[0]).padded_c();
    BatchSpec spec =
        make_batch_spec(p.dataset, Split::Train, p.training.global_batch, p.training.seed, dtype);
    spec.padded_channels = padded_c;
    spec.epoch = start.epoch;  // the per-epoch order is a function of (seed, epoch)
    // The global batch splits over the ranks of every node (a tensor-parallel
    // group's ranks too: each computes its own samples outside the split layers).
    train_ = std::make_unique<BatchPipeline>(data, Split::Train, spec, cp.world_size, global_rank_);
    if (start.batch >= train_->batches_per_epoch())
      throw UsageError("checkpoint '" + options.resume_source + "' continues at batch " +
                       std::to_string(start.batch + 1) + " of epoch " +
                       std::to_string(start.epoch + 1) + ", which has only " +
                       std::to_string(train_->batches_per_epoch()) + " batches");
    if (val_variant_ >= 0 && options.validate) {
      // check_train_options saw that the batches divide the set.
      const int64_t val_global =
          cp.variants[static_cast<size_t>(val_variant_)].batch * cp.world_size;
      BatchSpec val_spec =
          make_batch_spec(p.dataset, Split::Val, val_global, p.training.seed, dtype);
      val_spec.padded_channels = padded_c;
      val_ =
          std::make_unique<BatchPipeline>(data, Split::Val, val_spec, cp.world_size, global_rank_);
    }
    for (const BatchPipeline* src : {train_.get(), val_.get()})
      for (int buffer = 0; src && buffer < 2; ++buffer)
        for (const Tensor* t : {&src->staging(buffer).images, &src->staging(buffer).labels})
          pinned_.emplace_back(backend_, t->data<std::byte>(), t->allocated_bytes());
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

  // A step that failed can leave its transfers and kernels in flight, still
  // reading the pipelines' host batches: they finish before those go.
  ~RankLoop() {
    try {
      backend_.synchronize(rank_);
    } catch (...) {
      // The run's own error is the one reported.
    }
  }
  RankLoop(const RankLoop&) = delete;
  RankLoop& operator=(const RankLoop&) = delete;

  void run() {
    const int64_t epochs = options_.epochs > 0 ? options_.epochs : cp_.project.training.epochs;
    int64_t step = start_.step;
    Halt halt = Halt::None;
    for (int64_t epoch = start_.epoch; epoch < epochs && halt == Halt::None; ++epoch) {
      if (epoch > start_.epoch)
        train_->start_epoch(epoch);
      else if (start_.batch > 0)
        // A resumed epoch: the same order, from the first batch not trained.
        train_->start_epoch(epoch, start_.batch);
      EpochReport er;
      er.epoch = epoch;
      er.batches = train_->batches_per_epoch();
      EpochTally tally;
      const auto t_epoch = Clock::now();
      const int64_t batches = train_->batches_per_epoch();
      TrainPosition halted_at;  // the first batch not trained
      const Batch* batch = train_->next();
      if (batch) session_.transfer(rank_, variant_of(*batch), batch->buffer);
      // A resident batch (TrainOptions::resident_batch) stands for every
      // batch of the epoch: this counts the steps trained on it.
      int64_t resident_index = batch ? batch->index : 0;
      // The step enqueued last, whose result is taken once the next one is
      // enqueued: the device computes step s + 1 while the host reads and
      // reports step s and stages the batch after.
      std::optional<InFlight> in_flight;
      while (batch) {
        const int64_t index = options_.resident_batch ? resident_index : batch->index;
        halt = shared_.halt_before(step, options_, backend_, rank_);
        if (halt != Halt::None) {
          halted_at = {epoch, index, step};
          break;
        }
        const bool profile = step >= options_.profile_begin && step < options_.profile_end;
        // A profiled step is finished before the next is enqueued, as its
        // spans are taken per step; so is every step of a run whose
        // on_rank_step reads the session, which nothing may be writing.
        const bool alone = profile || static_cast<bool>(callbacks_.on_rank_step);
        if (alone && in_flight) report(*std::exchange(in_flight, std::nullopt), tally);
        // The first profiled step this run trains (a resumed run may begin
        // inside the profiled steps).
        if (profile && !profiling_) start_profiling();
        InFlight f{step, epoch, index, batches, 0.0, 0.0, batch->partial, profile, Clock::now()};
        // This batch is on the device once its transfer (launched by the
        // step before) has landed: its staging buffer goes back to the
        // pipeline now, so filling the batch after next overlaps this step.
        const int variant = variant_of(*batch), buffer = batch->buffer;
        backend_.synchronize(rank_, StreamKind::TRANS);
        const Batch* next = nullptr;
        const auto t_wait = Clock::now();
        if (!options_.resident_batch) {
          train_->release(batch);
          next = train_->next();
        } else if (++resident_index < batches) {
          next = batch;  // trained on again, already on the device
        } else {
          train_->release(batch);
        }
        f.input_wait = options_.resident_batch ? 0.0 : seconds_since(t_wait);
        batch = nullptr;
        const double position =
            static_cast<double>(epoch) + static_cast<double>(index) / static_cast<double>(batches);
        f.lr = learning_rate(cp_.project.training.optimizer, cp_.project.training.schedule, epochs,
                             position);
        const Batch* transfer = options_.resident_batch ? nullptr : next;
        session_.enqueue_step(rank_, variant, buffer, transfer,
                              transfer ? variant_of(*transfer) : 0, f.lr, step);
        if (in_flight) report(*in_flight, tally);
        in_flight = f;
        if (alone) report(*std::exchange(in_flight, std::nullopt), tally);
        ++step;
        batch = next;
      }
      if (in_flight) report(*in_flight, tally);
      if (batch) {
        // A halt leaves this batch's transfer in flight (the step before
        // started it): it lands before its staging buffer goes back to the
        // pipeline, which refills it or, at the end of the run, frees it.
        backend_.synchronize(rank_, StreamKind::TRANS);
        train_->release(batch);
      }
      const double samples = tally.samples;
      er.seconds = std::max(0.0, seconds_since(t_epoch) - tally.callback_seconds);
      // m.samples counts every rank
      er.images_per_s = er.seconds > 0 ? samples / er.seconds : 0;
      if (samples > 0) {
        er.train_loss = tally.loss_sum / samples;
        er.train_top1 = tally.top1_sum / samples;
      }
      // The step limit ends a run as the end of its epochs would: validated
      // (unless it falls on an epoch boundary, where the epoch before was).
      // A stop request skips the validation.
      const bool epoch_done = halt == Halt::None;
      const bool trained = samples > 0;
      er.steps = epoch_done ? batches : halted_at.batch;
      if (val_ && (epoch_done || (halt == Halt::StepLimit && trained))) validate(er);
      end_at_ = epoch_done ? TrainPosition{epoch + 1, 0, step} : halted_at;
      save_checkpoint(end_at_, epoch_done && rank_ == 0 ? &er : nullptr);
      // An epoch that ended before its first step has nothing to report.
      if (rank_ == 0 && (epoch_done || trained)) {
        {
          std::lock_guard<std::mutex> lock(shared_.mutex);
          shared_.report.epochs.push_back(er);
        }
        if (callbacks_.on_epoch) callbacks_.on_epoch(er);
      }
    }
    if (rank_ == 0) {
      std::lock_guard<std::mutex> lock(shared_.mutex);
      shared_.report.stopped = halt == Halt::Stop;
      shared_.report.reached_max_steps = halt == Halt::StepLimit;
    }
    if (step > start_.step) save_final_weights();
  }

 private:
  // A step enqueued and not yet reported: what its report needs.
  struct InFlight {
    int64_t step, epoch, index, batches;
    double lr, input_wait;
    bool partial, profiled;
    Clock::time_point enqueued;
  };
  // An epoch's sums over its reported steps. Time the front end holds the
  // step callback (a workbench pause) is not training time, so the epoch's
  // images/s leaves it out.
  struct EpochTally {
    double loss_sum = 0, top1_sum = 0, samples = 0, callback_seconds = 0;
  };

  // Waits for step f, checks it and reports it. Its time runs from when it
  // was enqueued or the step before was reported, whichever is later: with
  // a step always queued behind the one being read, that is the interval
  // between results, what a step costs, and a callback's hold is left out.
  void report(const InFlight& f, EpochTally& tally) {
    const StepMetrics m = session_.finish_step(rank_, f.step);
    const std::string where =
        "step " + std::to_string(f.step) + " (epoch " + std::to_string(f.epoch + 1) + ")";
    // Only AMP skips a step: FP32 and BF16 share a range no loss scale
    // could rescue, so a NaN or infinity there is the model diverging.
    if (m.overflow && cp_.project.training.precision != Precision::AMP)
      throw std::runtime_error("the loss or a gradient became NaN or infinite at " + where +
                               "; lower the learning rate");
    // AMP skips an overflowed step and halves the scale; from 65536 it
    // reaches 1 in 16 steps, so a longer run of skips is a diverged
    // model, not a scale still settling.
    overflow_run_ = m.overflow ? overflow_run_ + 1 : 0;
    if (overflow_run_ >= kMaxSkippedSteps)
      throw std::runtime_error("the loss or a gradient was NaN or infinite in " +
                               std::to_string(overflow_run_) + " steps in a row up to " + where +
                               ", each skipped by mixed precision with the loss scale now at " +
                               std::to_string(m.loss_scale) + "; lower the learning rate");
    double dt =
        std::chrono::duration<double>(Clock::now() - std::max(f.enqueued, last_reported_)).count();
    // A step in flight while the front end held the report before it (a
    // workbench pause) may have finished during the hold: its interval then
    // says nothing of its cost, so it gets the time of the step before it.
    if (held_ > 0 && held_ >= last_dt_ && last_dt_ > 0) dt = last_dt_;
    last_dt_ = dt;
    if (f.profiled) end_profiled_step(f.step, f.step + 1 == options_.profile_end);
    const StepReport sr{f.step, f.epoch, f.index, f.batches, m.loss,
                        m.top1, f.lr,    dt,      f.partial, m.loss_scale};
    tally.loss_sum += m.loss * m.samples;
    tally.top1_sum += m.top1 * m.samples;
    tally.samples += m.samples;
    const auto t_callbacks = Clock::now();
    if (rank_ == 0) {
      {
        std::lock_guard<std::mutex> lock(shared_.mutex);
        shared_.report.step_seconds.push_back(dt);
        shared_.report.input_wait_seconds.push_back(f.input_wait);
        shared_.report.steps = f.step + 1;
      }
      if (callbacks_.on_step) {
        const auto t_callback = Clock::now();
        callbacks_.on_step(sr);
        tally.callback_seconds += seconds_since(t_callback);
      }
    }
    if (callbacks_.on_rank_step) callbacks_.on_rank_step(rank_, sr, session_);
    last_reported_ = Clock::now();
    held_ = std::chrono::duration<double>(last_reported_ - t_callbacks).count();
  }

  int variant_of(const Batch& b) const {
    return b.partial && last_variant_ >= 0 ? last_variant_ : train_variant_;
  }

  // Profiling is one switch for all ranks: every rank finishes the step
  // before it flips, and none starts the next one until it has.
  void start_profiling() {
    shared_.barrier.arrive_and_wait();
    if (rank_ == 0) backend_.set_profiling(true);
    shared_.barrier.arrive_and_wait();
    profiling_ = true;
  }

  // Rank 0 takes every rank's spans once all have finished the step, so each
  // span is stamped with the step at whose end it was taken; profiling stays
  // on until the last profiled step, which hands all of them to on_profile.
  void end_profiled_step(int64_t step, bool last) {
    shared_.barrier.arrive_and_wait();
    if (rank_ == 0) {
      if (last) backend_.set_profiling(false);
      std::vector<ProfileSpan> spans = backend_.take_profile();
      for (ProfileSpan& s : spans) s.step = step;
      {
        std::lock_guard<std::mutex> lock(shared_.mutex);
        shared_.report.profile.insert(shared_.report.profile.end(),
                                      std::make_move_iterator(spans.begin()),
                                      std::make_move_iterator(spans.end()));
      }
      // Read without the lock: rank 0 is the report's only writer.
      if (last && callbacks_.on_profile) callbacks_.on_profile(shared_.report.profile);
    }
    shared_.barrier.arrive_and_wait();
    if (last) profiling_ = false;
  }

  // The state is replicated, so global rank 0 speaks for every rank (other
  // nodes would write the same file).
  // A checkpoint that cannot be written (a full disk) is reported and
  // training goes on: the run is worth more than one of its checkpoints.
  void save_checkpoint(const TrainPosition& at, const EpochReport* ended) {
    if (options_.checkpoint_dir.empty()) return;
    if (at.step == last_saved_.step && at.epoch == last_saved_.epoch &&
        at.batch == last_saved_.batch)
      return;
    // ZeRO-1 and tensor parallel: each rank reads its own shards, on its
    // own streams, for rank 0 to write; every rank counts the position as
    // saved, so all come here (and to the barriers) together.
    const bool sharded = gathers_shards();
    if (sharded) {
      last_saved_ = at;
      read_own_shards();
    }
    write_checkpoint_file(at, ended, sharded ? &shared_.shards : nullptr);
    if (sharded) shared_.barrier.arrive_and_wait();
  }

  // Whether a checkpoint needs every rank's shards, not rank 0's tensors alone.
  bool gathers_shards() const { return cp_.sharded_optimizer || cp_.tensor_ranks > 1; }
  void read_own_shards() {
    shared_.shards[static_cast<size_t>(rank_)] = session_.read_shards(rank_);
    shared_.barrier.arrive_and_wait();
  }

  void write_checkpoint_file(const TrainPosition& at, const EpochReport* ended,
                             const RankShards* shards) {
    if (global_rank_ != 0) return;
    const std::string file = at.batch == 0
                                 ? cp_.project.name + "-epoch" + std::to_string(at.epoch) + ".ckpt"
                                 : cp_.project.name + "-step" + std::to_string(at.step) + ".ckpt";
    CheckpointReport r;
    r.path = (std::filesystem::path(options_.checkpoint_dir) / file).string();
    r.position = at;
    r.epoch = ended;
    try {
      write_checkpoint(take_checkpoint(cp_, session_, at, rank_, shards), r.path);
      last_saved_ = at;
    } catch (const UsageError& e) {
      r.error = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(shared_.mutex);
      (r.error.empty() ? shared_.report.checkpoints : shared_.report.checkpoint_errors)
          .push_back(r.error.empty() ? r.path : r.error);
    }
    if (callbacks_.on_checkpoint) callbacks_.on_checkpoint(r);
  }

  // The weights the run ended with (global rank 0 speaks for all, as for
  // checkpoints): what predicting, exporting and fine-tuning need, without
  // the optimizer state only resuming would.
  void save_final_weights() {
    if (options_.final_weights.empty()) return;
    // Tensor parallel: the split weights are each rank's parts.
    const bool parts = cp_.tensor_ranks > 1;
    if (parts) read_own_shards();
    if (global_rank_ == 0) write_final_weights(parts ? &shared_.shards : nullptr);
    if (parts) shared_.barrier.arrive_and_wait();
  }

  void write_final_weights(const RankShards* shards) {
    CheckpointReport r;
    r.path = options_.final_weights;
    r.position = end_at_;
    try {
      Checkpoint c = take_checkpoint(cp_, session_, end_at_, rank_, shards);
      std::erase_if(c.tensors, [](const CheckpointTensor& t) {
        return !(t.region.starts_with("W_") || t.region.starts_with("E_") ||
                 t.region.starts_with("B_"));
      });
      std::error_code ec;
      const std::filesystem::path folder = std::filesystem::path(r.path).parent_path();
      if (!folder.empty()) std::filesystem::create_directories(folder, ec);
      if (ec)
        throw UsageError("the final weights' folder " + folder.string() +
                         " cannot be made: " + ec.message());
      write_checkpoint(c, r.path);
    } catch (const UsageError& e) {
      r.error = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(shared_.mutex);
      (r.error.empty() ? shared_.report.final_weights : shared_.report.final_weights_error) =
          r.error.empty() ? r.path : r.error;
    }
    if (callbacks_.on_final_weights) callbacks_.on_final_weights(r);
  }

  void validate(EpochReport& er) {
    val_->start_epoch(er.epoch);
    session_.begin_validation(rank_, options_.eval_ema);
    for (const Batch* b = val_->next(); b; b = val_->next()) {
      session_.validate_batch(rank_, val_variant_, b->buffer);
      val_->release(b);
    }
    const StepMetrics m = session_.end_validation(rank_);
    er.val_loss = m.loss;
    er.val_top1 = m.top1;
    er.val_top5 = m.top5;
    if (rank_ == 0) er.confusion = session_.read_confusion(rank_);  // the reporting rank
    er.validated = true;
  }

  const CompiledProject& cp_;
  Backend& backend_;
  TrainingSession& session_;
  const TrainOptions& options_;
  const TrainCallbacks& callbacks_;
  Shared& shared_;
  int rank_;         // this process's
  int global_rank_;  // over all nodes
  TrainPosition start_;
  TrainPosition last_saved_{-1, -1, -1};
  TrainPosition end_at_;  // where the run ended: its final weights' position
  int train_variant_, last_variant_, val_variant_;
  std::unique_ptr<BatchPipeline> train_, val_;
  // After the pipelines: unpinned before their buffers go.
  std::vector<PinnedHost> pinned_;
  int overflow_run_ = 0;  // AMP steps skipped in a row
  Clock::time_point last_reported_{};
  double last_dt_ = 0, held_ = 0;  // the step reported last: its time, its callbacks' hold
  bool profiling_ = false;
};

}  // namespace

void check_train_options(const CompiledProject& cp, const Backend& backend, const DataSource& data,
                         const TrainOptions& options) {
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
  if (const int v = cp.variant_index(VariantKind::Validation); v >= 0 && options.validate)
    check_validation_batches(data.size(Split::Val), cp.variants[static_cast<size_t>(v)].batch,
                             cp.world_size);
  const int64_t epochs = options.epochs > 0 ? options.epochs : cp.project.training.epochs;
  if (options.eval_ema && !cp.project.training.ema)
    throw UsageError("validation on the EMA weights needs the EMA: set training.ema.enabled in '" +
                     cp.project.name + "'");
  if (options.resume && options.init_from)
    throw UsageError(
        "--resume continues a run and --init-from starts a new one from a "
        "checkpoint's weights: give one of them");
  if (options.resume) {
    check_checkpoint(cp, *options.resume, options.resume_source);
    const TrainPosition& at = options.resume->position;
    if (options.max_steps >= 0 && at.step >= options.max_steps)
      throw UsageError("checkpoint '" + options.resume_source + "' is at step " +
                       std::to_string(at.step) + ", so a limit of " +
                       std::to_string(options.max_steps) +
                       " steps leaves nothing to train (the limit counts all steps, those "
                       "before the checkpoint too); give a larger one");
    if (at.epoch >= epochs)
      throw UsageError("checkpoint '" + options.resume_source + "' is at the end of epoch " +
                       std::to_string(at.epoch) + " and the project trains " +
                       std::to_string(epochs) + " epoch" + (epochs == 1 ? "" : "s") +
                       "; pass --epochs with more to train on");
  }
  if (!options.checkpoint_dir.empty() && backend.leads()) {
    std::error_code ec;
    std::filesystem::create_directories(options.checkpoint_dir, ec);
    if (ec || !std::filesystem::is_directory(options.checkpoint_dir))
      throw UsageError("cannot create the checkpoint folder '" + options.checkpoint_dir +
                       "': " + (ec ? ec.message() : std::string("not a folder")));
  }
}

TrainReport train(const CompiledProject& cp, Backend& backend, const DataSource& data,
                  const TrainOptions& options, const TrainCallbacks& callbacks) {
  check_train_options(cp, backend, data, options);
  TrainingSession session(cp, backend);
  session.initialize(cp.project.training.seed);
  TrainPosition start;
  if (options.resume)
    start = restore_checkpoint(cp, session, *options.resume, options.resume_source);
  int64_t init_loaded = 0;
  std::vector<std::string> init_fresh;
  if (options.init_from) {
    init_loaded =
        init_from_checkpoint(cp, session, *options.init_from, options.init_from_source, init_fresh);
    if (callbacks.on_init_from && backend.leads()) callbacks.on_init_from(init_loaded, init_fresh);
  }
  // One host thread per rank of this process; other nodes run their own.
  const int local = backend.world_size();
  Shared shared(local);
  shared.report.init_loaded = init_loaded;
  shared.report.init_fresh = std::move(init_fresh);
  shared.report.first_step = start.step;
  shared.report.steps = start.step;
  // Work on every rank at once, one host thread each: a rank that fails
  // releases the others from collectives and barriers, and its error is
  // the one reported.
  auto on_every_rank = [&](const std::function<void(int)>& work) {
    if (local == 1) {
      work(0);
      return;
    }
    std::vector<std::thread> threads;
    for (int r = 0; r < local; ++r)
      threads.emplace_back([&shared, &backend, &work, r] {
        try {
          work(r);
        } catch (...) {
          const std::exception_ptr e = std::current_exception();
          {
            std::lock_guard<std::mutex> lock(shared.mutex);
            if (!shared.error) shared.error = e;
          }
          const std::string why = "rank " + std::to_string(r) + " failed: " + message_of(e);
          backend.abort_collectives(why);
          shared.barrier.abort(why);
        }
      });
    for (std::thread& t : threads) t.join();
    if (shared.error) std::rethrow_exception(shared.error);
  };
  // The ranks capture their graphs together: a captured NCCL group end on
  // one rank waits for its peers to reach theirs (NCCL connects lazily).
  std::vector<std::unique_ptr<RankLoop>> loops(static_cast<size_t>(local));
  on_every_rank([&](int r) {
    loops[static_cast<size_t>(r)] = std::make_unique<RankLoop>(cp, backend, session, data, options,
                                                               callbacks, shared, r, start);
  });
  on_every_rank([&](int r) { loops[static_cast<size_t>(r)]->run(); });
  if (options.profile_begin >= 0) {
    // Training ended inside the profiled steps: keep what was recorded after
    // the last step (its validation, a checkpoint), counted to that step.
    backend.set_profiling(false);
    std::vector<ProfileSpan> spans = backend.take_profile();
    const int64_t last = shared.report.steps > start.step ? shared.report.steps - 1 : -1;
    for (ProfileSpan& span : spans) span.step = last;
    shared.report.profile.insert(shared.report.profile.end(),
                                 std::make_move_iterator(spans.begin()),
                                 std::make_move_iterator(spans.end()));
  }
  return std::move(shared.report);
}

}  // namespace tr
