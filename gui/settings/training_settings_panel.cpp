// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingSettingsPanel: the form, its checks and its undo commands.
#include "settings/training_settings_panel.h"

#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStyle>
#include <QUndoStack>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <renaissance/dataset_kinds.h>
#include <renaissance/project_limits.h>
#include "settings/real_spin_box.h"
#include "settings/set_training_command.h"
#include "widgets/tone.h"

namespace tr::gui {

namespace {

// The loader's limits, so every value the panel accepts also loads back.
constexpr int kMaxEpochs = static_cast<int>(limits::kMaxEpochs);
constexpr int kMaxBatch = static_cast<int>(limits::kMaxBatch);
constexpr int kMaxPadding = static_cast<int>(limits::kMaxPadding);
constexpr int kMaxExtent = static_cast<int>(limits::kMaxExtent);
constexpr int kMaxClasses = static_cast<int>(limits::kMaxFeatures);
constexpr int kMaxSamples = static_cast<int>(limits::kMaxSamples);
constexpr double kHuge = std::numeric_limits<double>::max();
// The loader's "> 0" and "< 1" as closed spin box ranges.
constexpr double kTiny = 1e-300;
const double kBelowOne = std::nextafter(1.0, 0.0);

QString shortest(double v) {
  return RealSpinBox::text(v, QLocale::c());
}

QString values_text(const QVariantList& values) {
  QStringList parts;
  for (const QVariant& v : values) parts << shortest(v.toDouble());
  return parts.join(QStringLiteral(", "));
}

QVariantList to_list(const std::vector<double>& values) {
  QVariantList out;
  for (double v : values) out << v;
  return out;
}

std::vector<double> from_list(const QVariant& value) {
  std::vector<double> out;
  for (const QVariant& v : value.toList()) out.push_back(v.toDouble());
  return out;
}

// Typed text as the loader's messages show a value: numbers bare, anything
// else quoted.
QString describe(const QString& text) {
  static const QRegularExpression number(
      QStringLiteral("^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"));
  return number.match(text).hasMatch() ? text : QLatin1Char('"') + text + QLatin1Char('"');
}

// Switching kinds: a kind read from files has one shape and size, and its
// usual statistics come with it; synthetic data has no folder.
void set_dataset_kind(DatasetSpec& d, int kind) {
  d.kind = static_cast<DatasetKind>(kind);
  const DatasetKindInfo& info = dataset_kind_info(d.kind);
  if (!info.files) d.path.clear();
  if (d.kind != DatasetKind::ImageFolder) d.val_path.clear();
  // A kind whose shape the project says keeps the one it had.
  if (!info.fixed_shape) return;
  d.height = info.height;
  d.width = info.width;
  d.classes = info.classes;
  d.train_size = info.train_size;
  d.val_size = info.val_size;
  d.channels = info.channels;
  d.mean.assign(info.mean, info.mean + info.channels);
  d.std.assign(info.std, info.std + info.channels);
}

// The statistics keep one value per channel: new channels repeat the first.
void set_dataset_channels(DatasetSpec& d, int64_t channels) {
  d.channels = channels;
  for (std::vector<double>* v : {&d.mean, &d.std}) {
    const double first = v->empty() ? 0.5 : v->front();
    v->resize(static_cast<size_t>(channels), first);
  }
}

QString batch_problem(const TrainingSpec& t) {
  const int ranks = t.devices.world_size();
  if (ranks <= 0 || t.global_batch % ranks == 0) return {};
  // Word for word the loader's message, so the panel and a file load agree.
  return QString::fromStdString("global_batch " + std::to_string(t.global_batch) +
                                " is not divisible by the " + std::to_string(ranks) + " ranks of " +
                                t.devices.str() + "; every rank takes the same share");
}

// The loader's checks of dataset.mean and dataset.std against the channels.
QString values_problem(const std::vector<double>& values, int64_t channels, const char* key,
                       bool positive) {
  if (values.empty())
    return QStringLiteral("expected an array of numbers, one per channel, got []");
  if (positive) {
    for (size_t i = 0; i < values.size(); ++i)
      if (!(values[i] > 0))
        return QStringLiteral("dataset.%1[%2]: expected a number > 0, got %3")
            .arg(QLatin1String(key))
            .arg(i)
            .arg(shortest(values[i]));
  }
  if (values.size() != static_cast<size_t>(channels))
    return QStringLiteral("expected %1 value%2 (one per channel), got %3")
        .arg(channels)
        .arg(channels == 1 ? QString() : QStringLiteral("s"))
        .arg(values.size());
  return {};
}

}  // namespace

TrainingSettingsPanel::TrainingSettingsPanel(ProjectDocument* doc, QWidget* parent)
    : QWidget(parent), doc_(doc) {
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  // Rows scroll; a row never does: the panel is as wide as its widest row
  // needs, and rows wrap (the editor under its label) before that.
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* host = new QWidget(scroll);
  buildForm(host);
  scroll->setWidget(host);
  host_ = host;
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scroll);

  connect(doc_, &ProjectDocument::projectReset, this, [this] { refresh(true); });
  // Undo and redo of settings and of devices come through here as well.
  connect(doc_, &ProjectDocument::settingsChanged, this, [this] { refresh(false); });
  refresh(true);
}

QSize TrainingSettingsPanel::minimumSizeHint() const {
  return {host_->minimumSizeHint().width() + style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 4,
          120};
}

QWidget* TrainingSettingsPanel::fieldEditor(const QString& key) const {
  const Field* f = find(key);
  return f ? f->editor : nullptr;
}

QString TrainingSettingsPanel::fieldLabel(const QString& key) const {
  const Field* f = find(key);
  return f ? f->label : QString();
}

QString TrainingSettingsPanel::fieldMessage(const QString& key) const {
  const Field* f = find(key);
  return f && !f->message->isHidden() ? f->message->text() : QString();
}

void TrainingSettingsPanel::commitPendingEdits() {
  for (Field& f : fields_) {
    // Emits valueChanged, and so commits, when the typed text differs.
    if (auto* spin = qobject_cast<QAbstractSpinBox*>(f.editor)) spin->interpretText();
    if (f.kind == Kind::Text || f.kind == Kind::Seed || f.kind == Kind::List) commit(f);
  }
}

bool TrainingSettingsPanel::eventFilter(QObject* watched, QEvent* event) {
  // A wheel over a spin box or choice the user did not click into scrolls
  // the form instead of changing a setting on the way past.
  if (event->type() == QEvent::Wheel) {
    auto* w = qobject_cast<QWidget*>(watched);
    if (w && !w->hasFocus()) {
      event->ignore();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

TrainingSettingsPanel::Field& TrainingSettingsPanel::addField(QFormLayout* form, Kind kind,
                                                              QWidget* editor, const QString& key,
                                                              const QString& label,
                                                              const QString& what,
                                                              const QString& tip) {
  Field& f = fields_.emplace_back();
  f.key = key;
  f.what = what;
  // A check box carries its own text instead of a label beside it.
  auto* box = qobject_cast<QCheckBox*>(editor);
  f.label = label.isEmpty() && box ? box->text() : label;
  f.kind = kind;
  f.editor = editor;
  f.form = form;
  editor->setObjectName(key);
  editor->setToolTip(tip);
  if (qobject_cast<QAbstractSpinBox*>(editor) || qobject_cast<QComboBox*>(editor)) {
    editor->setFocusPolicy(Qt::StrongFocus);
    editor->installEventFilter(this);
  }

  f.row = new QWidget(form->parentWidget());
  auto* column = new QVBoxLayout(f.row);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(2);
  editor->setParent(f.row);
  column->addWidget(editor);
  f.message = new QLabel(f.row);
  f.message->setObjectName(key + QStringLiteral(".message"));
  f.message->setWordWrap(true);
  f.message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  set_tone(f.message, Tone::Error);
  f.message->hide();
  column->addWidget(f.message);

  auto* name = new QLabel(label, form->parentWidget());
  name->setBuddy(editor);
  name->setToolTip(tip);
  form->addRow(name, f.row);

  switch (kind) {
    case Kind::Int:
      connect(static_cast<QSpinBox*>(editor), &QSpinBox::valueChanged, this,
              [this, &f] { commit(f); });
      connect(static_cast<QSpinBox*>(editor), &QSpinBox::editingFinished, this,
              [this, &f] { commit(f); });
      break;
    case Kind::Real:
      connect(static_cast<QDoubleSpinBox*>(editor), &QDoubleSpinBox::valueChanged, this,
              [this, &f] { commit(f); });
      connect(static_cast<QDoubleSpinBox*>(editor), &QDoubleSpinBox::editingFinished, this,
              [this, &f] { commit(f); });
      break;
    case Kind::Bool:
      connect(static_cast<QCheckBox*>(editor), &QCheckBox::toggled, this,
              [this, &f] { commit(f); });
      break;
    case Kind::Choice:
      connect(static_cast<QComboBox*>(editor), &QComboBox::currentIndexChanged, this,
              [this, &f] { commit(f); });
      break;
    case Kind::Text:
    case Kind::Seed:
    case Kind::List:
      connect(static_cast<QLineEdit*>(editor), &QLineEdit::editingFinished, this,
              [this, &f] { commit(f); });
      break;
  }
  return f;
}

void TrainingSettingsPanel::buildForm(QWidget* host) {
  auto* column = new QVBoxLayout(host);
  auto group = [&](const QString& title) {
    auto* box = new QGroupBox(title, host);
    auto* form = new QFormLayout(box);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    column->addWidget(box);
    return form;
  };
  // Editors: one value a change, not one a keystroke; the panel commits on
  // Enter, on leaving the field, on each arrow step (merged into one undo step).
  auto intBox = [&](int min, int max) {
    auto* box = new QSpinBox(host);
    box->setRange(min, max);
    box->setKeyboardTracking(false);
    return box;
  };
  // `step` 0: steps of a tenth of the value's decade, for values spanning decades.
  auto realBox = [&](double min, double max, double step) {
    auto* box = new RealSpinBox(host);
    box->setRange(min, max);
    box->setKeyboardTracking(false);
    if (step > 0) {
      box->setSingleStep(step);
    } else {
      box->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
      box->setSingleStep(1e-4);  // the first step from 0
    }
    return box;
  };
  auto choice = [&](const std::vector<std::pair<QString, int>>& items) {
    auto* box = new QComboBox(host);
    for (const auto& [text, value] : items) box->addItem(text, value);
    return box;
  };
  auto check = [&](const QString& text) { return new QCheckBox(text, host); };
  auto line = [&] { return new QLineEdit(host); };

  auto real = [](double OptimizerSpec::*m) {
    return std::pair{std::function<QVariant(const ProjectSettings&)>([m](const ProjectSettings& s) {
                       return QVariant(s.training.optimizer.*m);
                     }),
                     std::function<void(ProjectSettings&, const QVariant&)>(
                         [m](ProjectSettings& s, const QVariant& v) {
                           s.training.optimizer.*m = v.toDouble();
                         })};
  };
  auto optimizerIs = [](std::initializer_list<OptimizerKind> kinds) {
    std::vector<OptimizerKind> k(kinds);
    return [k](const ProjectSettings& s) {
      return std::find(k.begin(), k.end(), s.training.optimizer.kind) != k.end();
    };
  };
  auto scheduleIs = [](ScheduleKind kind) {
    return [kind](const ProjectSettings& s) { return s.training.schedule.kind == kind; };
  };

  // Project
  QFormLayout* form = group(tr("Project"));
  {
    Field& f = addField(form, Kind::Text, line(), QStringLiteral("name"), tr("Name"), tr("name"),
                        tr("The project's name; not empty"));
    f.get = [](const ProjectSettings& s) { return QVariant(QString::fromStdString(s.name)); };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.name = v.toString().toStdString(); };
    f.check = [](const ProjectSettings& s) {
      return s.name.empty() ? QStringLiteral(R"(expected a non-empty string, got "")") : QString();
    };
  }
  {
    Field& f = addField(form, Kind::Text, line(), QStringLiteral("description"), tr("Description"),
                        tr("description"), tr("What the project is for; may be empty"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(QString::fromStdString(s.description));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.description = v.toString().toStdString();
    };
  }

  // Optimizer. Every optimizer keeps every field: the file stores them all,
  // so switching to Adam and back loses nothing.
  form = group(tr("Optimizer"));
  {
    Field& f = addField(form, Kind::Choice,
                        choice({{tr("SGD"), static_cast<int>(OptimizerKind::SGD)},
                                {tr("Adam"), static_cast<int>(OptimizerKind::Adam)},
                                {tr("LARS"), static_cast<int>(OptimizerKind::LARS)}}),
                        QStringLiteral("training.optimizer.type"), tr("Optimizer"), tr("optimizer"),
                        tr("SGD with momentum, Adam, or LARS (layer-wise trust ratio)"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(static_cast<int>(s.training.optimizer.kind));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.training.optimizer.kind = static_cast<OptimizerKind>(v.toInt());
    };
  }
  struct RealSpec {
    const char* key;
    QString label, what, tip;
    double min, max, step;
    double OptimizerSpec::*member;
    std::function<bool(const ProjectSettings&)> applies;
  };
  const RealSpec optimizerFields[] = {
      {"training.optimizer.lr", tr("Learning rate"), tr("learning rate"),
       tr("Peak learning rate: a number > 0"), kTiny, kHuge, 0, &OptimizerSpec::lr, nullptr},
      {"training.optimizer.momentum", tr("Momentum"), tr("momentum"), tr("A number in [0, 1)"), 0,
       kBelowOne, 0.01, &OptimizerSpec::momentum,
       optimizerIs({OptimizerKind::SGD, OptimizerKind::LARS})},
      {"training.optimizer.weight_decay", tr("Weight decay"), tr("weight decay"),
       tr("L2 penalty: a number >= 0"), 0, kHuge, 0, &OptimizerSpec::weight_decay, nullptr},
      {"training.optimizer.beta1", tr("Beta 1"), tr("beta 1"),
       tr("Decay of Adam's first moment: a number in [0, 1)"), 0, kBelowOne, 0.01,
       &OptimizerSpec::beta1, optimizerIs({OptimizerKind::Adam})},
      {"training.optimizer.beta2", tr("Beta 2"), tr("beta 2"),
       tr("Decay of Adam's second moment: a number in [0, 1)"), 0, kBelowOne, 0.001,
       &OptimizerSpec::beta2, optimizerIs({OptimizerKind::Adam})},
      {"training.optimizer.eps", tr("Epsilon"), tr("Adam epsilon"),
       tr("Added to Adam's denominator: a number > 0"), kTiny, kHuge, 0, &OptimizerSpec::adam_eps,
       optimizerIs({OptimizerKind::Adam})},
      {"training.optimizer.trust_coefficient", tr("Trust coefficient"), tr("trust coefficient"),
       tr("Scales LARS's layer-wise trust ratio: a number > 0"), kTiny, kHuge, 0,
       &OptimizerSpec::trust_coefficient, optimizerIs({OptimizerKind::LARS})},
  };
  for (const RealSpec& r : optimizerFields) {
    Field& f = addField(form, Kind::Real, realBox(r.min, r.max, r.step), QString::fromLatin1(r.key),
                        r.label, r.what, r.tip);
    std::tie(f.get, f.set) = real(r.member);
    f.applies = r.applies;
    if (r.member == &OptimizerSpec::momentum) {
      // Nesterov sits under the momentum it modifies.
      Field& n = addField(form, Kind::Bool, check(tr("Nesterov momentum")),
                          QStringLiteral("training.optimizer.nesterov"), QString(),
                          tr("Nesterov momentum"), tr("SGD only: look ahead along the momentum"));
      n.get = [](const ProjectSettings& s) { return QVariant(s.training.optimizer.nesterov); };
      n.set = [](ProjectSettings& s, const QVariant& v) {
        s.training.optimizer.nesterov = v.toBool();
      };
      n.applies = optimizerIs({OptimizerKind::SGD});
    }
  }

  // Schedule
  form = group(tr("Schedule"));
  {
    Field& f = addField(form, Kind::Choice,
                        choice({{tr("Constant"), static_cast<int>(ScheduleKind::Constant)},
                                {tr("Step"), static_cast<int>(ScheduleKind::Step)},
                                {tr("Cosine"), static_cast<int>(ScheduleKind::Cosine)}}),
                        QStringLiteral("training.schedule.type"), tr("Schedule"), tr("schedule"),
                        tr("Learning rate over the run: constant, decayed in steps, or cosine"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(static_cast<int>(s.training.schedule.kind));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.training.schedule.kind = static_cast<ScheduleKind>(v.toInt());
    };
  }
  {
    Field& f = addField(form, Kind::Real, realBox(0, kHuge, 1),
                        QStringLiteral("training.schedule.warmup_epochs"), tr("Warm-up epochs"),
                        tr("warm-up epochs"),
                        tr("Epochs of linear ramp from 0 to the learning rate: a number >= 0"));
    f.get = [](const ProjectSettings& s) { return QVariant(s.training.schedule.warmup_epochs); };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.training.schedule.warmup_epochs = v.toDouble();
    };
  }
  {
    Field& f = addField(form, Kind::Real, realBox(0, kHuge, 0),
                        QStringLiteral("training.schedule.min_lr"), tr("Final learning rate"),
                        tr("final learning rate"), tr("Where the cosine ends: a number >= 0"));
    f.get = [](const ProjectSettings& s) { return QVariant(s.training.schedule.min_lr); };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.training.schedule.min_lr = v.toDouble();
    };
    f.applies = scheduleIs(ScheduleKind::Cosine);
  }
  {
    Field& f = addField(form, Kind::Int, intBox(1, kMaxEpochs),
                        QStringLiteral("training.schedule.step_epochs"), tr("Decay every"),
                        tr("decay interval"), tr("Epochs between decays: a positive integer"));
    static_cast<QSpinBox*>(f.editor)->setSuffix(tr(" epochs"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(static_cast<qlonglong>(s.training.schedule.step_epochs));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.training.schedule.step_epochs = v.toLongLong();
    };
    f.applies = scheduleIs(ScheduleKind::Step);
  }
  {
    Field& f =
        addField(form, Kind::Real, realBox(kTiny, kHuge, 0),
                 QStringLiteral("training.schedule.gamma"), tr("Decay factor"), tr("decay factor"),
                 tr("What each decay multiplies the learning rate by: a number > 0"));
    f.get = [](const ProjectSettings& s) { return QVariant(s.training.schedule.gamma); };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.training.schedule.gamma = v.toDouble(); };
    f.applies = scheduleIs(ScheduleKind::Step);
  }

  // Run
  form = group(tr("Run"));
  {
    Field& f = addField(form, Kind::Int, intBox(1, kMaxEpochs), QStringLiteral("training.epochs"),
                        tr("Epochs"), tr("epochs"), tr("Passes over the training set"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(static_cast<qlonglong>(s.training.epochs));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.training.epochs = v.toLongLong(); };
  }
  {
    Field& f =
        addField(form, Kind::Int, intBox(1, kMaxBatch), QStringLiteral("training.global_batch"),
                 tr("Global batch"), tr("global batch"),
                 tr("Samples per step over all ranks; divides by the number of ranks"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(static_cast<qlonglong>(s.training.global_batch));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.training.global_batch = v.toLongLong(); };
    f.check = [](const ProjectSettings& s) { return batch_problem(s.training); };
  }
  {
    Field& f =
        addField(form, Kind::Seed, line(), QStringLiteral("training.seed"), tr("Seed"), tr("seed"),
                 tr("Initial weights, shuffling and augmentation: a non-negative integer"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(static_cast<qulonglong>(s.training.seed));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.training.seed = v.toULongLong(); };
  }
  {
    auto* edit = line();
    edit->setPlaceholderText(tr("none: fresh weights from the seed"));
    Field& f = addField(form, Kind::Text, edit, QStringLiteral("training.init_from"),
                        tr("Start from weights"), tr("starting weights"),
                        tr("A checkpoint to start from, wherever a layer's weights fit by name "
                           "and shape (fine-tuning: an imported model's weights, a run's final "
                           "weights); relative to the project's folder; empty: fresh weights"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(QString::fromStdString(s.training.init_from));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.training.init_from = v.toString().trimmed().toStdString();
    };
    auto* browse = new QPushButton(tr("Browse…"), host);
    browse->setObjectName(QStringLiteral("training.init_from.browse"));
    browse->setToolTip(tr("Choose a checkpoint (.ckpt) to start from"));
    besideEditor(f, browse);
    connect(browse, &QPushButton::clicked, this, [this, &f, edit] {
      const QString file = QFileDialog::getOpenFileName(
          this, tr("Start from weights"), edit->text(), tr("Checkpoints (*.ckpt);;All files (*)"));
      if (file.isEmpty()) return;
      edit->setText(file);
      commit(f);
    });
  }
  {
    Field& f = addField(form, Kind::Bool, check(tr("Average of the weights (EMA)")),
                        QStringLiteral("training.ema.enabled"), tr("EMA"), tr("EMA"),
                        tr("Validate with an exponential moving average of the weights"));
    f.get = [](const ProjectSettings& s) { return QVariant(s.training.ema); };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.training.ema = v.toBool(); };
  }
  {
    Field& f = addField(form, Kind::Real, realBox(kTiny, kBelowOne, 0.001),
                        QStringLiteral("training.ema.decay"), tr("EMA decay"), tr("EMA decay"),
                        tr("Weight of the past in the average: a number in (0, 1)"));
    f.get = [](const ProjectSettings& s) { return QVariant(s.training.ema_decay); };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.training.ema_decay = v.toDouble(); };
    f.applies = [](const ProjectSettings& s) { return s.training.ema; };
  }

  // Precision & ranks
  form = group(tr("Precision && ranks"));
  {
    Field& f = addField(
        form, Kind::Choice,
        choice({{tr("FP32"), static_cast<int>(Precision::FP32)},
                {tr("AMP (mixed FP16/FP32)"), static_cast<int>(Precision::AMP)},
                {tr("BF16 (bfloat16, FP32 master weights)"), static_cast<int>(Precision::BF16)}}),
        QStringLiteral("training.precision"), tr("Precision"), tr("precision"),
        tr("FP32 throughout; AMP: FP16 storage with a loss scale; BF16: "
           "bfloat16 storage with FP32's range, no loss scale"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(static_cast<int>(s.training.precision));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.training.precision = static_cast<Precision>(v.toInt());
    };
  }
  devices_ = new QLabel(host);
  devices_->setObjectName(QStringLiteral("training.devices"));
  devices_->setWordWrap(true);
  devices_->setToolTip(tr("The devices are chosen in the toolbar"));
  form->addRow(tr("Devices"), devices_);
  {
    Field& f = addField(form, Kind::Bool, check(tr("Synchronised BatchNorm")),
                        QStringLiteral("training.sync_batch_norm"), QString(),
                        tr("synchronised BatchNorm"),
                        tr("BatchNorm statistics over the global batch across ranks, instead of "
                           "over each rank's share; no effect with one rank"));
    f.get = [](const ProjectSettings& s) { return QVariant(s.training.sync_batch_norm); };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.training.sync_batch_norm = v.toBool(); };
  }

  // Data
  form = group(tr("Data"));
  {
    std::vector<std::pair<QString, int>> kinds;
    for (const DatasetKindInfo& k : dataset_kinds())
      kinds.emplace_back(QString::fromUtf8(k.title), static_cast<int>(k.kind));
    Field& f = addField(form, Kind::Choice, choice(kinds), QStringLiteral("dataset.kind"),
                        tr("Dataset"), tr("dataset"),
                        tr("Fashion-MNIST, CIFAR-10 or CIFAR-100 from their files, or generated "
                           "images of any shape (for trying a design without data)"));
    f.get = [](const ProjectSettings& s) { return QVariant(static_cast<int>(s.dataset.kind)); };
    f.set = [](ProjectSettings& s, const QVariant& v) { set_dataset_kind(s.dataset, v.toInt()); };
  }
  {
    auto* edit = line();
    datasetFolder_ = edit;
    Field& f = addField(form, Kind::Text, edit, QStringLiteral("dataset.path"), tr("Folder"),
                        tr("dataset folder"),
                        tr("The folder holding the dataset's files (Fashion-MNIST's four IDX "
                           "files, CIFAR's binary batches); empty: the default location"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(QString::fromStdString(s.dataset.path));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.dataset.path = v.toString().trimmed().toStdString();
    };
    f.applies = [](const ProjectSettings& s) { return dataset_kind_info(s.dataset.kind).files; };
    auto* browse = new QPushButton(tr("Browse…"), host);
    browse->setObjectName(QStringLiteral("dataset.path.browse"));
    browse->setToolTip(tr("Choose the dataset's folder"));
    besideEditor(f, browse);
    connect(browse, &QPushButton::clicked, this, [this, &f, edit] {
      const QString start =
          edit->text().isEmpty() ? QString::fromStdString(probe_.dir) : edit->text();
      const QString dir = QFileDialog::getExistingDirectory(this, tr("Dataset folder"), start);
      if (dir.isEmpty()) return;
      edit->setText(dir);
      commit(f);
    });
  }
  struct IntSpec {
    const char* key;
    QString label, what, tip;
    int min, max;
    int64_t DatasetSpec::*member;
  };
  const IntSpec syntheticFields[] = {
      {"dataset.height", tr("Height"), tr("image height"), tr("Pixels: a positive integer"), 1,
       kMaxExtent, &DatasetSpec::height},
      {"dataset.width", tr("Width"), tr("image width"), tr("Pixels: a positive integer"), 1,
       kMaxExtent, &DatasetSpec::width},
      {"dataset.channels", tr("Channels"), tr("channels"), tr("Colour channels: 1 grey, 3 colour"),
       1, kMaxExtent, &DatasetSpec::channels},
      {"dataset.classes", tr("Classes"), tr("classes"), tr("At least 2"), 2, kMaxClasses,
       &DatasetSpec::classes},
      {"dataset.train_size", tr("Training images"), tr("training images"),
       tr("Generated training samples per epoch"), 1, kMaxSamples, &DatasetSpec::train_size},
      {"dataset.val_size", tr("Validation images"), tr("validation images"),
       tr("Generated validation samples"), 1, kMaxSamples, &DatasetSpec::val_size},
  };
  for (const IntSpec& spec : syntheticFields) {
    Field& f = addField(form, Kind::Int, intBox(spec.min, spec.max), QString::fromLatin1(spec.key),
                        spec.label, spec.what, spec.tip);
    const auto member = spec.member;
    f.get = [member](const ProjectSettings& s) {
      return QVariant(static_cast<qlonglong>(s.dataset.*member));
    };
    if (member == &DatasetSpec::channels)
      f.set = [](ProjectSettings& s, const QVariant& v) {
        set_dataset_channels(s.dataset, v.toLongLong());
      };
    else
      f.set = [member](ProjectSettings& s, const QVariant& v) {
        s.dataset.*member = v.toLongLong();
      };
    // The shape where the project says it; the sizes where nothing counts them.
    const bool size = member == &DatasetSpec::train_size || member == &DatasetSpec::val_size;
    f.applies = [size](const ProjectSettings& s) {
      const DatasetKindInfo& k = dataset_kind_info(s.dataset.kind);
      return !k.fixed_shape && !(size && k.counted);
    };
  }
  {
    auto* edit = line();
    Field& f = addField(form, Kind::Text, edit, QStringLiteral("dataset.val_dir"),
                        tr("Validation folder"), tr("validation folder"),
                        tr("One subfolder per class, named as in the training folder, of PNG or "
                           "JPEG images"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(QString::fromStdString(s.dataset.val_path));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.dataset.val_path = v.toString().trimmed().toStdString();
    };
    f.applies = [](const ProjectSettings& s) { return s.dataset.kind == DatasetKind::ImageFolder; };
    auto* browse = new QPushButton(tr("Browse…"), host);
    browse->setObjectName(QStringLiteral("dataset.val_dir.browse"));
    browse->setToolTip(tr("Choose the validation folder"));
    besideEditor(f, browse);
    connect(browse, &QPushButton::clicked, this, [this, &f, edit] {
      const QString dir =
          QFileDialog::getExistingDirectory(this, tr("Validation folder"), edit->text());
      if (dir.isEmpty()) return;
      edit->setText(dir);
      commit(f);
    });
  }
  {
    Field& f = addField(form, Kind::Bool, check(tr("Leave unreadable images out")),
                        QStringLiteral("dataset.on_bad_image"), QString(), tr("unreadable images"),
                        tr("A damaged or truncated image is left out (and listed) instead of "
                           "stopping the load"));
    f.get = [](const ProjectSettings& s) { return QVariant(s.dataset.skip_bad_images); };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.dataset.skip_bad_images = v.toBool(); };
    f.applies = [](const ProjectSettings& s) { return s.dataset.kind == DatasetKind::ImageFolder; };
  }
  dataset_ = new QLabel(host);
  dataset_->setObjectName(QStringLiteral("dataset.summary"));
  dataset_->setWordWrap(true);
  dataset_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form->addRow(QString(), dataset_);
  const std::pair<const char*, bool> stats[] = {{"mean", false}, {"std", true}};
  for (const auto& [key, positive] : stats) {
    const bool isStd = positive;
    auto* edit = line();
    edit->setPlaceholderText(tr("one number per channel, separated by commas"));
    Field& f =
        addField(form, Kind::List, edit, QStringLiteral("dataset.%1").arg(QLatin1String(key)),
                 isStd ? tr("Standard deviation") : tr("Mean"),
                 isStd ? tr("normalisation std") : tr("normalisation mean"),
                 isStd ? tr("Per channel, each > 0: inputs are divided by it")
                       : tr("Per channel: subtracted from the inputs"));
    f.get = [isStd](const ProjectSettings& s) {
      return QVariant(to_list(isStd ? s.dataset.std : s.dataset.mean));
    };
    f.set = [isStd](ProjectSettings& s, const QVariant& v) {
      (isStd ? s.dataset.std : s.dataset.mean) = from_list(v);
    };
    f.check = [key = key, isStd](const ProjectSettings& s) {
      return values_problem(isStd ? s.dataset.std : s.dataset.mean, s.dataset.channels, key, isStd);
    };
  }
  {
    Field& f = addField(form, Kind::Int, intBox(0, kMaxPadding),
                        QStringLiteral("dataset.random_crop_padding"), tr("Random crop padding"),
                        tr("random crop padding"),
                        tr("Pad by this many pixels, then crop back at a random offset; 0: off"));
    static_cast<QSpinBox*>(f.editor)->setSpecialValueText(tr("off"));
    f.get = [](const ProjectSettings& s) {
      return QVariant(static_cast<qlonglong>(s.dataset.random_crop_padding));
    };
    f.set = [](ProjectSettings& s, const QVariant& v) {
      s.dataset.random_crop_padding = v.toLongLong();
    };
  }
  {
    Field& f = addField(form, Kind::Bool, check(tr("Random horizontal flip")),
                        QStringLiteral("dataset.random_flip"), QString(), tr("random flip"),
                        tr("Mirror half of the training images"));
    f.get = [](const ProjectSettings& s) { return QVariant(s.dataset.random_flip); };
    f.set = [](ProjectSettings& s, const QVariant& v) { s.dataset.random_flip = v.toBool(); };
  }
  column->addStretch(1);
}

void TrainingSettingsPanel::refresh(bool reset) {
  const ProjectSettings now = doc_->settings();
  probe_ = probe_dataset(now.dataset);
  for (Field& f : fields_) {
    const QVariant value = f.get(now);
    // A refused value stays while the document keeps the value it was
    // refused against, so an edit or an undo elsewhere does not wipe what
    // the user typed; a new value of this very field replaces it.
    if (reset || !f.refused || value != f.get(shown_)) {
      f.refused = false;
      writeEditor(f, value);
    }
    updateMessage(f, now);
    if (f.applies) f.form->setRowVisible(f.row, f.applies(now));
  }
  shown_ = now;

  const TrainingSpec& t = now.training;
  const int ranks = std::max(1, t.devices.world_size());
  const QString devices = QString::fromStdString(t.devices.str());
  if (t.global_batch % ranks != 0)
    devices_->setText(
        tr("%1: %2 ranks; the global batch does not divide among them").arg(devices).arg(ranks));
  else if (ranks == 1)
    devices_->setText(tr("%1: 1 rank, %2 samples per step").arg(devices).arg(t.global_batch));
  else
    devices_->setText(tr("%1: %2 ranks, %3 samples each per step")
                          .arg(devices)
                          .arg(ranks)
                          .arg(t.global_batch / ranks));

  const DatasetSpec& d = now.dataset;
  const DatasetKindInfo& kind = dataset_kind_info(d.kind);
  if (d.kind == DatasetKind::ImageFolder)
    datasetFolder_->setPlaceholderText(tr("the training folder: one subfolder per class"));
  else if (kind.files)
    datasetFolder_->setPlaceholderText(
        tr("default: $%1 or %2")
            .arg(QLatin1String(kind.env_var), QString::fromStdString(default_dataset_dir(kind))));
  const QString channels = d.channels == 1 ? tr("1 channel") : tr("%1 channels").arg(d.channels);
  const QString shape =
      tr("%1×%2, %3, %4 classes").arg(d.height).arg(d.width).arg(channels).arg(d.classes);
  const QLocale c(QLocale::English);
  if (!probe_.ok) {
    dataset_->setText(tr("Cannot be read: %1").arg(QString::fromStdString(probe_.problem)));
    set_tone(dataset_, Tone::Error);
  } else {
    set_tone(dataset_, Tone::Normal);
    const QString sizes = tr("%1 training and %2 validation images, %3")
                              .arg(c.toString(static_cast<qlonglong>(probe_.train_size)),
                                   c.toString(static_cast<qlonglong>(probe_.val_size)), shape);
    dataset_->setText(d.kind == DatasetKind::Synthetic
                          ? tr("Generated: %1").arg(sizes)
                          : tr("Read from %1 (%2): %3")
                                .arg(QString::fromStdString(probe_.dir),
                                     QString::fromStdString(probe_.origin), sizes));
  }
}

void TrainingSettingsPanel::commit(Field& field) {
  const ProjectSettings before = doc_->settings();
  QVariant value;
  QString why;
  if (readEditor(field, value, why)) {
    ProjectSettings after = before;
    field.set(after, value);
    if (field.check) why = field.check(after);
    if (why.isEmpty()) {
      field.refused = false;
      if (value == field.get(before)) {
        updateMessage(field, before);
        return;
      }
      // The refresh that follows (settingsChanged) clears the message.
      doc_->undoStack()->push(new SetTrainingCommand(doc_, before, after, field.key, field.what));
      return;
    }
  }
  field.refused = true;
  showMessage(field, why);
}

bool TrainingSettingsPanel::readEditor(const Field& field, QVariant& value, QString& why) const {
  switch (field.kind) {
    case Kind::Int:
      value = static_cast<qlonglong>(static_cast<QSpinBox*>(field.editor)->value());
      return true;
    case Kind::Real:
      value = static_cast<QDoubleSpinBox*>(field.editor)->value();
      return true;
    case Kind::Bool:
      value = static_cast<QCheckBox*>(field.editor)->isChecked();
      return true;
    case Kind::Choice:
      value = static_cast<QComboBox*>(field.editor)->currentData();
      return true;
    case Kind::Text:
      value = static_cast<QLineEdit*>(field.editor)->text();
      return true;
    case Kind::Seed: {
      const QString text = static_cast<QLineEdit*>(field.editor)->text().trimmed();
      static const QRegularExpression digits(QStringLiteral("^[0-9]+$"));
      bool ok = false;
      const qulonglong seed = digits.match(text).hasMatch() ? text.toULongLong(&ok) : 0;
      if (!ok) {
        why =
            QStringLiteral("expected a non-negative integer (at most 18446744073709551615), got %1")
                .arg(describe(text));
        return false;
      }
      value = seed;
      return true;
    }
    case Kind::List: {
      static const QRegularExpression separators(QStringLiteral("[,;\\s]+"));
      const QStringList parts =
          static_cast<QLineEdit*>(field.editor)->text().split(separators, Qt::SkipEmptyParts);
      QVariantList values;
      for (qsizetype i = 0; i < parts.size(); ++i) {
        bool ok = false;
        const double v = QLocale::c().toDouble(parts[i], &ok);
        if (!ok || !std::isfinite(v)) {
          // The loader's phrase for the key: std must be positive, mean is any number.
          const bool positive = field.key == QLatin1String("dataset.std");
          why = QStringLiteral("%1[%2]: expected %3, got %4")
                    .arg(field.key)
                    .arg(i)
                    .arg(positive ? QStringLiteral("a number > 0") : QStringLiteral("a number"),
                         describe(parts[i]));
          return false;
        }
        values << v;
      }
      value = values;
      return true;
    }
  }
  return false;
}

void TrainingSettingsPanel::writeEditor(const Field& field, const QVariant& value) {
  const QSignalBlocker block(field.editor);
  // Only what differs is written, so the editor being typed into keeps its cursor.
  switch (field.kind) {
    case Kind::Int: {
      auto* box = static_cast<QSpinBox*>(field.editor);
      if (box->value() != value.toLongLong()) box->setValue(static_cast<int>(value.toLongLong()));
      break;
    }
    case Kind::Real: {
      auto* box = static_cast<QDoubleSpinBox*>(field.editor);
      if (box->value() != value.toDouble()) box->setValue(value.toDouble());
      break;
    }
    case Kind::Bool:
      static_cast<QCheckBox*>(field.editor)->setChecked(value.toBool());
      break;
    case Kind::Choice: {
      auto* box = static_cast<QComboBox*>(field.editor);
      box->setCurrentIndex(box->findData(value));
      break;
    }
    case Kind::Text:
    case Kind::Seed:
    case Kind::List: {
      auto* edit = static_cast<QLineEdit*>(field.editor);
      QVariant shown;
      QString why;
      if (readEditor(field, shown, why) && shown == value) break;
      edit->setText(field.kind == Kind::Text   ? value.toString()
                    : field.kind == Kind::Seed ? QString::number(value.toULongLong())
                                               : values_text(value.toList()));
      edit->setCursorPosition(0);  // the start of a long description, not its end
      break;
    }
  }
}

void TrainingSettingsPanel::updateMessage(Field& field, const ProjectSettings& now) {
  if (!field.refused) {
    QString text = field.check ? field.check(now) : QString();
    // A dataset that cannot be read says so under the field that would fix it.
    // (The folder field serves every kind with files, whatever its key in the file.)
    const std::string key = field.key.toStdString();
    if (text.isEmpty() && !probe_.ok &&
        (key == probe_.field ||
         (key == "dataset.path" &&
          probe_.field ==
              "dataset." + std::string(dataset_kind_info(now.dataset.kind).folder_key))))
      text = QString::fromStdString(probe_.problem);
    showMessage(field, text);
    return;
  }
  QVariant value;
  QString why;
  if (readEditor(field, value, why)) {
    ProjectSettings after = now;
    field.set(after, value);
    if (field.check) why = field.check(after);
    // The change that made the typed value valid was not this field's; the
    // value waits for the user rather than landing inside an undo or redo.
    if (why.isEmpty()) why = tr("Not applied yet: press Enter to apply it.");
  }
  showMessage(field, why);
}

void TrainingSettingsPanel::showMessage(Field& field, const QString& text) {
  field.message->setText(text);
  field.message->setVisible(!text.isEmpty());
}

void TrainingSettingsPanel::besideEditor(Field& field, QWidget* extra) {
  auto* column = static_cast<QVBoxLayout*>(field.row->layout());
  auto* line = new QHBoxLayout;
  line->setContentsMargins(0, 0, 0, 0);
  column->removeWidget(field.editor);
  line->addWidget(field.editor, 1);
  extra->setParent(field.row);
  line->addWidget(extra);
  column->insertLayout(0, line);
}

const TrainingSettingsPanel::Field* TrainingSettingsPanel::find(const QString& key) const {
  for (const Field& f : fields_)
    if (f.key == key) return &f;
  return nullptr;
}

}  // namespace tr::gui
