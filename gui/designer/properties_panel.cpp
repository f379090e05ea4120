// SPDX-License-Identifier: GPL-3.0-or-later
#include "properties_panel.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <renaissance/layer_spec.h>
#include "designer/param_names.h"
#include "layer_catalog.h"
#include "model_editor.h"
#include "project_document.h"
#include "widgets/count_text.h"
#include "widgets/tone.h"

namespace tr::gui {

namespace {

QString flops_text(int64_t flops) {
  const double f = static_cast<double>(flops);
  if (f >= 1e9) return QStringLiteral("%1 GFLOPs").arg(f / 1e9, 0, 'f', 2);
  if (f >= 1e6) return QStringLiteral("%1 MFLOPs").arg(f / 1e6, 0, 'f', 2);
  if (f >= 1e3) return QStringLiteral("%1 kFLOPs").arg(f / 1e3, 0, 'f', 1);
  return QStringLiteral("%1 FLOPs").arg(flops);
}

}  // namespace

PropertiesPanel::PropertiesPanel(ProjectDocument* doc, ModelEditor* editor, QWidget* parent)
    : QWidget(parent),
      doc_(doc),
      editor_(editor),
      title_(new QLabel(this)),
      formHost_(new QWidget(this)),
      info_(new QLabel(this)),
      problems_(new QLabel(this)) {
  auto* layout = new QVBoxLayout(this);
  QFont f = title_->font();
  f.setBold(true);
  f.setPointSizeF(f.pointSizeF() * 1.15);
  title_->setFont(f);
  title_->setWordWrap(true);
  info_->setWordWrap(true);
  info_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  problems_->setWordWrap(true);
  set_tone(problems_, Tone::Error);
  layout->addWidget(title_);
  layout->addWidget(formHost_);
  layout->addWidget(info_);
  layout->addWidget(problems_);
  layout->addStretch(1);

  connect(doc_, &ProjectDocument::nodeChanged, this, [this](int i) {
    if (i == node_) refreshValues();
  });
  connect(doc_, &ProjectDocument::analysisChanged, this, &PropertiesPanel::refreshInfo);
  connect(doc_, &ProjectDocument::projectReset, this, [this] { showNode(-1); });
  connect(doc_, &ProjectDocument::graphChanged, this, [this] {
    if (node_ >= static_cast<int>(doc_->project().model.nodes.size())) showNode(-1);
  });
  showNode(-1);
}

void PropertiesPanel::commitPendingEdits() {
  if (node_ < 0) return;
  if (idEdit_ &&
      idEdit_->text().toStdString() != doc_->project().model.nodes[static_cast<size_t>(node_)].id)
    commitId();
  // Emits valueChanged, and so commits, when the typed text differs.
  for (const Field& f : fields_)
    if (auto* spin = qobject_cast<QAbstractSpinBox*>(f.editor)) spin->interpretText();
}

QString PropertiesPanel::infoText() const {
  return info_->text();
}

QWidget* PropertiesPanel::fieldEditor(const QString& key) const {
  if (key == QLatin1String("id")) return idEdit_;
  for (const Field& f : fields_)
    if (f.key == key) return f.editor;
  return nullptr;
}

void PropertiesPanel::showNode(int index) {
  const int count = static_cast<int>(doc_->project().model.nodes.size());
  node_ = index >= 0 && index < count ? index : -1;
  rebuildForm();
  refreshValues();
  refreshInfo();
}

void PropertiesPanel::rebuildForm() {
  delete formHost_->layout();
  // Silenced first: hiding a focused editor ends its edit, which must not
  // land on the node shown next. Deleted later, not now: this may run inside
  // a signal of one of these editors.
  for (QWidget* w : formHost_->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly)) {
    w->disconnect(this);
    w->hide();
    w->deleteLater();
  }
  form_ = new QFormLayout(formHost_);
  form_->setContentsMargins(0, 0, 0, 0);
  fields_.clear();
  idEdit_ = nullptr;
  idError_ = nullptr;
  if (node_ < 0) return;

  const LayerNode& n = doc_->project().model.nodes[static_cast<size_t>(node_)];
  idEdit_ = new QLineEdit(formHost_);
  idEdit_->setMaxLength(64);
  idEdit_->setToolTip(tr("Unique id: letters, digits, '_', '-' or '.'"));
  connect(idEdit_, &QLineEdit::editingFinished, this, &PropertiesPanel::commitId);
  form_->addRow(tr("Id"), idEdit_);
  idError_ = new QLabel(formHost_);
  idError_->setWordWrap(true);
  set_tone(idError_, Tone::Error);
  idError_->hide();
  form_->addRow(QString(), idError_);

  auto i64 = [](int64_t LayerParams::*m) {
    return std::function<double(const LayerParams&)>(
        [m](const LayerParams& p) { return static_cast<double>(p.*m); });
  };
  auto set64 = [](int64_t LayerParams::*m) {
    return std::function<void(LayerParams&, double)>(
        [m](LayerParams& p, double v) { p.*m = static_cast<int64_t>(v); });
  };
  auto real = [](double LayerParams::*m) {
    return std::function<double(const LayerParams&)>([m](const LayerParams& p) { return p.*m; });
  };
  auto setReal = [](double LayerParams::*m) {
    return std::function<void(LayerParams&, double)>([m](LayerParams& p, double v) { p.*m = v; });
  };
  auto intField = [&](const QString& k, int64_t min, int64_t max, int64_t LayerParams::*m) {
    fields_.push_back(
        {k, param_label(k), Kind::Int, double(min), double(max), i64(m), set64(m), nullptr});
  };
  auto realField = [&](const QString& k, double min, double max, double LayerParams::*m) {
    fields_.push_back({k, param_label(k), Kind::Real, min, max, real(m), setReal(m), nullptr});
  };
  auto boolField = [&](const QString& k, bool LayerParams::*m) {
    fields_.push_back({k, param_label(k), Kind::Bool, 0, 1,
                       [m](const LayerParams& p) { return p.*m ? 1.0 : 0.0; },
                       [m](LayerParams& p, double v) { p.*m = v != 0; }, nullptr});
  };
  // The layer table's parameters, with the loader's own bounds (so every
  // value the panel accepts also loads back), a window as height and width.
  for (const ParamSpec& p : layer_spec(n.type).params) {
    const QString key = QStringLiteral("params.") + QString::fromLatin1(p.key);
    switch (p.kind) {
      case LayerParamKind::Int:
        intField(key, p.min, p.max, p.int_field);
        break;
      case LayerParamKind::Window:
        intField(QStringLiteral("params.") + QString::fromLatin1(p.field_h), p.min, p.max,
                 p.int_field);
        intField(QStringLiteral("params.") + QString::fromLatin1(p.field_w), p.min, p.max,
                 p.int_field_w);
        break;
      case LayerParamKind::Number:
        realField(key, p.edit_lo, p.edit_hi, p.number_field);
        break;
      case LayerParamKind::Bool:
        boolField(key, p.bool_field);
        break;
    }
  }
  for (Field& f : fields_) {
    const Field* field = &f;
    switch (f.kind) {
      case Kind::Int: {
        auto* box = new QSpinBox(formHost_);
        box->setRange(static_cast<int>(f.min), static_cast<int>(f.max));
        box->setKeyboardTracking(false);  // one change per value typed, not per digit
        connect(box, &QSpinBox::valueChanged, this,
                [this, field](int v) { commitParam(*field, v); });
        f.editor = box;
        break;
      }
      case Kind::Real: {
        auto* box = new QDoubleSpinBox(formHost_);
        box->setDecimals(f.min > 0 && f.min < 1e-3 ? 10 : 3);
        box->setRange(f.min, f.max);
        box->setSingleStep(f.min > 0 && f.min < 1e-3 ? 1e-5 : 0.05);
        box->setKeyboardTracking(false);
        connect(box, &QDoubleSpinBox::valueChanged, this,
                [this, field](double v) { commitParam(*field, v); });
        f.editor = box;
        break;
      }
      case Kind::Bool: {
        auto* box = new QCheckBox(formHost_);
        connect(box, &QCheckBox::toggled, this,
                [this, field](bool on) { commitParam(*field, on ? 1 : 0); });
        f.editor = box;
        break;
      }
    }
    f.editor->setObjectName(f.key);
    form_->addRow(f.label, f.editor);
  }
}

void PropertiesPanel::refreshValues() {
  if (node_ < 0) return;
  const LayerNode& n = doc_->project().model.nodes[static_cast<size_t>(node_)];
  if (idEdit_) {
    const QSignalBlocker block(idEdit_);
    idEdit_->setText(QString::fromStdString(n.id));
  }
  for (const Field& f : fields_) {
    const QSignalBlocker block(f.editor);
    const double v = f.get(n.params);
    if (auto* i = qobject_cast<QSpinBox*>(f.editor)) i->setValue(static_cast<int>(v));
    if (auto* d = qobject_cast<QDoubleSpinBox*>(f.editor)) d->setValue(v);
    if (auto* c = qobject_cast<QCheckBox*>(f.editor)) c->setChecked(v != 0);
  }
}

void PropertiesPanel::refreshInfo() {
  const Project& p = doc_->project();
  const ModelAnalysis& a = doc_->analysis();
  if (node_ >= static_cast<int>(p.model.nodes.size())) node_ = -1;
  if (node_ < 0) {
    title_->setText(QString::fromStdString(p.name.empty() ? std::string("untitled") : p.name));
    info_->setText(tr("%1 layers, %2 parameters, %3 forward per batch of %4 per device on %5.\n\n"
                      "Select a layer to edit it; drag layers from the palette onto the canvas.")
                       .arg(p.model.nodes.size())
                       .arg(grouped_number(a.total_params), flops_text(a.total_flops))
                       .arg(doc_->analysisBatch())
                       .arg(QString::fromStdString(p.training.devices.str())));
    problems_->setText(a.problems.empty() ? QString()
                                          : count_text(static_cast<qint64>(a.problems.size()),
                                                       tr("%1 problem: see the Problems panel."),
                                                       tr("%1 problems: see the Problems panel.")));
    return;
  }
  const LayerNode& n = p.model.nodes[static_cast<size_t>(node_)];
  title_->setText(QStringLiteral("%1 (%2)").arg(
      QString::fromStdString(n.id),
      QString::fromUtf8(layer_type_name(n.type).data(),
                        static_cast<int>(layer_type_name(n.type).size()))));
  QString info;
  if (static_cast<size_t>(node_) < a.nodes.size() && a.nodes[static_cast<size_t>(node_)].known) {
    const NodeAnalysis& na = a.nodes[static_cast<size_t>(node_)];
    QStringList inputs;
    for (const Shape& s : na.inputs) inputs << shape_text(s);
    if (!inputs.isEmpty()) info += tr("Input: %1\n").arg(inputs.join(QStringLiteral(", ")));
    if (layer_output_ports(n.type) > 0) info += tr("Output: %1\n").arg(shape_text(na.output));
    info += tr("Parameters: %1\nForward: %2").arg(grouped_number(na.params), flops_text(na.flops));
  } else if (static_cast<size_t>(node_) < a.nodes.size() &&
             static_cast<int>(a.nodes[static_cast<size_t>(node_)].inputs.size()) ==
                 layer_input_ports(n)) {
    // Its inputs are known: what is wrong is this layer's own settings.
    QStringList inputs;
    for (const Shape& s : a.nodes[static_cast<size_t>(node_)].inputs) inputs << shape_text(s);
    if (!inputs.isEmpty()) info += tr("Input: %1\n").arg(inputs.join(QStringLiteral(", ")));
    info += tr("No output: this layer's settings do not fit its input (see its problem below).");
  } else {
    info = tr("Shapes unknown until the layers before it are connected and valid.");
  }
  info_->setText(info);
  QStringList messages;
  for (int i : doc_->problemsOf(node_))
    messages << QString::fromStdString(a.problems[static_cast<size_t>(i)].message);
  problems_->setText(messages.join(QStringLiteral("\n")));
}

void PropertiesPanel::commitId() {
  if (node_ < 0 || !idEdit_) return;
  LayerNode n = doc_->project().model.nodes[static_cast<size_t>(node_)];
  const std::string id = idEdit_->text().trimmed().toStdString();
  if (id == n.id) {
    idError_->hide();
    return;
  }
  n.id = id;
  QString why;
  if (editor_->editNode(node_, n, QStringLiteral("id"), &why)) {
    idError_->hide();
    return;
  }
  // The typed text stays, so the user can correct it rather than retype it.
  idError_->setText(why);
  idError_->show();
}

void PropertiesPanel::commitParam(const Field& field, double value) {
  if (node_ < 0) return;
  LayerNode n = doc_->project().model.nodes[static_cast<size_t>(node_)];
  field.set(n.params, value);
  editor_->editNode(node_, n, field.key);
}

}  // namespace tr::gui
