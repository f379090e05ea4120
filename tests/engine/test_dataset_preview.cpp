// SPDX-License-Identifier: GPL-3.0-or-later
// preview_dataset (include/renaissance/dataset_preview.h): the class counts,
// the training pixels' mean and standard deviation, and sample images that
// are the source's own images as the training pipeline augments them.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

#include <renaissance/dataset_preview.h>
#include <renaissance/dataset_probe.h>
#include <renaissance/error.h>
#include <renaissance/project_io.h>
#include "data/dataset.h"
#include "usage_error.h"
using namespace tr;
using tr::test::usage_error;

namespace {

Project synthetic(bool flip) {
  Project p = load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
  p.dataset.kind = DatasetKind::Synthetic;
  p.dataset.height = 6;
  p.dataset.width = 5;
  p.dataset.channels = 3;
  p.dataset.classes = 4;
  p.dataset.train_size = 300;
  p.dataset.val_size = 40;
  p.dataset.mean = {0.3, 0.5, 0.6};
  p.dataset.std = {0.2, 0.25, 0.3};
  p.dataset.random_flip = flip;
  return p;
}

// The training image `sample` is, as it is or mirrored left to right: its
// index, or -1.
int64_t find(const DataSource& s, const DatasetSample& sample, bool& mirrored) {
  const Shape sh = s.sample_shape();
  std::vector<uint8_t> px(static_cast<size_t>(sh.per_sample())), flipped(px.size());
  for (int64_t i = 0; i < s.size(Split::Train); ++i) {
    s.read(Split::Train, i, px.data());
    if (s.label(Split::Train, i) != sample.label) continue;
    for (int64_t y = 0; y < sh.h; ++y)
      for (int64_t x = 0; x < sh.w; ++x)
        for (int64_t c = 0; c < sh.c; ++c)
          flipped[static_cast<size_t>((y * sh.w + x) * sh.c + c)] =
              px[static_cast<size_t>((y * sh.w + sh.w - 1 - x) * sh.c + c)];
    if (px == sample.pixels) return mirrored = false, i;
    if (flipped == sample.pixels) return mirrored = true, i;
  }
  return -1;
}

}  // namespace

class TestDatasetPreview : public QObject {
  Q_OBJECT

 private slots:
  // Counts, statistics and samples against the source read directly.
  void syntheticDataIsShownAsTheNetworkSeesIt() {
    const Project p = synthetic(true);
    const DatasetPreview v = preview_dataset(p, 16, 0);
    const auto source = load_dataset(p.dataset, "", p.training.seed);
    QCOMPARE(v.height, int64_t{6});
    QCOMPARE(v.channels, int64_t{3});
    QCOMPARE(v.class_names.size(), size_t{4});
    QCOMPARE(v.class_names[1], std::string("class 1"));
    std::vector<int64_t> train(4, 0), val(4, 0);
    for (int64_t i = 0; i < 300; ++i) ++train[static_cast<size_t>(source->label(Split::Train, i))];
    for (int64_t i = 0; i < 40; ++i) ++val[static_cast<size_t>(source->label(Split::Val, i))];
    QCOMPARE(v.train_counts, train);
    QCOMPARE(v.val_counts, val);

    // The statistics, summed here in another order.
    std::vector<double> sum(3, 0), sq(3, 0);
    std::vector<uint8_t> px(90);
    for (int64_t i = 299; i >= 0; --i) {
      source->read(Split::Train, i, px.data());
      for (int k = 0; k < 90; ++k) {
        sum[static_cast<size_t>(k % 3)] += px[static_cast<size_t>(k)] / 255.0;
        sq[static_cast<size_t>(k % 3)] += std::pow(px[static_cast<size_t>(k)] / 255.0, 2);
      }
    }
    QCOMPARE(v.images_measured, int64_t{300});
    for (size_t c = 0; c < 3; ++c) {
      const double mean = sum[c] / 9000.0;
      QVERIFY(std::abs(v.mean[c] - mean) < 1e-12);
      QVERIFY(std::abs(v.std[c] - std::sqrt(sq[c] / 9000.0 - mean * mean)) < 1e-12);
    }

    // Every sample is a training image of its label, some mirrored, in a
    // shuffled order that another epoch changes.
    QCOMPARE(v.samples.size(), size_t{16});
    int mirrored = 0;
    std::vector<int64_t> order;
    for (const DatasetSample& s : v.samples) {
      bool m = false;
      const int64_t i = find(*source, s, m);
      QVERIFY2(i >= 0, "a sample that is no training image");
      mirrored += m;
      order.push_back(i);
    }
    QVERIFY(mirrored > 0 && mirrored < 16);
    QVERIFY(!std::is_sorted(order.begin(), order.end()));
    const DatasetPreview next = preview_dataset(p, 16, 1);
    bool differs = false;
    for (size_t i = 0; i < 16; ++i) differs |= next.samples[i].pixels != v.samples[i].pixels;
    QVERIFY(differs);
    // Without augmentation nothing is mirrored.
    for (const DatasetSample& s : preview_dataset(synthetic(false), 16, 0).samples) {
      bool m = true;
      QVERIFY(find(*source, s, m) >= 0);
      QVERIFY(!m);
    }
  }

  // The figures the Fashion-MNIST projects normalise with are its own.
  void fashionMnistStatisticsAreTheProjectsOwn() {
    const Project p = load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
    const DatasetProbe probe = probe_dataset(p.dataset);
    if (!probe.ok) QSKIP(probe.problem.c_str());
    const DatasetPreview v = preview_dataset(p, 8);
    QCOMPARE(v.images_measured, int64_t{60000});
    QVERIFY2(std::abs(v.mean[0] - 0.286041) < 5e-7, qPrintable(QString::number(v.mean[0], 'g', 9)));
    QVERIFY2(std::abs(v.std[0] - 0.353024) < 5e-7, qPrintable(QString::number(v.std[0], 'g', 9)));
    QCOMPARE(v.train_counts, std::vector<int64_t>(10, 6000));
    QCOMPARE(v.val_counts, std::vector<int64_t>(10, 1000));
    QCOMPARE(v.class_names[9], std::string("Ankle boot"));
    QCOMPARE(v.samples.size(), size_t{8});
  }

  void missingDataSaysWhatIsWrong() {
    Project p = load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
    p.dataset.path = "/nonexistent/fashion";
    const QString why = usage_error([&] { preview_dataset(p, 8); });
    QVERIFY2(why.contains(QStringLiteral("/nonexistent/fashion")), qPrintable(why));
  }
};

QTEST_GUILESS_MAIN(TestDatasetPreview)
#include "test_dataset_preview.moc"
