// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend through the Backend interface: arenas, copies (pitched
// rows too), events ordering work across streams, a captured fork/join graph
// replayed, host functions, host collectives and NCCL groups over every local
// device, collectives inside a launch, and profiling spans.
#include <QtTest>

#include <atomic>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "cuda_test_util.h"

using namespace tr;

namespace {

std::unique_ptr<Backend> all_devices() {
  cuda::CudaBackendOptions o;
  o.devices.resize(static_cast<size_t>(test::cuda_device_count()));
  std::iota(o.devices.begin(), o.devices.end(), 0);
  return cuda::make_cuda_backend(o);
}

Launch h2d(uint64_t offset, void* host, uint64_t bytes) {
  Launch l;
  l.kind = LaunchKind::COPY_H2D;
  l.offset = offset;
  l.host = host;
  l.bytes = bytes;
  l.tag.label = "h2d";
  return l;
}

Launch d2h(uint64_t offset, void* host, uint64_t bytes) {
  Launch l;
  l.kind = LaunchKind::COPY_D2H;
  l.offset = offset;
  l.host = host;
  l.bytes = bytes;
  return l;
}

SpanArg span(Backend& b, int rank, uint64_t offset, uint64_t bytes) {
  SpanArg s;
  s.data = b.arena(rank) + offset;
  s.bytes = bytes;
  s.offset = offset;
  return s;
}

// out += in through the backend's ACCUMULATE kernel; `node` and `args` must
// outlive the launch's enqueue.
Launch accumulate(const KernelArgs& args) {
  Launch l;
  l.kind = LaunchKind::KERNEL;
  l.args = &args;
  return l;
}

struct Accumulate {
  GraphNode node;
  KernelArgs args;
  Accumulate(Backend& b, int rank, uint64_t out, uint64_t in, uint64_t bytes) {
    node.kind = NodeKind::RANGE;
    node.range_op = RangeOp::ACCUMULATE;
    args.node = &node;
    args.in_spans = {span(b, rank, in, bytes)};
    args.out_spans = {span(b, rank, out, bytes)};
  }
};

std::vector<float> iota_floats(size_t n, float from) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i % 1000);
  return v;
}

}  // namespace

class TestCudaBackend : public QObject {
  Q_OBJECT

 private slots:
  void arenas_are_zeroed_and_sized() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    QCOMPARE(b->name(), std::string("cuda"));
    const uint64_t bytes = (3u << 20) + 12;
    b->allocate_arenas(bytes);
    QCOMPARE(b->arena_bytes(), bytes);
    for (int r = 0; r < b->world_size(); ++r) {
      QVERIFY(b->arena(r));
      std::vector<uint8_t> host(bytes, 0xAB);
      b->enqueue(r, StreamKind::TRANS, d2h(0, host.data(), bytes));
      b->synchronize(r);
      QVERIFY(std::all_of(host.begin(), host.end(), [](uint8_t x) { return x == 0; }));
    }
    // Past the end: refused before CUDA sees it.
    std::vector<uint8_t> one(16);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range,
                             b->enqueue(0, StreamKind::TRANS, d2h(bytes - 8, one.data(), 16)));
  }

  void copies_round_trip() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    b->allocate_arenas(1 << 16);
    std::vector<uint8_t> in(1000), out(1000);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + 1);
    b->enqueue(0, StreamKind::TRANS, h2d(256, in.data(), in.size()));
    b->enqueue(0, StreamKind::TRANS, d2h(256, out.data(), out.size()));
    b->synchronize(0, StreamKind::TRANS);
    QCOMPARE(out, in);

    // 7 compact rows of 12 bytes into rows 32 bytes apart: the padding stays zero.
    constexpr uint64_t rows = 7, row = 12, pitch = 32;
    std::vector<uint8_t> compact(rows * row), padded(rows * pitch, 0xAB);
    for (size_t i = 0; i < compact.size(); ++i) compact[i] = static_cast<uint8_t>(i + 1);
    Launch l = h2d(4096, compact.data(), compact.size());
    l.rows = rows;
    l.pitch = pitch;
    b->enqueue(0, StreamKind::TRANS, std::move(l));
    b->enqueue(0, StreamKind::TRANS, d2h(4096, padded.data(), padded.size()));
    b->synchronize(0);
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t c = 0; c < pitch; ++c)
        QCOMPARE(padded[r * pitch + c], c < row ? compact[r * row + c] : uint8_t{0});
  }

  void events_order_streams() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    constexpr uint64_t n = 1 << 20, bytes = n * 4;  // large enough to take a while
    b->allocate_arenas(2 * bytes);
    const EventId e = b->create_event(0);
    const std::vector<float> a = iota_floats(n, 1.0f);
    std::vector<float> out(n);
    Accumulate acc(*b, 0, bytes, 0, bytes);
    for (int round = 1; round <= 3; ++round) {
      b->enqueue(0, StreamKind::COMP_1, h2d(0, const_cast<float*>(a.data()), bytes));
      b->record(0, StreamKind::COMP_1, e);
      b->wait(0, StreamKind::COMP_2, e);
      b->enqueue(0, StreamKind::COMP_2, accumulate(acc.args));
      b->enqueue(0, StreamKind::COMP_2, d2h(bytes, out.data(), bytes));
      b->synchronize(0, StreamKind::COMP_2);
      for (uint64_t i = 0; i < n; i += 4099) QCOMPARE(out[i], static_cast<float>(round) * a[i]);
    }
  }

  void captured_fork_join_replays() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    constexpr uint64_t n = 4096, bytes = n * 4;
    b->allocate_arenas(4 * bytes);  // a, b, c, d
    const std::vector<float> a = iota_floats(n, -500.0f);
    b->enqueue(0, StreamKind::TRANS, h2d(0, const_cast<float*>(a.data()), bytes));
    b->synchronize(0);
    const EventId fork = b->create_event(0), join = b->create_event(0);
    Accumulate b_add_a(*b, 0, bytes, 0, bytes), c_add_a(*b, 0, 2 * bytes, 0, bytes),
        d_add_c(*b, 0, 3 * bytes, 2 * bytes, bytes);
    b->begin_capture(0, StreamKind::COMP_1);
    b->record(0, StreamKind::COMP_1, fork);
    b->wait(0, StreamKind::COMP_2, fork);
    b->enqueue(0, StreamKind::COMP_1, accumulate(b_add_a.args));
    b->enqueue(0, StreamKind::COMP_2, accumulate(c_add_a.args));
    b->record(0, StreamKind::COMP_2, join);
    b->wait(0, StreamKind::COMP_1, join);
    b->enqueue(0, StreamKind::COMP_1, accumulate(d_add_c.args));
    const GraphHandle g = b->end_capture(0, StreamKind::COMP_1);
    std::vector<float> out(3 * n);
    for (int replay = 1; replay <= 2; ++replay) {
      b->launch_graph(0, StreamKind::COMP_1, g);
      b->enqueue(0, StreamKind::COMP_1, d2h(bytes, out.data(), 3 * bytes));
      b->synchronize(0);
      for (uint64_t i = 0; i < n; i += 97) {
        const float k = static_cast<float>(replay);
        QCOMPARE(out[i], k * a[i]);
        QCOMPARE(out[n + i], k * a[i]);
        // d sums c after each replay's c: a, then a + 2a.
        QCOMPARE(out[2 * n + i], replay == 1 ? a[i] : a[i] + 2.0f * a[i]);
      }
    }
  }

  void unjoined_capture_is_refused() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    b->allocate_arenas(1 << 12);
    const EventId fork = b->create_event(0);
    Accumulate acc(*b, 0, 1024, 0, 1024);
    b->begin_capture(0, StreamKind::COMP_1);
    b->record(0, StreamKind::COMP_1, fork);
    b->wait(0, StreamKind::COMP_2, fork);
    b->enqueue(0, StreamKind::COMP_2, accumulate(acc.args));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, b->end_capture(0, StreamKind::COMP_1));
  }

  void host_functions_run_in_order() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    b->allocate_arenas(1 << 12);
    std::atomic<int> step{0};
    Launch first;
    first.kind = LaunchKind::HOST_FUNC;
    first.host_func = [&] { step = step == 0 ? 1 : -1; };
    Launch second;
    second.kind = LaunchKind::HOST_FUNC;
    second.host_func = [&] { step = step == 1 ? 2 : -1; };
    b->enqueue(0, StreamKind::UPDATE, std::move(first));
    b->enqueue(0, StreamKind::UPDATE, std::move(second));
    b->synchronize(0, StreamKind::UPDATE);
    QCOMPARE(step.load(), 2);
    // A host function's exception surfaces at the next synchronize.
    Launch failing;
    failing.kind = LaunchKind::HOST_FUNC;
    failing.host_func = [] { throw std::runtime_error("host function failed"); };
    b->enqueue(0, StreamKind::UPDATE, std::move(failing));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, b->synchronize(0, StreamKind::UPDATE));
  }

  void ops_without_kernel_are_refused() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    b->allocate_arenas(1 << 12);
    GraphNode node;
    node.kind = NodeKind::COMPUTE;
    node.op = ComputeOp::CONV_FWD;
    KernelArgs args;
    args.node = &node;
    try {
      b->enqueue(0, StreamKind::COMP_1, accumulate(args));
      QFAIL("a compute op without a CUDA kernel was accepted");
    } catch (const std::logic_error& e) {
      QVERIFY(std::string(e.what()).find("CONV_FWD") != std::string::npos);
    }
  }

  // One host thread issues for every rank (the rendezvous groups them).
  void host_collectives() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    const int world = b->world_size();
    constexpr uint64_t n = 1000, bytes = n * 4;
    b->allocate_arenas(4 * bytes);
    std::vector<std::vector<float>> in(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      in[static_cast<size_t>(r)] = iota_floats(3 * n, static_cast<float>(r + 1));
      b->enqueue(r, StreamKind::TRANS, h2d(0, in[static_cast<size_t>(r)].data(), 3 * bytes));
      b->synchronize(r);
    }
    for (int r = 0; r < world; ++r) {
      b->all_reduce(r, StreamKind::UPDATE, {0, bytes}, ReduceOp::SUM);
      b->all_reduce(r, StreamKind::UPDATE, {bytes, bytes}, ReduceOp::MEAN);
      b->broadcast(r, StreamKind::UPDATE, {2 * bytes, bytes}, world - 1);
    }
    for (int r = 0; r < world; ++r) {
      std::vector<float> out(3 * n);
      b->enqueue(r, StreamKind::UPDATE, d2h(0, out.data(), 3 * bytes));
      b->synchronize(r);
      for (uint64_t i = 0; i < n; i += 37) {
        float sum = 0;
        for (int k = 0; k < world; ++k) sum += in[static_cast<size_t>(k)][i];
        QCOMPARE(out[i], sum);
        float mean = 0;
        for (int k = 0; k < world; ++k) mean += in[static_cast<size_t>(k)][n + i];
        QVERIFY(std::fabs(out[n + i] - mean / static_cast<float>(world)) <=
                1e-5f * std::fabs(mean));
        QCOMPARE(out[2 * n + i], in[static_cast<size_t>(world - 1)][2 * n + i]);
      }
    }
  }

  void host_collectives_across_devices() {
    TR_REQUIRE_CUDA_DEVICE();
    if (test::cuda_device_count() < 2) QSKIP("one CUDA device: nothing to reduce across");
    host_collectives();
  }

  void nccl_group() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    const int world = b->world_size();
    constexpr uint64_t n = 512, bytes = n * 4;
    b->allocate_arenas(2 * bytes);
    std::vector<std::vector<float>> in(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      in[static_cast<size_t>(r)] = iota_floats(2 * n, static_cast<float>(10 * r));
      b->enqueue(r, StreamKind::TRANS, h2d(0, in[static_cast<size_t>(r)].data(), 2 * bytes));
      b->synchronize(r);
    }
    for (int r = 0; r < world; ++r) {
      b->group_start(r);
      b->all_reduce(r, StreamKind::UPDATE, {0, bytes}, ReduceOp::SUM);
      b->broadcast(r, StreamKind::UPDATE, {bytes, bytes}, 0);
      b->group_end(r);
    }
    for (int r = 0; r < world; ++r) {
      std::vector<float> out(2 * n);
      b->enqueue(r, StreamKind::UPDATE, d2h(0, out.data(), 2 * bytes));
      b->synchronize(r);
      for (uint64_t i = 0; i < n; i += 31) {
        float sum = 0;
        for (int k = 0; k < world; ++k) sum += in[static_cast<size_t>(k)][i];
        QCOMPARE(out[i], sum);
        QCOMPARE(out[n + i], in[0][n + i]);
      }
    }
    // A group that mixes streams is refused.
    b->group_start(0);
    b->all_reduce(0, StreamKind::UPDATE, {0, bytes}, ReduceOp::SUM);
    QVERIFY_THROWS_EXCEPTION(std::logic_error,
                             b->all_reduce(0, StreamKind::TRANS, {0, bytes}, ReduceOp::SUM));
  }

  // A COLLECTIVE launch, as captured graphs issue them: one thread a rank.
  void collective_launch() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    const int world = b->world_size();
    constexpr uint64_t n = 2048, bytes = n * 4;
    b->allocate_arenas(bytes);
    GraphNode node;
    node.kind = NodeKind::RANGE;
    node.range_op = RangeOp::ALLREDUCE_SUM;
    std::vector<KernelArgs> args(static_cast<size_t>(world));
    std::vector<std::vector<float>> out(static_cast<size_t>(world), std::vector<float>(n));
    const std::vector<float> in = iota_floats(n, 2.0f);
    std::vector<std::thread> threads;
    std::vector<std::string> errors(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      KernelArgs& a = args[static_cast<size_t>(r)];
      a.node = &node;
      a.in_spans = {span(*b, r, 0, bytes)};
      threads.emplace_back([&, r] {
        try {
          b->enqueue(r, StreamKind::UPDATE, h2d(0, const_cast<float*>(in.data()), bytes));
          Launch l;
          l.kind = LaunchKind::COLLECTIVE;
          l.args = &args[static_cast<size_t>(r)];
          b->enqueue(r, StreamKind::UPDATE, std::move(l));
          b->enqueue(r, StreamKind::UPDATE, d2h(0, out[static_cast<size_t>(r)].data(), bytes));
          b->synchronize(r);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(r)] = e.what();
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < world; ++r) {
      QCOMPARE(errors[static_cast<size_t>(r)], std::string());
      for (uint64_t i = 0; i < n; i += 101)
        QCOMPARE(out[static_cast<size_t>(r)][i], static_cast<float>(world) * in[i]);
    }
  }

  void profiling_records_launches() {
    TR_REQUIRE_CUDA_DEVICE();
    auto b = all_devices();
    b->allocate_arenas(1 << 20);
    std::vector<uint8_t> host(1 << 20, 1);
    b->set_profiling(true);
    Launch l = h2d(0, host.data(), host.size());
    l.tag.label = "profiled copy";
    b->enqueue(0, StreamKind::TRANS, std::move(l));
    b->set_profiling(false);
    b->enqueue(0, StreamKind::TRANS, h2d(0, host.data(), host.size()));  // not recorded
    b->synchronize(0);
    const std::vector<ProfileSpan> spans = b->take_profile();
    QCOMPARE(spans.size(), size_t{1});
    QCOMPARE(spans[0].tag.label, std::string("profiled copy"));
    QCOMPARE(spans[0].tag.stream, StreamKind::TRANS);
    QVERIFY(spans[0].start_us >= 0);
    QVERIFY(spans[0].end_us >= spans[0].start_us);
    QVERIFY(b->take_profile().empty());
  }
};

QTEST_GUILESS_MAIN(TestCudaBackend)
#include "test_cuda_backend.moc"
