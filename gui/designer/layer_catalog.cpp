// SPDX-License-Identifier: GPL-3.0-or-later
#include "layer_catalog.h"

#include <QCoreApplication>
#include <QLocale>

namespace tr::gui {

namespace {

QString tr_(const char* text) {
  return QCoreApplication::translate("LayerCatalog", text);
}

QString hw(int64_t h, int64_t w) {
  return h == w ? QString::number(h) : QStringLiteral("%1×%2").arg(h).arg(w);
}

}  // namespace

LayerGroup layer_group(LayerType t) {
  return layer_spec(t).group;
}

QString layer_group_name(LayerGroup g) {
  switch (g) {
    case LayerGroup::InputOutput:
      return tr_("Input and loss");
    case LayerGroup::Convolution:
      return tr_("Convolution");
    case LayerGroup::Normalisation:
      return tr_("Normalisation, dropout");
    case LayerGroup::Activation:
      return tr_("Activation");
    case LayerGroup::Pooling:
      return tr_("Pooling");
    case LayerGroup::Dense:
      return tr_("Dense");
    case LayerGroup::Merge:
      return tr_("Merge (residual)");
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
  }
  return Qt::white;
}

QString layer_summary(const LayerNode& node) {
  const LayerParams& p = node.params;
  switch (node.type) {
    case LayerType::Input:
      return QStringLiteral("%1×%2×%3").arg(p.height).arg(p.width).arg(p.channels);
    case LayerType::Conv2d:
      return QStringLiteral("%1 · k%2 · s%3 · p%4%5")
          .arg(p.out_channels)
          .arg(hw(p.kernel_h, p.kernel_w), hw(p.stride_h, p.stride_w), hw(p.pad_h, p.pad_w),
               p.bias ? QString() : tr_(" · no bias"));
    case LayerType::MaxPool2d:
    case LayerType::AvgPool2d:
      return QStringLiteral("k%1 · s%2 · p%3")
          .arg(hw(p.kernel_h, p.kernel_w), hw(p.stride_h, p.stride_w), hw(p.pad_h, p.pad_w));
    case LayerType::Linear:
      return QStringLiteral("%1%2").arg(p.out_channels).arg(p.bias ? QString() : tr_(" · no bias"));
    case LayerType::Dropout:
      return QStringLiteral("p %1").arg(p.p);
    default:
      return {};
  }
}

QString shape_text(const Shape& s) {
  return QString::fromStdString(s.str());
}

QString grouped_number(int64_t n) {
  QLocale c(QLocale::English);
  return c.toString(static_cast<qlonglong>(n));
}

}  // namespace tr::gui
