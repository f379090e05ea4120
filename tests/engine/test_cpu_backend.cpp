// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend mirrors CUDA's execution model: in-order streams, events,
// stream capture into a dependency graph, replay, collectives between ranks;
// and the capture protocol proves every reader runs after its writer.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <thread>

#include <renaissance/project_io.h>
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_graph.h"
#include "compile/compiler.h"
#include "runtime/graph_capture.h"

using namespace tr;

namespace {

Launch host(std::function<void()> f, std::string label = {}) {
  Launch l;
  l.kind = LaunchKind::HOST_FUNC;
  l.host_func = std::move(f);
  l.tag.label = std::move(label);
  return l;
}

CompiledProject compile(const char* name, const char* devices = nullptr) {
  Project p = load_project(std::string(TR_PROJECTS_DIR) + "/" + name + ".json");
  if (devices) {
    std::string error;
    if (!parse_device_set(devices, p.training.devices, error)) qFatal("%s", error.c_str());
  }
  return compile_project(p);
}

}  // namespace

class TestCpuBackend : public QObject {
  Q_OBJECT

 private slots:
  void streamsRunInOrder() {
    auto b = cpu::make_cpu_backend({});
    std::vector<int> seen;
    for (int i = 0; i < 200; ++i)
      b->enqueue(0, StreamKind::COMP_1, host([&seen, i] { seen.push_back(i); }));
    b->synchronize(0, StreamKind::COMP_1);
    QCOMPARE(seen.size(), size_t{200});
    for (int i = 0; i < 200; ++i) QCOMPARE(seen[static_cast<size_t>(i)], i);
  }

  void eventsOrderStreams() {
    auto b = cpu::make_cpu_backend({});
    const EventId e = b->create_event(0);
    std::atomic<bool> produced{false};
    bool seen_by_consumer = false;
    b->enqueue(0, StreamKind::COMP_1, host([&] {
                 std::this_thread::sleep_for(std::chrono::milliseconds(30));
                 produced = true;
               }));
    b->record(0, StreamKind::COMP_1, e);
    b->wait(0, StreamKind::COMP_2, e);
    b->enqueue(0, StreamKind::COMP_2, host([&] { seen_by_consumer = produced.load(); }));
    b->synchronize(0);
    QVERIFY(seen_by_consumer);
  }

  void waitingOnAnUnrecordedEventDoesNotBlock() {
    auto b = cpu::make_cpu_backend({});
    const EventId e = b->create_event(0);
    bool ran = false;
    b->wait(0, StreamKind::UPDATE, e);
    b->enqueue(0, StreamKind::UPDATE, host([&] { ran = true; }));
    b->synchronize(0, StreamKind::UPDATE);
    QVERIFY(ran);
  }

  // Across graphs and direct launches: two pieces of work that no stream
  // order, event or host wait orders must not touch the same bytes.
  void unorderedWorkOnTheSameBytesIsCaught() {
    auto touching = [](ByteRange r, bool writes, std::string label) {
      Launch l = host([] {}, std::move(label));
      if (writes)
        l.footprint.write(r);
      else
        l.footprint.read(r);
      return l;
    };
    {
      auto b = cpu::make_cpu_backend({});
      b->allocate_arenas(4096);
      b->enqueue(0, StreamKind::COMP_1, touching({0, 512}, true, "producer"));
      try {
        b->enqueue(0, StreamKind::UPDATE, touching({256, 512}, false, "consumer"));
        QFAIL("a read racing a write on another stream was not caught");
      } catch (const std::logic_error& e) {
        const QString m = QString::fromUtf8(e.what());
        QVERIFY2(m.contains("consumer on UPDATE and producer on COMP_1 may run at the same time") &&
                     m.contains("[256, 512)"),
                 e.what());
      }
      b->synchronize(0);
    }
    {
      // An event orders them; the same stream does; so does the host's wait.
      auto b = cpu::make_cpu_backend({});
      b->allocate_arenas(4096);
      const EventId e = b->create_event(0);
      b->enqueue(0, StreamKind::COMP_1, touching({0, 512}, true, "producer"));
      b->record(0, StreamKind::COMP_1, e);
      b->wait(0, StreamKind::UPDATE, e);
      b->enqueue(0, StreamKind::UPDATE, touching({0, 512}, false, "consumer"));
      b->enqueue(0, StreamKind::UPDATE, touching({0, 512}, true, "overwriter"));
      b->synchronize(0, StreamKind::UPDATE);
      b->enqueue(0, StreamKind::COMP_2, touching({0, 512}, true, "after the host's wait"));
      // Reads on two streams at once are fine.
      b->synchronize(0);
      b->enqueue(0, StreamKind::COMP_1, touching({0, 512}, false, "reader 1"));
      b->enqueue(0, StreamKind::COMP_2, touching({0, 512}, false, "reader 2"));
      b->synchronize(0);
    }
    {
      // Off, nothing is checked.
      cpu::CpuBackendOptions o;
      o.check_step_schedule = false;
      auto b = cpu::make_cpu_backend(o);
      b->allocate_arenas(4096);
      b->enqueue(0, StreamKind::COMP_1, touching({0, 512}, true, "producer"));
      b->enqueue(0, StreamKind::UPDATE, touching({0, 512}, true, "racer"));
      b->synchronize(0);
    }
  }

  void errorsSurfaceAtSynchronize() {
    auto b = cpu::make_cpu_backend({});
    b->enqueue(0, StreamKind::TRANS, host([] { throw std::runtime_error("kernel failed"); }));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, b->synchronize(0, StreamKind::TRANS));
    b->synchronize(0, StreamKind::TRANS);  // the error is reported once
  }

  void captureRecordsAndReplays() {
    auto b = cpu::make_cpu_backend({});
    const EventId fork = b->create_event(0);
    const EventId join = b->create_event(0);
    std::atomic<int> a{0}, c{0};
    std::vector<int> order;
    std::mutex m;
    auto log = [&](int v) {
      std::lock_guard<std::mutex> lock(m);
      order.push_back(v);
    };
    b->begin_capture(0, StreamKind::COMP_1);
    b->enqueue(0, StreamKind::COMP_1, host([&] {
                 ++a;
                 log(1);
               }));
    b->record(0, StreamKind::COMP_1, fork);
    b->wait(0, StreamKind::COMP_2, fork);
    b->enqueue(0, StreamKind::COMP_2, host([&] {
                 ++c;
                 log(2);
               }));
    b->record(0, StreamKind::COMP_2, join);
    b->wait(0, StreamKind::COMP_1, join);
    b->enqueue(0, StreamKind::COMP_1, host([&] { log(3); }));
    const GraphHandle g = b->end_capture(0, StreamKind::COMP_1);
    QCOMPARE(a.load(), 0);  // capture records, it does not run
    const cpu::CpuGraph* cg = cpu::captured_graph(*b, 0, g);
    QVERIFY(cg);
    QCOMPARE(cg->nodes.size(), size_t{3});
    QCOMPARE(cg->nodes[1].preds, std::vector<int>{0});
    QCOMPARE(cg->nodes[2].preds.size(), size_t{2});
    for (int i = 0; i < 3; ++i) b->launch_graph(0, StreamKind::COMP_1, g);
    b->synchronize(0);
    QCOMPARE(a.load(), 3);
    QCOMPARE(c.load(), 3);
    QCOMPARE(order, (std::vector<int>{1, 2, 3, 1, 2, 3, 1, 2, 3}));
  }

  void unjoinedStreamIsRejected() {
    auto b = cpu::make_cpu_backend({});
    const EventId fork = b->create_event(0);
    b->begin_capture(0, StreamKind::COMP_1);
    b->record(0, StreamKind::COMP_1, fork);
    b->wait(0, StreamKind::COMP_3, fork);
    b->enqueue(0, StreamKind::COMP_3, host([] {}));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, b->end_capture(0, StreamKind::COMP_1));
    // the backend is usable again afterwards
    b->begin_capture(0, StreamKind::COMP_1);
    b->enqueue(0, StreamKind::COMP_1, host([] {}));
    QCOMPARE(b->end_capture(0, StreamKind::COMP_1), GraphHandle{0});
  }

  void eventsMustExistBeforeCapture() {
    auto b = cpu::make_cpu_backend({});
    b->begin_capture(0, StreamKind::UPDATE);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, b->create_event(0));
    b->end_capture(0, StreamKind::UPDATE);
  }

  void compiledGraphsCaptureWithEveryDependency() {
    for (const char* name : {"lenet-fashion", "cnn-bn-fashion", "resnet8-fashion"}) {
      const CompiledProject cp = compile(name);
      auto b = cpu::make_cpu_backend({});
      b->allocate_arenas(cp.bytes_per_device());
      size_t need = 0;
      for (const ComputationGraph& g : cp.graphs) need = std::max(need, capture_events_needed(g));
      EventPool pool(*b, 0, need);
      // large enough for the biggest input batch of any variant (the slot is the maximum)
      std::vector<char> staging(cp.plans.front().get_dtensor(cp.engine.input[0]).slot_bytes);
      std::vector<ResolvedGraph> resolved;
      resolved.reserve(cp.graphs.size());
      for (const ComputationGraph& g : cp.graphs) {
        resolved.push_back(resolve_graph(cp, g, std::max(g.variant, 0), b->arena(0), 0, 1));
        const GraphHandle h =
            capture_graph(*b, cp, resolved.back(), pool, {staging.data(), staging.data()});
        const cpu::CpuGraph* cg = cpu::captured_graph(*b, 0, h);
        QVERIFY(cg);
        QVERIFY2(!cg->nodes.empty(), graph_id_name(g.id).data());
      }
    }
  }

  void missingBarrierIsCaught() {
    const CompiledProject cp = compile("resnet8-fashion");
    auto b = cpu::make_cpu_backend({});
    b->allocate_arenas(cp.bytes_per_device());
    const ComputationGraph* g = cp.find_graph(GraphId::DEEP_FWD_BWD, 0);
    QVERIFY(g);
    EventPool pool(*b, 0, capture_events_needed(*g));
    const ResolvedGraph rg = resolve_graph(cp, *g, 0, b->arena(0), 0, 1);
    int checked = 0;
    for (size_t k = 1; k < g->nodes.size(); ++k) {
      if (g->nodes[k].stream == g->nodes[k - 1].stream) continue;
      // Only a barrier between a producer and its consumer is a real hazard;
      // two independent neighbours (a block's main path and its shortcut) may
      // lose theirs without harm.
      bool consumes_previous = false;
      for (DTensorId in : g->nodes[k].inputs)
        for (DTensorId out : g->nodes[k - 1].outputs) consumes_previous |= in == out;
      if (!consumes_previous) continue;
      CaptureOptions o;
      o.skip_barrier_before = static_cast<int>(k);
      bool caught = false;
      try {
        capture_graph(*b, cp, rg, pool, {}, o);
      } catch (const std::logic_error& e) {
        caught = QString(e.what()).contains("missing barrier");
      }
      QVERIFY2(caught, qPrintable("barrier before node " + QString::number(k)));
      ++checked;
    }
    QVERIFY(checked > 20);
    // with every barrier the same graph captures fine
    capture_graph(*b, cp, rg, pool);
  }

  // A capture that fails part-way (here: too few events) reports its own
  // error and leaves no stream capturing: the next capture and plain work go on.
  void aFailedCaptureLeavesNoStreamCapturing() {
    const CompiledProject cp = compile("lenet-fashion");
    auto b = cpu::make_cpu_backend({});
    b->allocate_arenas(cp.bytes_per_device());
    const ComputationGraph* g = cp.find_graph(GraphId::DEEP_FWD_BWD, 0);
    QVERIFY(g);
    const ResolvedGraph rg = resolve_graph(cp, *g, 0, b->arena(0), 0, 1);
    EventPool few(*b, 0, 3);
    QString message;
    try {
      capture_graph(*b, cp, rg, few);
    } catch (const std::logic_error& e) {
      message = QString::fromUtf8(e.what());
    }
    QVERIFY2(message.contains("needs more events than were created"), qPrintable(message));
    bool ran = false;
    b->enqueue(0, StreamKind::COMP_2, host([&] { ran = true; }));
    b->synchronize(0);
    QVERIFY(ran);  // run, not captured
    EventPool enough(*b, 0, capture_events_needed(*g));
    QVERIFY(cpu::captured_graph(*b, 0, capture_graph(*b, cp, rg, enough)) != nullptr);
    b->abort_capture(0);  // nothing under way: nothing happens
  }

  void dxWaitsForDw() {
    const CompiledProject cp = compile("lenet-fashion");
    auto b = cpu::make_cpu_backend({});
    b->allocate_arenas(cp.bytes_per_device());
    const ComputationGraph* g = cp.find_graph(GraphId::DEEP_FWD_BWD, 0);
    EventPool pool(*b, 0, capture_events_needed(*g));
    const ResolvedGraph rg = resolve_graph(cp, *g, 0, b->arena(0), 0, 1);
    const cpu::CpuGraph* cg = cpu::captured_graph(*b, 0, capture_graph(*b, cp, rg, pool));
    int forks = 0;
    for (size_t i = 0; i < cg->nodes.size(); ++i) {
      const Launch& l = cg->nodes[i].launch;
      if (l.tag.part != static_cast<int>(BwdPart::DX)) continue;
      ++forks;
      QCOMPARE(l.tag.stream, StreamKind::COMP_3);
      // some predecessor chain reaches the dW part of the same node
      bool after_dw = false;
      std::vector<int> stack(cg->nodes[i].preds);
      while (!stack.empty() && !after_dw) {
        const int p = stack.back();
        stack.pop_back();
        const Launch& pl = cg->nodes[static_cast<size_t>(p)].launch;
        after_dw = pl.tag.node == l.tag.node && pl.tag.part == static_cast<int>(BwdPart::DW);
        for (int q : cg->nodes[static_cast<size_t>(p)].preds) stack.push_back(q);
      }
      QVERIFY(after_dw);
    }
    QCOMPARE(forks, 4);  // conv2, fc1, fc2, fc3 (conv1 is the first layer: no dX)
  }

  void collectivesAcrossRanks() {
    const int world = 4;
    auto b = cpu::make_cpu_backend({world, true});
    b->allocate_arenas(4096);
    GraphNode node;
    node.kind = NodeKind::RANGE;
    node.range_op = RangeOp::ALLREDUCE_MEAN;
    std::vector<KernelArgs> args(world);
    for (int r = 0; r < world; ++r) {
      float* f = reinterpret_cast<float*>(b->arena(r));
      for (int i = 0; i < 1000; ++i) f[i] = static_cast<float>(r * 1000 + i);
      args[static_cast<size_t>(r)].node = &node;
      SpanArg s;
      s.data = f;
      s.bytes = 4000;
      args[static_cast<size_t>(r)].in_spans = {s};
      Launch l;
      l.kind = LaunchKind::COLLECTIVE;
      l.args = &args[static_cast<size_t>(r)];
      b->enqueue(r, StreamKind::UPDATE, std::move(l));
    }
    for (int r = 0; r < world; ++r) b->synchronize(r);
    for (int r = 0; r < world; ++r) {
      const float* f = reinterpret_cast<const float*>(b->arena(r));
      for (int i = 0; i < 1000; i += 111) QCOMPARE(f[i], 1500.0f + static_cast<float>(i));
    }
  }

  void profilingRecordsSpans() {
    auto b = cpu::make_cpu_backend({});
    b->set_profiling(true);
    b->enqueue(0, StreamKind::COMP_2,
               host([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }, "sleep"));
    b->synchronize(0);
    const auto spans = b->take_profile();
    QCOMPARE(spans.size(), size_t{1});
    QCOMPARE(spans[0].tag.stream, StreamKind::COMP_2);
    QCOMPARE(spans[0].tag.label, std::string("sleep"));
    QVERIFY(spans[0].end_us - spans[0].start_us >= 1500.0);
    QVERIFY(b->take_profile().empty());
  }
};

QTEST_APPLESS_MAIN(TestCpuBackend)
#include "test_cpu_backend.moc"
