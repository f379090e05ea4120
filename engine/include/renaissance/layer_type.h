// SPDX-License-Identifier: GPL-3.0-or-later
// The layer kinds a project may use, their port counts and their names in
// the project file.
#pragma once

#include <optional>
#include <string_view>

namespace tr {

enum class LayerType {
  Input,
  Conv2d,
  BatchNorm2d,
  ReLU,
  Tanh,
  SiLU,
  ReLU6,
  LeakyReLU,
  GELU,
  Sigmoid,
  MaxPool2d,
  AvgPool2d,
  GlobalAvgPool,
  Dropout,
  Flatten,
  Linear,
  Add,
  Concat,
  LayerNorm,
  MultiHeadSelfAttention,
  TokenLinear,
  SelfAttention,
  PositionEmbedding,
  ClassToken,
  TokenPool,
  SoftmaxCrossEntropy,
};

inline constexpr LayerType kAllLayerTypes[] = {
    LayerType::Input,
    LayerType::Conv2d,
    LayerType::BatchNorm2d,
    LayerType::ReLU,
    LayerType::Tanh,
    LayerType::SiLU,
    LayerType::ReLU6,
    LayerType::LeakyReLU,
    LayerType::GELU,
    LayerType::Sigmoid,
    LayerType::MaxPool2d,
    LayerType::AvgPool2d,
    LayerType::GlobalAvgPool,
    LayerType::Dropout,
    LayerType::Flatten,
    LayerType::Linear,
    LayerType::Add,
    LayerType::Concat,
    LayerType::LayerNorm,
    LayerType::MultiHeadSelfAttention,
    LayerType::TokenLinear,
    LayerType::SelfAttention,
    LayerType::PositionEmbedding,
    LayerType::ClassToken,
    LayerType::TokenPool,
    LayerType::SoftmaxCrossEntropy,
};

std::string_view layer_type_name(LayerType t) noexcept;
std::optional<LayerType> layer_type_from_name(std::string_view name) noexcept;

// The most input ports a layer has (a backward's accumulate mask holds 8 outputs).
constexpr int kMaxInputPorts = 8;

// (A node's input ports: layer_input_ports(const LayerNode&) in layer_spec.h,
// since Concat takes its number as a parameter.)
// Output ports it produces (SoftmaxCrossEntropy is a sink: 0).
int layer_output_ports(LayerType t) noexcept;
// True for layers that own trainable parameters.
bool layer_has_weights(LayerType t) noexcept;

}  // namespace tr
