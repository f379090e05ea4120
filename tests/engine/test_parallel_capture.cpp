// SPDX-License-Identifier: GPL-3.0-or-later
// The ranks capture their graphs together. NCCL connects lazily, so a
// captured group end on one GPU waits for its peers to reach theirs; a
// capture one rank after the other would hang. The backend below behaves
// that way (a capture with a collective ends only once every rank has
// captured one, or fails after 10 s), and training on two ranks gets through.
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
};

QTEST_APPLESS_MAIN(TestParallelCapture)
#include "test_parallel_capture.moc"
