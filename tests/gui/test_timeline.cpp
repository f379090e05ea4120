// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline view on a real profile (two CPU ranks training lenet): five
// lanes per rank, bars in the lane of their rank and stream and mapped to the
// model layers their graph nodes compute, zoom around the cursor, drag to pan,
// hover details, highlighted layers, clicks that report a layer, the overlap
// statistics, the caption (run, project or trace, steps, ranks) and the choice
// of profiled steps, and the Chrome trace export with its failures.
#include <QComboBox>
#include <QFile>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include <renaissance/plan_report.h>
#include <renaissance/profile_export.h>
#include <renaissance/project_io.h>
#include <renaissance/training.h>
#include <renaissance/training_job.h>
#include "timeline/bar_kind.h"
#include "timeline/overlap_summary.h"
#include "timeline/profile_origin.h"
#include "timeline/profile_steps.h"
#include "timeline/time_ticks.h"
#include "timeline/timeline_canvas.h"
#include "timeline/timeline_model.h"
#include "timeline/timeline_view.h"
#include "timeline/trace_import.h"

using namespace tr;
using namespace tr::gui;

namespace {

struct Profile {
  std::vector<ProfileSpan> spans;
  std::shared_ptr<const CompiledPlan> cp;
};

// Steps 1 and 2 of a two-rank lenet run, profiled.
Profile profile_lenet() {
  Project p = load_project(std::string(TR_PROJECTS_DIR) + "/lenet-fashion.json");
  std::string error;
  if (!parse_device_set("cpu:2", p.training.devices, error)) throw std::runtime_error(error);
  TrainingJob job(std::move(p));
  TrainOptions o;
  o.max_steps = 3;
  o.validate = false;
  o.profile_begin = 1;
  o.profile_end = 3;
  TrainReport report = job.train(o);
  return {std::move(report.profile), std::make_shared<const CompiledPlan>(job.plan())};
}

QString last_word(const std::string& label) {
  return QString::fromStdString(label).section(' ', -1);
}

void wheel(QWidget* w, QPoint at, int delta) {
  QWheelEvent e(at, w->mapToGlobal(at), QPoint(), QPoint(0, delta), Qt::NoButton, Qt::NoModifier,
                Qt::NoScrollPhase, false);
  QApplication::sendEvent(w, &e);
}

// Zooms so that `bar` is `px` pixels wide in the middle of the plot.
void frame_bar(TimelineCanvas* c, int bar, double px) {
  const TimelineBar& b = c->model()->bars()[static_cast<size_t>(bar)];
  const double d = std::max(b.end_us - b.start_us, 0.05);
  const double span = d * c->plotRect().width() / px;
  const double mid = (b.start_us + b.end_us) / 2;
  c->setVisibleRange(mid - span / 2, mid + span / 2);
}

QString write_file(const QTemporaryDir& dir, const char* name, const QByteArray& text) {
  QFile f(dir.filePath(name));
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(text);
  return f.fileName();
}

QColor pixel(QWidget* w, QPointF at) {
  return w->grab().toImage().pixelColor(at.toPoint());
}

}  // namespace

class TestTimeline : public QObject {
  Q_OBJECT

  Profile lenet_;
  std::unique_ptr<TimelineView> view_;

  TimelineCanvas* canvas() const { return view_->canvas(); }
  const TimelineModel& model() const { return view_->model(); }
  const ProfileSpan& span(int bar) const {
    return model().spans()[static_cast<size_t>(model().bars()[static_cast<size_t>(bar)].span)];
  }
  // The longest bar that matches, so that it is easy to hit.
  template <class Pred>
  int longest(Pred pred) const {
    int best = -1;
    for (int i = 0; i < view_->barCount(); ++i) {
      const TimelineBar& b = model().bars()[static_cast<size_t>(i)];
      if (pred(b, span(i)) &&
          (best < 0 ||
           b.end_us - b.start_us > model().bars()[static_cast<size_t>(best)].end_us -
                                       model().bars()[static_cast<size_t>(best)].start_us))
        best = i;
    }
    return best;
  }

 private slots:
  void initTestCase() {
    lenet_ = profile_lenet();
    QVERIFY(!lenet_.spans.empty());
  }

  void init() {
    view_ = std::make_unique<TimelineView>();
    view_->resize(1300, 800);
    view_->setProfile(lenet_.spans, lenet_.cp);
    view_->show();
    QVERIFY(QTest::qWaitForWindowExposed(view_.get()));
  }

  void cleanup() { view_.reset(); }

  void emptyUntilProfiled() {
    TimelineView v;
    QVERIFY(!v.hasProfile());
    QVERIFY(v.emptyText().contains("Training view"));
    QVERIFY(v.emptyText().contains("renaissance-cli train --trace"));
    QString error;
    QVERIFY(!v.exportChromeTrace(QDir::temp().filePath("never-trace.json"), &error));
    QVERIFY2(error.contains("profile a few steps"), qPrintable(error));
    QVERIFY(!v.exportButton()->isEnabled());
    v.setProfile({}, lenet_.cp);
    QVERIFY(!v.hasProfile());
    // And back to empty after a profile.
    v.setProfile(lenet_.spans, lenet_.cp);
    QVERIFY(v.hasProfile());
    v.clear();
    QVERIFY(!v.hasProfile());
    QCOMPARE(v.laneCount(), 0);
  }

  void fiveLanesPerRankAndOneBarPerSpan() {
    QCOMPARE(view_->laneCount(), 10);
    QCOMPARE(view_->barCount(), static_cast<int>(lenet_.spans.size()));
    for (int lane = 0; lane < 10; ++lane) {
      QCOMPARE(model().lanes()[static_cast<size_t>(lane)].rank, lane / kNumStreams);
      QCOMPARE(static_cast<int>(model().lanes()[static_cast<size_t>(lane)].stream),
               lane % kNumStreams);
    }
    QCOMPARE(model().laneName(6), QString("rank 1 · COMP_1"));
    double earliest = 1e300;
    for (const ProfileSpan& s : lenet_.spans) earliest = std::min(earliest, s.start_us);
    std::set<int> ranks;
    double first = 1e300;
    for (int i = 0; i < view_->barCount(); ++i) {
      const TimelineBar& b = model().bars()[static_cast<size_t>(i)];
      const ProfileSpan& s = span(i);
      const TimelineLane& lane = model().lanes()[static_cast<size_t>(b.lane)];
      QCOMPARE(lane.rank, s.rank);
      QCOMPARE(lane.stream, s.tag.stream);
      QCOMPARE(b.start_us, s.start_us - earliest);
      QCOMPARE(b.end_us - b.start_us, s.end_us - s.start_us);
      ranks.insert(s.rank);
      first = std::min(first, b.start_us);
    }
    QCOMPARE(ranks, (std::set<int>{0, 1}));
    QCOMPARE(first, 0.0);
    QVERIFY(view_->summaryText().contains(QString("%1 spans on 2 ranks").arg(lenet_.spans.size())));
  }

  void barsMapToTheLayersTheirNodesCompute() {
    const ModelGraph& m = lenet_.cp->project().model;
    int with_layer = 0;
    std::set<int> layers;
    for (int i = 0; i < view_->barCount(); ++i) {
      const TimelineBar& b = model().bars()[static_cast<size_t>(i)];
      const ProfileSpan& s = span(i);
      // The engine's label ends with the model node's id when a node computes one.
      const int named =
          s.tag.graph == GraphId::NUM_GRAPH_IDS ? -1 : m.find(last_word(s.tag.label).toStdString());
      QVERIFY2(b.layer == named, qPrintable(QString("%1: layer %2, label names %3")
                                                .arg(QString::fromStdString(s.tag.label))
                                                .arg(b.layer)
                                                .arg(named)));
      if (b.layer >= 0) {
        ++with_layer;
        layers.insert(b.layer);
        QVERIFY(model().describe(i).contains(QString::fromStdString(m.nodes[b.layer].label())));
      }
    }
    QVERIFY(with_layer > 0);
    QVERIFY(layers.count(m.find("conv1")) && layers.count(m.find("fc3")));

    // Kinds follow graphs and ops.
    for (int i = 0; i < view_->barCount(); ++i) {
      const ProfileSpan& s = span(i);
      const BarKind k = model().bars()[static_cast<size_t>(i)].kind;
      const QString label = QString::fromStdString(s.tag.label);
      if (s.tag.graph == GraphId::DEEP_COMM) {
        QCOMPARE(k, BarKind::Communication);
        // A collective says how many bytes each rank puts in, and which.
        const QString text = model().describe(i);
        const uint64_t bytes =
            lenet_.cp->plans().front().region_range(Region::G_DEEP_CONV, Region::R_RESULT).bytes;
        QVERIFY2(text.contains(QString::fromStdString(human_bytes(bytes)) +
                               " from each rank: G_DEEP_CONV..R_RESULT"),
                 qPrintable(text));
        // And what it carries: lenet's deeper convolution's weight and bias,
        // and the batch result.
        QVERIFY2(text.contains("carries the gradients of the 2 weights of 1 layer (conv2) and "
                               "the batch's loss, top-1 and top-5"),
                 qPrintable(text));
      }
      if (s.tag.graph == GraphId::TRANSFER_A || s.tag.graph == GraphId::TRANSFER_B)
        QCOMPARE(k, BarKind::Transfer);
      if (s.tag.graph == GraphId::OPTIMIZER) QCOMPARE(k, BarKind::Update);
      if (s.tag.graph == GraphId::DEEP_FWD_BWD && label.contains(" CONV_FWD "))
        QCOMPARE(k, BarKind::Forward);
      if (s.tag.graph == GraphId::DEEP_FWD_BWD && label.contains(" CONV_BWD "))
        QCOMPARE(k, BarKind::Backward);
    }

    // Without the compiled project nothing has a layer, and hovering says why.
    const TimelineModel bare(lenet_.spans, nullptr);
    QCOMPARE(bare.bars().size(), lenet_.spans.size());
    int deep = -1;
    for (size_t i = 0; i < bare.bars().size(); ++i) {
      QCOMPARE(bare.bars()[i].layer, -1);
      QCOMPARE(bare.bars()[i].kind, model().bars()[i].kind);
      if (lenet_.spans[i].tag.graph == GraphId::DEEP_FWD_BWD) deep = static_cast<int>(i);
    }
    QVERIFY(deep >= 0);
    QVERIFY(bare.describe(deep).contains("unknown"));
  }

  void wheelZoomsAroundTheCursor() {
    TimelineCanvas* c = canvas();
    const QRect plot = c->plotRect();
    QVERIFY(plot.width() > 500);
    const QPoint at(plot.left() + plot.width() * 3 / 10, plot.top() + 5);
    const double t = c->timeAt(at.x());
    const double span = view_->visibleEnd() - view_->visibleStart();
    const double eps = span * 1e-9;
    wheel(c, at, 120);
    QCOMPARE(c->timeAt(at.x()) - t < eps && t - c->timeAt(at.x()) < eps, true);
    const double zoomed = view_->visibleEnd() - view_->visibleStart();
    QVERIFY2(zoomed < span * 0.81 && zoomed > span * 0.79,
             qPrintable(QString::number(zoomed / span)));
    wheel(c, at, 3 * 120);
    QVERIFY(view_->visibleEnd() - view_->visibleStart() < zoomed * 0.6);
    QVERIFY(std::abs(c->timeAt(at.x()) - t) < eps);
    // Zooming out stops at twice the profile; Fit shows all of it again.
    for (int i = 0; i < 40; ++i) wheel(c, at, -120);
    QVERIFY(view_->visibleEnd() - view_->visibleStart() <= 2 * model().durationUs() * (1 + 1e-9));
    QTest::mouseClick(view_->fitButton(), Qt::LeftButton);
    QVERIFY(view_->visibleStart() <= 0 && view_->visibleEnd() >= model().durationUs());
    QVERIFY(view_->visibleEnd() - view_->visibleStart() < model().durationUs() * 1.05);
  }

  void dragPansWithoutClicking() {
    TimelineCanvas* c = canvas();
    const QRect plot = c->plotRect();
    wheel(c, plot.center(), 4 * 120);
    const double t0 = view_->visibleStart(), t1 = view_->visibleEnd();
    const double per_px = (t1 - t0) / plot.width();
    QSignalSpy clicked(view_.get(), &TimelineView::layerClicked);
    const QPoint from(plot.center().x(), static_cast<int>(c->laneRect(6).center().y()));
    QTest::mousePress(c, Qt::LeftButton, {}, from);
    QTest::mouseMove(c, from + QPoint(60, 0));
    QTest::mouseMove(c, from + QPoint(120, 0));
    QTest::mouseRelease(c, Qt::LeftButton, {}, from + QPoint(120, 0));
    QVERIFY2(std::abs(view_->visibleStart() - (t0 - 120 * per_px)) < per_px * 1e-6,
             qPrintable(QString("%1 -> %2").arg(t0).arg(view_->visibleStart())));
    QVERIFY(std::abs((view_->visibleEnd() - view_->visibleStart()) - (t1 - t0)) < per_px * 1e-6);
    QCOMPARE(clicked.count(), 0);
  }

  void hoverDescribesTheBarUnderTheCursor() {
    TimelineCanvas* c = canvas();
    const int bar = longest([](const TimelineBar& b, const ProfileSpan& s) {
      return b.layer >= 0 && s.rank == 1 && s.tag.graph == GraphId::DEEP_FWD_BWD;
    });
    QVERIFY(bar >= 0);
    frame_bar(c, bar, 200);
    const QPoint at = c->barRect(bar).center().toPoint();
    QCOMPARE(view_->barAt(at), bar);
    QSignalSpy hovered(c, &TimelineCanvas::hovered);
    QSignalSpy status(view_.get(), &TimelineView::status);
    QTest::mouseMove(c, at);
    QCOMPARE(c->hoveredBar(), bar);
    QCOMPARE(hovered.count(), 1);
    const QString text = hovered.front().front().toString();
    const ProfileSpan& s = span(bar);
    QCOMPARE(text.section('\n', 0, 0), QString::fromStdString(s.tag.label));
    QVERIFY(text.contains("DEEP_FWD_BWD"));
    QVERIFY(text.contains(QString::fromStdString(
        lenet_.cp->project().model.nodes[static_cast<size_t>(model().bars()[bar].layer)].label())));
    QVERIFY(text.contains(
        QString("rank 1 · %1").arg(QString::fromUtf8(stream_kind_name(s.tag.stream).data()))));
    QVERIFY(text.contains(duration_text(s.end_us - s.start_us)));
    QVERIFY(!status.isEmpty());
    QCOMPARE(status.back().front().toString(), QString::fromStdString(s.tag.label));
    // Between ranks there is nothing to hover.
    const int gap_y = static_cast<int>(c->laneRect(4).bottom() + 2);
    QCOMPARE(view_->barAt(QPoint(at.x(), gap_y)), -1);
  }

  void highlightedLayersStandOutAndTheRestDims() {
    TimelineCanvas* c = canvas();
    // Short enough to be framed 30 pixels wide (zooming out stops at twice the profile).
    const double short_us = model().durationUs() / 50;
    const int lit = longest([short_us](const TimelineBar& b, const ProfileSpan& s) {
      return b.layer >= 0 && s.rank == 0 && s.tag.graph == GraphId::DEEP_FWD_BWD &&
             b.end_us - b.start_us < short_us;
    });
    QVERIFY(lit >= 0);
    const int layer = model().bars()[static_cast<size_t>(lit)].layer;
    const int other = longest([layer, short_us](const TimelineBar& b, const ProfileSpan& s) {
      return b.layer != layer && s.rank == 0 && s.tag.graph == GraphId::DEEP_FWD_BWD &&
             b.end_us - b.start_us < short_us;
    });
    QVERIFY(other >= 0);
    view_->highlightLayers({layer});
    QCOMPARE(view_->highlightedLayers(), QList<int>{layer});
    QVERIFY(!c->isDimmed(lit));
    QVERIFY(c->isDimmed(other));
    for (int i = 0; i < view_->barCount(); ++i)
      QCOMPARE(c->isDimmed(i), model().bars()[static_cast<size_t>(i)].layer != layer);

    // What is painted: narrow enough for no text inside, wide enough to hit.
    const QColor lit_colour = bar_kind_color(model().bars()[static_cast<size_t>(lit)].kind);
    frame_bar(c, lit, 30);
    QVERIFY(std::abs(c->barRect(lit).width() - 30) < 0.01);
    QCOMPARE(pixel(c, c->barRect(lit).center()), lit_colour);
    const QColor other_colour = bar_kind_color(model().bars()[static_cast<size_t>(other)].kind);
    frame_bar(c, other, 30);
    const QColor dimmed = pixel(c, c->barRect(other).center());
    QCOMPARE(dimmed, c->barColor(other));
    QVERIFY(dimmed != other_colour);
    QVERIFY(dimmed.lightness() > other_colour.lightness());  // towards the white base

    view_->highlightLayers({});
    QVERIFY(!c->isDimmed(other));
    QCOMPARE(pixel(c, c->barRect(other).center()), other_colour);
    // A highlight set before a profile arrives applies to it.
    view_->highlightLayers({layer});
    view_->setProfile(lenet_.spans, lenet_.cp);
    QVERIFY(c->isDimmed(other) && !c->isDimmed(lit));
  }

  void clickingABarReportsItsLayer() {
    TimelineCanvas* c = canvas();
    const int bar = longest([](const TimelineBar& b, const ProfileSpan& s) {
      return b.layer >= 0 && (s.tag.graph == GraphId::FIRST_LAYER_BWD_A ||
                              s.tag.graph == GraphId::FIRST_LAYER_BWD_B);
    });
    const int engine = longest([](const TimelineBar& b, const ProfileSpan& s) {
      return b.layer < 0 && s.tag.graph == GraphId::DEEP_COMM;
    });
    QVERIFY(bar >= 0 && engine >= 0);
    QSignalSpy clicked(view_.get(), &TimelineView::layerClicked);
    QSignalSpy status(view_.get(), &TimelineView::status);
    frame_bar(c, bar, 100);
    QTest::mouseClick(c, Qt::LeftButton, {}, c->barRect(bar).center().toPoint());
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.front().front().toInt(), model().bars()[static_cast<size_t>(bar)].layer);
    QCOMPARE(model().bars()[static_cast<size_t>(bar)].layer,
             lenet_.cp->project().model.find("conv1"));

    frame_bar(c, engine, 100);
    QTest::mouseClick(c, Qt::LeftButton, {}, c->barRect(engine).center().toPoint());
    QCOMPARE(clicked.count(), 1);
    QVERIFY(status.back().front().toString().contains("engine work"));
  }

  void overlapStatisticsGiveTheCommShare() {
    const std::vector<GraphOverlap> comm = comm_overlaps(lenet_.spans);
    QCOMPARE(comm.size(), size_t{2});
    const QString text = view_->overlapText();
    QVERIFY(text.contains("rank 0") && text.contains("rank 1"));
    for (const GraphOverlap& g : comm) {
      const QString line = QString("DEEP_COMM under FIRST_LAYER_BWD: %1 of DEEP_COMM's %2 hidden")
                               .arg(percent_text(g.fraction_of_a()), duration_text(g.busy_a_us));
      QVERIFY2(text.contains(line), qPrintable(text));
    }
    QVERIFY(text.contains("busy: TRANS "));
    // Without the gradient exchange the text says why there is no share.
    std::vector<ProfileSpan> no_comm;
    for (const ProfileSpan& s : lenet_.spans)
      if (s.tag.graph != GraphId::DEEP_COMM) no_comm.push_back(s);
    view_->setProfile(no_comm, lenet_.cp);
    QVERIFY(view_->overlapText().contains("No DEEP_COMM"));
    QVERIFY(!view_->overlapText().contains("hidden"));
  }

  void exportWritesOneEventPerSpan() {
    QTemporaryDir dir;
    const QString path = dir.filePath("lenet-trace.json");
    QString error;
    QVERIFY2(view_->exportChromeTrace(path, &error), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const nlohmann::json trace = nlohmann::json::parse(f.readAll().toStdString());
    size_t complete = 0;
    std::multiset<std::string> names, labels;
    for (const auto& e : trace.at("traceEvents"))
      if (e.at("ph") == "X") {
        ++complete;
        names.insert(e.at("name").get<std::string>());
      }
    for (const ProfileSpan& s : lenet_.spans)
      labels.insert(s.tag.label.empty() ? "launch" : s.tag.label);
    QCOMPARE(complete, lenet_.spans.size());
    QVERIFY(names == labels);
  }

  void exportToABadPathSaysWhichAndWhy() {
    QTemporaryDir dir;
    const QString missing = dir.filePath("no-such-folder/trace.json");
    QString error;
    QVERIFY(!view_->exportChromeTrace(missing, &error));
    QVERIFY2(error.contains(missing) && error.startsWith("Cannot write"), qPrintable(error));
    QVERIFY(!QFile::exists(missing));
    error.clear();
    QVERIFY(!view_->exportChromeTrace(dir.path(), &error));  // a folder, not a file
    QVERIFY2(error.contains(dir.path()), qPrintable(error));
    QVERIFY(!view_->exportChromeTrace(QString(), &error));
    QVERIFY(error.contains("no file name"));
  }

  // What `renaissance-cli train --trace` and the export write opens again,
  // with the same lanes, times and layers.
  void anExportedTraceOpensAgain() {
    QTemporaryDir dir;
    const QString path = dir.filePath("trace.json");
    QString error;
    QVERIFY2(view_->exportChromeTrace(path, &error), qPrintable(error));

    TimelineView bare;
    QVERIFY2(bare.openChromeTrace(path, &error), qPrintable(error));
    QCOMPARE(bare.barCount(), view_->barCount());
    QCOMPARE(bare.laneCount(), 10);
    for (const TimelineBar& b : bare.model().bars()) QCOMPARE(b.layer, -1);
    QVERIFY(bare.summaryText().contains("no compiled project"));
    // The compiled design maps the opened trace to layers, keeping the place.
    bare.canvas()->setVisibleRange(100, 900);
    bare.setCompiled(lenet_.cp);
    QCOMPARE(bare.visibleStart(), 100.0);
    for (int i = 0; i < view_->barCount(); ++i) {
      const TimelineBar& a = model().bars()[static_cast<size_t>(i)];
      const TimelineBar& b = bare.model().bars()[static_cast<size_t>(i)];
      QCOMPARE(b.layer, a.layer);
      QCOMPARE(b.lane, a.lane);
      QCOMPARE(b.kind, a.kind);
      QVERIFY(std::abs(b.start_us - a.start_us) < 1e-6 && std::abs(b.end_us - a.end_us) < 1e-6);
      QCOMPARE(bare.model().label(i), model().label(i));
      QCOMPARE(bare.model().graphName(i), model().graphName(i));
    }
    // clear() drops the profile, not the compiled project.
    bare.clear();
    QVERIFY(!bare.hasProfile());
    QVERIFY(bare.openChromeTrace(path, &error));
    QVERIFY(bare.model()
                .bars()[static_cast<size_t>(
                    longest([](const TimelineBar& b, const ProfileSpan&) { return b.layer >= 0; }))]
                .layer >= 0);
  }

  void aBadTraceIsRefusedWithItsReason() {
    QTemporaryDir dir;
    auto write = [&](const char* name, const QByteArray& text) {
      QFile f(dir.filePath(name));
      f.open(QIODevice::WriteOnly);
      f.write(text);
      return f.fileName();
    };
    TimelineView v;
    QString error;
    const QString missing = dir.filePath("missing.json");
    QVERIFY(!v.openChromeTrace(missing, &error));
    QVERIFY2(error.startsWith("Cannot read " + missing), qPrintable(error));
    const QString text = write("notes.json", "these are notes");
    QVERIFY(!v.openChromeTrace(text, &error));
    QVERIFY2(error.contains(text) && error.contains("not JSON"), qPrintable(error));
    const QString other = write("other.json", R"({"name": "a project"})");
    QVERIFY(!v.openChromeTrace(other, &error));
    QVERIFY2(error.contains("no list of traceEvents"), qPrintable(error));
    const QString meta = write("meta.json", R"({"traceEvents": [{"ph": "M", "name": "x"}]})");
    QVERIFY(!v.openChromeTrace(meta, &error));
    QVERIFY2(error.contains("no spans"), qPrintable(error));
    const QString stream =
        write("stream.json",
              R"([{"ph": "X", "name": "k", "pid": 0, "tid": 0, "ts": 1, "dur": 2},
            {"ph": "X", "name": "odd", "pid": 0, "tid": 7, "ts": 1, "dur": 2}])");
    QVERIFY(!v.openChromeTrace(stream, &error));
    QVERIFY2(error.contains("event 1 (\"odd\") has tid 7, not a stream"), qPrintable(error));
    const QString no_ts = write("nots.json", R"([{"ph": "X", "name": "k", "pid": 0, "tid": 0}])");
    QVERIFY(!v.openChromeTrace(no_ts, &error));
    QVERIFY2(error.contains("no numeric ts"), qPrintable(error));
    QVERIFY(!v.hasProfile());
    // A bare event array from another tool is fine; names without graphs are engine work.
    std::vector<ProfileSpan> spans;
    QVERIFY(
        parse_chrome_trace(R"([{"ph": "X", "name": "k", "pid": 1, "tid": 4, "ts": 5, "dur": 2}])",
                           "inline", spans, &error));
    QCOMPARE(spans.size(), size_t{1});
    QCOMPARE(spans[0].rank, 1);
    QCOMPARE(spans[0].tag.stream, StreamKind::UPDATE);
    QCOMPARE(spans[0].tag.graph, GraphId::NUM_GRAPH_IDS);
    QCOMPARE(spans[0].end_us, 7.0);
  }

  void badSpansAreLeftOutAndSaidSo() {
    std::vector<ProfileSpan> spans(lenet_.spans.begin(), lenet_.spans.begin() + 20);
    ProfileSpan bad_rank = spans[0];
    bad_rank.rank = -3;
    ProfileSpan bad_stream = spans[1];
    bad_stream.tag.stream = static_cast<StreamKind>(9);
    ProfileSpan reversed = spans[2];
    std::swap(reversed.start_us, reversed.end_us);
    reversed.end_us -= 5;
    spans.push_back(bad_rank);
    spans.push_back(bad_stream);
    spans.push_back(reversed);
    const TimelineModel m(spans, lenet_.cp.get());
    QCOMPARE(m.bars().size(), size_t{21});
    QVERIFY(m.problems().contains("1 span with a rank outside"));
    QVERIFY(m.problems().contains("1 span on an unknown stream"));
    QVERIFY(m.problems().contains("1 span ending before it starts"));
    QCOMPARE(m.bars().back().end_us, m.bars().back().start_us);
    view_->setProfile(spans, lenet_.cp);
    QVERIFY(view_->summaryText().contains("unknown stream"));
    // Only bad spans: nothing to draw, and the status says why.
    QSignalSpy status(view_.get(), &TimelineView::status);
    view_->setProfile({bad_rank}, lenet_.cp);
    QVERIFY(!view_->hasProfile());
    QVERIFY(status.back().front().toString().contains("rank outside"));
  }

  // Many spans: only the visible ones are visited, and the lane index finds
  // exactly the bars a full scan finds.
  void visibleRangeQueriesMatchAFullScan() {
    std::vector<ProfileSpan> many;
    double shift = 0, step = 0;
    for (const ProfileSpan& s : lenet_.spans) step = std::max(step, s.end_us);
    for (int copy = 0; many.size() < 40000; ++copy, shift += step)
      for (ProfileSpan s : lenet_.spans) {
        s.start_us += shift;
        s.end_us += shift;
        many.push_back(std::move(s));
      }
    view_->setProfile(many, lenet_.cp);
    QCOMPARE(view_->barCount(), static_cast<int>(many.size()));
    const TimelineModel& m = model();
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> at(0, m.durationUs());
    for (int trial = 0; trial < 50; ++trial) {
      const double t0 = at(rng), t1 = t0 + m.durationUs() / 500;
      const int lane = trial % view_->laneCount();
      std::set<int> expected, found;
      for (int id : m.laneBars(lane)) {
        const TimelineBar& b = m.bars()[static_cast<size_t>(id)];
        if (b.end_us >= t0 && b.start_us <= t1) expected.insert(id);
      }
      const auto [first, last] = m.laneRange(lane, t0, t1);
      for (size_t k = first; k < last; ++k) {
        const TimelineBar& b = m.bars()[static_cast<size_t>(m.laneBars(lane)[k])];
        if (b.end_us >= t0 && b.start_us <= t1) found.insert(m.laneBars(lane)[k]);
      }
      QCOMPARE(found, expected);
      QVERIFY(last - first <= expected.size() + 2);
    }
    // Fitted, every pixel column holds many bars: painting merges them.
    QVERIFY(!canvas()->grab().isNull());
  }

  // Steps 1 and 2 of two ranks, from training: the caption names the project
  // (from the compiled one unless the origin says), the run when known, the
  // steps and the ranks.
  void theCaptionSaysWhatItShows() {
    const QString dash = QString(QChar(0x2013));
    QCOMPARE(view_->steps(), (std::vector<int64_t>{1, 2}));
    QCOMPARE(view_->captionText(), "lenet-fashion · steps 1" + dash + "2 · ranks 0" + dash + "1");
    view_->setProfile(lenet_.spans, lenet_.cp, ProfileOrigin{7, "my lenet", {}});
    QCOMPARE(view_->captionText(),
             "Run 7 · my lenet · steps 1" + dash + "2 · ranks 0" + dash + "1");
    // Mapping to another compile keeps what the caption says.
    view_->setCompiled(nullptr);
    QVERIFY(view_->captionText().startsWith("Run 7 · my lenet · "));
    // No project and no origin: the steps and ranks still.
    view_->setProfile(lenet_.spans, nullptr);
    QCOMPARE(view_->captionText(), "steps 1" + dash + "2 · ranks 0" + dash + "1");

    ProfileContents c;
    c.steps = {3, 4, 5, 9};
    c.ranks = {2};
    QCOMPARE(profile_caption({}, c), "steps 3" + dash + "5, 9 · rank 2");
    c.unknown_steps = true;
    QCOMPARE(profile_caption({}, c),
             "steps 3" + dash + "5, 9 and spans of no recorded step · rank 2");
    c.shown = 4;
    QCOMPARE(profile_caption({0, {}, "/tmp/runs/t.json"}, c),
             "t.json · step 4 of steps 3" + dash + "5, 9 · rank 2");
    c = ProfileContents();
    c.ranks = {0, 1, 3};
    QCOMPARE(profile_caption({}, c), "steps not recorded · ranks 0" + dash + "1, 3");
  }

  // Choosing a step shows only its bars: lanes, overlap statistics and the
  // fitted range follow, the caption says which; back to all shows all.
  void theStepChoiceShowsOneStep() {
    QComboBox* choice = view_->stepChoice();
    QVERIFY(!choice->isHidden());
    QCOMPARE(choice->count(), 3);
    QCOMPARE(choice->itemText(0), QString("All profiled steps"));
    QCOMPARE(choice->itemText(2), QString("Step 2"));
    const QString all_overlaps = view_->overlapText();
    const double all_duration = model().durationUs();
    for (const int64_t step : {int64_t{1}, int64_t{2}}) {
      choice->setCurrentIndex(static_cast<int>(step));
      QCOMPARE(view_->shownStep(), std::optional<int64_t>(step));
      const std::vector<ProfileSpan> mine = spans_of_step(lenet_.spans, step);
      QVERIFY(!mine.empty() && mine.size() < lenet_.spans.size());
      QCOMPARE(view_->barCount(), static_cast<int>(mine.size()));
      for (int i = 0; i < view_->barCount(); ++i) QCOMPARE(span(i).step, step);
      QCOMPARE(view_->laneCount(), 10);  // both ranks ran every step
      QCOMPARE(view_->overlapText(), overlap_summary(mine));
      QVERIFY(view_->overlapText() != all_overlaps);
      QVERIFY(model().durationUs() < all_duration);
      // Fitted to the step: its duration and a margin of 1% either side.
      QVERIFY(qFuzzyCompare(view_->visibleEnd(), 1.01 * model().durationUs()));
      QVERIFY(qFuzzyCompare(view_->visibleStart(), -0.01 * model().durationUs()));
      // The range names the profile's time in view, not the margins: no
      // negative start (it read "showing -165 µs - 16.68 ms").
      QCOMPARE(view_->rangeText(), QStringLiteral("showing %1 to %2")
                                       .arg(duration_text(0), duration_text(model().durationUs())));
      QVERIFY2(view_->captionText().contains(QString("step %1 of steps 1").arg(step)),
               qPrintable(view_->captionText()));
      QVERIFY(view_->summaryText().startsWith(QString("%1 spans").arg(mine.size())));
    }
    // A step the profile does not have changes nothing.
    QVERIFY(!view_->showStep(7));
    QCOMPARE(view_->shownStep(), std::optional<int64_t>(2));
    QCOMPARE(choice->currentIndex(), 2);
    // The compiled project may change under a chosen step.
    view_->setCompiled(nullptr);
    QCOMPARE(view_->shownStep(), std::optional<int64_t>(2));
    QCOMPARE(view_->barCount(), static_cast<int>(spans_of_step(lenet_.spans, 2).size()));
    view_->setCompiled(lenet_.cp);
    QVERIFY(view_->showStep(std::nullopt));
    QCOMPARE(choice->currentIndex(), 0);
    QCOMPARE(view_->barCount(), static_cast<int>(lenet_.spans.size()));
    QCOMPARE(view_->overlapText(), all_overlaps);
    // One step only: nothing to choose.
    view_->setProfile(spans_of_step(lenet_.spans, 1), lenet_.cp);
    QVERIFY(choice->isHidden());
    QVERIFY2(view_->captionText().contains("· step 1 ·"), qPrintable(view_->captionText()));
  }

  // clear() (the main window calls it when the project changes) leaves no
  // caption and no step choice behind; the next profile starts at all steps.
  void clearForgetsCaptionAndSteps() {
    QVERIFY(view_->showStep(2));
    view_->clear();
    QVERIFY(!view_->hasProfile());
    QVERIFY(view_->captionText().isEmpty());
    QVERIFY(view_->steps().empty());
    QVERIFY(view_->profile().empty());
    QCOMPARE(view_->shownStep(), std::nullopt);
    QCOMPARE(view_->stepChoice()->count(), 0);
    QVERIFY(view_->stepChoice()->isHidden());
    QCOMPARE(view_->origin().run_id, qint64{0});
    QVERIFY(!view_->showStep(1));
    view_->setProfile(lenet_.spans, lenet_.cp, ProfileOrigin{3, "lenet-fashion", {}});
    QCOMPARE(view_->shownStep(), std::nullopt);
    QCOMPARE(view_->stepChoice()->currentIndex(), 0);
    QCOMPARE(view_->barCount(), static_cast<int>(lenet_.spans.size()));
  }

  // The export writes every step (whichever is shown) with its step number,
  // and the trace opens with the same steps, its file named in the caption.
  void aTraceKeepsTheSteps() {
    QVERIFY(view_->showStep(2));
    QTemporaryDir dir;
    const QString path = dir.filePath("lenet-trace.json");
    QString error;
    QVERIFY2(view_->exportChromeTrace(path, &error), qPrintable(error));
    std::vector<ProfileSpan> read;
    QVERIFY2(read_chrome_trace(path, read, &error), qPrintable(error));
    QCOMPARE(read.size(), lenet_.spans.size());
    for (size_t i = 0; i < read.size(); ++i) QCOMPARE(read[i].step, lenet_.spans[i].step);

    TimelineView bare;
    QVERIFY2(bare.openChromeTrace(path, &error), qPrintable(error));
    QCOMPARE(bare.steps(), (std::vector<int64_t>{1, 2}));
    QVERIFY(!bare.stepChoice()->isHidden());
    QVERIFY2(bare.captionText().startsWith("lenet-trace.json · steps 1"),
             qPrintable(bare.captionText()));
    QCOMPARE(bare.origin().trace_file, path);
    QVERIFY(bare.showStep(1));
    QCOMPARE(bare.barCount(), static_cast<int>(spans_of_step(lenet_.spans, 1).size()));
  }

  // A trace written before spans knew their step loads with step -1 and no
  // step choice; a step that is no step number is refused, naming the event.
  void anOldTraceHasNoStepChoice() {
    std::vector<ProfileSpan> old = lenet_.spans;
    for (ProfileSpan& s : old) s.step = -1;
    const std::string json = chrome_trace_json(old);
    QVERIFY(json.find("\"step\"") == std::string::npos);
    QTemporaryDir dir;
    const QString path = write_file(dir, "old.json", QByteArray::fromStdString(json));
    QString error;
    TimelineView v;
    QVERIFY2(v.openChromeTrace(path, &error), qPrintable(error));
    QCOMPARE(v.barCount(), static_cast<int>(old.size()));
    for (const ProfileSpan& s : v.profile()) QCOMPARE(s.step, int64_t{-1});
    QVERIFY(v.steps().empty());
    QVERIFY(v.stepChoice()->isHidden());
    QVERIFY2(v.captionText().contains("steps not recorded"), qPrintable(v.captionText()));

    const QString bad = write_file(
        dir, "bad-step.json",
        R"([{"ph": "X", "name": "odd", "pid": 0, "tid": 1, "ts": 1, "args": {"step": "two"}}])");
    QVERIFY(!v.openChromeTrace(bad, &error));
    QVERIFY2(error.contains("event 0 (\"odd\") has step \"two\""), qPrintable(error));
    // A refused trace leaves the shown one as it was.
    QCOMPARE(v.origin().trace_file, path);
    QVERIFY(v.hasProfile());
  }

  // chrome_trace_json writes each span's step into its args and the importer
  // reads it back; a trace without steps reads as -1, a bad step is refused.
  void traceEventsCarryTheirStep() {
    QString error;
    std::vector<ProfileSpan> read;
    QVERIFY2(parse_chrome_trace(QByteArray::fromStdString(chrome_trace_json(lenet_.spans)), "lenet",
                                read, &error),
             qPrintable(error));
    QCOMPARE(read.size(), lenet_.spans.size());
    std::set<int64_t> steps;
    for (size_t i = 0; i < read.size(); ++i) {
      QCOMPARE(read[i].step, lenet_.spans[i].step);
      steps.insert(read[i].step);
    }
    QCOMPARE(steps, (std::set<int64_t>{1, 2}));  // the profiled steps of profile_lenet()

    std::vector<ProfileSpan> old = lenet_.spans;
    for (ProfileSpan& s : old) s.step = -1;
    const std::string old_json = chrome_trace_json(old);
    QVERIFY(old_json.find("\"step\"") == std::string::npos);
    QVERIFY2(parse_chrome_trace(QByteArray::fromStdString(old_json), "old", read, &error),
             qPrintable(error));
    QCOMPARE(read.size(), old.size());
    for (const ProfileSpan& s : read) QCOMPARE(s.step, int64_t{-1});

    for (const char* value : {"\"two\"", "1.5", "-2"}) {
      const QByteArray trace =
          QByteArray(R"([{"ph": "X", "name": "k", "pid": 0, "tid": 0, "ts": 1, "dur": 2},
            {"ph": "X", "name": "odd", "pid": 0, "tid": 1, "ts": 1, "dur": 2, "args": {"step": )") +
          value + "}}]";
      QVERIFY(!parse_chrome_trace(trace, "inline", read, &error));
      QVERIFY2(error.contains(QString("inline: event 1 (\"odd\") has step %1 in its args, not a "
                                      "step number")
                                  .arg(value)),
               qPrintable(error));
    }
  }

  void axisTicksAreRound() {
    const std::vector<TimeTick> ticks = time_ticks(0, 10000, 1000, 90);
    QCOMPARE(ticks.size(), size_t{11});
    QCOMPARE(ticks[1].us, 1000.0);
    QCOMPARE(ticks[3].text, QString("3 ms"));
    const std::vector<TimeTick> fine = time_ticks(10, 60, 1000, 90);
    QCOMPARE(fine.front().us, 10.0);
    QCOMPARE(fine[1].text, QString::fromUtf8("15 µs"));
    QCOMPARE(duration_text(1500), QString("1.50 ms"));
    QCOMPARE(duration_text(42), QString::fromUtf8("42.0 µs"));
  }
};

QTEST_MAIN(TestTimeline)
#include "test_timeline.moc"
