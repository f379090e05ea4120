// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/training_view.h"

#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <limits>

#include "training/class_names.h"
#include "training/confusion_matrix_view.h"
#include "training/run_follower.h"
#include "training/training_charts.h"
#include "widgets/count_text.h"
#include "widgets/tone.h"

namespace tr::gui {

TrainingView::TrainingView(QWidget* parent)
    : QWidget(parent), controller_(new TrainingController(this)), follower_(new RunFollower(this)) {
  buildControls();
  connect(follower_, &RunFollower::stepsRead, this, &TrainingView::onSteps);
  connect(follower_, &RunFollower::epochRead, this, &TrainingView::onEpoch);
  connect(follower_, &RunFollower::runEnded, this, [this](const TrainingOutcome& o) {
    onEnded(o);
    updateControls();
  });
  connect(follower_, &RunFollower::readTrouble, this, [this](const QString& text) {
    storeBanner_->setText(tr("Run store problem (read again in a moment): %1.").arg(text));
    storeBanner_->show();
  });
  connect(controller_, &TrainingController::runStarted, this, &TrainingView::onStarted);
  connect(controller_, &TrainingController::stepsDone, this, &TrainingView::onSteps);
  connect(controller_, &TrainingController::epochDone, this, &TrainingView::onEpoch);
  connect(controller_, &TrainingController::runEnded, this, &TrainingView::onEnded);
  connect(controller_, &TrainingController::profileReady, this, &TrainingView::profileReady);
  connect(controller_, &TrainingController::runningChanged, this, &TrainingView::runningChanged);
  connect(controller_, &TrainingController::pausedAt, this, [this](qint64 step) {
    if (state() != TrainingController::State::Paused) return;  // resumed or stopped since
    setStatus(tr("Paused after step %1.").arg(step + 1));
    emit pausedAt(step);
  });
  connect(controller_, &TrainingController::stateChanged, this, &TrainingView::updateControls);
  // Training goes on either way; the banner says what the store did with its rows.
  connect(controller_, &TrainingController::storeTrouble, this,
          [this](const QString& text, bool recovered) {
            storeBanner_->setText(recovered ? tr("Run store: %1.").arg(text)
                                            : tr("Run store problem: %1.").arg(text));
            storeBanner_->show();
          });
  connect(controller_, &TrainingController::stateChanged, this, &TrainingView::stateChanged);
  updateControls();
}

TrainingView::~TrainingView() {
  // The controller joins the training thread; its signals must not reach
  // this half-destroyed view meanwhile.
  controller_->disconnect(this);
  delete controller_;
}

void TrainingView::buildControls() {
  train_ = new QPushButton(tr("Train"), this);
  train_->setObjectName(QStringLiteral("train"));
  pause_ = new QPushButton(tr("Resume"), this);
  // Sized for the wider of its two texts, so the buttons after it stay put.
  pause_->setMinimumWidth(pause_->sizeHint().width());
  pause_->setText(tr("Pause"));
  pause_->setObjectName(QStringLiteral("pause"));
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName(QStringLiteral("stop"));
  connect(train_, &QPushButton::clicked, this, &TrainingView::trainClicked);
  connect(pause_, &QPushButton::clicked, this,
          [this] { state() == TrainingController::State::Paused ? resume() : pause(); });
  connect(stop_, &QPushButton::clicked, this, &TrainingView::stop);
  unfollow_ = new QPushButton(tr("Stop following"), this);
  unfollow_->setObjectName(QStringLiteral("stopFollowing"));
  unfollow_->setToolTip(tr("Stop showing the run another process records; the run itself goes on"));
  unfollow_->hide();
  connect(unfollow_, &QPushButton::clicked, this, &TrainingView::stopFollowing);

  epochs_ = new QSpinBox(this);
  epochs_->setObjectName(QStringLiteral("epochs"));
  epochs_->setRange(0, 1'000'000);
  epochs_->setToolTip(tr("Epochs to train; the first value uses the project's setting"));
  maxSteps_ = new QSpinBox(this);
  maxSteps_->setObjectName(QStringLiteral("maxSteps"));
  maxSteps_->setRange(0, std::numeric_limits<int>::max());
  maxSteps_->setSpecialValueText(tr("no limit"));
  maxSteps_->setToolTip(tr("Stop after this many steps in all (a resumed run counts on)"));
  validate_ = new QCheckBox(tr("Validate after each epoch"), this);
  validate_->setChecked(true);
  evalEma_ = new QCheckBox(tr("Validate on EMA weights"), this);
  evalEma_->setToolTip(tr("Needs the EMA enabled in the project's training settings"));

  checkpointDir_ = new QLineEdit(this);
  checkpointDir_->setPlaceholderText(tr("none: no checkpoints"));
  checkpointDir_->setToolTip(
      tr("A checkpoint is written there at every epoch's end and when training stops"));
  chooseCheckpointDir_ = new QPushButton(tr("Choose…"), this);
  connect(chooseCheckpointDir_, &QPushButton::clicked, this, &TrainingView::chooseCheckpointFolder);
  resumePath_ = new QLineEdit(this);
  resumePath_->setPlaceholderText(tr("none: start from fresh weights"));
  resumePath_->setClearButtonEnabled(true);
  chooseResume_ = new QPushButton(tr("Resume from checkpoint…"), this);
  connect(chooseResume_, &QPushButton::clicked, this, &TrainingView::chooseResumeFile);

  progressBar_ = new QProgressBar(this);
  // The text lives in the bar: a label beside it would change width with
  // every step and lay the whole view out again.
  progressBar_->setTextVisible(true);
  progressBar_->setAlignment(Qt::AlignCenter);
  progressBar_->setFormat(QString());
  progressBar_->setRange(0, 1);
  progressBar_->setValue(0);
  caption_ = new QLabel(tr("No run yet."), this);
  caption_->setToolTip(
      tr("Run numbers count every run in the run store, of every project (the Runs view lists "
         "them)."));
  caption_->setObjectName(QStringLiteral("runCaption"));
  QFont bold = caption_->font();
  bold.setBold(true);
  caption_->setFont(bold);
  caption_->setWordWrap(true);
  status_ = new QLabel(tr("Ready."), this);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->setWordWrap(true);
  error_ = new QLabel(this);
  error_->setObjectName(QStringLiteral("error"));
  set_tone(error_, Tone::Error);
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();
  storeBanner_ = new QLabel(this);
  storeBanner_->setObjectName(QStringLiteral("storeBanner"));
  set_tone(storeBanner_, Tone::Banner);
  storeBanner_->setWordWrap(true);
  storeBanner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  storeBanner_->hide();

  charts_ = new TrainingCharts(this);
  confusion_ = new ConfusionMatrixView(this);
  validationCaption_ = new QLabel(tr("The confusion matrix appears after a validation."), this);
  validationCaption_->setWordWrap(true);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(train_);
  buttons->addWidget(pause_);
  buttons->addWidget(stop_);
  buttons->addWidget(unfollow_);
  buttons->addSpacing(16);
  buttons->addWidget(new QLabel(tr("Epochs"), this));
  buttons->addWidget(epochs_);
  buttons->addWidget(new QLabel(tr("Max steps"), this));
  buttons->addWidget(maxSteps_);
  buttons->addStretch(1);
  auto* checks = new QHBoxLayout;
  checks->addWidget(validate_);
  checks->addWidget(evalEma_);
  checks->addStretch(1);

  // Two lines, so the view fits beside the docks at 1280 pixels.
  auto* files = new QGridLayout;
  files->addWidget(new QLabel(tr("Checkpoint folder"), this), 0, 0);
  files->addWidget(checkpointDir_, 0, 1);
  files->addWidget(chooseCheckpointDir_, 0, 2);
  files->addWidget(chooseResume_, 1, 0);
  files->addWidget(resumePath_, 1, 1, 1, 2);
  files->setColumnStretch(1, 1);

  auto* validation = new QWidget(this);
  auto* validationLayout = new QVBoxLayout(validation);
  validationLayout->addWidget(validationCaption_);
  // Which axis is which, in view, not only in a tooltip.
  auto* axes = new QLabel(tr("Rows: the true class ↓ · Columns: the predicted class → (numbered "
                             "as the rows; hover a cell for both names)"),
                          validation);
  axes->setObjectName(QStringLiteral("confusionAxes"));
  axes->setWordWrap(true);
  validationLayout->addWidget(axes);
  validationLayout->addWidget(confusion_, 1);

  // The curves and the confusion matrix each get the whole width: beside
  // each other at 1280 pixels neither was readable (2 of 10 columns).
  pages_ = new QTabWidget(this);
  pages_->setObjectName(QStringLiteral("trainingPages"));
  // The curves scroll when the view is squeezed (a tall bottom dock at
  // 1280x800) rather than holding the window's central area open.
  auto* curves = new QScrollArea(this);
  curves->setObjectName(QStringLiteral("curvesScroll"));
  curves->setWidgetResizable(true);
  curves->setFrameShape(QFrame::NoFrame);
  curves->setWidget(charts_);
  pages_->addTab(curves, tr("Curves"));
  pages_->addTab(validation, tr("Validation"));

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(caption_);
  layout->addWidget(storeBanner_);
  layout->addLayout(buttons);
  layout->addLayout(checks);
  layout->addLayout(files);
  layout->addWidget(progressBar_);
  layout->addWidget(status_);
  layout->addWidget(error_);
  layout->addWidget(pages_, 1);
}

void TrainingView::setProject(const Project& project) {
  project_ = project;
  epochs_->setSpecialValueText(tr("project's (%1)").arg(project.training.epochs));
  // The spin box sized itself for the text it had; the layout asks again.
  epochs_->updateGeometry();
  if (!project.training.ema) evalEma_->setChecked(false);
  updateControls();
}

TrainingRequest TrainingView::requestFromControls() const {
  TrainingRequest r;
  r.epochs = epochs_->value();
  r.max_steps = maxSteps_->value() > 0 ? maxSteps_->value() : -1;
  r.validate = validate_->isChecked();
  r.eval_ema = evalEma_->isChecked();
  r.checkpoint_dir = checkpointDir_->text().trimmed();
  r.resume_path = resumePath_->text().trimmed();
  return r;
}

void TrainingView::trainClicked() {
  if (!project_) return;
  QString error;
  if (startCheck_ && !startCheck_(&error)) {
    setError(error);
    return;
  }
  if (!start(*project_, requestFromControls(), &error)) setError(error);
}

void TrainingView::clearRun() {
  if (live()) return;  // a run in progress keeps its curves, named by its caption
  charts_->clear();
  confusion_->clearMatrix();
  validationCaption_->setText(tr("The confusion matrix appears after a validation."));
  pages_->setTabText(1, tr("Validation"));
  progress_.reset(0, -1);
  progressBar_->setRange(0, 1);
  progressBar_->setValue(0);
  progressBar_->setFormat(QString());
  setError({});
  const QString name = project_ ? QString::fromStdString(project_->name) : QString();
  caption_->setText(name.isEmpty() ? tr("No run yet.")
                                   : tr("No run of %1 yet in this window.").arg(name));
  status_->setText(tr("Ready."));
}

QString TrainingView::captionText() const {
  return caption_->text();
}

void TrainingView::setTrainBlocked(const QString& why) {
  trainBlocked_ = why;
  updateControls();
}

void TrainingView::chooseCheckpointFolder() {
  const QString dir =
      QFileDialog::getExistingDirectory(this, tr("Checkpoint folder"), checkpointDir_->text());
  if (!dir.isEmpty()) checkpointDir_->setText(QDir::toNativeSeparators(dir));
}

void TrainingView::chooseResumeFile() {
  const QString start_in =
      resumePath_->text().isEmpty() ? checkpointDir_->text() : resumePath_->text();
  const QString file = QFileDialog::getOpenFileName(this, tr("Resume from checkpoint"), start_in,
                                                    tr("Checkpoints (*.ckpt);;All files (*)"));
  if (!file.isEmpty()) resumePath_->setText(QDir::toNativeSeparators(file));
}

bool TrainingView::start(const Project& project, const TrainingRequest& request, QString* error) {
  QString why;
  if (!controller_->start(project, request, &why)) {
    if (error) *error = why;
    return false;
  }
  follower_->stop();  // this window's run is what the view shows now
  runDataset_ = project.dataset;
  runProject_ = QString::fromStdString(project.name);
  caption_->setText(tr("Run of %1 (starting)").arg(runProject_));
  showNewRun(request.epochs > 0 ? request.epochs : project.training.epochs, request.max_steps);
  setStatus(tr("Preparing %1: compiling, loading the dataset…")
                .arg(QString::fromStdString(project.name)));
  return true;
}

void TrainingView::showNewRun(int64_t epochs, int64_t maxSteps) {
  progress_.reset(epochs, maxSteps);
  charts_->clear();
  confusion_->clearMatrix();
  validationCaption_->setText(tr("The confusion matrix appears after a validation."));
  pages_->setTabText(1, tr("Validation"));
  setError({});
  storeBanner_->clear();
  storeBanner_->hide();
  showProgress();
  updateControls();
}

bool TrainingView::follow(const QString& storePath, qint64 run, QString* error) {
  if (isRunning()) {
    if (controller_->runId() == run) return true;  // shown already
    if (error)
      *error =
          tr("This window is training a run of its own; follow run %1 once it has ended.").arg(run);
    return false;
  }
  if (!follower_->follow(storePath, run, error)) return false;
  const RunFollower::Run& r = follower_->run();
  runDataset_ = r.dataset;
  runProject_ = r.name;
  caption_->setText(
      tr("%1, run #%2, recorded by another process (%3)").arg(runProject_).arg(run).arg(r.writer));
  showNewRun(r.epochs, r.max_steps);
  setStatus(tr("Following run %1 as the run store receives it (read every second).").arg(run));
  return true;
}

void TrainingView::stopFollowing() {
  if (!follower_->active()) return;
  const qint64 run = follower_->run().id;
  follower_->stop();
  progress_.end();
  showProgress();
  updateControls();
  setStatus(tr("No longer following run %1; it goes on in its own process.").arg(run));
}

qint64 TrainingView::followedRun() const {
  return follower_->active() ? follower_->run().id : 0;
}

bool TrainingView::live() const {
  return isRunning() || follower_->active();
}

void TrainingView::pause() {
  if (state() != TrainingController::State::Preparing &&
      state() != TrainingController::State::Running)
    return;
  controller_->pause();
  setStatus(tr("Pausing after the current step…"));
}

void TrainingView::resume() {
  if (state() != TrainingController::State::Paused) return;
  controller_->resume();
  setStatus(tr("Training…"));
}

void TrainingView::stop() {
  if (!controller_->canStop()) return;
  controller_->stop();
  setStatus(tr("Stopping after the step on its way…"));
}

CurvePlot* TrainingView::lossPlot() const {
  return charts_->lossPlot();
}

QString TrainingView::statusText() const {
  return status_->text();
}

QString TrainingView::errorText() const {
  return error_->text();
}

QString TrainingView::storeBannerText() const {
  return storeBanner_->isHidden() ? QString() : storeBanner_->text();
}

void TrainingView::setStatus(const QString& text) {
  status_->setText(text);
  emit status(text);
}

void TrainingView::setError(const QString& text) {
  error_->setText(text);
  error_->setVisible(!text.isEmpty());
}

void TrainingView::updateControls() {
  using State = TrainingController::State;
  const State s = state();
  const bool idle = s == State::Idle;
  train_->setEnabled(idle && project_.has_value() && trainBlocked_.isEmpty());
  train_->setToolTip(trainBlocked_.isEmpty() ? tr("Train the project with these settings")
                                             : trainBlocked_);
  pause_->setEnabled(controller_->canPauseOrResume());
  pause_->setText(s == State::Paused ? tr("Resume") : tr("Pause"));
  stop_->setEnabled(controller_->canStop());
  unfollow_->setVisible(follower_->active());
  for (QWidget* w :
       std::initializer_list<QWidget*>{epochs_, maxSteps_, validate_, checkpointDir_,
                                       chooseCheckpointDir_, resumePath_, chooseResume_})
    w->setEnabled(idle);
  evalEma_->setEnabled(idle && project_ && project_->training.ema);
}

void TrainingView::onStarted(qint64 runId, const QString& description) {
  // "#": the run store numbers every run, of every project; "Run 2 of
  // lenet-fashion" read as lenet-fashion's second run.
  caption_->setText(tr("%1, run #%2").arg(runProject_).arg(runId));
  setStatus(tr("Run %1: %2").arg(runId).arg(description));
  emit runStarted(runId);
}

void TrainingView::onSteps(const std::vector<StepSample>& steps) {
  for (const StepSample& s : steps) progress_.add(s);
  charts_->addSteps(steps);
  showProgress();
}

void TrainingView::showProgress() {
  const int64_t total = progress_.total();
  if (total < 0) {
    // Busy until the first step says how long an epoch is; empty after a
    // run that never took one.
    progressBar_->setRange(0, live() ? 0 : 1);
    progressBar_->setValue(0);
    setProgressText(live() ? progress_.text() : QString());
    return;
  }
  // QProgressBar counts in int.
  const double scale =
      total > std::numeric_limits<int>::max()
          ? static_cast<double>(std::numeric_limits<int>::max()) / static_cast<double>(total)
          : 1.0;
  progressBar_->setRange(
      0, static_cast<int>(static_cast<double>(std::max<int64_t>(total, 1)) * scale));
  progressBar_->setValue(
      static_cast<int>(static_cast<double>(std::min(progress_.done(), total)) * scale));
  setProgressText(progress_.text());
}

void TrainingView::setProgressText(const QString& text) {
  // The text has no %p, %v or %m for the bar to replace.
  progressBar_->setFormat(text);
}

void TrainingView::onEpoch(const EpochReport& e) {
  charts_->addEpoch(e);
  if (!e.validated || e.confusion.empty()) return;
  confusion_->setMatrix(e.confusion, class_names(runDataset_));
  validationCaption_->setText(tr("After epoch %1: top-1 %2%, top-5 %3%, loss %4 (%5 samples)")
                                  .arg(e.epoch + 1)
                                  .arg(100 * e.val_top1, 0, 'f', 2)
                                  .arg(100 * e.val_top5, 0, 'f', 2)
                                  .arg(e.val_loss, 0, 'f', 4)
                                  .arg(confusion_->total()));
  pages_->setTabText(
      1, tr("Validation (epoch %1: top-1 %2%)").arg(e.epoch + 1).arg(100 * e.val_top1, 0, 'f', 1));
}

void TrainingView::onEnded(const TrainingOutcome& o) {
  charts_->flush();
  QString text;
  if (o.failed) {
    text = o.run_id ? tr("Run %1 failed.").arg(o.run_id) : tr("Training did not start.");
    setError(o.error);
  } else if (o.run_id == 0) {
    text = tr("Stopped before training began.");
  } else {
    text = o.stopped ? tr("Run %1 stopped after step %2.").arg(o.run_id).arg(o.steps)
                     : tr("Run %1 finished: %2 steps.").arg(o.run_id).arg(o.steps);
    if (!o.init_from.isEmpty())
      text += QLatin1Char(' ') +
              tr("It started from %1 (%2 taken).")
                  .arg(o.init_from, count_text(o.init_loaded, tr("%1 tensor"), tr("%1 tensors")));
    if (!o.checkpoints.isEmpty())
      text += QLatin1Char(' ') + tr("Last checkpoint: %1").arg(o.checkpoints.back());
    if (!o.final_weights.isEmpty())
      text += QLatin1Char(' ') +
              tr("Its final weights: %1 (Run > Try the Model).").arg(o.final_weights);
    else if (!o.final_weights_error.isEmpty())
      text +=
          QLatin1Char(' ') + tr("Its final weights were not kept: %1").arg(o.final_weights_error);
  }
  if (!o.record_warning.isEmpty())
    text += QLatin1Char(' ') +
            tr("Warning: the run store did not take everything: %1").arg(o.record_warning);
  const QString how = o.failed ? tr("failed") : o.stopped ? tr("stopped") : tr("finished");
  progress_.end();
  caption_->setText(
      o.run_id
          ? tr("%1, run #%2 (%3, %4 steps)").arg(runProject_).arg(o.run_id).arg(how).arg(o.steps)
          : tr("%1: training did not start").arg(runProject_));
  showProgress();
  setStatus(text);
  if (o.failed) emit runFailed(o.error);
  if (o.run_id) emit runEnded(o.run_id);
}

}  // namespace tr::gui
