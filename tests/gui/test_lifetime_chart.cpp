// SPDX-License-Identifier: GPL-3.0-or-later
// The memory view's lifetime chart on real compiled plans: one block per
// step-local tensor in use, at its lifetime and its bytes in the pool; no two
// blocks overlapping but an output written in place over its dying input;
// tooltips naming a block's tensor and the tensors it shares bytes with;
// clicks selecting in the view (and the view's selection outlining a block);
// the designer's layers keeping their colour; per variant; and unpacked plans.
#include <QApplication>
#include <QComboBox>
#include <QHelpEvent>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QToolTip>
#include <QtTest>
#include <memory>

#include <renaissance/compiled_plan.h>
#include <renaissance/plan_report.h>
#include <renaissance/project_io.h>
#include <renaissance/step_lifetimes.h>
#include "compile/compiler.h"
#include "memory/lifetime_chart.h"
#include "memory/memory_view.h"
#include "memory/pool_band.h"
#include "memory/pool_blocks.h"
#include "memory/recompute_curve_view.h"
#include "plot/curve_plot.h"
#include "memory/region_bands.h"
#include "roomy_host.h"

using namespace tr;
using namespace tr::gui;

namespace {

std::shared_ptr<const CompiledPlan> compiled(const char* name, bool pack = true) {
  Project p = load_project(std::string(TR_PROJECTS_DIR) + "/" + name + ".json");
  CompileOptions options;
  options.pack_memory = pack;
  return std::make_shared<const CompiledPlan>(compile_plan(p, options));
}

struct View {
  MemoryView view;
  std::shared_ptr<const CompiledPlan> cp;
  explicit View(std::shared_ptr<const CompiledPlan> c) : cp(std::move(c)) {
    view.resize(1200, 900);
    view.setCompiled(cp, roomy_host());
    view.show();
    view.arenaTabs()->setCurrentWidget(view.lifetimeChart());
  }
  LifetimeChart* chart() const { return view.lifetimeChart(); }
  const MemoryPlan& plan(int v = 0) const { return cp->plans()[static_cast<size_t>(v)]; }
  int layer(const char* id) const { return cp->project().model.find(id); }
};

const TensorLifetime& lifetime_of(const StepLifetimes& life, DTensorId id) {
  for (const TensorLifetime& l : life.tensors)
    if (l.id == id) return l;
  throw std::logic_error("no lifetime for tensor " + std::to_string(id));
}

QPoint centre(const QRectF& r) {
  return r.center().toPoint();
}

// Both intervals closed, as lifetimes are.
bool overlap(int a0, int a1, int b0, int b1) {
  return a0 <= b1 && b0 <= a1;
}

}  // namespace

class TestLifetimeChart : public QObject {
  Q_OBJECT

 private slots:
  void blocksMatchTheStepLifetimes() {
    View v(compiled("lenet-fashion"));
    const PoolBlocks* blocks = v.chart()->blocks();
    QVERIFY(blocks && blocks->packed());
    const MemoryPlan& plan = v.plan();
    const StepLifetimes life = step_lifetimes(*v.cp, 0);
    // One block per step-local tensor the variant uses.
    size_t in_use = 0;
    for (const DTensor& t : plan.dtensors()) {
      if (!is_step_local(t.region) || !plan.in_use(t.id)) continue;
      ++in_use;
      QVERIFY(lifetime_of(life, t.id).first >= 0);
    }
    QCOMPARE(blocks->blocks().size(), in_use);
    QVERIFY(in_use >= 10);
    QCOMPARE(blocks->positions(), static_cast<int>(life.order.size()));

    // conv1's output: written by the first layer's forward, last read by
    // relu1's backward (ReLU's gradient reads its input) in the deep graph.
    const int conv1 = v.layer("conv1");
    const DTensorId out = v.cp->program().layers[static_cast<size_t>(conv1)].out;
    const TensorLifetime& l = lifetime_of(life, out);
    QCOMPARE(life.order[static_cast<size_t>(l.first)].graph, GraphId::FIRST_LAYER_FWD_A);
    QCOMPARE(life.order[static_cast<size_t>(l.first)].layer, conv1);
    QCOMPARE(life.order[static_cast<size_t>(l.last)].graph, GraphId::DEEP_FWD_BWD);
    QCOMPARE(life.order[static_cast<size_t>(l.last)].layer, v.layer("relu1"));
    const int i = blocks->indexOf(out);
    QVERIFY(i >= 0);
    const PoolBlock& b = blocks->blocks()[static_cast<size_t>(i)];
    const DTensor& t = plan.get_dtensor(out);
    QCOMPARE(b.first, l.first);
    QCOMPARE(b.last, l.last);
    QCOMPARE(b.offset, t.offset - plan.pool().offset);
    QCOMPARE(b.bytes, t.slot_bytes);
    QCOMPARE(b.kind, BlockKind::FeatureFp32);
    // Drawn from its first position to past its last, over its bytes in the pool.
    const QRectF r = v.chart()->blockRect(i);
    QVERIFY(qAbs(r.left() - v.chart()->xAt(l.first)) < 1e-6);
    QVERIFY(qAbs(r.right() - v.chart()->xAt(l.last + 1)) < 1e-6);
    QVERIFY(qAbs(r.bottom() - v.chart()->yAt(static_cast<double>(b.offset))) < 1e-6);
    QVERIFY(qAbs(r.top() - v.chart()->yAt(static_cast<double>(b.offset + b.bytes))) < 1e-6);
    QVERIFY(v.chart()->plotRect().contains(r.toAlignedRect().adjusted(1, 1, -1, -1)));
    QVERIFY(r.width() > 10 && r.height() > 10);

    // The figures the compiler found for the pool.
    const PoolSummary& pool = v.cp->pools()[0];
    QCOMPARE(blocks->bytes(), pool.packed_bytes);
    QCOMPARE(blocks->slotBytes(), pool.slot_bytes);
    QCOMPARE(blocks->peakLiveBytes(), pool.peak_live_bytes);
    QCOMPARE(v.chart()->legendText(),
             QStringLiteral("pool %1, peak live %2, %3 before packing")
                 .arg(QString::fromStdString(human_bytes(pool.packed_bytes)),
                      QString::fromStdString(human_bytes(pool.peak_live_bytes)),
                      QString::fromStdString(human_bytes(pool.slot_bytes))));
    // A tick where each graph of the step starts.
    QStringList names;
    for (const LifetimeChart::GraphTick& tick : v.chart()->graphTicks()) {
      QCOMPARE(tick.name, QString::fromUtf8(
                              graph_id_name(life.order[static_cast<size_t>(tick.position)].graph)));
      QVERIFY(tick.position == 0 || life.order[static_cast<size_t>(tick.position) - 1].graph !=
                                        life.order[static_cast<size_t>(tick.position)].graph);
      names << tick.name;
    }
    for (const char* g : {"FIRST_LAYER_FWD_A", "DEEP_FWD_BWD", "FIRST_LAYER_BWD_A"})
      QVERIFY2(names.contains(QLatin1String(g)), qPrintable(names.join(' ')));
  }

  void blocksNeverOverlap() {
    // The packing's promise, read back from what the chart draws.
    for (const char* name : {"lenet-fashion", "resnet8-fashion"}) {
      View v(compiled(name));
      for (int variant = 0; variant < static_cast<int>(v.cp->variants().size()); ++variant) {
        v.view.setVariant(variant);
        const PoolBlocks* blocks = v.chart()->blocks();
        QCOMPARE(blocks->variant(), variant);
        const std::vector<PoolBlock>& all = blocks->blocks();
        QVERIFY(!all.empty());
        int sharing = 0;
        for (size_t a = 0; a < all.size(); ++a) {
          QVERIFY(all[a].end() <= blocks->bytes());
          QVERIFY(all[a].first <= all[a].last && all[a].last < blocks->positions());
          for (size_t b = a + 1; b < all.size(); ++b) {
            const bool bytes = all[a].offset < all[b].end() && all[b].offset < all[a].end();
            if (!bytes) continue;
            ++sharing;
            // Apart from an output written over its dying input, in place:
            // the same bytes, one ending where the other begins.
            const bool in_place = all[a].offset == all[b].offset &&
                                  (all[a].last == all[b].first || all[b].last == all[a].first);
            QVERIFY2(in_place || !overlap(all[a].first, all[a].last, all[b].first, all[b].last),
                     qPrintable(QStringLiteral("%1: blocks %2 and %3 overlap")
                                    .arg(QLatin1String(name))
                                    .arg(all[a].id)
                                    .arg(all[b].id)));
          }
        }
        QVERIFY2(sharing > 0, name);  // and packing does share bytes
      }
    }
  }

  void hoveringABlockNamesItsTensor() {
    View v(compiled("lenet-fashion"));
    LifetimeChart* chart = v.chart();
    // relu1's output: written over conv1's, which dies at relu1, in place.
    const DTensorId out = v.cp->program().layers[static_cast<size_t>(v.layer("relu1"))].out;
    const int i = chart->blocks()->indexOf(out);
    const QPoint pt = centre(chart->blockRect(i));
    QCOMPARE(chart->blockAt(pt), i);
    // The tooltip a hover brings up.
    QHelpEvent help(QEvent::ToolTip, pt, chart->mapToGlobal(pt));
    QApplication::sendEvent(chart, &help);
    const QString text = QToolTip::text();
    QCOMPARE(text, chart->describeAt(pt));
    const PoolBlock& b = chart->blocks()->blocks()[static_cast<size_t>(i)];
    const StepLifetimes& life = chart->blocks()->lifetimes();
    const DTensor& t = v.plan().get_dtensor(out);
    for (const QString& part : {QStringLiteral("relu1.out (layer relu1), feature FP32"),
                                QString::fromStdString(t.shape.str()), QStringLiteral("fp32"),
                                QStringLiteral("live [%1, %2]").arg(b.first).arg(b.last),
                                QString::fromStdString(life.describe(v.cp->project(), b.first)),
                                QString::fromStdString(life.describe(v.cp->project(), b.last)),
                                QString::fromStdString(human_bytes(t.slot_bytes))})
      QVERIFY2(text.contains(part), qPrintable(text + " lacks " + part));
    // It names the tensors living in its bytes at other times.
    const std::vector<int> shares = chart->blocks()->sharing(i);
    const DTensorId conv1_out = v.cp->program().layers[static_cast<size_t>(v.layer("conv1"))].out;
    QCOMPARE(std::count(shares.begin(), shares.end(), chart->blocks()->indexOf(conv1_out)), 1);
    QVERIFY2(text.contains((shares.size() == 1
                                ? QStringLiteral("shares its bytes with 1 tensor at other times")
                                : QStringLiteral("shares its bytes with %1 tensors at other times")
                                      .arg(shares.size()))),
             qPrintable(text));
    for (int s : shares) {
      const PoolBlock& other = chart->blocks()->blocks()[static_cast<size_t>(s)];
      QVERIFY(other.end() > b.offset && b.end() > other.offset);
      QVERIFY2(text.contains(QStringLiteral("%1 [%2, %3]")
                                 .arg(QString::fromStdString(v.plan().get_dtensor(other.id).name))
                                 .arg(other.first)
                                 .arg(other.last)),
               qPrintable(text));
    }
    QToolTip::hideText();
  }

  // A project with a memory budget (the workbench's "Memory budget"
  // field): its recomputed outputs' copies are hatched blocks whose tooltip
  // says so, and the budget's share of the pool is a line the pool keeps under.
  void budgetAndRecomputedOutputsAreShown() {
    Project p = load_project(std::string(TR_PROJECTS_DIR) + "/cnn-bn-fashion.json");
    const uint64_t plain = compile_plan(p).bytes_per_device();
    p.training.memory_budget_mib = static_cast<int64_t>(plain >> 20) - 4;
    View v(std::make_shared<const CompiledPlan>(compile_plan(p)));
    QVERIFY(v.cp->fits_budget());
    QVERIFY(!v.cp->recomputed().empty());
    LifetimeChart* chart = v.chart();
    int hatched = 0;
    for (size_t i = 0; i < chart->blocks()->blocks().size(); ++i) {
      const PoolBlock& b = chart->blocks()->blocks()[i];
      const DTensor& t = v.plan().get_dtensor(b.id);
      QCOMPARE(b.recomputed, t.name.ends_with(".recomputed"));
      if (!b.recomputed) continue;
      ++hatched;
      QVERIFY2(chart->describeBlock(static_cast<int>(i))
                   .contains("output computed again in the backward"),
               qPrintable(chart->describeBlock(static_cast<int>(i))));
    }
    QCOMPARE(hatched, static_cast<int>(v.cp->recomputed().size()));
    const uint64_t room = (uint64_t{static_cast<uint64_t>(p.training.memory_budget_mib)} << 20) -
                          v.plan().pool().offset;
    QVERIFY(chart->blocks()->bytes() <= room);
    // The line is drawn: a pixel of its colour on the line's row.
    const QImage image = chart->grab().toImage();
    const int y = static_cast<int>(chart->yAt(static_cast<double>(room)));
    const QRect plot = chart->plotRect();
    int red = 0;
    for (int x = plot.left(); x < plot.right(); ++x)
      if (image.pixelColor(x, y) == QColor(0xc6, 0x28, 0x28)) ++red;
    QVERIFY2(red > plot.width() / 4, qPrintable(QString("%1 budget pixels").arg(red)));
  }

  // The "Memory against compute" tab: the plan's bytes as more candidates
  // are recomputed (compiled on a worker thread), each point a real compile;
  // clicking one asks for its bytes as the budget.
  void recomputeCurveOffersBudgets() {
    View v(compiled("cnn-bn-fashion"));
    v.view.arenaTabs()->setCurrentWidget(v.view.recomputeCurve());
    RecomputeCurveView* curve = v.view.recomputeCurve();
    QTRY_VERIFY_WITH_TIMEOUT(!curve->computing() && !curve->points().empty(), 20000);
    const std::vector<RecomputePoint>& pts = curve->points();
    const size_t candidates = v.cp->recompute_candidates().size();
    QCOMPARE(pts.size(), candidates + 1);
    QCOMPARE(pts.front().bytes_per_device, v.cp->bytes_per_device());
    QCOMPARE(pts.front().extra_flops_share, 0.0);
    for (size_t i = 1; i < pts.size(); ++i) {
      QVERIFY(pts[i].extra_flops_share > pts[i - 1].extra_flops_share);
      // Each point is the plan with those candidates pinned.
      CompileOptions o;
      for (int k = 0; k < pts[i].recomputed; ++k)
        o.recompute_layers.push_back(v.cp->recompute_candidates()[static_cast<size_t>(k)].layer);
      QCOMPARE(pts[i].bytes_per_device, compile_plan(v.cp->design(), o).bytes_per_device());
    }
    QVERIFY2(curve->captionText().contains("Click a point"), qPrintable(curve->captionText()));
    QSignalSpy picked(v.view.recomputeCurve(), &RecomputeCurveView::budgetPicked);
    curve->plot()->replot();
    const RecomputePoint& last = pts.back();
    const QPoint at(
        static_cast<int>(curve->plot()->xAxis->coordToPixel(100.0 * last.extra_flops_share)),
        static_cast<int>(curve->plot()->yAxis->coordToPixel(
            static_cast<double>(last.bytes_per_device) / (1024.0 * 1024.0))));
    QCOMPARE(curve->pointAt(at), static_cast<int>(pts.size()) - 1);
    QTest::mouseClick(curve->plot(), Qt::LeftButton, {}, at);
    QCOMPARE(picked.size(), 1);
    QCOMPARE(picked.front().front().toLongLong(),
             static_cast<qint64>((last.bytes_per_device + (1u << 20) - 1) >> 20));
  }

  void clickingABlockSelectsItsTensor() {
    View v(compiled("lenet-fashion"));
    LifetimeChart* chart = v.chart();
    const int fc1 = v.layer("fc1");
    const DTensorId out = v.cp->program().layers[static_cast<size_t>(fc1)].out;
    const int i = chart->blocks()->indexOf(out);
    QVERIFY(i >= 0);
    QTest::mouseClick(chart, Qt::LeftButton, Qt::NoModifier, centre(chart->blockRect(i)));
    // The strip's way: the pool's tensors listed, the row selected, the block outlined.
    QCOMPARE(v.view.selectedTensor(), out);
    QCOMPARE(v.view.bands()->selectedRegion(), kPoolBand);
    QCOMPARE(chart->selectedTensor(), out);
    // Selected elsewhere (the table, the strip): the chart follows.
    const DTensorId other = v.cp->program().layers[static_cast<size_t>(v.layer("conv2"))].out;
    v.view.showTensor(other);
    QCOMPARE(v.view.selectedTensor(), other);
    QCOMPARE(chart->selectedTensor(), other);
    // A weight has no block: nothing outlined.
    v.view.showRegion(-1);
    v.view.showTensor(v.cp->program().layers[static_cast<size_t>(fc1)].weight_in(ParamSeries::W));
    QCOMPARE(chart->selectedTensor(),
             v.cp->program().layers[static_cast<size_t>(fc1)].weight_in(ParamSeries::W));
    QCOMPARE(chart->blocks()->indexOf(chart->selectedTensor()), -1);
    // Double-clicking asks for the owning layer, as a row does.
    QSignalSpy requested(&v.view, &MemoryView::layerRequested);
    QTest::mouseDClick(chart, Qt::LeftButton, Qt::NoModifier, centre(chart->blockRect(i)));
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.front().front().toInt(), fc1);
  }

  void eachVariantHasItsOwnChart() {
    View v(compiled("lenet-fashion"));
    LifetimeChart* chart = v.chart();
    auto has_kind = [chart](BlockKind k) {
      for (const PoolBlock& b : chart->blocks()->blocks())
        if (b.kind == k) return true;
      return false;
    };
    auto tick_names = [chart] {
      QStringList names;
      for (const LifetimeChart::GraphTick& t : chart->graphTicks()) names << t.name;
      return names;
    };
    QVERIFY(has_kind(BlockKind::GradSlot));
    QVERIFY(tick_names().contains("DEEP_FWD_BWD"));
    const DTensorId out = v.cp->program().layers[1].out;
    const uint64_t trainBytes =
        chart->blocks()->blocks()[static_cast<size_t>(chart->blocks()->indexOf(out))].bytes;

    // Validation: a forward pass of its own batch, no gradients.
    const int val = v.cp->variant_index(VariantKind::Validation);
    v.view.setVariant(val);
    QCOMPARE(chart->blocks()->variant(), val);
    QVERIFY(!has_kind(BlockKind::GradSlot));
    QVERIFY(tick_names().contains("INF_MAIN_A"));
    QVERIFY(!tick_names().contains("DEEP_FWD_BWD"));
    size_t in_use = 0;
    for (const DTensor& t : v.plan(val).dtensors())
      in_use += is_step_local(t.region) && v.plan(val).in_use(t.id) ? 1 : 0;
    QCOMPARE(chart->blocks()->blocks().size(), in_use);
    const int i = chart->blocks()->indexOf(out);
    QVERIFY(i >= 0);
    QCOMPARE(chart->blocks()->blocks()[static_cast<size_t>(i)].bytes,
             v.plan(val).get_dtensor(out).slot_bytes);
    // Micro-batches of 125 of the written 1000, against training's 128.
    QVERIFY(chart->blocks()->blocks()[static_cast<size_t>(i)].bytes < trainBytes);
    QCOMPARE(chart->blocks()->bytes(), v.cp->pools()[static_cast<size_t>(val)].packed_bytes);
    // The strip shows that variant's pool too.
    QCOMPARE(v.view.bands()->segmentRect(kPoolBand).isEmpty(), false);
  }

  void unpackedPlanShowsLifetimesAtOwnBytes() {
    View v(compiled("lenet-fashion", false));
    const PoolBlocks* blocks = v.chart()->blocks();
    QVERIFY(!blocks->packed());
    QVERIFY2(v.chart()->legendText().startsWith("packing off:"),
             qPrintable(v.chart()->legendText()));
    const MemoryPlan& plan = v.plan();
    const StepLifetimes life = step_lifetimes(*v.cp, 0);
    size_t touched = 0;
    uint64_t lowest = UINT64_MAX;
    for (const TensorLifetime& l : life.tensors)
      if (l.first >= 0) {
        ++touched;
        lowest = std::min(lowest, plan.get_dtensor(l.id).offset);
      }
    QCOMPARE(blocks->blocks().size(), touched);
    QCOMPARE(blocks->base(), lowest);
    QCOMPARE(lowest, plan.region(Region::F_FEATURE_FP32).base_offset);
    // Every tensor at its own offset: nothing shares bytes, at any time.
    for (size_t i = 0; i < blocks->blocks().size(); ++i) {
      const PoolBlock& b = blocks->blocks()[i];
      QCOMPARE(b.offset + blocks->base(), plan.get_dtensor(b.id).offset);
      QVERIFY(blocks->sharing(static_cast<int>(i)).empty());
    }
    QVERIFY(blocks->peakLiveBytes() < blocks->slotBytes());
  }
  // A layer selected in the designer: its tensors' blocks keep their colour.
  void designerSelectionFadesTheOtherLayers() {
    View v(compiled("lenet-fashion"));
    LifetimeChart* chart = v.chart();
    const int conv1 = v.layer("conv1");
    for (int b = 0; b < static_cast<int>(chart->blocks()->blocks().size()); ++b)
      QVERIFY(!chart->isFaded(b));
    v.view.highlightLayers({conv1});
    int kept = 0;
    for (int b = 0; b < static_cast<int>(chart->blocks()->blocks().size()); ++b) {
      const DTensor& t = v.plan().get_dtensor(chart->blocks()->blocks()[static_cast<size_t>(b)].id);
      QCOMPARE(chart->isFaded(b), t.owner != conv1);
      kept += !chart->isFaded(b);
    }
    QVERIFY(kept >= 2);  // conv1's output and its gradient slot
    v.view.highlightLayers({});
    QVERIFY(!chart->isFaded(0));
  }
};

QTEST_MAIN(TestLifetimeChart)
#include "test_lifetime_chart.moc"
