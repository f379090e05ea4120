// SPDX-License-Identifier: GPL-3.0-or-later
// Interval packing of the step-local pool: tensors live at the same time
// never share bytes, tensors that are not do, both strategies reach the
// floor (the largest live set) where it can be reached, the result does not
// depend on the input's order of equal items, and a wrong packing is found.
#include <QtTest>
#include <random>

#include "plan/pool_packing.h"

using namespace tr;

namespace {

constexpr uint64_t K = 256;

std::vector<PoolItem> random_items(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<PoolItem> items;
  for (size_t i = 0; i < n; ++i) {
    const int first = static_cast<int>(rng() % 200);
    items.push_back({K * (1 + rng() % 64), first, first + static_cast<int>(rng() % 40)});
  }
  return items;
}

}  // namespace

class TestPoolPacking : public QObject {
  Q_OBJECT

 private slots:
  void disjointLifetimesShareBytes() {
    // a chain: each lives from its producer to its consumer, like features
    // of a network without a backward
    std::vector<PoolItem> chain;
    for (int i = 0; i < 10; ++i) chain.push_back({4 * K, i, i + 1});
    for (PackingStrategy s :
         {PackingStrategy::GREEDY_BY_SIZE, PackingStrategy::FIRST_FIT_BY_START}) {
      const PoolPacking p = pack_pool(chain, s);
      QCOMPARE(p.bytes, 8 * K);  // two live at once, never more
      QVERIFY(pool_conflicts(chain, p.offsets).empty());
    }
    QCOMPARE(pool_lower_bound(chain), 8 * K);
  }

  void everythingLiveAtOnceIsLaidEndToEnd() {
    const std::vector<PoolItem> all = {{K, 0, 5}, {3 * K, 1, 4}, {2 * K, 2, 3}};
    const PoolPacking p = pack_pool(all);
    QCOMPARE(p.bytes, 6 * K);
    QVERIFY(pool_conflicts(all, p.offsets).empty());
    // largest first: the three-block item at the start
    QCOMPARE(p.offsets[1], uint64_t{0});
  }

  void laterItemsReuseWhatADeadOneLeft() {
    const std::vector<PoolItem> items = {
        {8 * K, 0, 1},  // dies early: frees [0, 8K)
        {2 * K, 0, 9},  // long-lived, above it
        {4 * K, 2, 9},  // into the freed bytes
        {2 * K, 3, 9},  // into what is left of them
    };
    const PoolPacking p = pack_pool(items, PackingStrategy::GREEDY_BY_SIZE);
    QVERIFY(pool_conflicts(items, p.offsets).empty());
    QCOMPARE(p.offsets[0], uint64_t{0});
    QCOMPARE(p.offsets[1], 8 * K);
    QCOMPARE(p.offsets[2], uint64_t{0});
    QCOMPARE(p.offsets[3], 4 * K);
    QCOMPARE(p.bytes, 10 * K);  // the floor: 8K + 2K at the start
    QCOMPARE(pool_lower_bound(items), 10 * K);
  }

  void bestFitTakesTheSmallestGap() {
    // A, C and E live through the step; B and D die after position 1 and
    // leave gaps of 10K and 6K between them. F (4K, later) fits both.
    const std::vector<PoolItem> items = {
        {12 * K, 0, 9},  // A: [0, 12K)
        {10 * K, 0, 1},  // B: [12K, 22K)
        {8 * K, 0, 9},   // C: [22K, 30K)
        {6 * K, 0, 1},   // D: [30K, 36K)
        {5 * K, 0, 9},   // E: [36K, 41K)
        {4 * K, 5, 9},   // F
    };
    const PoolPacking best = pack_pool(items, PackingStrategy::GREEDY_BY_SIZE);
    QCOMPARE(best.offsets, (std::vector<uint64_t>{0, 12 * K, 22 * K, 30 * K, 36 * K, 30 * K}));
    const PoolPacking first = pack_pool(items, PackingStrategy::FIRST_FIT_BY_START);
    QCOMPARE(first.offsets.back(), 12 * K);  // the lowest gap instead
    for (const PoolPacking* p : {&best, &first}) {
      QVERIFY(pool_conflicts(items, p->offsets).empty());
      QCOMPARE(p->bytes, 41 * K);
    }
  }

  void randomPackingsAreCorrectAndNearTheFloor() {
    for (uint32_t seed = 1; seed <= 50; ++seed) {
      const std::vector<PoolItem> items = random_items(seed, 120);
      const uint64_t floor = pool_lower_bound(items);
      uint64_t sum = 0;
      for (const PoolItem& it : items) sum += it.bytes;
      for (PackingStrategy s :
           {PackingStrategy::GREEDY_BY_SIZE, PackingStrategy::FIRST_FIT_BY_START}) {
        const PoolPacking p = pack_pool(items, s);
        QCOMPARE(p.strategy, s);
        QVERIFY2(pool_conflicts(items, p.offsets).empty(), qPrintable(QString::number(seed)));
        QVERIFY(p.bytes >= floor);
        QVERIFY(p.bytes <= sum);
        for (size_t i = 0; i < items.size(); ++i) {
          QCOMPARE(p.offsets[i] % K, uint64_t{0});
          QVERIFY(p.offsets[i] + items[i].bytes <= p.bytes);
        }
      }
      // the better of the two, within half again of the floor on these
      const PoolPacking best = pack_pool(items);
      QVERIFY(best.bytes <= pack_pool(items, PackingStrategy::GREEDY_BY_SIZE).bytes);
      QVERIFY(best.bytes <= pack_pool(items, PackingStrategy::FIRST_FIT_BY_START).bytes);
      QVERIFY2(best.bytes * 2 <= floor * 3,
               qPrintable(QStringLiteral("%1 against a floor of %2").arg(best.bytes).arg(floor)));
    }
  }

  void sameInputSameOffsets() {
    const std::vector<PoolItem> items = random_items(7, 200);
    QCOMPARE(pack_pool(items).offsets, pack_pool(items).offsets);
  }

  void aWrongPackingIsFound() {
    const std::vector<PoolItem> items = {{2 * K, 0, 3}, {2 * K, 3, 5}, {2 * K, 6, 8}};
    // 0 and 1 are both live at 3; 0 and 2 never are
    const auto bad = pool_conflicts(items, {0, K, 0});
    QCOMPARE(bad.size(), size_t{1});
    QCOMPARE(bad.front(), std::make_pair(size_t{0}, size_t{1}));
    QVERIFY(pool_conflicts(items, {0, 2 * K, 0}).empty());
  }

  void emptyPool() {
    const PoolPacking p = pack_pool({});
    QCOMPARE(p.bytes, uint64_t{0});
    QVERIFY(p.offsets.empty());
    QCOMPARE(pool_lower_bound({}), uint64_t{0});
  }
};

QTEST_APPLESS_MAIN(TestPoolPacking)
#include "test_pool_packing.moc"
