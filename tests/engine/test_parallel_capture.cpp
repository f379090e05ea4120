// SPDX-License-Identifier: GPL-3.0-or-later
// What the capture protocol promises a GPU backend, shown on the CPU:
//  - the ranks capture their graphs together. NCCL connects lazily, so a
//    captured group end on one GPU waits for its peers to reach theirs; a
//    capture one rank after the other would hang. The backend below behaves
//    that way (a capture with a collective ends only once every rank has
//    captured one, or fails after 10 s), and training on two ranks gets
//    through;
//  - every launch a capture records was handed to prepare_launch before the
//    capture began, so a GPU backend chooses algorithms and allocates
//    workspaces outside it.
#include <QtTest>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "backends/cpu/cpu_backend.h"
#include "compile/compiler.h"
#include "data/dataset.h"
#include "forwarding_backend.h"
#include "rank_runs.h"
#include "runtime/trainer.h"

using namespace tr;

namespace {

class LazyConnectBackend final : public ForwardingBackend {
 public:
  LazyConnectBackend() : ForwardingBackend(cpu::make_cpu_backend({2, true})) {}

  void enqueue(int r, StreamKind s, Launch l) override {
    if (l.kind == LaunchKind::COLLECTIVE && capturing_[static_cast<size_t>(r)]) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++collectives_[static_cast<size_t>(r)];
      with_collective_[static_cast<size_t>(r)] = true;
      changed_.notify_all();
    }
    ForwardingBackend::enqueue(r, s, std::move(l));
  }
  void begin_capture(int r, StreamKind s) override {
    capturing_[static_cast<size_t>(r)] = true;
    with_collective_[static_cast<size_t>(r)] = false;
    ForwardingBackend::begin_capture(r, s);
  }
  GraphHandle end_capture(int r, StreamKind s) override {
    capturing_[static_cast<size_t>(r)] = false;
    if (with_collective_[static_cast<size_t>(r)]) {
      std::unique_lock<std::mutex> lock(mutex_);
      const int mine = collectives_[static_cast<size_t>(r)];
      if (!changed_.wait_for(lock, std::chrono::seconds(10),
                             [&] { return collectives_[0] >= mine && collectives_[1] >= mine; }))
        throw std::runtime_error("rank " + std::to_string(r) +
                                 " captured a collective its peer never reached");
    }
    return ForwardingBackend::end_capture(r, s);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int collectives_[2] = {0, 0};
  bool capturing_[2] = {false, false};
  bool with_collective_[2] = {false, false};
};

// Notes which launches were prepared, and fails a capture that records one
// that was not, or a preparation made while capturing.
class PreparedOnlyBackend final : public ForwardingBackend {
 public:
  PreparedOnlyBackend() : ForwardingBackend(cpu::make_cpu_backend({})) {}
  int captured = 0;

  void prepare_launch(int r, StreamKind s, const Launch& l) override {
    if (capturing_) throw std::logic_error("prepare_launch inside a capture: " + l.tag.label);
    prepared_.push_back(key(s, l));
    ForwardingBackend::prepare_launch(r, s, l);
  }
  void begin_capture(int r, StreamKind s) override {
    capturing_ = true;
    ForwardingBackend::begin_capture(r, s);
  }
  GraphHandle end_capture(int r, StreamKind s) override {
    capturing_ = false;
    prepared_.clear();
    return ForwardingBackend::end_capture(r, s);
  }
  void enqueue(int r, StreamKind s, Launch l) override {
    if (capturing_) {
      ++captured;
      if (std::find(prepared_.begin(), prepared_.end(), key(s, l)) == prepared_.end())
        throw std::logic_error("captured a launch nobody prepared: " + l.tag.label);
    }
    ForwardingBackend::enqueue(r, s, std::move(l));
  }

 private:
  static std::string key(StreamKind s, const Launch& l) {
    return std::string(stream_kind_name(s)) + " " + l.tag.label;
  }
  bool capturing_ = false;
  std::vector<std::string> prepared_;
};

}  // namespace

class TestParallelCapture : public QObject {
  Q_OBJECT

 private slots:
  void ranksCaptureTogether() {
    const CompiledProject cp = compile_project(rank_runs::synthetic(2, true));
    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    LazyConnectBackend backend;
    TrainOptions o;
    o.max_steps = 2;
    o.validate = false;
    QCOMPARE(train(cp, backend, *data, o).steps, int64_t{2});
  }

  void everyCapturedLaunchWasPreparedFirst() {
    const CompiledProject cp = compile_project(rank_runs::synthetic(1, true));
    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    PreparedOnlyBackend backend;
    TrainOptions o;
    o.max_steps = 2;
    QCOMPARE(train(cp, backend, *data, o).steps, int64_t{2});
    QVERIFY(backend.captured > 20);
  }
};

QTEST_APPLESS_MAIN(TestParallelCapture)
#include "test_parallel_capture.moc"
