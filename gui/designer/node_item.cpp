// SPDX-License-Identifier: GPL-3.0-or-later
#include "node_item.h"

#include <QApplication>
#include <QFontMetricsF>
#include <QPainter>
#include <QPalette>
#include <QStyleOptionGraphicsItem>

#include "edge_item.h"
#include "layer_catalog.h"
#include "port_item.h"

namespace tr::gui {

namespace {

constexpr double kPad = 8;

bool dark_theme(const QPalette& pal) {
  return pal.color(QPalette::Window).lightness() < 128;
}

// Readable at 100% zoom: the title a little above the UI font, details at it.
QFont title_font(QFont base) {
  base.setBold(true);
  base.setPointSizeF(base.pointSizeF() * 1.1);
  return base;
}

QFont detail_font(QFont base) {
  base.setPointSizeF(base.pointSizeF() * 0.95);
  return base;
}

}  // namespace

NodeItem::NodeItem(int index, const LayerNode& node) : index_(index), layerType_(node.type) {
  setFlags(ItemIsMovable | ItemIsSelectable | ItemSendsGeometryChanges);
  setAcceptHoverEvents(true);
  const int ins = layer_input_ports(node);
  for (int p = 0; p < ins; ++p) {
    auto* port = new PortItem(this, true, p);
    port->setPos(kWidth * (p + 1) / (ins + 1), 0);
    inputs_.push_back(port);
  }
  const int outs = layer_output_ports(node.type);
  for (int p = 0; p < outs; ++p) {
    auto* port = new PortItem(this, false, p);
    port->setPos(kWidth * (p + 1) / (outs + 1), kHeight);
    outputs_.push_back(port);
  }
  setInfo(node, nullptr, {});
}

void NodeItem::setInfo(const LayerNode& node, const NodeAnalysis* analysis,
                       const QStringList& problems) {
  id_ = QString::fromStdString(node.id);
  typeName_ = QString::fromUtf8(layer_type_name(node.type).data(),
                                static_cast<int>(layer_type_name(node.type).size()));
  const std::string_view abbreviation = layer_spec(node.type).abbreviation;
  typeAbbreviation_ =
      QString::fromUtf8(abbreviation.data(), static_cast<qsizetype>(abbreviation.size()));
  summary_ = designer_summary(node);
  details_.clear();
  if (analysis && analysis->known) {
    if (layer_has_weights(node.type) || analysis->params > 0)
      details_ = QObject::tr("%1 params").arg(grouped_number(analysis->params));
    if (layer_output_ports(node.type) > 0) {
      if (!details_.isEmpty()) details_ += QStringLiteral(" · ");
      // One sample's shape: the batch is every layer's, and [128,28,28,6]
      // did not fit beside the parameters (the tooltip has it whole).
      details_ += QStringLiteral("→ ") + sample_shape_text(analysis->output);
    }
  }
  problems_ = problems;
  QString tip = QStringLiteral("<b>%1</b> (%2)").arg(id_.toHtmlEscaped(), typeName_);
  if (!summary_.isEmpty()) tip += QStringLiteral("<br>") + summary_.toHtmlEscaped();
  if (analysis && analysis->known && layer_output_ports(node.type) > 0)
    tip += QStringLiteral("<br>") +
           QObject::tr("output %1 (N, H, W, C)").arg(shape_text(analysis->output)).toHtmlEscaped();
  if (!details_.isEmpty()) tip += QStringLiteral("<br>") + details_.toHtmlEscaped();
  for (const QString& p : problems_)
    tip += QStringLiteral("<br><font color='#c62828'>%1</font>").arg(p.toHtmlEscaped());
  setToolTip(tip);
  update();
}

void NodeItem::setTensorSplit(const QString& split) {
  if (split == split_) return;
  split_ = split;
  update();
}

namespace {

// One colour per way of splitting: the pair's two halves apart, what lies
// between them (its share of the channels or heads) between the two.
QColor split_colour(const QString& split) {
  if (split == QLatin1String("column")) return QColor(0x1e, 0x88, 0xe5);
  if (split == QLatin1String("row")) return QColor(0x8e, 0x24, 0xaa);
  return QColor(0x43, 0xa0, 0x47);  // heads, channels, a whole attention
}

}  // namespace

PortItem* NodeItem::inputPort(int port) const {
  return port >= 0 && static_cast<size_t>(port) < inputs_.size()
             ? inputs_[static_cast<size_t>(port)]
             : nullptr;
}

PortItem* NodeItem::outputPort(int port) const {
  return port >= 0 && static_cast<size_t>(port) < outputs_.size()
             ? outputs_[static_cast<size_t>(port)]
             : nullptr;
}

QString NodeItem::shownType(const QFontMetricsF& title, const QFontMetricsF& small) const {
  const double room = kWidth - 3 * kPad - small.horizontalAdvance(typeName_);
  return title.horizontalAdvance(id_) > room && !typeAbbreviation_.isEmpty() ? typeAbbreviation_
                                                                             : typeName_;
}

QStringList NodeItem::cutTexts(const QFont& font) const {
  const QFontMetricsF tm(title_font(font)), sm(detail_font(font));
  const double typeWidth = sm.horizontalAdvance(shownType(tm, sm));
  QStringList cut;
  if (tm.horizontalAdvance(id_) > kWidth - 3 * kPad - typeWidth) cut << id_;
  for (const QString& line : {summary_, details_})
    if (sm.horizontalAdvance(line) > kWidth - 2 * kPad) cut << line;
  return cut;
}

QRectF NodeItem::boundingRect() const {
  return QRectF(-4, -4, kWidth + 8, kHeight + 8);
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const QPalette pal = QApplication::palette();
  const bool dark = dark_theme(pal);
  QColor fill = layer_colour(layerType_);
  if (dark) fill = QColor::fromHslF(fill.hslHueF(), fill.hslSaturationF() * 0.45, 0.26);
  const QRectF r(0, 0, kWidth, kHeight);
  const bool selected = option->state & QStyle::State_Selected;

  painter->setRenderHint(QPainter::Antialiasing);
  QPen frame(pal.color(QPalette::Mid), 1);
  if (!problems_.isEmpty()) frame = QPen(QColor(0xc6, 0x28, 0x28), 2);
  if (selected) frame = QPen(pal.color(QPalette::Highlight), 3);
  painter->setPen(frame);
  painter->setBrush(fill);
  painter->drawRoundedRect(r, 6, 6);

  const QColor text = pal.color(QPalette::Text);
  const QFont title = title_font(painter->font()), small = detail_font(painter->font());
  const QFontMetricsF tm(title), sm(small);

  painter->setFont(small);
  painter->setPen(dark ? text.darker(130) : text.lighter(160));
  const QString type = shownType(tm, sm);
  const double typeWidth = sm.horizontalAdvance(type);
  painter->drawText(QRectF(kWidth - kPad - typeWidth, 4, typeWidth, tm.height()),
                    Qt::AlignRight | Qt::AlignVCenter, type);

  painter->setFont(title);
  painter->setPen(text);
  const double idWidth = kWidth - 3 * kPad - typeWidth;
  painter->drawText(QRectF(kPad, 4, idWidth, tm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                    tm.elidedText(id_, Qt::ElideRight, idWidth));

  painter->setFont(small);
  const double line = sm.height();
  const double y1 = 6 + tm.height();
  painter->drawText(QRectF(kPad, y1, kWidth - 2 * kPad, line), Qt::AlignLeft | Qt::AlignVCenter,
                    sm.elidedText(summary_, Qt::ElideRight, kWidth - 2 * kPad));
  painter->drawText(QRectF(kPad, y1 + line, kWidth - 2 * kPad, line),
                    Qt::AlignLeft | Qt::AlignVCenter,
                    sm.elidedText(details_, Qt::ElideRight, kWidth - 2 * kPad));

  if (!split_.isEmpty()) {
    // A band down the left edge and the split's name at the bottom right.
    const QColor band = split_colour(split_);
    painter->setPen(Qt::NoPen);
    painter->setBrush(band);
    painter->drawRoundedRect(QRectF(1, 1, 5, kHeight - 2), 2, 2);
    painter->setFont(small);
    painter->setPen(band);
    const QString tag = QObject::tr("TP: %1").arg(split_);
    const double w = sm.horizontalAdvance(tag);
    painter->drawText(QRectF(kWidth - kPad - w - (problems_.isEmpty() ? 0 : 16),
                             kHeight - sm.height() - 2, w, sm.height()),
                      Qt::AlignRight | Qt::AlignVCenter, tag);
  }

  if (!problems_.isEmpty()) {
    const QRectF badge(kWidth - 14, kHeight - 14, 12, 12);
    painter->setPen(Qt::NoPen);
    painter->setBrush(QColor(0xc6, 0x28, 0x28));
    painter->drawEllipse(badge);
    painter->setPen(Qt::white);
    QFont b = small;
    b.setBold(true);
    painter->setFont(b);
    painter->drawText(badge, Qt::AlignCenter, QStringLiteral("!"));
  }
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemPositionHasChanged)
    for (EdgeItem* e : edges_) e->updatePath();
  return QGraphicsItem::itemChange(change, value);
}

}  // namespace tr::gui
