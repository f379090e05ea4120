// SPDX-License-Identifier: GPL-3.0-or-later
// GUI benchmark: (1) how late a 5 ms timer on the GUI thread fires while the
// training view trains lenet-fashion with its charts shown and updating
// (goal: never more than 50 ms), on cpu:1 and cpu:2; (2) how long a curve
// plot of 1,000,000 loss points with smoothing takes to redraw, whole and
// zoomed (goal: under 100 ms). Runs offscreen unless a platform is given.
// Runs are recorded in a temporary run store unless RENAISSANCE_STORE is set.
//   bench_gui [--steps N] [--replots N]
#include <QApplication>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <renaissance/project_io.h>
#include <renaissance/store_location.h>
#include "plot/curve_plot.h"
#include "training/training_charts.h"
#include "training/training_view.h"

namespace {

// Times every event the GUI thread handles, so the benchmark can say what
// the longest ones were (the delays' likely causes).
class TimingApplication : public QApplication {
 public:
  using QApplication::QApplication;

  struct Slow {
    double ms = 0;
    double at = 0;  // seconds since recording began
    QString what;
  };

  bool notify(QObject* receiver, QEvent* event) override {
    // Only the GUI thread's events can stall the GUI (notify also sees the
    // training thread's).
    if (!recording_ || depth_ > 0 || QThread::currentThread() != thread())
      return QApplication::notify(receiver, event);
    ++depth_;
    QElapsedTimer t;
    t.start();
    const bool result = QApplication::notify(receiver, event);
    const double ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
    --depth_;
    if (ms > 5) {
      slow_.push_back({ms, static_cast<double>(since_.nsecsElapsed()) / 1e9,
                       QStringLiteral("%1 (%2) event %3")
                           .arg(QString::fromLatin1(receiver->metaObject()->className()),
                                receiver->objectName())
                           .arg(static_cast<int>(event->type()))});
    }
    return result;
  }

  void record(bool on) {
    recording_ = on;
    if (on) slow_.clear(), since_.start();
  }
  // The slowest events recorded, slowest first.
  std::vector<Slow> slowest(size_t n) const {
    std::vector<Slow> v = slow_;
    std::sort(v.begin(), v.end(), [](const Slow& a, const Slow& b) { return a.ms > b.ms; });
    v.resize(std::min(n, v.size()));
    return v;
  }

 private:
  bool recording_ = false;
  QElapsedTimer since_;
  int depth_ = 0;
  std::vector<Slow> slow_;
};

constexpr double kDelayGoalMs = 50;
constexpr double kReplotGoalMs = 100;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

const char* verdict(double value, double goal) {
  return value < goal ? "ok" : "MISSED";
}

// Trains `steps` steps on `devices` and returns the timer's delays (ms past
// its 5 ms interval) from the start to the run's end.
void bench_training(const std::string& devices, int64_t steps) {
  tr::Project project = tr::load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
  std::string why;
  if (!tr::parse_device_set(devices, project.training.devices, why)) {
    std::fprintf(stderr, "bad devices %s: %s\n", devices.c_str(), why.c_str());
    return;
  }
  tr::gui::TrainingView view;
  view.resize(1400, 900);
  view.show();
  // The first layout and paint of the view are not training's doing.
  QElapsedTimer settle;
  settle.start();
  while (settle.elapsed() < 300) QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
  auto* app = static_cast<TimingApplication*>(QCoreApplication::instance());
  app->record(true);
  tr::gui::TrainingRequest request;
  request.epochs = 1;
  request.max_steps = steps;
  request.validate = false;

  std::vector<double> delays;
  QElapsedTimer clock, total;
  QTimer timer;
  timer.setTimerType(Qt::PreciseTimer);
  timer.setInterval(5);
  QObject::connect(&timer, &QTimer::timeout, [&] {
    delays.push_back(std::max(0.0, static_cast<double>(clock.nsecsElapsed()) / 1e6 - 5.0));
    clock.restart();
  });
  bool done = false;
  QString failure;
  QObject::connect(&view, &tr::gui::TrainingView::runningChanged,
                   [&](bool running) { done = !running; });
  QObject::connect(&view, &tr::gui::TrainingView::runFailed,
                   [&](const QString& m) { failure = m; });
  QString error;
  total.start();
  clock.start();
  timer.start();
  if (!view.start(project, request, &error)) {
    std::fprintf(stderr, "cannot train: %s\n", qPrintable(error));
    return;
  }
  while (!done) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
  timer.stop();
  app->record(false);
  if (!failure.isEmpty()) {
    std::fprintf(stderr, "training failed: %s\n", qPrintable(failure));
    return;
  }
  const double seconds = static_cast<double>(total.elapsed()) / 1000;
  const double worst = percentile(delays, 1.0);
  std::printf("event loop while training lenet-fashion on %s (%lld steps in %.1f s, %zu ticks):\n",
              devices.c_str(), static_cast<long long>(view.stepsDone()), seconds, delays.size());
  std::printf("  timer delay  median %6.2f ms  p99 %6.2f ms  worst %6.2f ms   goal < %.0f ms: %s\n",
              percentile(delays, 0.5), percentile(delays, 0.99), worst, kDelayGoalMs,
              verdict(worst, kDelayGoalMs));
  std::printf("  loss points drawn %zu of %zu\n", view.lossPlot()->drawnPointCount(),
              view.lossPlot()->pointCount(0));
  for (const TimingApplication::Slow& e : app->slowest(3))
    std::printf("  slow GUI event %6.2f ms at %.2f s: %s\n", e.ms, e.at, qPrintable(e.what));
}

// Replots `plot` `n` times, each painted to the widget, and returns the times in ms.
std::vector<double> time_replots(tr::gui::CurvePlot& plot, int n) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    QElapsedTimer t;
    t.start();
    plot.replot(QCustomPlot::rpImmediateRefresh);
    ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  return ms;
}

void report_replots(const char* what, const std::vector<double>& ms, size_t drawn) {
  const double worst = percentile(ms, 1.0);
  std::printf("  %-34s median %6.2f ms  worst %6.2f ms  (%zu points drawn)   goal < %.0f ms: %s\n",
              what, percentile(ms, 0.5), worst, drawn, kReplotGoalMs,
              verdict(worst, kReplotGoalMs));
}

// `fast_polylines`: as CurvePlot draws (line segments drawn one by one);
// otherwise QCustomPlot's default (one wide polyline per graph).
void bench_replot(int replots, bool fast_polylines) {
  constexpr size_t kPoints = 1'000'000;
  tr::gui::CurvePlot plot;
  plot.resize(1200, 500);
  plot.setPlottingHint(QCP::phFastPolylines, fast_polylines);
  plot.show();
  const int loss = plot.addSeries(QStringLiteral("loss"), QColor(0x1f, 0x77, 0xb4), true);
  std::vector<double> x(kPoints), y(kPoints);
  // A decaying loss with step noise and a few spikes, like a long run.
  uint64_t state = 42;
  for (size_t i = 0; i < kPoints; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double noise = static_cast<double>(state >> 40) / static_cast<double>(1ull << 24) - 0.5;
    x[i] = static_cast<double>(i);
    y[i] = 2.3 * std::exp(-static_cast<double>(i) / 150000.0) + 0.25 + 0.2 * noise +
           (i % 99991 == 0 ? 3.0 : 0.0);
  }
  QElapsedTimer t;
  t.start();
  plot.setSeriesData(loss, x, y);
  const double load_ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
  t.restart();
  plot.setSmoothing(0.6);
  const double smooth_ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
  plot.fitToData();
  QCoreApplication::processEvents();
  std::printf("curve plot of %zu loss points, smoothing 0.6, %dx%d, %s:\n", kPoints, plot.width(),
              plot.height(),
              fast_polylines ? "as CurvePlot draws it (phFastPolylines)"
                             : "with QCustomPlot's default (one polyline per graph)");
  std::printf("  set data %.1f ms, change the smoothing %.1f ms (both once, not per redraw)\n",
              load_ms, smooth_ms);
  std::vector<double> ms = time_replots(plot, replots);
  report_replots("redraw, all points", ms, plot.drawnPointCount());
  plot.xAxis->setRange(400'000, 410'000);
  ms = time_replots(plot, replots);
  report_replots("redraw, zoomed to 10,000 steps", ms, plot.drawnPointCount());
  plot.xAxis->setRange(500'000, 500'500);
  ms = time_replots(plot, replots);
  report_replots("redraw, zoomed to 500 steps", ms, plot.drawnPointCount());
  // Live: a point arrives (the axes follow it) and the plot redraws.
  plot.setFollowData(true);
  plot.fitToData();
  std::vector<double> live;
  for (int i = 0; i <= replots; ++i) {
    QElapsedTimer a;
    a.start();
    plot.appendPoint(loss, static_cast<double>(kPoints + static_cast<size_t>(i)), 0.3);
    plot.replot(QCustomPlot::rpImmediateRefresh);
    live.push_back(static_cast<double>(a.nsecsElapsed()) / 1e6);
  }
  // The first append grows the full-resolution storage (a copy of every
  // curve); later ones do not, until it is full again.
  std::printf("  first append grew the curves' storage: %.2f ms\n", live.front());
  live.erase(live.begin());
  report_replots("append a point and redraw", live, plot.drawnPointCount());
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  TimingApplication app(argc, argv);
  int64_t steps = 150;
  int replots = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--replots") && i + 1 < argc) {
      replots = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_gui [--steps N] [--replots N]\n");
      return 2;
    }
  }
  QTemporaryDir store_dir;
  if (qEnvironmentVariableIsEmpty(tr::store::kStoreEnvVar))
    qputenv(tr::store::kStoreEnvVar,
            store_dir.filePath(QStringLiteral("runs.sqlite")).toLocal8Bit());
  std::printf("run store: %s\n", tr::store::resolve_store_path().c_str());
  bench_training("cpu:1", steps);
  bench_training("cpu:2", steps);
  bench_replot(replots, true);
  bench_replot(replots, false);
  return 0;
}
