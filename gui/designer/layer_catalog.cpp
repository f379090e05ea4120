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
  switch (t) {
    case LayerType::Input:
    case LayerType::SoftmaxCrossEntropy:
      return LayerGroup::InputOutput;
    case LayerType::Conv2d:
      return LayerGroup::Convolution;
    case LayerType::BatchNorm2d:
    case LayerType::Dropout:
      return LayerGroup::Normalisation;
    case LayerType::ReLU:
    case LayerType::Tanh:
    case LayerType::SiLU:
      return LayerGroup::Activation;
    case LayerType::MaxPool2d:
    case LayerType::AvgPool2d:
    case LayerType::GlobalAvgPool:
      return LayerGroup::Pooling;
    case LayerType::Flatten:
    case LayerType::Linear:
      return LayerGroup::Dense;
    case LayerType::Add:
      return LayerGroup::Merge;
  }
  return LayerGroup::Dense;
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
  switch (t) {
    case LayerType::Input:
      return tr_("The batch of images the model reads (height, width, channels); exactly one.");
    case LayerType::Conv2d:
      return tr_("2-D convolution: output channels, kernel, stride, padding, bias.");
    case LayerType::BatchNorm2d:
      return tr_("Batch normalisation over each channel (scale and shift are trained).");
    case LayerType::ReLU:
      return tr_("max(0, x)");
    case LayerType::Tanh:
      return tr_("Hyperbolic tangent.");
    case LayerType::SiLU:
      return tr_("x · sigmoid(x)");
    case LayerType::MaxPool2d:
      return tr_("Maximum over a window: kernel, stride, padding.");
    case LayerType::AvgPool2d:
      return tr_("Average over a window: kernel, stride, padding.");
    case LayerType::GlobalAvgPool:
      return tr_("Average over the whole height and width: [N,H,W,C] -> [N,1,1,C].");
    case LayerType::Dropout:
      return tr_("Zeroes each value with probability p while training.");
    case LayerType::Flatten:
      return tr_("[N,H,W,C] -> [N,1,1,H·W·C] in NHWC order.");
    case LayerType::Linear:
      return tr_("Fully connected layer: output features, bias.");
    case LayerType::Add:
      return tr_("Adds two inputs of the same shape (residual connections).");
    case LayerType::SoftmaxCrossEntropy:
      return tr_("The loss: softmax and cross-entropy over the classes; exactly one.");
  }
  return {};
}

LayerNode default_layer(LayerType t) {
  LayerNode n;
  n.type = t;
  LayerParams& p = n.params;
  switch (t) {
    case LayerType::Input:
      p.height = 28;
      p.width = 28;
      p.channels = 1;
      break;
    case LayerType::Conv2d:
      p.out_channels = 16;
      p.kernel_h = p.kernel_w = 3;
      p.pad_h = p.pad_w = 1;
      break;
    case LayerType::MaxPool2d:
    case LayerType::AvgPool2d:
      p.kernel_h = p.kernel_w = 2;
      p.stride_h = p.stride_w = 2;
      break;
    case LayerType::Linear:
      p.out_channels = 10;
      break;
    default:
      break;
  }
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
