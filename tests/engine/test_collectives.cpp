// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's collectives keep NCCL's contract: in-place sum, mean and
// max all-reduces that leave identical bits on every rank, a reduce-scatter
// that is the mean all-reduce's share, broadcasts from any root, groups that run as one rendezvous,
// an error on every rank when the ranks' calls disagree, and abort() releasing ranks that wait for
// a partner that failed. The rank barrier underneath is tested on its own.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "backends/cpu/collectives.h"
#include "backends/cpu/cpu_backend.h"
#include "core/data_shard.h"
#include "runtime/rank_barrier.h"

using namespace tr;

namespace {

float* floats(Backend& b, int rank, uint64_t offset = 0) {
  return reinterpret_cast<float*>(b.arena(rank) + offset);
}

// What synchronizing `rank` throws ("" when nothing), aborting the test
// instead of hanging it when the rank stays blocked.
template <class E>
std::string sync_error(Backend& b, int rank) {
  auto done = std::async(std::launch::async, [&]() -> std::string {
    try {
      b.synchronize(rank);
    } catch (const E& e) {
      return std::string("caught: ") + e.what();
    }
    return {};
  });
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready)
    qFatal("rank %d stayed blocked for 20 s: it was left waiting", rank);
  return done.get();
}

}  // namespace

class TestCollectives : public QObject {
  Q_OBJECT

 private slots:
  void groupRunsSumMeanAndBroadcastTogether() {
    const int world = 4;
    auto b = cpu::make_cpu_backend({world, true});
    b->allocate_arenas(3 * 1024);
    for (int r = 0; r < world; ++r) {
      float* f = floats(*b, r);
      for (int i = 0; i < 3 * 256; ++i) f[i] = static_cast<float>((r + 1) * 1000 + i);
    }
    // One host thread issues every rank's calls, as with ncclGroupStart/End.
    for (int r = 0; r < world; ++r) {
      b->group_start(r);
      b->all_reduce(r, StreamKind::UPDATE, {0, 1024}, ReduceOp::SUM);
      b->all_reduce(r, StreamKind::UPDATE, {1024, 1024}, ReduceOp::MEAN);
      b->broadcast(r, StreamKind::UPDATE, {2048, 1024}, 2);
      b->group_end(r);
    }
    for (int r = 0; r < world; ++r) b->synchronize(r);
    for (int r = 0; r < world; ++r) {
      const float* f = floats(*b, r);
      for (int i = 0; i < 256; i += 17) {
        QCOMPARE(f[i], 10000.0f + 4.0f * static_cast<float>(i));      // 1000+2000+3000+4000
        QCOMPARE(f[256 + i], 2500.0f + static_cast<float>(256 + i));  // their mean
        QCOMPARE(f[512 + i], 3000.0f + static_cast<float>(512 + i));  // rank 2's values
      }
      QCOMPARE(std::memcmp(f, floats(*b, 0), 3 * 1024), 0);
    }
  }

  void sumIsIdenticalOnEveryRank() {
    // Values whose float sum depends on the order: every rank must still
    // hold the same bits (ranks are added in rank order everywhere).
    const int world = 8;
    auto b = cpu::make_cpu_backend({world, true});
    b->allocate_arenas(4096);
    for (int r = 0; r < world; ++r)
      for (int i = 0; i < 1024; ++i)
        floats(*b, r)[i] = (r % 2 ? 1e8f : 1.0f) * (1.0f + static_cast<float>(i) * 1e-3f);
    for (int r = 0; r < world; ++r) b->all_reduce(r, StreamKind::UPDATE, {0, 4096}, ReduceOp::MEAN);
    for (int r = 0; r < world; ++r) b->synchronize(r);
    for (int r = 1; r < world; ++r) QCOMPARE(std::memcmp(floats(*b, r), floats(*b, 0), 4096), 0);
  }

  // ZeRO-2's reduce-scatter gives each rank its share (core/data_shard.h) of
  // the very bits the mean all-reduce gives every rank; the max all-reduce
  // leaves every rank the largest value.
  void reduceScatterIsTheAllReducesShare() {
    const int world = 8;
    const uint64_t count = 1000;  // shares of 128 floats, the last 104
    cpu::Collectives c(world);
    std::vector<std::vector<float>> reduced(world), scattered(world), shares(world), most(world);
    for (int r = 0; r < world; ++r) {
      reduced[static_cast<size_t>(r)].resize(count);
      for (uint64_t i = 0; i < count; ++i)
        reduced[static_cast<size_t>(r)][i] =
            (r % 2 ? 1e8f : 1.0f) * (1.0f + static_cast<float>(i) * 1e-3f) - static_cast<float>(r);
      scattered[static_cast<size_t>(r)] = reduced[static_cast<size_t>(r)];
      most[static_cast<size_t>(r)] = reduced[static_cast<size_t>(r)];
      shares[static_cast<size_t>(r)].assign(count, -1.0f);
    }
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r)
      threads.emplace_back([&, r] {
        const auto k = static_cast<size_t>(r);
        c.all_reduce(r, reduced[k].data(), count, true);
        c.run(r, {{cpu::CollectiveKind::REDUCE_SCATTER_MEAN, scattered[k].data(), count * 4, 0,
                   "scatter", shares[k].data()}});
        c.run(r, {{cpu::CollectiveKind::ALL_REDUCE_MAX, most[k].data(), count * 4, 0, "max"}});
      });
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < world; ++r) {
      const auto k = static_cast<size_t>(r);
      const ShardShare share = shard_share(count * 4, r, world);
      QCOMPARE(share.bytes(), uint64_t{r == world - 1 ? 104u * 4 : 128u * 4});
      QCOMPARE(std::memcmp(shares[k].data(), reduced[k].data() + share.begin / 4, share.bytes()),
               0);
      QCOMPARE(shares[k][share.bytes() / 4], -1.0f);  // nothing past the share
      for (uint64_t i = 0; i < count; i += 37) QCOMPARE(most[k][i], most[1][i]);
      // rank 1's, the largest
      QCOMPARE(most[k][10], 1e8f * (1.0f + static_cast<float>(10) * 1e-3f) - 1.0f);
    }
  }

  void disagreeingRanksFailOnEveryRank() {
    auto b = cpu::make_cpu_backend({2, true});
    b->allocate_arenas(1024);
    b->broadcast(0, StreamKind::UPDATE, {0, 256}, 0);
    b->broadcast(1, StreamKind::UPDATE, {0, 512}, 0);
    for (int r = 0; r < 2; ++r) {
      const QString m = QString::fromStdString(sync_error<std::logic_error>(*b, r));
      QVERIFY2(m.contains("disagree") && m.contains("256") && m.contains("512"), qPrintable(m));
    }
  }

  void abortReleasesRanksWaitingForAFailedOne() {
    auto b = cpu::make_cpu_backend({2, true});
    b->allocate_arenas(1024);
    // Rank 1 never comes: rank 0 waits in the all-reduce until the abort.
    b->all_reduce(0, StreamKind::UPDATE, {0, 1024}, ReduceOp::SUM);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    b->abort_collectives("rank 1 failed: disk on fire");
    const std::string m = sync_error<CollectiveAborted>(*b, 0);
    QVERIFY2(m.find("disk on fire") != std::string::npos, m.c_str());
    // Later collectives fail at once instead of waiting.
    b->all_reduce(1, StreamKind::UPDATE, {0, 1024}, ReduceOp::SUM);
    QVERIFY(!sync_error<CollectiveAborted>(*b, 1).empty());
  }

  void badCallsAreRefused() {
    auto b = cpu::make_cpu_backend({2, true});
    b->allocate_arenas(1024);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range,
                             b->broadcast(0, StreamKind::UPDATE, {512, 1024}, 0));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, b->broadcast(0, StreamKind::UPDATE, {0, 64}, 2));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             b->all_reduce(0, StreamKind::UPDATE, {0, 6}, ReduceOp::SUM));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, b->group_end(0));
    b->group_start(0);
    b->broadcast(0, StreamKind::UPDATE, {0, 64}, 0);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, b->broadcast(0, StreamKind::COMP_1, {0, 64}, 0));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, b->group_start(0));
  }

  void barrierPassesRoundsAndAborts() {
    RankBarrier barrier(3);
    std::atomic<int> passed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
      threads.emplace_back([&] {
        for (int round = 0; round < 50; ++round) barrier.arrive_and_wait();
        ++passed;
      });
    for (std::thread& t : threads) t.join();
    QCOMPARE(passed.load(), 3);

    std::atomic<int> released{0};
    std::thread waiter([&] {
      try {
        barrier.arrive_and_wait();
      } catch (const CollectiveAborted&) {
        ++released;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    barrier.abort("rank 2 failed");
    waiter.join();
    QCOMPARE(released.load(), 1);
    QVERIFY(barrier.aborted());
    QVERIFY_THROWS_EXCEPTION(CollectiveAborted, barrier.arrive_and_wait());
  }
};

QTEST_APPLESS_MAIN(TestCollectives)
#include "test_collectives.moc"
