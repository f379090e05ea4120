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
#include <cstring>
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

// Counts the deep graph's launches that run uncaptured (the warm-up's).
class WarmUpCounter final : public ForwardingBackend {
 public:
  explicit WarmUpCounter(bool warm)
      : ForwardingBackend(cpu::make_cpu_backend([&] {
          cpu::CpuBackendOptions o;
          o.warm_up_before_capture = warm;
          return o;
        }())) {}
  int uncaptured_deep = 0;
  void begin_capture(int r, StreamKind s) override {
    capturing_ = true;
    ForwardingBackend::begin_capture(r, s);
  }
  GraphHandle end_capture(int r, StreamKind s) override {
    capturing_ = false;
    return ForwardingBackend::end_capture(r, s);
  }
  void enqueue(int r, StreamKind s, Launch l) override {
    if (!capturing_ && l.tag.graph == GraphId::DEEP_FWD_BWD) ++uncaptured_deep;
    ForwardingBackend::enqueue(r, s, std::move(l));
  }

 private:
  bool capturing_ = false;
};

// Trains `p` for two steps on `backend`; the steps it trained.
int64_t two_steps(const Project& p, Backend& backend, bool validate) {
  const CompiledProject cp = compile_project(p);
  auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
  TrainOptions o;
  o.max_steps = 2;
  o.validate = validate;
  return train(cp, backend, *data, o).steps;
}

}  // namespace

class TestParallelCapture : public QObject {
  Q_OBJECT

 private slots:
  void ranksCaptureTogether() {
    LazyConnectBackend backend;
    QCOMPARE(two_steps(rank_runs::synthetic(2, true), backend, false), int64_t{2});
  }

  // The warm-up before capture (what the CUDA backend asks for) runs the
  // compute graphs once and changes no result: losses and weights bit for
  // bit, FP32 and AMP, with BN and dropout.
  void aWarmUpBeforeCaptureChangesNothing_data() {
    QTest::addColumn<bool>("amp");
    QTest::newRow("fp32") << false;
    QTest::newRow("amp") << true;
  }
  void aWarmUpBeforeCaptureChangesNothing() {
    QFETCH(bool, amp);
    Project p = rank_runs::synthetic(1, true, true);
    if (amp) p.training.precision = Precision::AMP;
    const CompiledProject cp = compile_project(p);
    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    std::vector<std::vector<double>> losses(2);
    std::vector<std::vector<float>> weights(2);
    for (int warm = 0; warm < 2; ++warm) {
      auto backend = std::make_unique<WarmUpCounter>(warm == 1);
      QCOMPARE(backend->warm_up_before_capture(), warm == 1);
      TrainCallbacks cb;
      cb.on_step = [&](const StepReport& s) {
        losses[static_cast<size_t>(warm)].push_back(s.loss);
      };
      cb.on_rank_step = [&](int, const StepReport&, TrainingSession& session) {
        weights[static_cast<size_t>(warm)] = rank_runs::weights(session, 0);
      };
      TrainOptions t;
      t.max_steps = 4;
      train(cp, *backend, *data, t, cb);
      // The warm-up ran the deep graph of the train and the last-batch variants.
      QVERIFY(warm == 1 ? backend->uncaptured_deep > 10 : backend->uncaptured_deep == 0);
    }
    QCOMPARE(losses[0].size(), size_t{4});
    QVERIFY(std::memcmp(losses[0].data(), losses[1].data(), 4 * sizeof(double)) == 0);
    QVERIFY(rank_runs::same_bits(weights[0], weights[1]));
  }

  void everyCapturedLaunchWasPreparedFirst() {
    PreparedOnlyBackend backend;
    QCOMPARE(two_steps(rank_runs::synthetic(1, true), backend, true), int64_t{2});
    QVERIFY(backend.captured > 20);
  }
};

QTEST_APPLESS_MAIN(TestParallelCapture)
#include "test_parallel_capture.moc"
