// SPDX-License-Identifier: GPL-3.0-or-later
// Filling the next batches overlaps the device's step: a batch's staging
// buffer goes back to the input pipeline once its transfer has landed, so
// while step k runs the pipeline already fills batch k+2. Shown without
// timing: when step k launches its deep forward and backward, the backend
// below waits for the source to be read beyond batch k+1, which can only
// happen if batch k's buffer was released before the step.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "compile/compiler.h"
#include "data/dataset.h"
#include "forwarding_backend.h"
#include "model_builder.h"
#include "runtime/trainer.h"

using namespace tr;

namespace {

constexpr int64_t kBatch = 16;

// Synthetic-like samples, counted as the pipeline's fill threads read them.
class CountingSource final : public DataSource {
 public:
  Shape sample_shape() const override { return {1, 8, 8, 1}; }
  int64_t classes() const override { return 4; }
  int64_t size(Split s) const override { return s == Split::Train ? 8 * kBatch : kBatch; }
  void read(Split split, int64_t index, uint8_t* out) const override {
    for (int i = 0; i < 64; ++i) out[i] = static_cast<uint8_t>((index * 7 + i) & 0xff);
    if (split == Split::Train) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++train_reads_;
      changed_.notify_all();
    }
  }
  int32_t label(Split, int64_t index) const override { return static_cast<int32_t>(index % 4); }
  std::string describe() const override { return "counting source"; }

  // Waits up to `limit` for more than `reads` training samples to be read.
  bool wait_beyond(int64_t reads, std::chrono::seconds limit) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return train_reads_ > reads; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  mutable int64_t train_reads_ = 0;
};

// The CPU backend, but a launch of DEEP_FWD_BWD first waits for the source
// to be read past the batch after the one this step trains.
class WatchingBackend final : public ForwardingBackend {
 public:
  explicit WatchingBackend(const CountingSource& source)
      : ForwardingBackend(cpu::make_cpu_backend({})), source_(source) {}

  int overlapped = 0, steps = 0;

  void enqueue(int r, StreamKind s, Launch l) override {
    if (capturing_ && l.tag.graph == GraphId::DEEP_FWD_BWD) deep_ = true;
    ForwardingBackend::enqueue(r, s, std::move(l));
  }
  void begin_capture(int r, StreamKind s) override {
    capturing_ = true;
    deep_ = false;
    ForwardingBackend::begin_capture(r, s);
  }
  GraphHandle end_capture(int r, StreamKind s) override {
    capturing_ = false;
    const GraphHandle h = ForwardingBackend::end_capture(r, s);
    if (deep_) deep_graphs_.push_back(h);
    return h;
  }
  void launch_graph(int r, StreamKind s, GraphHandle h) override {
    if (std::find(deep_graphs_.begin(), deep_graphs_.end(), h) != deep_graphs_.end()) {
      // Step k trains batch k; batches 0..k+1 are read already (k+1 is the
      // one its transfer sends ahead). Reading on means batch k+2 is filling.
      const int64_t k = steps++;
      if (k + 3 <= 8 && source_.wait_beyond((k + 2) * kBatch, std::chrono::seconds(10)))
        ++overlapped;
    }
    ForwardingBackend::launch_graph(r, s, h);
  }

 private:
  const CountingSource& source_;
  bool capturing_ = false, deep_ = false;
  std::vector<GraphHandle> deep_graphs_;
};

Project small() {
  ModelBuilder b;
  b.synthetic_data(8, 8, 1, 4, 8 * kBatch, kBatch, kBatch);
  Project& p = b.project();
  p.training.global_batch = kBatch;
  p.training.epochs = 1;
  b.node("in", LayerType::Input, input(8, 8, 1))
      .node("conv", LayerType::Conv2d, conv(4, 3, 3, 1, 1, 1, 1, true))
      .node("relu", LayerType::ReLU)
      .node("fc", LayerType::Linear, linear(4))
      .node("loss", LayerType::SoftmaxCrossEntropy);
  b.chain({"in", "conv", "relu", "fc", "loss"});
  return b.build();
}

}  // namespace

class TestInputOverlap : public QObject {
  Q_OBJECT

 private slots:
  void fillingTheNextBatchOverlapsTheStep() {
    const CompiledProject cp = compile_project(small());
    CountingSource source;
    WatchingBackend backend(source);
    TrainOptions o;
    o.validate = false;
    const TrainReport r = train(cp, backend, source, o);
    QCOMPARE(r.steps, int64_t{8});
    QCOMPARE(backend.steps, 8);
    // Steps 0..5 each see batch k+2 being read while they run.
    QCOMPARE(backend.overlapped, 6);
  }
};

QTEST_APPLESS_MAIN(TestInputOverlap)
#include "test_input_overlap.moc"
