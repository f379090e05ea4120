// SPDX-License-Identifier: GPL-3.0-or-later
#include "layer_catalog.h"

#include <QCoreApplication>
#include <QLocale>

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct LayerCatalogText {
  Q_DECLARE_TR_FUNCTIONS(LayerCatalog)
};

}  // namespace

LayerGroup layer_group(LayerType t) {
  return layer_spec(t).group;
}

QString layer_group_name(LayerGroup g) {
  switch (g) {
    case LayerGroup::InputOutput:
      return LayerCatalogText::tr("Input and loss");
    case LayerGroup::Convolution:
      return LayerCatalogText::tr("Convolution");
    case LayerGroup::Normalisation:
      return LayerCatalogText::tr("Normalisation, dropout");
    case LayerGroup::Activation:
      return LayerCatalogText::tr("Activation");
    case LayerGroup::Pooling:
      return LayerCatalogText::tr("Pooling");
    case LayerGroup::Dense:
      return LayerCatalogText::tr("Dense");
    case LayerGroup::Merge:
      return LayerCatalogText::tr("Merge (residual)");
    case LayerGroup::Transformer:
      return LayerCatalogText::tr("Transformer");
  }
  return {};
}

QString layer_description(LayerType t) {
  return QCoreApplication::translate("LayerCatalog", layer_spec(t).description.data());
}

LayerNode default_layer(LayerType t) {
  LayerNode n;
  n.type = t;
  n.params = layer_spec(t).defaults;
  return n;
}

QColor layer_colour(LayerType t) {
  switch (layer_group(t)) {
    case LayerGroup::InputOutput:
      return QColor(0xe8, 0xe8, 0xe8);
    case LayerGroup::Convolution:
      return QColor(0xcf, 0xe2, 0xf7);
    case LayerGroup::Normalisation:
      return QColor(0xf6, 0xe7, 0xc4);
    case LayerGroup::Activation:
      return QColor(0xd9, 0xf0, 0xd3);
    case LayerGroup::Pooling:
      return QColor(0xe6, 0xd9, 0xf2);
    case LayerGroup::Dense:
      return QColor(0xf7, 0xd7, 0xd0);
    case LayerGroup::Merge:
      return QColor(0xfa, 0xf0, 0xa6);
    case LayerGroup::Transformer:
      return QColor(0xd0, 0xf0, 0xee);
  }
  return Qt::white;
}

QString designer_summary(const LayerNode& node) {
  static const SummaryStyle designer{" · ", "×", " ", "no "};
  return QString::fromStdString(tr::layer_summary(node, designer));
}

QString shape_text(const Shape& s) {
  return QString::fromStdString(s.str());
}

QString sample_shape_text(const Shape& s) {
  if (s.h == 1 && s.w == 1) return QString::number(s.c);
  return QStringLiteral("%1×%2×%3").arg(s.h).arg(s.w).arg(s.c);
}

QString grouped_number(int64_t n) {
  QLocale c(QLocale::English);
  return c.toString(static_cast<qlonglong>(n));
}

}  // namespace tr::gui
