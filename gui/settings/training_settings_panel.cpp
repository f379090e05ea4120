// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingSettingsPanel: the form, its checks and its undo commands.
#include "settings/training_settings_panel.h"

#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
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
#include <climits>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <renaissance/dataset_kinds.h>
#include <renaissance/setting_spec.h>
#include "settings/real_spin_box.h"
#include "settings/set_training_command.h"
#include "widgets/tone.h"

namespace tr::gui {

namespace {

// The settings table's bounds are the loader's, so every value the panel
// accepts also loads back.
constexpr double kInf = std::numeric_limits<double>::infinity();
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

QString text_of(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

// The settings as a project, whose fields the settings table reaches.
Project as_project(const ProjectSettings& s) {
  Project p;
  p.name = s.name;
  p.description = s.description;
  p.dataset = s.dataset;
  p.training = s.training;
  return p;
}

QVariant setting_value(const SettingSpec& spec, const ProjectSettings& s) {
  Project p = as_project(s);
  switch (spec.kind) {
    case SettingKind::Int:
      return static_cast<qlonglong>(spec.int_ref(p));
    case SettingKind::Number:
      return spec.number_ref(p);
    case SettingKind::Bool:
      return spec.bool_ref(p);
    case SettingKind::Choice:
      return spec.choice_get(p);
    case SettingKind::Text:
    case SettingKind::Path:
      return QString::fromStdString(spec.text_ref(p));
    case SettingKind::Seed:
      return static_cast<qulonglong>(spec.seed_ref(p));
    case SettingKind::Values:
      return to_list(spec.values_ref(p));
    case SettingKind::Names: {
      QStringList names;
      for (const std::string& n : spec.names_ref(p)) names << QString::fromStdString(n);
      return names;
    }
    case SettingKind::Devices:
      return QString::fromStdString(spec.devices_ref(p).str());
  }
  return {};
}

void set_setting(const SettingSpec& spec, ProjectSettings& s, const QVariant& v) {
  Project p = as_project(s);
  switch (spec.kind) {
    case SettingKind::Int:
      spec.int_ref(p) = v.toLongLong();
      break;
    case SettingKind::Number:
      spec.number_ref(p) = v.toDouble();
      break;
    case SettingKind::Bool:
      spec.bool_ref(p) = v.toBool();
      break;
    case SettingKind::Choice:
      spec.choice_set(p, v.toInt());
      break;
    case SettingKind::Text:
    case SettingKind::Path:
      spec.text_ref(p) = v.toString().trimmed().toStdString();
      break;
    case SettingKind::Seed:
      spec.seed_ref(p) = v.toULongLong();
      break;
    case SettingKind::Values:
      spec.values_ref(p) = from_list(v);
      break;
    case SettingKind::Names: {
      std::vector<std::string> names;
      for (const QString& n : v.toStringList()) names.push_back(n.toStdString());
      spec.names_ref(p) = std::move(names);
      break;
    }
    case SettingKind::Devices:
      break;  // chosen in the toolbar (SetDevicesCommand)
  }
  s.dataset = std::move(p.dataset);
  s.training = std::move(p.training);
}

// The loader's message, so the panel and a file load agree.
QString batch_problem(const TrainingSpec& t) {
  return QString::fromStdString(t.global_batch_problem());
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
    if (f.kind == Kind::Text || f.kind == Kind::Seed || f.kind == Kind::List ||
        f.kind == Kind::Names)
      commit(f);
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

  f.name = new QLabel(label, form->parentWidget());
  f.name->setBuddy(editor);
  f.name->setToolTip(tip);
  form->addRow(f.name, f.row);

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
    case Kind::Names:
      connect(static_cast<QLineEdit*>(editor), &QLineEdit::editingFinished, this,
              [this, &f] { commit(f); });
      break;
  }
  return f;
}

void TrainingSettingsPanel::addSetting(QFormLayout* form, const SettingSpec& spec) {
  QWidget* host = form->parentWidget();
  const QString key = text_of(spec.key);
  const QString label = QCoreApplication::translate("SettingSpec", text_of(spec.label).toUtf8());
  const QString help = QCoreApplication::translate("SettingSpec", text_of(spec.help).toUtf8());
  const QString tip =
      help + QStringLiteral(" (") + QString::fromStdString(setting_bounds_text(spec)) + ')';
  if (spec.kind == SettingKind::Devices) {
    devices_ = new QLabel(host);
    devices_->setObjectName(key);
    devices_->setWordWrap(true);
    devices_->setToolTip(tr("The devices are chosen in the toolbar"));
    form->addRow(label, devices_);
    return;
  }
  // What the data is, before its normalisation.
  if (spec.kind == SettingKind::Values && !dataset_) {
    dataset_ = new QLabel(host);
    dataset_->setObjectName(QStringLiteral("dataset.summary"));
    dataset_->setWordWrap(true);
    dataset_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(dataset_);  // the panel's whole width: it names a folder
  }
  // Editors: one value a change, not one a keystroke; the panel commits on
  // Enter, on leaving the field, on each arrow step (merged into one undo step).
  QWidget* editor = nullptr;
  Kind kind = Kind::Text;
  switch (spec.kind) {
    case SettingKind::Int: {
      auto* box = new QSpinBox(host);
      box->setRange(static_cast<int>(std::max<int64_t>(spec.min, INT_MIN)),
                    static_cast<int>(std::min<int64_t>(spec.max, INT_MAX)));
      box->setKeyboardTracking(false);
      if (!spec.suffix.empty()) box->setSuffix(tr(text_of(spec.suffix).toUtf8()));
      if (!spec.zero_text.empty()) box->setSpecialValueText(tr(text_of(spec.zero_text).toUtf8()));
      editor = box;
      kind = Kind::Int;
      break;
    }
    case SettingKind::Number: {
      // The loader's open ends as closed spin box ranges.
      const double lo = spec.lo == -kInf ? -kHuge : spec.lo_open && spec.lo == 0 ? kTiny : spec.lo;
      const double hi = spec.hi == kInf                ? kHuge
                        : spec.hi_open && spec.hi == 1 ? kBelowOne
                                                       : spec.hi;
      auto* box = new RealSpinBox(host);
      box->setRange(lo, hi);
      box->setKeyboardTracking(false);
      if (spec.step > 0) {
        box->setSingleStep(spec.step);
      } else {
        // Steps of a tenth of the value's decade, for values spanning decades.
        box->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
        box->setSingleStep(1e-4);  // the first step from 0
      }
      editor = box;
      kind = Kind::Real;
      break;
    }
    case SettingKind::Bool:
      editor = new QCheckBox(label, host);
      kind = Kind::Bool;
      break;
    case SettingKind::Choice: {
      auto* box = new QComboBox(host);
      for (const SettingChoice& c : spec.choices)
        box->addItem(QCoreApplication::translate("SettingSpec", text_of(c.title).toUtf8()),
                     c.value);
      editor = box;
      kind = Kind::Choice;
      break;
    }
    case SettingKind::Text:
    case SettingKind::Path:
      editor = new QLineEdit(host);
      kind = Kind::Text;
      break;
    case SettingKind::Seed:
      editor = new QLineEdit(host);
      kind = Kind::Seed;
      break;
    case SettingKind::Values: {
      auto* edit = new QLineEdit(host);
      edit->setPlaceholderText(tr("one number per channel, separated by commas"));
      editor = edit;
      kind = Kind::List;
      break;
    }
    case SettingKind::Names: {
      classNames_ = new QLineEdit(host);
      editor = classNames_;
      kind = Kind::Names;
      break;
    }
    case SettingKind::Devices:
      return;  // a label, above
  }
  // The undo step's noun: the label as a sentence has it ("learning rate",
  // but "EMA decay").
  QString what = label;
  if (what.size() > 1 && what[1].isLower()) what[0] = what[0].toLower();
  Field& f = addField(form, kind, editor, key, kind == Kind::Bool ? QString() : label, what, tip);
  f.spec = &spec;
  f.get = [&spec](const ProjectSettings& s) { return setting_value(spec, s); };
  f.set = [&spec](ProjectSettings& s, const QVariant& v) { set_setting(spec, s, v); };
  f.applies = [&spec](const ProjectSettings& s) { return setting_applies(spec, as_project(s)); };
  // What one setting's change does to the others, and checks that involve
  // them: the loader's, word for word.
  if (spec.key == "dataset.kind")
    f.set = [](ProjectSettings& s, const QVariant& v) { set_dataset_kind(s.dataset, v.toInt()); };
  if (spec.key == "dataset.channels")
    f.set = [](ProjectSettings& s, const QVariant& v) {
      set_dataset_channels(s.dataset, v.toLongLong());
    };
  if (spec.key == "training.global_batch")
    f.check = [](const ProjectSettings& s) { return batch_problem(s.training); };
  if (spec.kind == SettingKind::Values)
    f.check = [&spec](const ProjectSettings& s) {
      Project p = as_project(s);
      return values_problem(spec.values_ref(p), s.dataset.channels,
                            std::string(spec.key.substr(spec.key.find('.') + 1)).c_str(),
                            spec.lo_open && spec.lo == 0);
    };
  if (spec.kind == SettingKind::Names) labelAbove(f);  // a list of names wants the width
  if (spec.kind == SettingKind::Names)
    f.check = [&spec](const ProjectSettings& s) {
      Project p = as_project(s);
      const auto& names = spec.names_ref(p);
      if (!names.empty() && static_cast<int64_t>(names.size()) != s.dataset.classes)
        return tr("names %1 classes but there are %2; give one name per class, or none")
            .arg(names.size())
            .arg(s.dataset.classes);
      for (size_t i = 0; i < names.size(); ++i)
        if (std::count(names.begin(), names.end(), names[i]) > 1)
          return tr("\"%1\" names two classes; each class needs its own")
              .arg(QString::fromStdString(names[i]));
      return QString();
    };
  if (spec.kind == SettingKind::Path) {
    auto* edit = static_cast<QLineEdit*>(editor);
    if (spec.kind_key) {  // its tooltip names the kind's default folder
      datasetFolder_ = edit;
      datasetFolderTip_ = tip;
    }
    if (!spec.kind_key && !spec.folder)
      edit->setPlaceholderText(tr("none: fresh weights"));
    else if (!spec.kind_key)  // the validation images
      edit->setPlaceholderText(tr("one subfolder per class"));
    auto* browse = new QPushButton(tr("Browse…"), host);
    browse->setObjectName(key + QStringLiteral(".browse"));
    browse->setToolTip(spec.folder ? tr("Choose the folder") : tr("Choose the file"));
    besideEditor(f, browse);
    labelAbove(f);
    connect(browse, &QPushButton::clicked, this, [this, &f, &spec, edit, label] {
      const QString start = browseStart(f.key);
      const QString chosen =
          spec.folder ? QFileDialog::getExistingDirectory(this, label, start)
                      : QFileDialog::getOpenFileName(this, label, start,
                                                     tr("Checkpoints (*.ckpt);;All files (*)"));
      if (chosen.isEmpty()) return;
      edit->setText(chosen);
      commit(f);
    });
  }
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
  auto line = [&] { return new QLineEdit(host); };

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

  // The dataset and training settings: one field a row of the settings
  // table (renaissance/setting_spec.h), in its groups, in its order.
  const std::pair<SettingGroup, QString> groups[] = {
      {SettingGroup::Optimizer, tr("Optimizer")},
      {SettingGroup::Schedule, tr("Schedule")},
      {SettingGroup::Run, tr("Run")},
      {SettingGroup::Precision, tr("Precision && ranks")},
      {SettingGroup::Data, tr("Data")},
  };
  for (const auto& [which, title] : groups) {
    form = group(title);
    for (const SettingSpec& spec : project_settings())
      if (spec.group == which) addSetting(form, spec);
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
    if (f.applies) {
      f.form->setRowVisible(f.row, f.applies(now));
      if (f.above) f.form->setRowVisible(f.name, f.applies(now));
    }
  }
  shown_ = now;

  const TrainingSpec& t = now.training;
  // The ranks that split the batch: every one (a tensor-parallel group's too).
  const int ranks = std::max(1, t.devices.world_size());
  const QString devices = QString::fromStdString(t.devices.str());
  if (t.tensor_ranks > 1 && t.data_ranks() == 0)
    devices_->setText(
        tr("%1: mesh tensor=%2 does not divide its ranks").arg(devices).arg(t.tensor_ranks));
  else if (t.tensor_ranks > 1)
    devices_->setText(tr("%1 as mesh data=%2 x tensor=%3: each group of %3 ranks splits the "
                         "transformer blocks, %4 samples per rank and step")
                          .arg(devices)
                          .arg(t.data_ranks())
                          .arg(t.tensor_ranks)
                          .arg(t.global_batch % ranks == 0 ? QString::number(t.global_batch / ranks)
                                                           : tr("uneven")));
  else if (t.global_batch % ranks != 0)
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
    datasetFolder_->setPlaceholderText(tr("one subfolder per class"));
  else if (kind.files)  // the line under it and the tooltip say where that is
    datasetFolder_->setPlaceholderText(tr("the default location"));
  datasetFolder_->setToolTip(kind.files
                                 ? datasetFolderTip_ + QLatin1Char('\n') +
                                       tr("Left empty: $%1 when it is set, else %2")
                                           .arg(QLatin1String(kind.env_var),
                                                QString::fromStdString(default_dataset_dir(kind)))
                                 : datasetFolderTip_);
  classNames_->setPlaceholderText(d.kind == DatasetKind::ImageFolder
                                      ? tr("none: the class folders' names")
                                      : tr("none: class 0, class 1, …"));
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
          const bool positive = field.spec && field.spec->lo_open && field.spec->lo == 0;
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
    case Kind::Names: {
      QStringList names;
      for (const QString& n : static_cast<QLineEdit*>(field.editor)->text().split(QLatin1Char(',')))
        if (!n.trimmed().isEmpty()) names << n.trimmed();
      value = names;
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
    case Kind::List:
    case Kind::Names: {
      auto* edit = static_cast<QLineEdit*>(field.editor);
      QVariant shown;
      QString why;
      if (readEditor(field, shown, why) && shown == value) break;
      edit->setText(field.kind == Kind::Text    ? value.toString()
                    : field.kind == Kind::Seed  ? QString::number(value.toULongLong())
                    : field.kind == Kind::Names ? value.toStringList().join(QStringLiteral(", "))
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
    if (text.isEmpty() && !probe_.ok && find(QString::fromStdString(probe_.field)) == &field)
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

QString TrainingSettingsPanel::browseStart(const QString& key) const {
  const Field& field = *find(key);
  const QString now = static_cast<const QLineEdit*>(field.editor)->text();
  if (!now.isEmpty()) return now;
  const DatasetSpec& d = doc_->project().dataset;
  if (field.spec->kind_key && !probe_.dir.empty()) return QString::fromStdString(probe_.dir);
  // An image folder's two folders are usually side by side.
  if (field.spec->folder) {
    const std::string& other = field.spec->kind_key ? d.val_path : d.path;
    if (!other.empty()) return QFileInfo(QString::fromStdString(other)).absolutePath();
  }
  if (!doc_->filePath().isEmpty() && doc_->samplePath().isEmpty())
    return QFileInfo(doc_->filePath()).absolutePath();
  return QDir::homePath();
}

void TrainingSettingsPanel::labelAbove(Field& field) {
  int at = 0;
  QFormLayout::ItemRole role = QFormLayout::FieldRole;
  field.form->getWidgetPosition(field.row, &at, &role);
  // The widgets come back; their layout items are ours to delete.
  const QFormLayout::TakeRowResult taken = field.form->takeRow(at);
  delete taken.labelItem;
  delete taken.fieldItem;
  field.form->insertRow(at, field.name);
  field.form->insertRow(at + 1, field.row);
  field.above = true;
}

const TrainingSettingsPanel::Field* TrainingSettingsPanel::find(const QString& key) const {
  for (const Field& f : fields_)
    if (f.key == key) return &f;
  // The folder field serves every kind with files, whatever its key in the
  // file ("dataset.train_dir" in a problem is that field too).
  for (const DatasetKindInfo& k : dataset_kinds())
    if (k.files && key == QStringLiteral("dataset.") + QLatin1String(k.folder_key))
      return datasetFolder_ ? find(datasetFolder_->objectName()) : nullptr;
  return nullptr;
}

}  // namespace tr::gui
