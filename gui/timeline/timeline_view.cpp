// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline view: caption, toolbar with the step choice, legend, lanes and
// overlap statistics.
#include "timeline/timeline_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPainter>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include <renaissance/profile_export.h>
#include "timeline/bar_kind.h"
#include "timeline/profile_steps.h"
#include "timeline/time_ticks.h"
#include "timeline/timeline_canvas.h"
#include "timeline/trace_import.h"
#include "widgets/count_text.h"

namespace tr::gui {

namespace {

// One wrapping line of coloured squares and names: as a row of widgets it
// made the view wider than the window has room for beside the docks.
QWidget* legend(QWidget* parent) {
  QStringList entries;
  for (int k = 0; k < kNumBarKinds; ++k) {
    const BarKind kind = static_cast<BarKind>(k);
    entries << QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2")
                   .arg(bar_kind_color(kind).name(), bar_kind_name(kind).toHtmlEscaped());
  }
  auto* label = new QLabel(entries.join(QStringLiteral(" &nbsp; ")), parent);
  label->setObjectName(QStringLiteral("timelineLegend"));
  label->setTextFormat(Qt::RichText);
  label->setWordWrap(true);
  return label;
}

}  // namespace

TimelineView::TimelineView(QWidget* parent)
    : QWidget(parent),
      pages_(new QStackedWidget(this)),
      empty_(new QLabel(this)),
      caption_(new QLabel(this)),
      step_choice_(new QComboBox(this)),
      summary_(new QLabel(this)),
      range_(new QLabel(this)),
      fit_(new QPushButton(tr("Fit"), this)),
      // Short, so the toolbar fits beside the docks on a 1280-pixel screen;
      // the tooltips say which format.
      export_(new QPushButton(tr("Export Trace…"), this)),
      open_(new QPushButton(tr("Open Trace…"), this)),
      canvas_(new TimelineCanvas(this)),
      overlaps_(new QPlainTextEdit(this)) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(pages_);

  auto* emptyPage = new QWidget(pages_);
  auto* emptyLayout = new QVBoxLayout(emptyPage);
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);
  empty_->setText(
      tr("No profile yet.\n\nProfile a few steps from the Training view or with "
         "`renaissance-cli train --trace trace.json`, and open that trace here."));
  auto* openEmpty = new QPushButton(tr("Open Chrome trace…"), emptyPage);
  emptyLayout->addStretch(1);
  emptyLayout->addWidget(empty_);
  emptyLayout->addWidget(openEmpty, 0, Qt::AlignHCenter);
  emptyLayout->addStretch(1);
  pages_->addWidget(emptyPage);

  auto* page = new QWidget(pages_);
  auto* layout = new QVBoxLayout(page);
  QFont captionFont = caption_->font();
  captionFont.setBold(true);
  caption_->setFont(captionFont);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(caption_);
  // The summary has a line of its own (it wraps rather than widening the
  // window); the controls follow on the next.
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  auto* bar = new QHBoxLayout;
  step_choice_->setToolTip(tr("Show the bars of one profiled step, or of all of them"));
  step_choice_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  bar->addWidget(step_choice_);
  bar->addWidget(range_);
  // Room for the widest range text, so the toolbar does not jump while zooming.
  range_->setMinimumWidth(
      range_->fontMetrics().horizontalAdvance(QStringLiteral("showing 888.88 ms to 888.88 ms  ")));
  fit_->setToolTip(tr("Show the whole profile (0)"));
  open_->setToolTip(
      tr("Open a Chrome trace (JSON) that renaissance-cli train --trace, this view "
         "or another tool wrote"));
  export_->setToolTip(
      tr("Write the spans of all profiled steps as Chrome trace JSON (Perfetto, "
         "chrome://tracing)"));
  bar->addStretch(1);
  bar->addWidget(fit_);
  bar->addWidget(open_);
  bar->addWidget(export_);
  layout->addLayout(bar);
  layout->addWidget(legend(page));

  auto* split = new QSplitter(Qt::Vertical, page);
  auto* scroll = new QScrollArea(split);
  scroll->setWidget(canvas_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // time scrolls by panning
  split->addWidget(scroll);
  overlaps_->setReadOnly(true);
  overlaps_->setPlaceholderText(tr("Overlap statistics"));
  split->addWidget(overlaps_);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);
  pages_->addWidget(page);

  connect(fit_, &QPushButton::clicked, this, &TimelineView::fit);
  connect(export_, &QPushButton::clicked, this, &TimelineView::chooseExport);
  connect(open_, &QPushButton::clicked, this, &TimelineView::chooseOpen);
  connect(openEmpty, &QPushButton::clicked, this, &TimelineView::chooseOpen);
  connect(step_choice_, &QComboBox::currentIndexChanged, this, [this](int index) {
    const QVariant step = step_choice_->itemData(index);
    showStep(step.isValid() ? std::optional<int64_t>(step.toLongLong()) : std::nullopt);
  });
  connect(canvas_, &TimelineCanvas::barClicked, this, &TimelineView::onBarClicked);
  connect(canvas_, &TimelineCanvas::visibleRangeChanged, this, &TimelineView::showRange);
  connect(canvas_, &TimelineCanvas::hovered, this, [this](const QString& text) {
    if (!text.isEmpty()) emit status(text.section('\n', 0, 0));
  });
  clear();
}

TimelineView::~TimelineView() {
  // The canvas is deleted after model_ and may repaint while being hidden.
  canvas_->setModel(nullptr);
}

void TimelineView::setProfile(std::vector<ProfileSpan> spans,
                              std::shared_ptr<const CompiledPlan> cp, ProfileOrigin origin) {
  cp_ = std::move(cp);
  // Spans from training come with the project they were profiled with.
  if (origin.project.isEmpty() && origin.trace_file.isEmpty() && cp_)
    origin.project = QString::fromStdString(cp_->project().name);
  QString problems;
  if (!showProfile(std::move(spans), std::move(origin), &problems)) {
    clear();
    if (!problems.isEmpty()) emit status(tr("Nothing to draw in this profile: %1").arg(problems));
  }
}

bool TimelineView::showProfile(std::vector<ProfileSpan> spans, ProfileOrigin origin,
                               QString* problems) {
  TimelineModel model(spans, cp_.get());
  if (model.empty()) {
    *problems = model.problems();
    return false;
  }
  profile_ = std::move(spans);
  origin_ = std::move(origin);
  steps_ = model.steps();
  unknown_steps_ = model.hasUnknownSteps();
  shown_step_.reset();
  fillStepChoice();
  showModel(std::move(model));
  return true;
}

void TimelineView::fillStepChoice() {
  const QSignalBlocker block(step_choice_);
  step_choice_->clear();
  step_choice_->addItem(tr("All profiled steps"));
  for (int64_t step : steps_)
    step_choice_->addItem(tr("Step %1").arg(step), QVariant::fromValue<qlonglong>(step));
  // One step, or none known (an older trace): nothing to choose.
  step_choice_->setHidden(steps_.size() < 2);
}

bool TimelineView::showStep(std::optional<int64_t> step) {
  if (!hasProfile()) return false;
  if (step && !std::binary_search(steps_.begin(), steps_.end(), *step)) return false;
  shown_step_ = step;
  {
    const QSignalBlocker block(step_choice_);
    step_choice_->setCurrentIndex(
        step ? step_choice_->findData(QVariant::fromValue<qlonglong>(*step)) : 0);
  }
  showModel(shownModel());
  return true;
}

TimelineModel TimelineView::shownModel() const {
  return TimelineModel(shown_step_ ? spans_of_step(profile_, *shown_step_) : profile_, cp_.get());
}

void TimelineView::showModel(TimelineModel model) {
  canvas_->setModel(nullptr);
  model_ = std::move(model);
  canvas_->setModel(&model_);
  canvas_->setHighlightedLayers(std::vector<int>(highlighted_.begin(), highlighted_.end()));
  std::set<int> ranks;
  for (const TimelineLane& l : model_.lanes()) ranks.insert(l.rank);
  QString summary =
      tr("%1 on %2 over %3")
          .arg(count_text(static_cast<qint64>(model_.bars().size()), tr("%1 span"), tr("%1 spans")),
               count_text(static_cast<qint64>(ranks.size()), tr("%1 rank"), tr("%1 ranks")),
               duration_text(model_.durationUs()));
  if (!cp_) summary += tr(" · no compiled project: bars have no layers");
  if (!model_.problems().isEmpty()) summary += QStringLiteral(" · ") + model_.problems();
  summary_->setText(summary);
  ProfileContents contents;
  contents.steps = steps_;
  contents.unknown_steps = unknown_steps_;
  contents.shown = shown_step_;
  contents.ranks.assign(ranks.begin(), ranks.end());
  caption_->setText(profile_caption(origin_, contents));
  caption_->setToolTip(origin_.trace_file);
  overlaps_->setPlainText(model_.overlapText());
  export_->setEnabled(true);
  fit_->setEnabled(true);
  pages_->setCurrentIndex(1);
  showRange(canvas_->visibleStart(), canvas_->visibleEnd());
}

void TimelineView::setCompiled(std::shared_ptr<const CompiledPlan> cp) {
  if (cp == cp_) return;
  cp_ = std::move(cp);
  if (!hasProfile()) return;
  const double t0 = visibleStart(), t1 = visibleEnd();
  showModel(shownModel());
  canvas_->setVisibleRange(t0, t1);  // same spans, same times: keep the user's place
}

void TimelineView::clear() {
  canvas_->setModel(nullptr);
  model_ = TimelineModel();
  profile_.clear();
  origin_ = ProfileOrigin();
  steps_.clear();
  unknown_steps_ = false;
  shown_step_.reset();
  {
    const QSignalBlocker block(step_choice_);
    step_choice_->clear();
  }
  step_choice_->setHidden(true);
  caption_->clear();
  caption_->setToolTip(QString());
  summary_->clear();
  range_->clear();
  overlaps_->clear();
  export_->setEnabled(false);
  fit_->setEnabled(false);
  pages_->setCurrentIndex(0);
}

void TimelineView::highlightLayers(const QList<int>& layers) {
  highlighted_ = layers;
  canvas_->setHighlightedLayers(std::vector<int>(layers.begin(), layers.end()));
}

void TimelineView::fit() {
  canvas_->fit();
}

double TimelineView::visibleStart() const {
  return canvas_->visibleStart();
}
double TimelineView::visibleEnd() const {
  return canvas_->visibleEnd();
}
int TimelineView::barAt(QPoint canvasPos) const {
  return canvas_->barAt(canvasPos);
}
QString TimelineView::overlapText() const {
  return overlaps_->toPlainText();
}
QString TimelineView::summaryText() const {
  return summary_->text();
}
QString TimelineView::captionText() const {
  return caption_->text();
}
QString TimelineView::emptyText() const {
  return empty_->text();
}

bool TimelineView::exportChromeTrace(const QString& path, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (profile_.empty()) return fail(tr("Nothing to export: profile a few steps first"));
  if (path.isEmpty()) return fail(tr("Nothing written: no file name given"));
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly))
    return fail(tr("Cannot write %1: %2").arg(path, f.errorString()));
  // Every profiled step, whichever is shown: the trace keeps each span's step.
  const std::string json = chrome_trace_json(profile_);
  f.write(json.data(), static_cast<qint64>(json.size()));
  if (!f.commit()) return fail(tr("Cannot write %1: %2").arg(path, f.errorString()));
  return true;
}

bool TimelineView::openChromeTrace(const QString& path, QString* error) {
  std::vector<ProfileSpan> spans;
  if (!read_chrome_trace(path, spans, error)) return false;
  ProfileOrigin origin;
  origin.trace_file = path;
  QString problems;
  if (!showProfile(std::move(spans), std::move(origin), &problems)) {
    if (error) *error = tr("%1 has no span that can be drawn: %2").arg(path, problems);
    return false;
  }
  return true;
}

void TimelineView::chooseOpen() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open a Chrome trace"), QString(), tr("Chrome trace JSON (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  QString error;
  if (!openChromeTrace(path, &error))
    QMessageBox::warning(this, tr("Cannot open the trace"), error);
  else
    emit status(tr("Opened %1: %2").arg(path, summaryText()));
}

void TimelineView::chooseExport() {
  const QString name =
      QString::fromStdString(cp_ ? cp_->project().name : std::string("profile")) + "-trace.json";
  const QString path = QFileDialog::getSaveFileName(this, tr("Export the profile as Chrome trace"),
                                                    name, tr("Chrome trace JSON (*.json)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportChromeTrace(path, &error))
    QMessageBox::warning(this, tr("Export failed"), error);
  else
    emit status(
        tr("Chrome trace written to %1 (open it in Perfetto or chrome://tracing)").arg(path));
}

void TimelineView::onBarClicked(int bar) {
  const TimelineBar& b = model_.bars()[static_cast<size_t>(bar)];
  if (b.layer >= 0) {
    emit layerClicked(b.layer);
    emit status(tr("%1 computes %2").arg(model_.label(bar), model_.layerName(b.layer)));
  } else if (!cp_) {
    emit status(tr("%1: no compiled project with this profile, so its layer is unknown")
                    .arg(model_.label(bar)));
  } else {
    emit status(tr("%1 is engine work, not a model layer").arg(model_.label(bar)));
  }
}

void TimelineView::showRange(double t0_us, double t1_us) {
  // The part of the profile in view: the margins around it hold no time,
  // and a negative start would read as a minus sign.
  const double end = std::max(0.0, model_.durationUs());
  range_->setText(tr("showing %1 to %2")
                      .arg(duration_text(std::clamp(t0_us, 0.0, end)),
                           duration_text(std::clamp(t1_us, 0.0, end))));
}

QString TimelineView::rangeText() const {
  return range_->text();
}

}  // namespace tr::gui
