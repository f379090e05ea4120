// SPDX-License-Identifier: GPL-3.0-or-later
// The memory view on real compiled plans: bands to scale (linear and log),
// a packed plan's step-local pool as one band, hover and click down to
// DTensors, the variant selector with its offset check, per-rank arenas, the
// summary and fit verdict, and the JSON and CSV exports.
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include <renaissance/compiled_plan.h>
#include <renaissance/plan_report.h>
#include <renaissance/project_io.h>
#include <renaissance/step_lifetimes.h>
#include "compile/compiler.h"
#include "memory/dtensor_table_model.h"
#include "memory/memory_view.h"
#include "memory/plan_export.h"
#include "memory/pool_band.h"
#include "memory/region_bands.h"
#include "memory/variant_agreement.h"
#include "roomy_host.h"

using namespace tr;
using namespace tr::gui;

namespace {

std::shared_ptr<const CompiledPlan> compiled(const char* name, const char* devices = nullptr,
                                             bool pack = true) {
  Project p = load_project(std::string(TR_PROJECTS_DIR) + "/" + name + ".json");
  if (devices) {
    std::string error;
    if (!parse_device_set(devices, p.training.devices, error)) return nullptr;
  }
  CompileOptions options;
  options.pack_memory = pack;
  return std::make_shared<const CompiledPlan>(compile_plan(p, options));
}

std::shared_ptr<const CompiledPlan> unpacked(const char* name) {
  return compiled(name, nullptr, false);
}

QString bytes(uint64_t b) {
  return QString::fromStdString(human_bytes(b));
}

struct View {
  MemoryView view;
  std::shared_ptr<const CompiledPlan> cp;
  explicit View(std::shared_ptr<const CompiledPlan> c, const DeviceScan& scan = roomy_host())
      : cp(std::move(c)) {
    view.resize(1200, 900);
    view.setCompiled(cp, scan);
    view.show();
  }
  const MemoryPlan& plan(int v = 0) const { return cp->plans()[static_cast<size_t>(v)]; }
  QString cell(int row, int column) const {
    auto* m = view.tensorTable()->model();
    return m->data(m->index(row, column)).toString();
  }
};

}  // namespace

class TestMemoryView : public QObject {
  Q_OBJECT

 private slots:
  void emptyUntilCompiled() {
    MemoryView v;
    QVERIFY(!v.compiled());
    QString error;
    QVERIFY(!v.exportCsv(QStringLiteral("/tmp/never.csv"), &error));
    QVERIFY(error.contains("compile"));
  }

  void bandsShowEveryRegionToScale() {
    View v(compiled("lenet-fashion"));
    RegionBands* bands = v.view.bands();
    // Packed: the regions that keep their bytes for the run, then the pool
    // standing for the F and T regions whose bytes it shares out.
    QVERIFY(v.plan().packed());
    std::vector<int> expected;
    for (int r = 0; r < kNumRegions; ++r)
      if (v.plan().region(static_cast<Region>(r)).total_bytes > 0 &&
          !is_step_local(static_cast<Region>(r)))
        expected.push_back(r);
    expected.push_back(kPoolBand);
    QCOMPARE(bands->shownBands(), expected);
    auto bandBytes = [&](int b) {
      return b == kPoolBand ? v.plan().pool().bytes
                            : v.plan().region(static_cast<Region>(b)).total_bytes;
    };
    // Linear: bar lengths proportional to bytes (within a pixel of rounding).
    int largest = expected.front(), smallest = expected.front();
    for (int b : expected) {
      if (bandBytes(b) > bandBytes(largest)) largest = b;
      if (bandBytes(b) < bandBytes(smallest)) smallest = b;
    }
    QCOMPARE(largest, kPoolBand);  // LeNet's features and gradients, even packed
    const int w_fc = region_index(Region::W_FC_WEIGHT);
    const double expectedRatio =
        static_cast<double>(bandBytes(w_fc)) / static_cast<double>(bandBytes(largest));
    const double ratio =
        static_cast<double>(bands->barRect(w_fc).width()) / bands->barRect(largest).width();
    QVERIFY2(qAbs(ratio - expectedRatio) < 0.01, qPrintable(QString::number(ratio)));
    // The strip is the arena: the pool's segment covers its share of it.
    const double poolShare =
        static_cast<double>(v.plan().pool().bytes) / static_cast<double>(v.plan().total_bytes());
    QVERIFY(qAbs(bands->segmentRect(kPoolBand).width() / bands->stripRect().width() - poolShare) <
            0.01);
    const int linearSmall = bands->barRect(smallest).width();
    // Log: small regions become visible.
    v.view.scaleSelector()->setCurrentIndex(1);
    QCOMPARE(bands->scale(), RegionBands::Scale::Log);
    QVERIFY(bands->barRect(smallest).width() > linearSmall * 4);
    // The strip covers the arena in address order.
    const QRect strip = bands->stripRect();
    QCOMPARE(bands->regionAt(QPoint(strip.left() + 1, strip.center().y())), expected.front());
    QCOMPARE(bands->regionAt(QPoint(strip.right() - 1, strip.center().y())), kPoolBand);
  }

  void unpackedPlanKeepsOneBandPerRegion() {
    View v(unpacked("lenet-fashion"));
    RegionBands* bands = v.view.bands();
    QVERIFY(!v.plan().packed());
    QVERIFY(!bands->showsPool());
    std::vector<int> expected;
    for (int r = 0; r < kNumRegions; ++r)
      if (v.plan().region(static_cast<Region>(r)).total_bytes > 0) expected.push_back(r);
    QCOMPARE(bands->shownBands(), expected);
    QVERIFY(std::count(expected.begin(), expected.end(), region_index(Region::F_FEATURE_FP32)));
    QVERIFY(std::count(expected.begin(), expected.end(), region_index(Region::F_GRAD_SLOT_FP32)));
    // The strip in address order (log widths: the scalars after F are 512
    // bytes), a feature at its own bytes in its region.
    const QRect strip = bands->stripRect();
    v.view.scaleSelector()->setCurrentIndex(1);
    QCOMPARE(bands->regionAt(QPoint(strip.right() - 1, strip.center().y())), expected.back());
    const DTensorId feature = v.cp->program().layers[1].out;  // conv1's output
    const QRectF mark = bands->tensorMark(feature);
    QVERIFY(!mark.isEmpty());
    const QPoint inside(static_cast<int>(std::ceil(mark.left())), strip.center().y());
    QCOMPARE(bands->regionAt(inside), region_index(Region::F_FEATURE_FP32));
    QCOMPARE(bands->tensorsAt(inside), std::vector<DTensorId>{feature});
    QVERIFY(!bands->describeAt(inside).contains("share these bytes"));
    QVERIFY(!v.view.summaryText().contains("packing"));
  }

  void poolBandShowsTheTensorsSharingAnAddress() {
    View v(compiled("lenet-fashion"));
    RegionBands* bands = v.view.bands();
    const MemoryPlan& plan = v.plan();
    // The two step-local tensors sharing the most bytes: their overlap is
    // pixels wide on the strip.
    std::vector<const DTensor*> pool;
    for (const DTensor& t : plan.dtensors())
      if (is_step_local(t.region) && plan.in_use(t.id)) pool.push_back(&t);
    uint64_t lo = 0, hi = 0;
    for (const DTensor* a : pool)
      for (const DTensor* b : pool) {
        if (a->id >= b->id) continue;
        const uint64_t l = std::max(a->offset, b->offset);
        const uint64_t h = std::min(a->offset + a->slot_bytes, b->offset + b->slot_bytes);
        if (h > l && h - l > hi - lo) lo = l, hi = h;
      }
    QVERIFY2(hi > lo, "packing shares no bytes in LeNet");
    const QRectF seg = bands->segmentRect(kPoolBand);
    const uint64_t address = (lo + hi) / 2;
    const double x = seg.left() + static_cast<double>(address - plan.pool().offset) /
                                      static_cast<double>(plan.pool().bytes) * seg.width();
    const QPoint pt(static_cast<int>(x), seg.center().y());
    // The byte the pixel starts at, as the strip maps it.
    const uint64_t at =
        plan.pool().offset + static_cast<uint64_t>((pt.x() - seg.left()) / seg.width() *
                                                   static_cast<double>(plan.pool().bytes));
    std::vector<DTensorId> holders;
    for (const DTensor* t : pool)
      if (at >= t->offset && at < t->offset + t->slot_bytes) holders.push_back(t->id);
    QVERIFY(holders.size() >= 2);
    std::vector<DTensorId> found = bands->tensorsAt(pt);
    QCOMPARE(found.size(), holders.size());
    const StepLifetimes life = step_lifetimes(*v.cp, 0);
    auto first_use = [&](DTensorId id) {
      for (const TensorLifetime& l : life.tensors)
        if (l.id == id) return l.first;
      return -1;
    };
    for (size_t i = 1; i < found.size(); ++i)
      QVERIFY(first_use(found[i - 1]) <= first_use(found[i]));
    std::sort(found.begin(), found.end());
    QCOMPARE(found, holders);
    // The tooltip names them all with their lifetimes, the first in detail.
    const QString text = bands->describeAt(pt);
    QVERIFY2(text.startsWith(pool_band_long_title()), qPrintable(text));
    QVERIFY2(
        text.contains(
            QStringLiteral("%1 tensors share these bytes at different times").arg(holders.size())),
        qPrintable(text));
    for (DTensorId id : holders) {
      const TensorLifetime* l = nullptr;
      for (const TensorLifetime& t : life.tensors)
        if (t.id == id) l = &t;
      QVERIFY2(text.contains(QStringLiteral("%1 [%2, %3]")
                                 .arg(QString::fromStdString(plan.get_dtensor(id).name))
                                 .arg(l->first)
                                 .arg(l->last)),
               qPrintable(text));
    }
    const DTensorId first = bands->tensorAt(pt);
    QVERIFY(text.contains(QStringLiteral("DTensor %1 ").arg(first)));
    // Clicking selects the pool, lists its tensors and picks the first user.
    QTest::mouseClick(bands, Qt::LeftButton, Qt::NoModifier, pt);
    QCOMPARE(bands->selectedRegion(), kPoolBand);
    QCOMPARE(v.view.tensorTable()->model()->rowCount(), static_cast<int>(pool.size()));
    QCOMPARE(v.view.selectedTensor(), first);
    QVERIFY2(v.view.ownersText().contains("Step-local pool (F, T, S)"),
             qPrintable(v.view.ownersText()));
    QVERIFY(v.view.ownersText().contains("conv1"));
    // The legend still says what F and T are, though no band is named after
    // them (lenet's plan has no temporaries, but the pool's title names T).
    QVERIFY2(v.view.legendText().contains("<b>F</b>"), qPrintable(v.view.legendText()));
    QVERIFY2(v.view.legendText().contains("<b>T</b> temporaries"), qPrintable(v.view.legendText()));
  }

  // A plan in channel blocks (training.feature_layout) says which tensors
  // are stored that way, in the shape column and its tooltip.
  void blockedTensorsSaySo() {
    Project p = load_project(std::string(TR_PROJECTS_DIR) + "/cnn-bn-fashion.json");
    CompileOptions options;
    options.channel_block = 8;
    options.pack_memory = false;  // the features' own region band to click
    View v(std::make_shared<const CompiledPlan>(compile_plan(p, options)));
    QTest::mouseClick(v.view.bands(), Qt::LeftButton, Qt::NoModifier,
                      v.view.bands()->rowRect(Region::F_FEATURE_FP32).center());
    int blocked = 0, rows = v.view.tensorTable()->model()->rowCount();
    for (int row = 0; row < rows; ++row) {
      const DTensor& t = v.plan().get_dtensor(v.cell(row, DTensorTableModel::Id).toInt());
      const QString shape = v.cell(row, DTensorTableModel::ShapeColumn);
      QCOMPARE(shape.endsWith(QStringLiteral(" in blocks of 8")), t.is_blocked());
      if (!t.is_blocked()) continue;
      ++blocked;
      QVERIFY(v.view.tensorModel()
                  ->data(v.view.tensorModel()->index(row, DTensorTableModel::ShapeColumn),
                         Qt::ToolTipRole)
                  .toString()
                  .contains("[N, C/8, H, W, 8]"));
    }
    QVERIFY2(blocked > 0 && blocked < rows, qPrintable(QString::number(blocked)));
  }

  void clickRegionListsItsTensors() {
    View v(compiled("lenet-fashion"));
    const Region r = Region::W_FC_WEIGHT;
    QTest::mouseClick(v.view.bands(), Qt::LeftButton, Qt::NoModifier,
                      v.view.bands()->rowRect(r).center());
    QCOMPARE(v.view.bands()->selectedRegion(), region_index(r));
    const RegionInfo& info = v.plan().region(r);
    QCOMPARE(v.view.tensorTable()->model()->rowCount(), static_cast<int>(info.tensors.size()));
    QCOMPARE(info.tensors.size(), size_t{3});  // fc1, fc2, fc3
    // What people call it, with the engine's name in the tooltip.
    for (int row = 0; row < 3; ++row) {
      QCOMPARE(v.cell(row, DTensorTableModel::RegionColumn), QStringLiteral("Weights: FC matrix"));
      QVERIFY(v.view.tensorModel()
                  ->data(v.view.tensorModel()->index(row, DTensorTableModel::RegionColumn),
                         Qt::ToolTipRole)
                  .toString()
                  .startsWith("W_FC_WEIGHT: FP32 master weights"));
    }
    QVERIFY2(v.view.legendText().contains("<b>W</b> FP32 master weights"),
             qPrintable(v.view.legendText()));
    // Rows in address order, with the plan's exact figures.
    const DTensor& t = v.plan().get_dtensor(info.tensors.front());
    QCOMPARE(v.cell(0, DTensorTableModel::Id).toInt(), t.id);
    QCOMPARE(v.cell(0, DTensorTableModel::Layer), QStringLiteral("fc1"));
    QCOMPARE(v.cell(0, DTensorTableModel::ShapeColumn), QString::fromStdString(t.shape.str()));
    QCOMPARE(v.cell(0, DTensorTableModel::DTypeColumn), QStringLiteral("fp32"));
    QCOMPARE(v.cell(0, DTensorTableModel::PaddedC).toLongLong(),
             static_cast<qlonglong>(t.padded_c()));
    QCOMPARE(v.cell(0, DTensorTableModel::Offset).remove(','), QString::number(t.offset));
    QCOMPARE(v.cell(0, DTensorTableModel::SlotBytes).remove(','), QString::number(t.slot_bytes));
    // Back to every tensor.
    v.view.showRegion(-1);
    QCOMPARE(v.view.tensorTable()->model()->rowCount(),
             static_cast<int>(v.plan().dtensors().size()));
  }

  // Attention's saved statistics are one number per token and head, and the
  // table says the T x T scores are never stored. The design's one
  // MultiHeadSelfAttention is its three parts in the plan.
  void attentionSavesNoScores() {
    View v(compiled("vit-tiny-fashion"));
    QList<int> parts;
    const auto& layers = v.view.compiled()->project().model.nodes;
    for (size_t i = 0; i < layers.size(); ++i)
      if (layers[i].design_id() == "b1_attn") parts << static_cast<int>(i);
    QCOMPARE(parts.size(), 3);
    QCOMPARE(layers[static_cast<size_t>(parts[1])].id, std::string("b1_attn.attention"));
    v.view.highlightLayers(parts);
    auto* m = v.view.tensorModel();
    bool found = false;
    for (int row = 0; row < m->rowCount(); ++row) {
      if (!v.cell(row, DTensorTableModel::Name).endsWith(QStringLiteral(".lse"))) continue;
      found = true;
      QCOMPARE(v.cell(row, DTensorTableModel::ShapeColumn), QStringLiteral("[128,1,50,4]"));
      const QString tip =
          m->data(m->index(row, DTensorTableModel::Name), Qt::ToolTipRole).toString();
      QVERIFY2(tip.contains(QStringLiteral("The 50 x 50 scores of each head are never stored")),
               qPrintable(tip));
    }
    QVERIFY(found);
  }

  // Each tensor says how it lies over the ranks; under ZeRO-1 the moments
  // are each rank's share of its bucket.
  void placementsAreListed() {
    Project p = load_project(std::string(TR_PROJECTS_DIR) + "/cnn-bn-fashion.json");
    std::string error;
    QVERIFY(parse_device_set("cpu:2", p.training.devices, error));
    p.training.sharding = Sharding::Optimizer;
    View v(std::make_shared<const CompiledPlan>(compile_plan(p)));
    auto* m = v.view.tensorModel();
    QMap<QString, int> seen;
    for (int row = 0; row < m->rowCount(); ++row) {
      const QString place = v.cell(row, DTensorTableModel::PlacementColumn);
      ++seen[place];
      const QString name = v.cell(row, DTensorTableModel::Name);
      if (name == QStringLiteral("momentum.deep_bucket")) {
        QCOMPARE(place, QStringLiteral("S(0)"));
        const QString tip =
            m->data(m->index(row, DTensorTableModel::PlacementColumn), Qt::ToolTipRole).toString();
        QVERIFY2(tip.startsWith(QStringLiteral("Sharded: each of the 2 ranks")), qPrintable(tip));
      }
    }
    QCOMPARE(seen.value(QStringLiteral("S(0)")), 2);  // momentum of both buckets
    QVERIFY(v.view.sharded());
    QVERIFY2(v.view.summaryText().contains(QStringLiteral("sharded over the ranks (ZeRO-1): each "
                                                          "holds")),
             qPrintable(v.view.summaryText()));
    View plain(compiled("cnn-bn-fashion", "cpu:2"));
    QVERIFY(!plain.view.sharded());
    QVERIFY(!plain.view.summaryText().contains(QStringLiteral("sharded")));
    QVERIFY(seen.value(QStringLiteral("P")) > 0);  // the gradients
    QVERIFY(seen.value(QStringLiteral("R")) > 0);
  }

  // ZeRO-2: the summed gradients' shards too, and the full gradients in the
  // pool; the rank selector says which parameters each rank's share holds,
  // the two ranks' shares adding up to the bucket.
  void rankSelectorShowsEachRanksShare() {
    Project p = load_project(std::string(TR_PROJECTS_DIR) + "/cnn-bn-fashion.json");
    std::string error;
    QVERIFY(parse_device_set("cpu:2", p.training.devices, error));
    p.training.sharding = Sharding::OptimizerAndGradients;
    View v(std::make_shared<const CompiledPlan>(compile_plan(p)));
    QVERIFY2(v.view.summaryText().contains(QStringLiteral("(ZeRO-2)")),
             qPrintable(v.view.summaryText()));
    QCOMPARE(v.view.rankSelector()->count(), 2);
    QVERIFY(v.view.rankSelector()->isEnabled());
    auto* m = v.view.tensorModel();
    int row = -1;
    for (int r = 0; r < m->rowCount(); ++r)
      if (v.cell(r, DTensorTableModel::Name) == QStringLiteral("gradient.deep_bucket")) row = r;
    QVERIFY(row >= 0);
    QCOMPARE(v.cell(row, DTensorTableModel::PlacementColumn), QStringLiteral("S(0)"));
    const DTensorId id = m->tensorAt(row);
    qlonglong sum = 0;
    QStringList texts;
    for (int rank : {0, 1}) {
      v.view.rankSelector()->setCurrentIndex(rank);
      QCOMPARE(
          m->headerData(DTensorTableModel::RankColumn, Qt::Horizontal, Qt::DisplayRole).toString(),
          QStringLiteral("On rank %1").arg(rank));
      const QString text = v.cell(row, DTensorTableModel::RankColumn);
      texts << text;
      const std::vector<ShareSlice> share = v.view.compiled()->rank_share(id, rank);
      QVERIFY(!share.empty());
      // "N values of K parameters: first … last"
      QVERIFY2(text.contains(QString::fromStdString(share.front().parameter)), qPrintable(text));
      QVERIFY2(text.contains(QString::fromStdString(share.back().parameter)), qPrintable(text));
      sum += m->data(m->index(row, DTensorTableModel::RankColumn), DTensorTableModel::SortRole)
                 .toLongLong();
      const QString tip =
          m->data(m->index(row, DTensorTableModel::RankColumn), Qt::ToolTipRole).toString();
      QVERIFY2(tip.startsWith(QStringLiteral("Rank %1 holds").arg(rank)), qPrintable(tip));
    }
    QVERIFY(texts[0] != texts[1]);
    qlonglong deep = 0;  // the deep convolutions' weights and biases
    for (const DTensor& t : v.view.compiled()->plans().front().dtensors())
      if (t.region == Region::W_DEEP_CONV) deep += t.shape.elements();
    QCOMPARE(sum, deep);
    // A replicated tensor is all there on every rank.
    for (int r = 0; r < m->rowCount(); ++r)
      if (v.cell(r, DTensorTableModel::PlacementColumn) == QStringLiteral("R")) {
        QCOMPARE(v.cell(r, DTensorTableModel::RankColumn), QStringLiteral("all of it"));
        break;
      }
  }

  // Tensor parallel: a placement per mesh dimension, each rank's part of a
  // split weight against the whole, and the bytes it saves in the summary.
  void tensorParallelPartsAreShown() {
    Project p = load_project(std::string(TR_PROJECTS_DIR) + "/vit-tiny-fashion.json");
    std::string error;
    QVERIFY(parse_device_set("cpu:2", p.training.devices, error));
    p.training.tensor_ranks = 2;
    View v(std::make_shared<const CompiledPlan>(compile_plan(p)));
    QVERIFY2(v.view.summaryText().contains(QStringLiteral("mesh data=1 x tensor=2")),
             qPrintable(v.view.summaryText()));
    auto* m = v.view.tensorModel();
    int column = -1, row = -1, whole = -1;
    for (int r = 0; r < m->rowCount(); ++r) {
      const QString name = v.cell(r, DTensorTableModel::Name);
      const QString region = v.cell(r, DTensorTableModel::RegionColumn);
      if (!region.startsWith(QStringLiteral("Weights:"))) continue;
      if (name == QStringLiteral("b1_fc1.weight")) column = r;
      if (name == QStringLiteral("b1_fc2.weight")) row = r;
      if (name == QStringLiteral("b1_ln1.weight")) whole = r;
    }
    QVERIFY(column >= 0 && row >= 0 && whole >= 0);
    QCOMPARE(v.cell(column, DTensorTableModel::PlacementColumn), QStringLiteral("R, S(0)"));
    QCOMPARE(v.cell(row, DTensorTableModel::PlacementColumn), QStringLiteral("R, S(3)"));
    QCOMPARE(v.cell(whole, DTensorTableModel::PlacementColumn), QStringLiteral("R, R"));
    QCOMPARE(v.cell(column, DTensorTableModel::RankColumn),
             QStringLiteral("its part: [64,1,1,64] of [128,1,1,64]"));
    QCOMPARE(v.cell(whole, DTensorTableModel::RankColumn), QStringLiteral("all of it"));
    const QString tip =
        m->data(m->index(row, DTensorTableModel::PlacementColumn), Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QStringLiteral("each of the 2 tensor ranks holds its part")),
             qPrintable(tip));
    // Sequence parallel: a whole layer's output is the rank's samples, a row
    // layer's partial products a pending sum for the group's.
    int samples = -1, pending = -1;
    for (int r = 0; r < m->rowCount(); ++r) {
      const QString name = v.cell(r, DTensorTableModel::Name);
      if (name == QStringLiteral("b1_ln1.out")) samples = r;
      if (name == QStringLiteral("b1_fc2.partial")) pending = r;
    }
    QVERIFY(samples >= 0 && pending >= 0);
    QCOMPARE(v.cell(samples, DTensorTableModel::PlacementColumn), QStringLiteral("R, S(0)"));
    QVERIFY2(v.cell(samples, DTensorTableModel::RankColumn).startsWith(QStringLiteral("its part")),
             qPrintable(v.cell(samples, DTensorTableModel::RankColumn)));
    const QString own =
        m->data(m->index(samples, DTensorTableModel::PlacementColumn), Qt::ToolTipRole).toString();
    QVERIFY2(own.contains(QStringLiteral("by samples: its own")), qPrintable(own));
    QCOMPARE(v.cell(pending, DTensorTableModel::PlacementColumn), QStringLiteral("R, P"));
    const QString sum =
        m->data(m->index(pending, DTensorTableModel::PlacementColumn), Qt::ToolTipRole).toString();
    QVERIFY2(sum.contains(QStringLiteral("a pending sum")), qPrintable(sum));
    QVERIFY2(v.view.summaryText().contains(QStringLiteral("communication buffers")),
             qPrintable(v.view.summaryText()));
  }

  void highlightedLayersAreMarkedAndListed() {
    View v(compiled("lenet-fashion"));
    const int fc1 = v.view.compiled()->project().model.find("fc1");
    QVERIFY(fc1 >= 0);
    v.view.highlightLayers({fc1});
    // Only fc1's tensors are listed, and each is marked on the strip inside
    // its region's segment.
    std::vector<DTensorId> owned;
    for (const DTensor& t : v.plan().dtensors())
      if (t.owner == fc1) owned.push_back(t.id);
    QVERIFY(owned.size() >= 4);  // weight, bias, their gradients, output...
    QCOMPARE(v.view.tensorTable()->model()->rowCount(), static_cast<int>(owned.size()));
    for (int row = 0; row < static_cast<int>(owned.size()); ++row)
      QCOMPARE(v.cell(row, DTensorTableModel::Layer), QStringLiteral("fc1"));
    RegionBands* bands = v.view.bands();
    QCOMPARE(bands->highlightedTensors().size(), owned.size());
    // Log widths, so every region (a bias region too) is pixels wide.
    v.view.scaleSelector()->setCurrentIndex(1);
    // A feature's mark lies in the pool, a weight's in its region.
    for (DTensorId id : owned) {
      const QRectF mark = bands->tensorMark(id);
      QVERIFY(!mark.isEmpty());
      const DTensor& t = v.plan().get_dtensor(id);
      QCOMPARE(bands->regionAt(QPoint(static_cast<int>(std::ceil(mark.left())),
                                      static_cast<int>(mark.center().y()))),
               is_step_local(t.region) ? kPoolBand : region_index(t.region));
    }
    // Cleared: every tensor again, nothing marked.
    v.view.highlightLayers({});
    QCOMPARE(v.view.tensorTable()->model()->rowCount(),
             static_cast<int>(v.plan().dtensors().size()));
    QVERIFY(bands->highlightedTensors().empty());
  }

  void regionOwnersAreLinks() {
    View v(compiled("lenet-fashion"));
    const auto& nodes = v.view.compiled()->project().model;
    QSignalSpy requested(&v.view, &MemoryView::layerRequested);
    v.view.showRegion(region_index(Region::W_FC_WEIGHT));
    QCOMPARE(v.view.regionOwners(region_index(Region::W_FC_WEIGHT)),
             (QList<int>{nodes.find("fc1"), nodes.find("fc2"), nodes.find("fc3")}));
    for (const char* id : {"fc1", "fc2", "fc3"})
      QVERIFY2(v.view.ownersText().contains(QLatin1String(id)), qPrintable(v.view.ownersText()));
    // Activating an owner's link asks for that node.
    auto* owners = v.view.findChild<QLabel*>(QStringLiteral("regionOwners"));
    QVERIFY(owners);
    emit owners->linkActivated(QStringLiteral("layer:%1").arg(nodes.find("fc2")));
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.front().front().toInt(), nodes.find("fc2"));
  }

  void hoverAndClickOnTheStripFindTheTensor() {
    View v(compiled("lenet-fashion"));
    RegionBands* bands = v.view.bands();
    // The widest region on the strip but the pool: LeNet's first input buffer.
    const QRectF seg = bands->segmentRect(region_index(Region::I_A_DATA));
    const QPoint pt(static_cast<int>(seg.center().x()), static_cast<int>(seg.center().y()));
    const DTensorId id = bands->tensorAt(pt);
    QCOMPARE(id, v.cp->program().engine.input[0]);
    const DTensor& t = v.plan().get_dtensor(id);
    const QString text = bands->describeAt(pt);
    QVERIFY(text.contains(QString::fromUtf8(region_name(t.region).data())));
    QVERIFY(text.contains(QStringLiteral("DTensor %1 ").arg(id)));
    QVERIFY(text.contains(QString::fromStdString(t.shape.str())));
    QTest::mouseClick(bands, Qt::LeftButton, Qt::NoModifier, pt);
    QCOMPARE(v.view.selectedTensor(), id);
    QCOMPARE(bands->selectedRegion(), region_index(t.region));
  }

  void variantsKeepOffsets() {
    View v(compiled("lenet-fashion"));
    QCOMPARE(v.view.variantSelector()->count(), static_cast<int>(v.cp->variants().size()));
    QCOMPARE(v.cp->variants().size(), size_t{3});
    QVERIFY(v.view.agreementText().startsWith("Offsets agree"));
    QVERIFY(check_variant_agreement(*v.cp).holds());
    const int val = v.cp->variant_index(VariantKind::Validation);
    v.view.setVariant(val);
    // The first feature of the validation variant: micro-batches of 125 of
    // the written 1000 (what fits in training's bytes).
    const DTensorId feature = v.cp->program().layers[1].out;  // conv1's output
    v.view.showTensor(feature);
    QCOMPARE(v.view.selectedTensor(), feature);
    const int row = v.view.tensorModel()->rowOf(feature);
    const auto* model = v.view.tensorModel();
    QCOMPARE(
        model->data(model->index(row, DTensorTableModel::ShapeColumn), Qt::DisplayRole).toString(),
        QString::fromStdString(v.plan(val).get_dtensor(feature).shape.str()));
    QCOMPARE(v.plan(val).get_dtensor(feature).shape.n, int64_t{125});
    // A feature lives in the step-local pool, placed per variant by lifetime;
    // a weight keeps its offset in every variant.
    QCOMPARE(
        model->data(model->index(row, DTensorTableModel::Variants), Qt::DisplayRole).toString(),
        QStringLiteral("per variant, by lifetime"));
    const DTensorId weight = v.cp->program().layers[1].weight_in(ParamSeries::W);
    QCOMPARE(v.plan(val).get_dtensor(weight).offset, v.plan(0).get_dtensor(weight).offset);
    const int wrow = v.view.tensorModel()->rowOf(weight);
    QVERIFY(model->data(model->index(wrow, DTensorTableModel::Variants), Qt::DisplayRole)
                .toString()
                .startsWith("same in all 3"));
    QVERIFY(v.view.agreementText().contains("outside the step-local pool"));
  }

  void summarySaysWhatPackingSaved() {
    View v(compiled("lenet-fashion"));
    const CompiledPlan& cp = *v.cp;
    for (int i = 0; i < static_cast<int>(cp.variants().size()); ++i) {
      v.view.setVariant(i);
      const MemoryPlan& plan = v.plan(i);
      // As `renaissance-cli plan` puts it: the pool's tensors each in their own slot.
      const QString expected =
          QStringLiteral("This variant: %1 (%2 before packing)")
              .arg(bytes(plan.total_bytes()),
                   bytes(plan.pool().offset + cp.pools()[static_cast<size_t>(i)].slot_bytes));
      QVERIFY2(v.view.summaryText().contains(expected), qPrintable(v.view.summaryText()));
    }
    QVERIFY2(v.view.summaryText().contains(
                 QStringLiteral("per device: %1 (the largest variant, packed by lifetime; %2 with "
                                "packing off)")
                     .arg(bytes(cp.bytes_per_device()), bytes(unpacked_bytes_per_device(cp)))),
             qPrintable(v.view.summaryText()));
    QVERIFY(cp.bytes_per_device() < unpacked_bytes_per_device(cp));
  }

  void fitVerdictUsesThePackedArena() {
    // Memory for the packed arena, not for the unpacked one: it fits.
    const auto cp = compiled("lenet-fashion");
    DeviceScan between = roomy_host();
    between.host_available_bytes = (cp->bytes_per_device() + unpacked_bytes_per_device(*cp)) / 2;
    View v(cp, between);
    QVERIFY2(v.view.fits(), qPrintable(v.view.summaryText()));
    QVERIFY(v.view.summaryText().contains(
        QStringLiteral("Fits cpu:1: %1 for 1 rank arena, ").arg(bytes(cp->bytes_per_device()))));
    View off(unpacked("lenet-fashion"), between);
    QVERIFY(!off.view.fits());
  }

  void ranksAndFit() {
    View one(compiled("lenet-fashion"));
    QCOMPARE(one.view.arenaTable()->topLevelItemCount(), 1);
    QVERIFY(one.view.fits());
    QVERIFY(one.view.summaryText().contains("Fits cpu:1"));

    View two(compiled("lenet-fashion", "cpu:2"));
    QCOMPARE(two.cp->world_size(), 2);
    QTreeWidget* arenas = two.view.arenaTable();
    QCOMPARE(arenas->topLevelItemCount(), 2);
    QCOMPARE(arenas->topLevelItem(1)->text(3), QStringLiteral("identical to rank 0"));
    QCOMPARE(arenas->topLevelItem(0)->text(2), arenas->topLevelItem(1)->text(2));

    DeviceScan tiny = roomy_host();
    tiny.host_available_bytes = 1 << 20;
    View cramped(compiled("lenet-fashion", "cpu:2"), tiny);
    QVERIFY(!cramped.view.fits());
    QVERIFY(cramped.view.summaryText().contains("Does NOT fit cpu:2"));
    QVERIFY(cramped.view.summaryText().contains("1.00 MiB of host memory available"));

    View gpu(compiled("lenet-fashion", "cuda:0"));
    QVERIFY(!gpu.view.fits());
    QVERIFY(gpu.view.summaryText().contains("Cannot check cuda:0 here: no CUDA here"));
    QCOMPARE(gpu.view.arenaTable()->topLevelItem(0)->text(1), QStringLiteral("cuda:0"));
  }

  void exportsJsonAndCsv() {
    View v(compiled("resnet8-fashion"));
    QTemporaryDir dir;
    QString error;
    const QString json = dir.filePath("plan.json");
    QVERIFY2(v.view.exportJson(json, &error), qPrintable(error));
    QFile jf(json);
    QVERIFY(jf.open(QIODevice::ReadOnly));
    const nlohmann::json j = nlohmann::json::parse(jf.readAll().toStdString());
    QCOMPARE(j["total_bytes"].get<uint64_t>(), v.cp->bytes_per_device());
    QCOMPARE(j["variants"].size(), v.cp->variants().size());
    QCOMPARE(j["parameters"].get<int64_t>(), int64_t{77754});
    QVERIFY(j["fits"].get<std::string>().find("Fits cpu:1") == 0);

    const QString csv = dir.filePath("plan.csv");
    QVERIFY2(v.view.exportCsv(csv, &error), qPrintable(error));
    QFile cf(csv);
    QVERIFY(cf.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = cf.readAll().split('\n');
    QCOMPARE(lines.front(),
             QByteArray("variant,id,name,layer,region,shape,dtype,padded_c,offset,slot_bytes"));
    size_t rows = 0;
    for (const MemoryPlan& p : v.cp->plans()) rows += p.dtensors().size();
    QCOMPARE(static_cast<size_t>(lines.size()), rows + 2);  // header, rows, final newline
    const DTensor& t = v.plan().get_dtensor(0);
    const QList<QByteArray> first = lines[1].split(',');
    QCOMPARE(first[0], QByteArray::fromStdString(v.cp->variants()[0].name));
    QCOMPARE(first[1].toInt(), t.id);
    QCOMPARE(first[8].toULongLong(), static_cast<qulonglong>(t.offset));
    QCOMPARE(first[9].toULongLong(), static_cast<qulonglong>(t.slot_bytes));

    // A folder that does not exist: a message naming the path, no file.
    const QString bad = dir.filePath("missing/plan.csv");
    QVERIFY(!v.view.exportCsv(bad, &error));
    QVERIFY(error.contains(bad));
    QVERIFY(!QFile::exists(bad));
  }

  void staleBanner() {
    View v(compiled("lenet-fashion"));
    QVERIFY(!v.view.isStale());
    v.view.setStale(true);
    QVERIFY(v.view.isStale());
    v.view.setCompiled(v.cp, roomy_host());
    QVERIFY(!v.view.isStale());
  }
};

QTEST_MAIN(TestMemoryView)
#include "test_memory_view.moc"
