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

#include "designer/param_names.h"
#include "layer_catalog.h"
#include "model/project_limits.h"
#include "model_editor.h"
#include "project_document.h"
#include "widgets/tone.h"

namespace tr::gui {

namespace {

// The loader's limits, so every value the panel accepts also loads back.
constexpr int kMaxExtent = static_cast<int>(limits::kMaxExtent);
constexpr int kMaxFeatures = static_cast<int>(limits::kMaxFeatures);
constexpr int kMaxKernel = static_cast<int>(limits::kMaxKernel);
constexpr int kMaxStride = static_cast<int>(limits::kMaxStride);
constexpr int kMaxPadding = static_cast<int>(limits::kMaxPadding);

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
  auto intField = [&](const char* key, int min, int max, int64_t LayerParams::*m) {
    const QString k = QString::fromLatin1(key);
    fields_.push_back(
        {k, param_label(k), Kind::Int, double(min), double(max), i64(m), set64(m), nullptr});
  };
  auto realField = [&](const char* key, double min, double max, double LayerParams::*m) {
    const QString k = QString::fromLatin1(key);
    fields_.push_back({k, param_label(k), Kind::Real, min, max, real(m), setReal(m), nullptr});
  };
  auto biasField = [&] {
    fields_.push_back({QStringLiteral("params.bias"), param_label(QStringLiteral("params.bias")),
                       Kind::Bool, 0, 1, [](const LayerParams& p) { return p.bias ? 1.0 : 0.0; },
                       [](LayerParams& p, double v) { p.bias = v != 0; }, nullptr});
  };
  auto windowFields = [&] {
    intField("params.kernel_h", 1, kMaxKernel, &LayerParams::kernel_h);
    intField("params.kernel_w", 1, kMaxKernel, &LayerParams::kernel_w);
    intField("params.stride_h", 1, kMaxStride, &LayerParams::stride_h);
    intField("params.stride_w", 1, kMaxStride, &LayerParams::stride_w);
    intField("params.pad_h", 0, kMaxPadding, &LayerParams::pad_h);
    intField("params.pad_w", 0, kMaxPadding, &LayerParams::pad_w);
  };
  switch (n.type) {
    case LayerType::Input:
      intField("params.height", 1, kMaxExtent, &LayerParams::height);
      intField("params.width", 1, kMaxExtent, &LayerParams::width);
      intField("params.channels", 1, kMaxExtent, &LayerParams::channels);
      break;
    case LayerType::Conv2d:
      intField("params.out_channels", 1, kMaxFeatures, &LayerParams::out_channels);
      windowFields();
      biasField();
      break;
    case LayerType::MaxPool2d:
    case LayerType::AvgPool2d:
      windowFields();
      break;
    case LayerType::Linear:
      intField("params.out_features", 1, kMaxFeatures, &LayerParams::out_channels);
      biasField();
      break;
    case LayerType::BatchNorm2d:
      realField("params.eps", 1e-10, 1.0, &LayerParams::eps);
      realField("params.momentum", 0.0, 1.0, &LayerParams::momentum);
      break;
    case LayerType::Dropout:
      realField("params.p", 0.0, 0.99, &LayerParams::p);
      break;
    default:
      break;
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
                                          : tr("%n problem(s): see the Problems panel.", nullptr,
                                               static_cast<int>(a.problems.size())));
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
