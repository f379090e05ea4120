// SPDX-License-Identifier: GPL-3.0-or-later
// The training view against the real engine on Fashion-MNIST: live curves
// that hold every step, pause that holds the run still, stop within one
// step, the run in the store, a validated epoch's confusion matrix,
// checkpoints and resuming, clear messages for bad input, and an event loop
// that keeps running throughout.
#include <QElapsedTimer>
#include <QFile>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>
#include <algorithm>
#include <memory>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <renaissance/project_io.h>
#include <renaissance/run_store.h>
#include <renaissance/store_location.h>
#include "../engine/faulty_vfs.h"
#include "plot/curve_plot.h"
#include "training/confusion_matrix_view.h"
#include "training/progress_estimate.h"
#include "training/resume_request.h"
#include "training/step_throttle.h"
#include "training/training_charts.h"
#include "training/training_view.h"

using namespace tr;
using namespace tr::gui;

namespace {

constexpr int kRunTimeoutMs = 60'000;

Project lenet() {
  return load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
}

// lenet-fashion on a slice of Fashion-MNIST: 10 steps of 128 an epoch, a
// validation of 2000 images (two batches of 1000).
Project small_lenet() {
  Project p = lenet();
  p.dataset.train_size = 1280;
  p.dataset.val_size = 2000;
  return p;
}

// The longest gap between ticks of a 5 ms timer on the GUI thread.
class EventLoopProbe {
 public:
  EventLoopProbe() {
    timer_.setInterval(5);
    QObject::connect(&timer_, &QTimer::timeout,
                     [this] { worst_ = std::max(worst_, clock_.restart()); });
    clock_.start();
    timer_.start();
  }
  qint64 worstMs() const { return worst_; }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 worst_ = 0;
};

store::RunDetail stored_run(qint64 id) {
  const store::RunStore s(store::resolve_store_path());
  return s.run(id);
}

std::vector<store::StepRecord> stored_steps(qint64 id) {
  const store::RunStore s(store::resolve_store_path());
  return s.step_curve(id);
}

size_t stored_run_count() {
  const store::RunStore s(store::resolve_store_path());
  return s.list_runs().size();
}

// A port nothing listens on now, for a rendezvous.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof a;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) == 0;
  if (fd >= 0) ::close(fd);
  return ok ? ntohs(a.sin_port) : 29581;
}

size_t loss_points(const TrainingView& v) {
  return v.lossPlot()->pointCount(0);
}

}  // namespace

class TestTrainingView : public QObject {
  Q_OBJECT

 private slots:
  void throttleBatchesFastStepsAndPassesSlowOnes() {
    using namespace std::chrono;
    StepThrottle throttle(milliseconds(30));
    const StepThrottle::Clock::time_point t0{};
    StepSample fast;
    fast.seconds = 0.002;
    // The first step after a delivery long ago goes out at once.
    QCOMPARE(throttle.add(fast, t0 + seconds(10)).size(), size_t{1});
    // Fast steps within the interval wait, then leave together.
    QVERIFY(throttle.add(fast, t0 + seconds(10) + milliseconds(2)).empty());
    QVERIFY(throttle.add(fast, t0 + seconds(10) + milliseconds(4)).empty());
    QCOMPARE(throttle.add(fast, t0 + seconds(10) + milliseconds(31)).size(), size_t{3});
    QVERIFY(throttle.add(fast, t0 + seconds(10) + milliseconds(33)).empty());
    // A slow step is not held back behind the interval.
    StepSample slow;
    slow.seconds = 0.5;
    QCOMPARE(throttle.add(slow, t0 + seconds(10) + milliseconds(34)).size(), size_t{2});
    QVERIFY(throttle.add(fast, t0 + seconds(10) + milliseconds(35)).empty());
    QCOMPARE(throttle.take().size(), size_t{1});
    QVERIFY(throttle.take().empty());
  }

  void progressCountsFromTheRunsFirstStep() {
    ProgressEstimate p;
    p.reset(2, -1);
    QCOMPARE(p.total(), int64_t{-1});
    QCOMPARE(p.etaSeconds(), -1.0);
    // Resumed at step 40 of 2 x 50; 10 steps in 5 s: 50 left at 0.5 s.
    StepSample s;
    s.batches = 50;
    for (int64_t i = 40; i < 50; ++i) {
      s.step = i;
      s.elapsed = 0.5 * static_cast<double>(i - 39);
      p.add(s);
    }
    QCOMPARE(p.total(), int64_t{100});
    QCOMPARE(p.done(), int64_t{50});
    QCOMPARE(p.etaSeconds(), 25.0);
    QVERIFY2(p.text().contains(QStringLiteral("0:00:25")), qPrintable(p.text()));
    // A run that ended (a stop) has no time left: the ETA goes.
    p.end();
    QCOMPARE(p.etaSeconds(), -1.0);
    QCOMPARE(p.text(), QStringLiteral("step 50 of 100 (50.0%)"));
    p.reset(2, 60);  // max_steps cuts the total
    p.add(s);
    QCOMPARE(p.total(), int64_t{60});
    QCOMPARE(ProgressEstimate::clock(3723), QStringLiteral("1:02:03"));
  }

  void trainsLivePausesResumesAndStopsWithinOneStep() {
    TrainingView view;
    view.resize(1200, 800);
    view.show();
    EventLoopProbe probe;
    QSignalSpy started(&view, &TrainingView::runStarted);
    QSignalSpy ended(&view, &TrainingView::runEnded);
    QSignalSpy paused(&view, &TrainingView::pausedAt);
    QSignalSpy running(&view, &TrainingView::runningChanged);
    QSignalSpy profile(&view, &TrainingView::profileReady);

    TrainingRequest r;
    r.epochs = 1;  // 469 steps: far more than this test lets it run
    r.validate = false;
    QString error;
    QVERIFY2(view.start(lenet(), r, &error), qPrintable(error));
    QVERIFY(view.isRunning());
    QCOMPARE(running.count(), 1);
    QVERIFY(!view.trainButton()->isEnabled());
    QVERIFY(!view.start(lenet(), r, &error));
    QVERIFY2(error.contains(QStringLiteral("in progress")), qPrintable(error));

    QTRY_VERIFY_WITH_TIMEOUT(loss_points(view) >= 5, kRunTimeoutMs);
    QCOMPARE(started.count(), 1);
    const qint64 run = started[0][0].toLongLong();
    QCOMPARE(view.lastRunId(), run);
    // Steps arrive in order from step 0, each a finite loss.
    const auto& xs = view.lossPlot()->seriesX(0);
    for (size_t i = 0; i < xs.size(); ++i) QCOMPARE(xs[i], static_cast<double>(i));

    // Paused: every step up to the pause arrives, then nothing more.
    view.pause();
    QTRY_COMPARE_WITH_TIMEOUT(paused.count(), 1, kRunTimeoutMs);
    const qint64 at = paused[0][0].toLongLong();
    QTRY_COMPARE(loss_points(view), static_cast<size_t>(at + 1));
    QCOMPARE(view.pauseButton()->text(), QStringLiteral("Resume"));
    QTest::qWait(400);
    QCOMPARE(loss_points(view), static_cast<size_t>(at + 1));
    QCOMPARE(view.stepsDone(), at + 1);
    QCOMPARE(view.progressBar()->value(), static_cast<int>(at + 1));
    QCOMPARE(view.progressBar()->maximum(), 469);  // ceil(60000 / 128)
    // The profiled steps (1 and 2) reached the timeline while the run goes on.
    QTRY_COMPARE(profile.count(), 1);
    QVERIFY(view.isRunning());

    view.resume();
    QTRY_VERIFY_WITH_TIMEOUT(loss_points(view) >= static_cast<size_t>(at + 4), kRunTimeoutMs);

    // Stopped while paused: the run ends after the step that was on its way
    // when it paused (the engine enqueues a step before it reports the one
    // before), and that step is drawn and stored.
    view.pause();
    QTRY_COMPARE_WITH_TIMEOUT(paused.count(), 2, kRunTimeoutMs);
    const qint64 last = paused[1][0].toLongLong();
    view.stop();
    QTRY_VERIFY_WITH_TIMEOUT(!view.isRunning(), kRunTimeoutMs);
    QCOMPARE(ended.count(), 1);
    QCOMPARE(ended[0][0].toLongLong(), run);
    QCOMPARE(running.count(), 2);
    QCOMPARE(loss_points(view), static_cast<size_t>(last + 2));
    QVERIFY2(view.statusText().contains(QStringLiteral("stopped")), qPrintable(view.statusText()));
    QVERIFY2(!view.progressBar()->format().contains(QStringLiteral("ETA")),
             qPrintable(view.progressBar()->format()));
    // The Train button needs a project to train.
    QVERIFY(!view.trainButton()->isEnabled());
    view.setProject(lenet());
    QVERIFY(view.trainButton()->isEnabled());
    QVERIFY(!view.stopButton()->isEnabled());

    // The store holds the run as stopped, with the very curve the view drew.
    const store::RunDetail d = stored_run(run);
    QCOMPARE(d.summary.status, store::RunStatus::Stopped);
    QCOMPARE(d.summary.name, std::string("lenet-fashion"));
    const std::vector<store::StepRecord> curve = stored_steps(run);
    QCOMPARE(curve.size(), static_cast<size_t>(last + 2));
    const auto& ys = view.lossPlot()->seriesY(0);
    for (size_t i = 0; i < curve.size(); ++i) {
      QCOMPARE(curve[i].step, static_cast<int64_t>(i));
      QCOMPARE(ys[i], curve[i].loss);
    }
    QCOMPARE(view.charts()->lrPlot()->pointCount(0), curve.size());
    QCOMPARE(view.charts()->throughputPlot()->pointCount(0), curve.size());
    // A sanity bound only: a blocked GUI thread would show seconds here.
    QVERIFY2(probe.worstMs() < 2000, qPrintable(QString::number(probe.worstMs())));
  }

  void validatedEpochFillsTheConfusionMatrix() {
    TrainingView view;
    view.resize(1200, 800);
    view.show();
    EventLoopProbe probe;
    QSignalSpy ended(&view, &TrainingView::runEnded);
    QSignalSpy profile(&view, &TrainingView::profileReady);
    TrainingRequest r;
    r.epochs = 1;
    QString error;
    QVERIFY2(view.start(small_lenet(), r, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kRunTimeoutMs);
    QTRY_VERIFY(!view.isRunning());
    QVERIFY2(view.errorText().isEmpty(), qPrintable(view.errorText()));
    QCOMPARE(loss_points(view), size_t{10});
    QCOMPARE(view.progressBar()->value(), 10);
    QCOMPARE(view.progressBar()->maximum(), 10);

    ConfusionMatrixView* m = view.confusionMatrix();
    QCOMPARE(m->classes(), 10);
    QCOMPARE(m->total(), int64_t{2000});  // every validation image, once
    // Names on the rows, numbers on the columns (names in their tooltips).
    QCOMPARE(m->verticalHeaderItem(0)->text(), QStringLiteral("0 T-shirt/top"));
    QCOMPARE(m->horizontalHeaderItem(9)->text(), QStringLiteral("9"));
    QCOMPARE(m->horizontalHeaderItem(9)->toolTip(), QStringLiteral("predicted Ankle boot"));
    QCOMPARE(m->horizontalHeaderItem(10)->text(), QStringLiteral("accuracy"));
    // Which axis is the true class and which the predicted one is said in
    // view, above the matrix.
    auto* axes = view.findChild<QLabel*>(QStringLiteral("confusionAxes"));
    QVERIFY(axes);
    QVERIFY(axes->text().startsWith(QStringLiteral("Rows: the true class")) &&
            axes->text().contains(QStringLiteral("Columns: the predicted class")));
    QCOMPARE(axes->parentWidget(), m->parentWidget());
    int64_t correct = 0;
    for (int c = 0; c < 10; ++c) {
      int64_t row = 0;
      for (int p = 0; p < 10; ++p) {
        row += m->counts()[static_cast<size_t>(c * 10 + p)];
        QCOMPARE(m->item(c, p)->text().toLongLong(), m->counts()[static_cast<size_t>(c * 10 + p)]);
      }
      const int64_t diag = m->counts()[static_cast<size_t>(c * 11)];
      correct += diag;
      const double acc = m->perClassAccuracy()[static_cast<size_t>(c)];
      QVERIFY(row > 0);
      QCOMPARE(acc, static_cast<double>(diag) / static_cast<double>(row));
    }
    // The epoch's val top-1 is the diagonal's share; it reached the top-1 chart.
    CurvePlot* top1 = view.charts()->top1Plot();
    QCOMPARE(top1->pointCount(0), size_t{1});
    QCOMPARE(top1->pointCount(1), size_t{1});
    QVERIFY(std::abs(top1->seriesY(1)[0] - 100.0 * static_cast<double>(correct) / 2000.0) < 1e-6);

    // The store has the finished run with the same matrix.
    const qint64 run = ended[0][0].toLongLong();
    const store::RunStore s(store::resolve_store_path());
    QCOMPARE(s.run(run).summary.status, store::RunStatus::Finished);
    const std::vector<store::EpochRecord> epochs = s.epochs(run);
    QCOMPARE(epochs.size(), size_t{1});
    QVERIFY(epochs[0].confusion == m->counts());

    // Steps 1 and 2 were profiled for the timeline, with the plan they ran.
    QCOMPARE(profile.count(), 1);
    const auto spans = profile[0][0].value<std::vector<ProfileSpan>>();
    QVERIFY(!spans.empty());
    QVERIFY(profile[0][1].value<std::shared_ptr<const CompiledPlan>>() != nullptr);
    QVERIFY2(probe.worstMs() < 2000, qPrintable(QString::number(probe.worstMs())));
  }

  void checkpointsAndResumes() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    TrainingView view;
    QSignalSpy ended(&view, &TrainingView::runEnded);
    QSignalSpy failed(&view, &TrainingView::runFailed);
    TrainingRequest r;
    r.epochs = 1;
    r.max_steps = 4;
    r.validate = false;
    r.checkpoint_dir = dir.filePath(QStringLiteral("ckpt"));  // created when missing
    QString error;
    QVERIFY2(view.start(small_lenet(), r, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kRunTimeoutMs);
    QTRY_VERIFY(!view.isRunning());
    const QString ckpt = dir.filePath(QStringLiteral("ckpt/lenet-fashion-step4.ckpt"));
    QVERIFY2(QFile::exists(ckpt), qPrintable(view.statusText()));
    QVERIFY2(view.statusText().contains(ckpt), qPrintable(view.statusText()));

    // Resumed: the curve continues at step 4 and the run says where it came from.
    r.max_steps = -1;
    r.checkpoint_dir.clear();
    r.resume_path = ckpt;
    QVERIFY2(view.start(small_lenet(), r, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 2, kRunTimeoutMs);
    QTRY_VERIFY(!view.isRunning());
    QCOMPARE(failed.count(), 0);
    QCOMPARE(loss_points(view), size_t{6});
    QCOMPARE(view.lossPlot()->seriesX(0).front(), 4.0);
    const qint64 resumed = ended[1][0].toLongLong();
    const store::RunDetail d = stored_run(resumed);
    QCOMPARE(d.summary.status, store::RunStatus::Finished);
    QVERIFY(d.hyper_json.find(ckpt.toStdString()) != std::string::npos);

    // Another project's checkpoint: a clear message naming both projects.
    Project other = small_lenet();
    other.name = "other-net";
    QVERIFY2(view.start(other, r, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, kRunTimeoutMs);
    QTRY_VERIFY(!view.isRunning());
    const QString message = failed[0][0].toString();
    QVERIFY2(message.contains(QStringLiteral("lenet-fashion")) &&
                 message.contains(QStringLiteral("other-net")),
             qPrintable(message));
    QCOMPARE(view.errorText(), message);
    QCOMPARE(loss_points(view), size_t{0});
    // Refused before anything was recorded, as the CLI refuses it.
    QCOMPARE(ended.count(), 2);
    QVERIFY2(view.statusText().contains(QStringLiteral("did not start")),
             qPrintable(view.statusText()));
  }

  void storeTroubleShowsABannerAndLosesNoStep() {
    const Project tiny = load_project(TR_TEST_DATA "/projects/tiny-synthetic.json");
    test::FaultyVfs vfs;  // every connection of this process opens files through it now
    TrainingView view;
    QSignalSpy ended(&view, &TrainingView::runEnded);
    QSignalSpy paused(&view, &TrainingView::pausedAt);
    TrainingRequest r;
    r.epochs = 3;
    r.validate = false;
    QString error;
    QVERIFY2(view.start(tiny, r, &error), qPrintable(error));
    view.pause();
    QTRY_COMPARE_WITH_TIMEOUT(paused.count(), 1, kRunTimeoutMs);
    QVERIFY(view.storeBannerText().isEmpty());
    vfs.fail_after(0, 25);  // the next 25 writes fail, the ones after go through
    view.resume();
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kRunTimeoutMs);
    QTRY_VERIFY(!view.isRunning());
    QVERIFY(vfs.failures() > 0);
    vfs.heal();
    QVERIFY2(view.storeBannerText().contains(QStringLiteral("takes writes again")),
             qPrintable(view.storeBannerText()));
    QVERIFY2(!view.statusText().contains(QStringLiteral("did not take everything")),
             qPrintable(view.statusText()));
    QCOMPARE(stored_steps(ended[0][0].toLongLong()).size(), size_t{30});
  }

  void resumesAStoppedRunAsTheSameRun() {
    const Project tiny = load_project(TR_TEST_DATA "/projects/tiny-synthetic.json");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    TrainingView view;
    QSignalSpy ended(&view, &TrainingView::runEnded);
    QSignalSpy failed(&view, &TrainingView::runFailed);
    QSignalSpy paused(&view, &TrainingView::pausedAt);
    TrainingRequest r;
    r.epochs = 2;
    r.validate = false;
    r.checkpoint_dir = dir.filePath(QStringLiteral("ckpt"));
    QString error;
    // Synthetic data: its size is part of the project the store records.
    QVERIFY2(view.start(tiny, r, &error), qPrintable(error));
    view.pause();  // held after its first step, then stopped there
    QTRY_COMPARE_WITH_TIMEOUT(paused.count(), 1, kRunTimeoutMs);
    view.stop();
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, kRunTimeoutMs);
    QTRY_VERIFY(!view.isRunning());
    const qint64 id = ended[0][0].toLongLong();
    QCOMPARE(stored_run(id).summary.status, store::RunStatus::Stopped);
    const qint64 stopped_at = stored_run(id).summary.steps;
    QVERIFY(stopped_at < 20);  // two epochs of ten steps

    // What the Runs view's Resume asks for: the run's own project and options.
    Project project;
    TrainingRequest resume;
    const QString store_path = QString::fromStdString(store::resolve_store_path());
    QVERIFY2(resume_request(store_path, id, &project, &resume, &error), qPrintable(error));
    QCOMPARE(project_to_json(project), project_to_json(tiny));
    QCOMPARE(resume.resume_run, id);
    QCOMPARE(resume.epochs, int64_t{2});
    QVERIFY(!resume.validate);
    const size_t runs = stored_run_count();
    QVERIFY2(view.start(project, resume, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 2, kRunTimeoutMs);
    QTRY_VERIFY(!view.isRunning());
    QCOMPARE(failed.count(), 0);
    QCOMPARE(ended[1][0].toLongLong(), id);  // the same run, not a new one
    QCOMPARE(stored_run_count(), runs);
    QCOMPARE(view.lossPlot()->seriesX(0).front(), static_cast<double>(stopped_at));
    const store::RunDetail d = stored_run(id);
    QCOMPARE(d.summary.status, store::RunStatus::Finished);
    QCOMPARE(d.summary.steps, int64_t{20});
    const auto steps = stored_steps(id);
    QCOMPARE(steps.size(), size_t{20});
    for (size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i].step, static_cast<int64_t>(i));
    const store::RunStore s(store_path.toStdString());
    QCOMPARE(s.resumes(id).size(), size_t{1});
    QCOMPARE(s.resumes(id).front().previous_status, store::RunStatus::Stopped);

    // A finished run is not resumed; the message says what to do instead.
    QVERIFY(!resume_request(store_path, id, &project, &resume, &error));
    QVERIFY2(error.contains(QStringLiteral("finished; to train it further")), qPrintable(error));
  }

  void badInputsGiveClearMessagesAndStartNothing() {
    QTemporaryDir dir;
    TrainingView view;
    QSignalSpy started(&view, &TrainingView::runStarted);
    QSignalSpy failed(&view, &TrainingView::runFailed);
    const size_t runs_before = stored_run_count();
    QString error;

    TrainingRequest missing;
    missing.resume_path = dir.filePath(QStringLiteral("nowhere.ckpt"));
    QVERIFY(!view.start(small_lenet(), missing, &error));
    QVERIFY2(
        error.contains(missing.resume_path) && error.contains(QStringLiteral("does not exist")),
        qPrintable(error));
    QVERIFY(!view.isRunning());

    QFile file(dir.filePath(QStringLiteral("a-file")));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("not a folder\n");
    file.close();
    TrainingRequest unwritable;
    unwritable.checkpoint_dir = dir.filePath(QStringLiteral("a-file/checkpoints"));
    QVERIFY(!view.start(small_lenet(), unwritable, &error));
    QVERIFY2(error.contains(QStringLiteral("checkpoint folder")), qPrintable(error));
    unwritable.checkpoint_dir = file.fileName();
    QVERIFY(!view.start(small_lenet(), unwritable, &error));
    QVERIFY2(error.contains(QStringLiteral("is a file")), qPrintable(error));

    TrainingRequest ema;
    ema.eval_ema = true;
    QVERIFY(!view.start(small_lenet(), ema, &error));
    QVERIFY2(error.contains(QStringLiteral("EMA")), qPrintable(error));
    QVERIFY(!view.isRunning());

    // Found on the training thread: each ends the attempt with a message.
    const auto expect_failure = [&](const Project& p, const TrainingRequest& r,
                                    std::initializer_list<QString> words) {
      const int before = failed.count();
      QString e;
      QVERIFY2(view.start(p, r, &e), qPrintable(e));
      QTRY_COMPARE_WITH_TIMEOUT(failed.count(), before + 1, kRunTimeoutMs);
      QTRY_VERIFY(!view.isRunning());
      const QString message = failed.last()[0].toString();
      qInfo().noquote() << message;  // for whoever reads the log: is it clear?
      for (const QString& w : words) QVERIFY2(message.contains(w), qPrintable(message));
      QCOMPARE(view.errorText(), message);
      QVERIFY(view.progressBar()->maximum() > 0);  // not left busy
    };

    QFile damaged(dir.filePath(QStringLiteral("damaged.ckpt")));
    QVERIFY(damaged.open(QIODevice::WriteOnly));
    damaged.write("this is no checkpoint\n");
    damaged.close();
    TrainingRequest resume;
    resume.resume_path = damaged.fileName();
    expect_failure(small_lenet(), resume, {QStringLiteral("Cannot resume"), damaged.fileName()});

    Project broken = small_lenet();
    const int conv1 = broken.model.find("conv1");
    QVERIFY(conv1 >= 0);
    broken.model.nodes[static_cast<size_t>(conv1)].params.kernel_h = 99;
    expect_failure(broken, {}, {QStringLiteral("does not compile"), QStringLiteral("conv1")});

    Project no_data = small_lenet();
    no_data.dataset.path = dir.filePath(QStringLiteral("no-such-dataset")).toStdString();
    expect_failure(no_data, {}, {QStringLiteral("no-such-dataset")});

    // A store file that is not a store: the engine's reason and what to do.
    const QByteArray store_env = qgetenv(store::kStoreEnvVar);
    QFile not_store(dir.filePath(QStringLiteral("not-a-store.sqlite")));
    QVERIFY(not_store.open(QIODevice::WriteOnly));
    not_store.write(QByteArray(4096, 'x'));
    not_store.close();
    qputenv(store::kStoreEnvVar, not_store.fileName().toLocal8Bit());
    expect_failure(small_lenet(), {},
                   {QStringLiteral("run store"), not_store.fileName(),
                    QString::fromLatin1(store::kStoreEnvVar)});
    qputenv(store::kStoreEnvVar, store_env);

    QCOMPARE(started.count(), 0);
    QCOMPARE(stored_run_count(), runs_before);
  }

  void destroyingTheViewStopsTheRun() {
    auto view = std::make_unique<TrainingView>();
    QSignalSpy started(view.get(), &TrainingView::runStarted);
    TrainingRequest r;
    r.epochs = 1;
    r.validate = false;
    QString error;
    QVERIFY2(view->start(lenet(), r, &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(loss_points(*view) >= 3, kRunTimeoutMs);
    const qint64 run = started[0][0].toLongLong();
    view.reset();  // joins the training thread
    const store::RunDetail d = stored_run(run);
    QCOMPARE(d.summary.status, store::RunStatus::Stopped);
    QVERIFY(d.summary.steps >= 3);
    QVERIFY(d.summary.steps < 469);
  }

  // A run stopped partway through an epoch plots that epoch where it
  // stopped, as the epoch's report says (100 of its 400 steps), and the
  // axis leaves room around it so no point sits clipped on an edge.
  void aPartialEpochIsPlottedWhereItStopped() {
    TrainingCharts charts;
    std::vector<StepSample> steps;
    for (int64_t b = 0; b < 100; ++b) {
      StepSample x;
      x.step = b;
      x.epoch = 0;
      x.batch = b;
      x.batches = 400;
      x.loss = 1;
      steps.push_back(x);
    }
    charts.addSteps(steps);
    EpochReport e;
    e.epoch = 0;
    e.train_top1 = 0.5;
    e.steps = 100;
    e.batches = 400;
    charts.addEpoch(e);
    QCOMPARE(charts.top1Plot()->seriesX(0), std::vector<double>{0.25});
    // A whole epoch ends at its number.
    std::vector<StepSample> rest;
    for (int64_t b = 100; b < 400; ++b) {
      StepSample x = steps.front();
      x.step = b;
      x.batch = b;
      rest.push_back(x);
    }
    charts.clear();
    charts.addSteps(steps);
    charts.addSteps(rest);
    e.steps = 400;
    charts.addEpoch(e);
    QCOMPARE(charts.top1Plot()->seriesX(0), std::vector<double>{1.0});
    // Epoch 2 cut short after 131 of its 469 steps, as in a stopped run:
    // both points inside the axis, with whole-epoch ticks only.
    charts.clear();
    EpochReport whole;
    whole.train_top1 = 0.6;
    whole.val_top1 = 0.65;
    whole.validated = true;
    whole.steps = whole.batches = 469;
    charts.addEpoch(whole);
    EpochReport cut;
    cut.epoch = 1;
    cut.train_top1 = 0.7;
    cut.steps = 131;
    cut.batches = 469;
    charts.addEpoch(cut);
    CurvePlot* plot = charts.top1Plot();
    QCOMPARE(plot->seriesX(0).back(), 1.0 + 131.0 / 469.0);
    QCOMPARE(plot->seriesX(1), std::vector<double>{1.0});  // no validation for the cut epoch
    const QCPRange range = plot->xAxis->range();
    QVERIFY2(range.lower < 1.0 && range.upper > 1.0 + 131.0 / 469.0,
             qPrintable(QStringLiteral("%1 .. %2").arg(range.lower).arg(range.upper)));
  }

  // Each epoch's point is a disc of 6 px: on a plot as short as the Top-1
  // chart gets at 1280x800, the lowest and highest are still whole inside
  // the axis, not cut in half by its edge.
  void epochPointsAreWholeOnAShortPlot() {
    TrainingCharts charts;
    const double train[] = {0.76, 0.875, 0.90};
    const double val[] = {0.83, 0.875, 0.89};
    for (int i = 0; i < 3; ++i) {
      EpochReport e;
      e.epoch = i;
      e.train_top1 = train[i];
      e.val_top1 = val[i];
      e.validated = true;
      e.steps = e.batches = 469;
      charts.addEpoch(e);
    }
    CurvePlot* plot = charts.top1Plot();
    plot->resize(360, 110);
    plot->setViewport(plot->rect());  // as its resize event would, shown
    plot->fitToData();
    plot->replot();
    const QRect inside = plot->axisRect()->rect();
    QVERIFY(inside.height() > 0);
    for (int g = 0; g < 2; ++g)
      for (size_t i = 0; i < 3; ++i) {
        const double x = plot->seriesX(g)[i];
        const double y = 100 * (g == 0 ? train[i] : val[i]);
        const QPointF at(plot->xAxis->coordToPixel(x), plot->yAxis->coordToPixel(y));
        const QRectF disc(at - QPointF(3, 3), QSizeF(6, 6));
        QVERIFY2(
            QRectF(inside).contains(disc),
            qPrintable(QStringLiteral("series %1 epoch %2 at (%3, %4), axis (%5, %6) to (%7, %8)")
                           .arg(g)
                           .arg(i + 1)
                           .arg(at.x())
                           .arg(at.y())
                           .arg(inside.left())
                           .arg(inside.top())
                           .arg(inside.right())
                           .arg(inside.bottom())));
      }
  }

  // A run two renaissance-cli processes train (global ranks 0 and 1 over
  // Gloo, as srun would start them), recorded by the first: the view follows
  // it from the store, live, to its end, with every step and epoch.
  void followsARunTwoProcessesRecord() {
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("cli.sqlite"));
    const QString project = QStringLiteral(TR_TEST_DATA "/projects/tiny-synthetic.json");
    const QString rendezvous = QStringLiteral("127.0.0.1:%1").arg(free_port());
    QProcess* nodes[2];
    for (int n = 0; n < 2; ++n) {
      nodes[n] = new QProcess(this);
      nodes[n]->start(QStringLiteral(TR_CLI),
                      {"train", project, "--devices", "cpu:1", "--epochs", "60", "--nodes", "2",
                       "--node-rank", QString::number(n), "--rendezvous", rendezvous, "--store",
                       n == 0 ? store : dir.filePath(QStringLiteral("other.sqlite"))});
    }
    auto recorded = [&] {
      if (!QFile::exists(store)) return false;
      const store::RunStore s(store.toStdString());
      return s.has_run(1);
    };
    QTRY_VERIFY_WITH_TIMEOUT(recorded(), kRunTimeoutMs);

    TrainingView view;
    view.resize(900, 700);
    view.show();
    QString error;
    QVERIFY2(view.follow(store, 1, &error), qPrintable(error));
    QCOMPARE(view.followedRun(), qint64{1});
    QVERIFY2(view.captionText().startsWith(
                 QStringLiteral("tiny-synthetic, run #1, recorded by another process (pid %1 on ")
                     .arg(nodes[0]->processId())),
             qPrintable(view.captionText()));
    QVERIFY(view.stopFollowingButton()->isVisible());
    QVERIFY(view.trainButton()->isEnabled() == false);  // no project set here
    // Steps arrive while the processes still train, with the run's length.
    QTRY_VERIFY_WITH_TIMEOUT(view.stepsDone() > 0, kRunTimeoutMs);
    QVERIFY(nodes[0]->state() == QProcess::Running);
    QCOMPARE(view.progressBar()->maximum(), 60 * 10);  // 600 samples in batches of 64
    QTRY_VERIFY_WITH_TIMEOUT(view.charts()->top1Plot()->pointCount(0) > 0, kRunTimeoutMs);

    for (QProcess* p : nodes) {
      QVERIFY(p->waitForFinished(kRunTimeoutMs));
      QCOMPARE(p->exitCode(), 0);
    }
    QTRY_COMPARE_WITH_TIMEOUT(view.followedRun(), qint64{0}, 5000);
    QCOMPARE(view.statusText().left(27), QStringLiteral("Run 1 finished: 600 steps. "));
    QVERIFY(!view.stopFollowingButton()->isVisible());
    const store::RunStore s(store.toStdString());
    QCOMPARE(static_cast<size_t>(view.stepsDone()), s.step_curve(1).size());
    QCOMPARE(loss_points(view), s.step_curve(1).size());
    QCOMPARE(view.charts()->top1Plot()->pointCount(0), s.epochs(1).size());

    // Runs that are not being recorded are refused, saying why.
    QVERIFY(!view.follow(store, 1, &error));
    QCOMPARE(error, QStringLiteral("Run 1 is not being recorded now (it finished); the Runs view "
                                   "shows its curves."));
    QVERIFY(!view.follow(store, 7, &error));
    QVERIFY2(error.contains("7"), qPrintable(error));
  }
};

QTEST_MAIN(TestTrainingView)
#include "test_training_view.moc"
