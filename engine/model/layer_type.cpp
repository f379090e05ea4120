// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/layer_type.h"

namespace tr {

std::string_view layer_type_name(LayerType t) noexcept {
  switch (t) {
    case LayerType::Input:
      return "Input";
    case LayerType::Conv2d:
      return "Conv2d";
    case LayerType::BatchNorm2d:
      return "BatchNorm2d";
    case LayerType::ReLU:
      return "ReLU";
    case LayerType::Tanh:
      return "Tanh";
    case LayerType::SiLU:
      return "SiLU";
    case LayerType::MaxPool2d:
      return "MaxPool2d";
    case LayerType::AvgPool2d:
      return "AvgPool2d";
    case LayerType::GlobalAvgPool:
      return "GlobalAvgPool";
    case LayerType::Dropout:
      return "Dropout";
    case LayerType::Flatten:
      return "Flatten";
    case LayerType::Linear:
      return "Linear";
    case LayerType::Add:
      return "Add";
    case LayerType::SoftmaxCrossEntropy:
      return "SoftmaxCrossEntropy";
  }
  return "?";
}

std::optional<LayerType> layer_type_from_name(std::string_view name) noexcept {
  for (LayerType t : kAllLayerTypes)
    if (layer_type_name(t) == name) return t;
  return std::nullopt;
}

int layer_input_ports(LayerType t) noexcept {
  switch (t) {
    case LayerType::Input:
      return 0;
    case LayerType::Add:
      return 2;
    default:
      return 1;
  }
}

int layer_output_ports(LayerType t) noexcept {
  return t == LayerType::SoftmaxCrossEntropy ? 0 : 1;
}

bool layer_has_weights(LayerType t) noexcept {
  return t == LayerType::Conv2d || t == LayerType::Linear || t == LayerType::BatchNorm2d;
}

}  // namespace tr
