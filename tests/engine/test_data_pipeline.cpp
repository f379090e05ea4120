// SPDX-License-Identifier: GPL-3.0-or-later
// The input pipeline: epoch plans (coverage, shuffling, rank slices, the
// partial last batch), normalisation and augmentation, FP16 output, and the
// A/B prefetch thread (overlap, ordering, errors, clean shutdown).
#include <unistd.h>

#include <QElapsedTimer>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <renaissance/error.h>
#include "data/batch_pipeline.h"
#include "data/epoch_plan.h"
#include "data/half.h"
#include "data/sample_transform.h"
#include "data/synthetic.h"

using namespace tr;

namespace {

// label(i) == i, so a batch's labels say exactly which samples it holds;
// pixels follow a formula the tests can recompute.
class CountingSource final : public DataSource {
 public:
  CountingSource(int64_t n, int64_t h, int64_t w, int64_t c) : n_(n), h_(h), w_(w), c_(c) {}
  static uint8_t pixel(int64_t i, int64_t y, int64_t x, int64_t c) {
    return static_cast<uint8_t>((i * 7 + y * 31 + x * 3 + c * 101) % 251);
  }
  Shape sample_shape() const override { return {1, h_, w_, c_}; }
  int64_t classes() const override { return n_; }
  int64_t size(Split) const override { return n_; }
  void read(Split, int64_t i, uint8_t* out) const override {
    if (i == fail_at) throw UsageError("sample " + std::to_string(i) + " is unreadable");
    if (delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    reads.fetch_add(1, std::memory_order_relaxed);
    for (int64_t y = 0; y < h_; ++y) {
      for (int64_t x = 0; x < w_; ++x) {
        for (int64_t c = 0; c < c_; ++c) *out++ = pixel(i, y, x, c);
      }
    }
  }
  int32_t label(Split, int64_t i) const override { return static_cast<int32_t>(i); }
  std::string describe() const override { return "counting"; }

  int64_t fail_at = -1;
  int delay_ms = 0;
  mutable std::atomic<int64_t> reads{0};

 private:
  int64_t n_, h_, w_, c_;
};

BatchSpec spec(int64_t batch, bool shuffle = true) {
  BatchSpec s;
  s.batch = batch;
  s.shuffle = shuffle;
  s.seed = 42;
  return s;
}

std::vector<int32_t> labels_of(const Batch& b) {
  return std::vector<int32_t>(b.labels.data<int32_t>(), b.labels.data<int32_t>() + b.size);
}

// Every batch of one epoch: labels and image bytes, in order.
struct Epoch {
  std::vector<std::vector<int32_t>> labels;
  std::vector<std::vector<uint8_t>> images;
  std::vector<bool> partial;
};

// Every remaining batch of the epoch, checked to come in order from `first`.
Epoch drain(BatchPipeline& p, int64_t first = 0) {
  Epoch e;
  int64_t expect = first;
  while (const Batch* b = p.next()) {
    if (b->index != expect || b->buffer != expect % 2) {
      throw std::runtime_error("batches out of order");
    }
    ++expect;
    e.labels.push_back(labels_of(*b));
    const auto* bytes = b->images.data<std::byte>();
    e.images.emplace_back(reinterpret_cast<const uint8_t*>(bytes),
                          reinterpret_cast<const uint8_t*>(bytes) + b->image_bytes());
    e.partial.push_back(b->partial);
    p.release(b);
  }
  return e;
}

std::vector<int32_t> flatten(const Epoch& e) {
  std::vector<int32_t> all;
  for (const auto& l : e.labels) all.insert(all.end(), l.begin(), l.end());
  return all;
}

std::vector<int64_t> plan_samples(const EpochPlan& p, int64_t b) {
  std::vector<int64_t> s;
  for (int64_t i = 0; i < p.batch_size(b); ++i) s.push_back(p.sample(b, i));
  return s;
}

}  // namespace

class TestDataPipeline : public QObject {
  Q_OBJECT

 private slots:
  // ---- EpochPlan ----

  void planCoversEverySampleOnceShuffled() {
    const EpochPlan p(1000, 64, 1, 0, false, true, 42, 0);
    QCOMPARE(p.batches(), int64_t{16});
    QCOMPARE(p.local_batch(), int64_t{64});
    QCOMPARE(p.batch_size(14), int64_t{64});
    QCOMPARE(p.batch_size(15), int64_t{40});
    QVERIFY(p.is_partial(15) && !p.is_partial(14));
    QCOMPARE(p.dropped(), int64_t{0});
    std::vector<int64_t> seen;
    for (int64_t b = 0; b < p.batches(); ++b) {
      const auto s = plan_samples(p, b);
      seen.insert(seen.end(), s.begin(), s.end());
    }
    int in_place = 0;
    for (size_t i = 0; i < seen.size(); ++i) in_place += seen[i] == static_cast<int64_t>(i);
    QVERIFY2(in_place < 20, "the order must be shuffled");
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(1000);
    std::iota(all.begin(), all.end(), 0);
    QVERIFY(seen == all);

    const EpochPlan fixed(1000, 64, 1, 0, false, false, 42, 0);
    QCOMPARE(fixed.sample(3, 5), int64_t{3 * 64 + 5});
  }

  void planOrderFollowsSeedAndEpoch() {
    const EpochPlan a(500, 50, 1, 0, false, true, 42, 0), a2(500, 50, 1, 0, false, true, 42, 0);
    const EpochPlan next_epoch(500, 50, 1, 0, false, true, 42, 1);
    const EpochPlan other_seed(500, 50, 1, 0, false, true, 43, 0);
    int same_epoch = 0, same_seed = 0;
    for (int64_t b = 0; b < a.batches(); ++b) {
      QVERIFY(plan_samples(a, b) == plan_samples(a2, b));
      for (int64_t i = 0; i < 50; ++i) {
        same_epoch += a.sample(b, i) == next_epoch.sample(b, i);
        same_seed += a.sample(b, i) == other_seed.sample(b, i);
      }
    }
    QVERIFY(same_epoch < 10);
    QVERIFY(same_seed < 10);
  }

  void planRanksPartitionTheGlobalBatch_data() {
    QTest::addColumn<int>("world");
    QTest::addColumn<qlonglong>("samples");
    for (int w : {2, 4}) {
      for (qlonglong n : {1000LL, 1003LL, 1024LL}) {
        QTest::newRow(qPrintable(QString("world %1, %2 samples").arg(w).arg(n))) << w << n;
      }
    }
  }

  void planRanksPartitionTheGlobalBatch() {
    QFETCH(int, world);
    QFETCH(qlonglong, samples);
    const int64_t B = 64;
    const EpochPlan one(samples, B, 1, 0, false, true, 7, 2);
    std::vector<EpochPlan> ranks;
    for (int r = 0; r < world; ++r) ranks.emplace_back(samples, B, world, r, false, true, 7, 2);
    const int64_t remainder = samples % B;
    const int64_t per_rank_tail = remainder / world;
    QCOMPARE(ranks[0].batches(), (samples / B) + (per_rank_tail > 0 ? 1 : 0));
    for (int64_t b = 0; b < ranks[0].batches(); ++b) {
      std::vector<int64_t> joined;
      for (const auto& r : ranks) {
        const auto s = plan_samples(r, b);
        QCOMPARE(static_cast<int64_t>(s.size()), r.batch_size(b));
        joined.insert(joined.end(), s.begin(), s.end());
      }
      auto global = plan_samples(one, b);
      // The partial batch: ranks drop the last remainder % world samples.
      global.resize(joined.size());
      QVERIFY(joined == global);
    }
    QCOMPARE(ranks[0].dropped(), remainder - per_rank_tail * world);
  }

  void planPartialLastBatch() {
    const EpochPlan p(110, 20, 4, 3, false, true, 1, 0);
    QCOMPARE(p.batches(), int64_t{6});
    QCOMPARE(p.local_batch(), int64_t{5});
    QCOMPARE(p.batch_size(5), int64_t{2});  // 10 left: 2 per rank, 2 dropped
    QVERIFY(p.is_partial(5));
    QCOMPARE(p.dropped(), int64_t{2});
    const EpochPlan dropping(110, 20, 4, 3, true, true, 1, 0);
    QCOMPARE(dropping.batches(), int64_t{5});
    QCOMPARE(dropping.dropped(), int64_t{10});
    const EpochPlan tiny_tail(103, 20, 4, 0, false, true, 1, 0);  // 3 left < 4 ranks
    QCOMPARE(tiny_tail.batches(), int64_t{5});
    QCOMPARE(tiny_tail.dropped(), int64_t{3});
    const EpochPlan exact(100, 20, 4, 0, false, true, 1, 0);
    QCOMPARE(exact.batches(), int64_t{5});
    QVERIFY(!exact.is_partial(4));
  }

  void planRejectsBadBatches() {
    try {
      EpochPlan(100, 30, 4, 0, false, true, 1, 0);
      QFAIL("expected a UsageError");
    } catch (const UsageError& e) {
      QVERIFY2(std::string(e.what()).find("global batch 30 does not divide by 4 devices") !=
                   std::string::npos,
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(UsageError, EpochPlan(100, 0, 1, 0, false, true, 1, 0));
    QVERIFY_THROWS_EXCEPTION(UsageError, EpochPlan(0, 10, 1, 0, false, true, 1, 0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, EpochPlan(100, 10, 2, 2, false, true, 1, 0));
  }

  // ---- the pipeline ----

  void pipelineCoversTheEpochInPlanOrder() {
    const CountingSource src(100, 4, 4, 1);
    BatchPipeline p(src, Split::Train, spec(16));
    QCOMPARE(p.batches_per_epoch(), int64_t{7});
    QCOMPARE(p.local_batch(), int64_t{16});
    const Epoch e0 = drain(p);
    QCOMPARE(e0.labels.size(), size_t{7});
    QCOMPARE(e0.labels.back().size(), size_t{4});
    QVERIFY(e0.partial.back() && !e0.partial.front());
    QVERIFY(p.next() == nullptr);  // stays at the end
    const std::vector<int32_t> order = flatten(e0);
    std::vector<int32_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int32_t> all(100);
    std::iota(all.begin(), all.end(), 0);
    QVERIFY(sorted == all);
    QVERIFY(order != all);  // shuffled
    const EpochPlan plan(100, 16, 1, 0, false, true, 42, 0);
    for (size_t b = 0; b < e0.labels.size(); ++b) {
      const auto s = plan_samples(plan, static_cast<int64_t>(b));
      QVERIFY(std::equal(s.begin(), s.end(), e0.labels[b].begin()));
    }

    BatchPipeline again(src, Split::Train, spec(16));
    const Epoch same = drain(again);
    QVERIFY(same.labels == e0.labels);
    QVERIFY(same.images == e0.images);

    p.start_epoch(1);
    const Epoch e1 = drain(p);
    QVERIFY(flatten(e1) != order);
    std::vector<int32_t> sorted1 = flatten(e1);
    std::sort(sorted1.begin(), sorted1.end());
    QVERIFY(sorted1 == all);
    p.start_epoch(0);  // back to epoch 0: the same order again
    QVERIFY(drain(p).labels == e0.labels);
  }

  void pipelineRanksAreBitIdenticalToOneRank_data() {
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("dtype");
    for (int w : {2, 4}) {
      QTest::newRow(qPrintable(QString("world %1 fp32").arg(w))) << w << int(DType::FP32);
      QTest::newRow(qPrintable(QString("world %1 fp16").arg(w))) << w << int(DType::FP16);
    }
  }

  void pipelineRanksAreBitIdenticalToOneRank() {
    QFETCH(int, world);
    QFETCH(int, dtype);
    const SyntheticSource src(8, 8, 3, 10, 203, 10, 11);
    BatchSpec s = spec(32);
    s.random_crop_padding = 2;
    s.random_flip = true;
    s.mean = {0.5, 0.4, 0.3};
    s.std = {0.2, 0.25, 0.3};
    s.dtype = static_cast<DType>(dtype);
    s.epoch = 3;
    BatchPipeline one(src, Split::Train, s);
    const Epoch global = drain(one);
    std::vector<Epoch> ranks;
    for (int r = 0; r < world; ++r) {
      BatchPipeline p(src, Split::Train, s, world, r);
      QCOMPARE(p.local_batch(), int64_t{32 / world});
      ranks.push_back(drain(p));
    }
    QCOMPARE(ranks[0].labels.size(), global.labels.size());
    for (size_t b = 0; b < global.labels.size(); ++b) {
      std::vector<int32_t> labels;
      std::vector<uint8_t> images;
      for (const Epoch& r : ranks) {
        labels.insert(labels.end(), r.labels[b].begin(), r.labels[b].end());
        images.insert(images.end(), r.images[b].begin(), r.images[b].end());
      }
      // Full batches match whole; the partial one matches on the samples kept.
      QVERIFY(std::equal(labels.begin(), labels.end(), global.labels[b].begin()));
      QVERIFY(std::equal(images.begin(), images.end(), global.images[b].begin()));
      if (b + 1 < global.labels.size()) QCOMPARE(labels.size(), global.labels[b].size());
    }
  }

  void pipelineNormalisesKnownPixels() {
    const CountingSource src(8, 3, 2, 3);
    BatchSpec s = spec(4, false);
    s.mean = {0.1, 0.2, 0.3};
    s.std = {0.5, 0.25, 0.125};
    BatchPipeline p(src, Split::Val, s);
    const Batch* b = p.next();
    QVERIFY(b);
    QVERIFY(b->shape() == (Shape{4, 3, 2, 3}));
    const float* x = b->images.data<float>();
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t y = 0; y < 3; ++y) {
        for (int64_t xx = 0; xx < 2; ++xx) {
          for (int64_t c = 0; c < 3; ++c) {
            const double v = CountingSource::pixel(i, y, xx, c);
            const double want =
                (v / 255.0 - s.mean[static_cast<size_t>(c)]) / s.std[static_cast<size_t>(c)];
            const float got = x[((i * 3 + y) * 2 + xx) * 3 + c];
            QVERIFY2(std::abs(got - want) < 1e-6,
                     qPrintable(QString("%1 vs %2").arg(got).arg(want)));
          }
        }
      }
    }
    // Pixel 200 in channel 1: (200/255 - 0.2) / 0.25.
    const SampleTransform t({1, 1, 1, 3}, s.mean, s.std, 0, false, 0);
    QCOMPARE(t.normalised(1, 200), static_cast<float>((200 / 255.0 - 0.2) / 0.25));
    p.release(b);
  }

  void meanAndStdAreChecked() {
    const CountingSource src(8, 2, 2, 3);
    BatchSpec s = spec(4);
    s.mean = {0.1, 0.2};
    try {
      BatchPipeline p(src, Split::Train, s);
      QFAIL("expected a UsageError");
    } catch (const UsageError& e) {
      QVERIFY2(std::string(e.what()).find("\"dataset.mean\" has 2 values; expected 3") !=
                   std::string::npos,
               e.what());
    }
    s.mean = {0.5};  // one value serves every channel
    s.std = {0.0};
    QVERIFY_THROWS_EXCEPTION(UsageError, BatchPipeline(src, Split::Train, s));
    s.std = {1.0};
    s.dtype = DType::INT8;
    QVERIFY_THROWS_EXCEPTION(UsageError, BatchPipeline(src, Split::Train, s));
    s.dtype = DType::FP32;
    s.batch = 6;
    QVERIFY_THROWS_EXCEPTION(UsageError, BatchPipeline(src, Split::Train, s, 4, 0));
  }

  void cropAndFlipAreDeterministicAndCorrect() {
    const int64_t H = 6, W = 5, C = 2, pad = 2;
    const CountingSource src(64, H, W, C);
    BatchSpec s = spec(64, false);
    s.random_crop_padding = pad;
    s.random_flip = true;
    s.epoch = 5;
    BatchPipeline p(src, Split::Train, s);
    const Batch* b = p.next();
    QVERIFY(b);
    const SampleTransform t({1, H, W, C}, s.mean, s.std, pad, true, s.seed);
    std::set<int64_t> offsets;
    int flips = 0;
    for (int64_t i = 0; i < 64; ++i) {
      const Augmentation a = t.draw(5, i);
      QVERIFY(a == t.draw(5, i));
      QVERIFY(a.dy >= 0 && a.dy <= 2 * pad && a.dx >= 0 && a.dx <= 2 * pad);
      offsets.insert(a.dy * 10 + a.dx);
      flips += a.flip;
      // Reference: zero-pad, crop at (dy, dx), then mirror.
      for (int64_t y = 0; y < H; ++y) {
        for (int64_t x = 0; x < W; ++x) {
          const int64_t cx = a.flip ? W - 1 - x : x;
          const int64_t sy = y + a.dy - pad, sx = cx + a.dx - pad;
          const bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
          for (int64_t c = 0; c < C; ++c) {
            const uint8_t v = inside ? CountingSource::pixel(i, sy, sx, c) : 0;
            const float got = b->images.data<float>()[((i * H + y) * W + x) * C + c];
            if (got != t.normalised(c, v))
              QFAIL(qPrintable(QString("sample %1 y %2 x %3").arg(i).arg(y).arg(x)));
          }
        }
      }
    }
    QVERIFY2(flips > 16 && flips < 48, "about half the samples are flipped");
    QVERIFY2(offsets.size() > 10, "crop offsets vary");
    QVERIFY(t.draw(6, 0) != t.draw(5, 0) || t.draw(6, 1) != t.draw(5, 1) ||
            t.draw(6, 2) != t.draw(5, 2));  // a new epoch, new draws
    const std::vector<float> first(b->images.data<float>(),
                                   b->images.data<float>() + b->images.elements());
    p.release(b);
    BatchPipeline again(src, Split::Train, s);
    const Batch* b2 = again.next();
    QVERIFY(std::equal(first.begin(), first.end(), b2->images.data<float>()));
    again.release(b2);
  }

  void fp16IsTheConvertedFp32() {
    const SyntheticSource src(10, 10, 3, 5, 70, 10, 3);
    BatchSpec s = spec(16);
    s.mean = {0.485, 0.456, 0.406};
    s.std = {0.229, 0.224, 0.225};
    s.random_crop_padding = 1;
    s.random_flip = true;
    BatchPipeline p32(src, Split::Train, s);
    s.dtype = DType::FP16;
    BatchPipeline p16(src, Split::Train, s);
    int batches = 0;
    while (const Batch* a = p32.next()) {
      const Batch* h = p16.next();
      QVERIFY(h);
      QCOMPARE(h->images.dtype(), DType::FP16);
      QCOMPARE(h->image_bytes() * 2, a->image_bytes());
      QVERIFY(labels_of(*a) == labels_of(*h));
      const int64_t n = a->shape().elements();
      for (int64_t i = 0; i < n; ++i) {
        if (fp32_to_fp16(a->images.data<float>()[i]) != h->images.data<uint16_t>()[i]) {
          QFAIL(qPrintable(QString("element %1 of batch %2").arg(i).arg(a->index)));
        }
      }
      p32.release(a);
      p16.release(h);
      ++batches;
    }
    QVERIFY(p16.next() == nullptr);
    QCOMPARE(batches, 5);
  }

  // The device pads FP16 input channels (1 to 4): with padded_channels the
  // staging images have that layout, the extra lanes zero, the real ones
  // the compact pipeline's values, so one contiguous copy moves a batch.
  void paddedChannelsGiveTheDeviceLayout() {
    CountingSource src(40, 5, 3, 1);
    BatchSpec compact = spec(8, false);
    compact.dtype = DType::FP16;
    BatchSpec padded = compact;
    padded.padded_channels = 4;
    BatchPipeline a(src, Split::Train, compact, 1, 0);
    BatchPipeline b(src, Split::Train, padded, 1, 0);
    int batches = 0;
    while (const Batch* x = a.next()) {
      const Batch* y = b.next();
      QVERIFY(y);
      QCOMPARE(y->images.shape(), (Shape{8, 5, 3, 4}));
      QCOMPARE(y->image_bytes(), 4 * x->image_bytes());
      const auto* cx = x->images.data<uint16_t>();
      const auto* cy = y->images.data<uint16_t>();
      for (int64_t px = 0; px < x->size * 5 * 3; ++px) {
        QCOMPARE(cy[px * 4], cx[px]);
        for (int lane = 1; lane < 4; ++lane) QCOMPARE(cy[px * 4 + lane], uint16_t{0});
      }
      a.release(x);
      b.release(y);
      ++batches;
    }
    QCOMPARE(batches, 5);
  }

  void partialLastBatchThroughThePipeline() {
    const CountingSource src(110, 2, 2, 1);
    BatchPipeline p(src, Split::Train, spec(20), 4, 3);
    std::vector<int64_t> sizes;
    while (const Batch* b = p.next()) {
      sizes.push_back(b->size);
      if (b->partial) {
        QVERIFY(b->shape() == (Shape{2, 2, 2, 1}));
        QCOMPARE(b->image_bytes(), size_t{2 * 4 * 4});
        QCOMPARE(b->label_bytes(), size_t{8});
        QVERIFY(b->images.shape() == (Shape{5, 2, 2, 1}));  // capacity stays the local batch
      }
      p.release(b);
    }
    QVERIFY((sizes == std::vector<int64_t>{5, 5, 5, 5, 5, 2}));
    BatchSpec d = spec(20);
    d.drop_last = true;
    BatchPipeline dropping(src, Split::Train, d, 4, 3);
    QCOMPARE(dropping.batches_per_epoch(), int64_t{5});
    QCOMPARE(static_cast<int64_t>(drain(dropping).labels.size()), int64_t{5});
  }

  void prefetchFillsTheOtherBufferWhileOneIsHeld() {
    const CountingSource src(64, 2, 2, 1);
    BatchPipeline p(src, Split::Train, spec(8));
    const Batch* a = p.next();
    QVERIFY(a);
    QCOMPARE(a->buffer, 0);
    QCOMPARE(a->index, int64_t{0});
    const std::vector<int32_t> a_labels = labels_of(*a);
    // While the consumer holds A, the producer fills B on its own.
    QTRY_COMPARE(p.prefetched(), 1);
    const Batch* b = p.next();
    QVERIFY(b);
    QCOMPARE(b->buffer, 1);
    QCOMPARE(b->index, int64_t{1});
    QCOMPARE(p.prefetched(), 0);
    QVERIFY(labels_of(*a) == a_labels);  // A was not touched while held
    // Both buffers held: asking for a third is refused instead of deadlocking.
    QVERIFY_THROWS_EXCEPTION(UsageError, p.next());
    QVERIFY_THROWS_EXCEPTION(UsageError, p.start_epoch(1));
    p.release(a);
    QVERIFY_THROWS_EXCEPTION(UsageError, p.release(a));  // twice
    QTRY_COMPARE(p.prefetched(), 1);  // batch 2 went into A while B is still held
    const Batch* c = p.next();
    QCOMPARE(c, a);
    QCOMPARE(&p.staging(0), a);  // the storage the runtime page-locks is the one handed out
    QCOMPARE(&p.staging(1), b);
    QCOMPARE(c->index, int64_t{2});
    p.release(b);
    p.release(c);
  }

  // A device backend page-locks each staging buffer on its own: a buffer
  // sharing a page with another would be half pinned (the second
  // registration of that page fails). Labels are far smaller than a page.
  void stagingBuffersAreWholePagesOfTheirOwn() {
    const CountingSource src(64, 2, 2, 1);
    BatchPipeline p(src, Split::Train, spec(8));
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [first page, end)
    for (int buffer = 0; buffer < 2; ++buffer)
      for (const Tensor* t : {&p.staging(buffer).images, &p.staging(buffer).labels}) {
        const auto at = reinterpret_cast<uintptr_t>(t->data<std::byte>());
        QCOMPARE(at % page, uintptr_t{0});
        QCOMPARE(t->allocated_bytes() % page, size_t{0});
        QVERIFY(t->allocated_bytes() >= t->bytes());
        // The tail past the data is zero, as the data is before the first fill.
        const std::byte* tail = t->data<std::byte>() + t->bytes();
        QVERIFY(std::all_of(tail, tail + (t->allocated_bytes() - t->bytes()),
                            [](std::byte b) { return b == std::byte{0}; }));
        spans.emplace_back(at, at + t->allocated_bytes());
      }
    QCOMPARE(p.staging(0).labels.bytes(), size_t{8 * 4});
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) QVERIFY(spans[i - 1].second <= spans[i].first);
    // A moved buffer keeps its allocation and frees it with its own alignment.
    Tensor moved = Tensor::whole_pages({3, 1, 1, 1}, DType::INT32);
    const size_t allocated = moved.allocated_bytes();
    Tensor into = std::move(moved);
    QCOMPARE(into.allocated_bytes(), allocated);
    QCOMPARE(moved.allocated_bytes(), size_t{0});
  }

  void startEpochMidEpochRestartsCleanly() {
    const CountingSource src(200, 3, 3, 1);
    BatchSpec s = spec(16);
    BatchPipeline p(src, Split::Train, s);
    for (int i = 0; i < 3; ++i) {
      const Batch* b = p.next();
      p.release(b);
    }
    p.start_epoch(4);
    s.epoch = 4;
    BatchPipeline fresh(src, Split::Train, s);
    const Epoch restarted = drain(p), expected = drain(fresh);
    QVERIFY(restarted.labels == expected.labels);
    QVERIFY(restarted.images == expected.images);
  }

  void startEpochAtABatchSkipsWithoutReading() {
    const CountingSource src(200, 3, 3, 1);
    BatchPipeline full(src, Split::Train, spec(16));
    const Epoch whole = drain(full);
    BatchPipeline p(src, Split::Train, spec(16));
    p.start_epoch(0, 5);  // as a run resumed at batch 5 does
    const Epoch rest = drain(p, 5);
    QCOMPARE(rest.labels.size(), whole.labels.size() - 5);
    QVERIFY(std::equal(rest.labels.begin(), rest.labels.end(), whole.labels.begin() + 5));
    QVERIFY(std::equal(rest.images.begin(), rest.images.end(), whole.images.begin() + 5));
    p.start_epoch(0, p.batches_per_epoch());  // resumed at the epoch's end: nothing left
    QVERIFY(p.next() == nullptr);
    QVERIFY_THROWS_EXCEPTION(UsageError, p.start_epoch(0, p.batches_per_epoch() + 1));
    QVERIFY_THROWS_EXCEPTION(UsageError, p.start_epoch(0, -1));
  }

  void fillThreadsDoNotChangeTheResult() {
    const SyntheticSource src(16, 16, 3, 10, 300, 10, 9);
    BatchSpec s = spec(64);
    s.random_crop_padding = 3;
    s.random_flip = true;
    BatchPipeline one(src, Split::Train, s);
    s.fill_threads = 3;
    BatchPipeline three(src, Split::Train, s);
    const Epoch a = drain(one), b = drain(three);
    QVERIFY(a.images == b.images);
    QVERIFY(a.labels == b.labels);
  }

  void sourceErrorsReachTheConsumer() {
    CountingSource src(100, 2, 2, 1);
    src.fail_at = 37;
    BatchPipeline p(src, Split::Val, spec(10, false));
    int good = 0;
    try {
      while (const Batch* b = p.next()) {
        ++good;
        p.release(b);
      }
      QFAIL("expected the source's error");
    } catch (const UsageError& e) {
      QVERIFY2(std::string(e.what()).find("sample 37 is unreadable") != std::string::npos,
               e.what());
    }
    QCOMPARE(good, 3);  // batches 0..2 are fine, batch 3 holds sample 37
  }

  void destructionMidEpochDoesNotHang() {
    const SyntheticSource src(64, 64, 3, 10, 100000, 10, 1);
    QElapsedTimer timer;
    timer.start();
    {
      BatchPipeline p(src, Split::Train, spec(256));  // destroyed while filling batch 0
    }
    {
      BatchPipeline p(src, Split::Train, spec(256));
      const Batch* b = p.next();
      QVERIFY(b);
      // destroyed holding batch 0 while batch 1 is being filled
    }
    {
      BatchPipeline p(src, Split::Train, spec(256));
      p.stop();
      QVERIFY(p.next() == nullptr);
      p.stop();  // idempotent
    }
    QVERIFY2(timer.elapsed() < 60000, "stopping must not wait for the epoch to finish");
  }

  void stopWakesABlockedConsumer() {
    CountingSource src(1000, 2, 2, 1);
    src.delay_ms = 20;  // a batch of 100 takes ~2 s to fill
    BatchPipeline p(src, Split::Train, spec(100));
    std::atomic<bool> returned{false};
    const Batch* got = reinterpret_cast<const Batch*>(&p);  // anything but nullptr
    std::thread consumer([&] {
      got = p.next();
      returned = true;
    });
    QTRY_VERIFY(src.reads.load() > 0);  // the producer is busy, the consumer waits
    QVERIFY(!returned.load());
    p.stop();
    consumer.join();
    QVERIFY(got == nullptr);
    QVERIFY2(src.reads.load() < 100, "the half-filled batch was abandoned, not finished");
  }

  void batchSpecFromTheProject() {
    DatasetSpec ds;
    ds.random_crop_padding = 4;
    ds.random_flip = true;
    ds.mean = {0.25};
    const BatchSpec train = make_batch_spec(ds, Split::Train, 128, 9, DType::FP16);
    QVERIFY(train.shuffle && train.random_flip && !train.drop_last);
    QCOMPARE(train.random_crop_padding, int64_t{4});
    QCOMPARE(train.batch, int64_t{128});
    QCOMPARE(train.seed, uint64_t{9});
    QCOMPARE(train.dtype, DType::FP16);
    QCOMPARE(train.mean, std::vector<double>{0.25});
    const BatchSpec val = make_batch_spec(ds, Split::Val, 256, 9, DType::FP32);
    QVERIFY(!val.shuffle && !val.random_flip && !val.drop_last);
    QCOMPARE(val.random_crop_padding, int64_t{0});
  }
};

QTEST_APPLESS_MAIN(TestDataPipeline)
#include "test_data_pipeline.moc"
