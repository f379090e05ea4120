// SPDX-License-Identifier: GPL-3.0-or-later
// Each layer type's shape rule, named by its entry in the layer table
// (model/layer_spec.h): from the input shapes and the parameters, the output
// shape, the trainable parameter count and the forward FLOPs, or what does
// not fit. Shape inference (model/shape_inference.h) runs them in order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"
#include "model/project.h"

namespace tr {

struct ShapeQuery {
  ShapeQuery(const LayerParams& p, const std::vector<Shape>& in) : params(p), inputs(in) {}

  const LayerParams& params;
  const std::vector<Shape>& inputs;  // one per input port, all known
  int64_t batch = 0;
  int64_t height = 0, width = 0;  // Input: other than 0, the variant's resolution
  int64_t classes = 0;            // the dataset's, for the loss
  // The answer: out starts as inputs[0] (or empty for Input).
  Shape out;
  int64_t param_count = 0;
  int64_t flops = 0;  // a multiply-add is 2
  // When the rule returns false: what is wrong, and the field it is about.
  std::string problem;
  std::string field;
};

using ShapeRule = bool (*)(ShapeQuery& q);

// "[N,28,28,1]"
std::string dims(const Shape& s);

bool input_shape(ShapeQuery& q);
bool conv_shape(ShapeQuery& q);
bool batch_norm_shape(ShapeQuery& q);
bool elementwise_shape(ShapeQuery& q);  // ReLU, Tanh, SiLU, Dropout
bool pool_shape(ShapeQuery& q);
bool global_pool_shape(ShapeQuery& q);
bool flatten_shape(ShapeQuery& q);
bool linear_shape(ShapeQuery& q);
bool add_shape(ShapeQuery& q);
bool loss_shape(ShapeQuery& q);

}  // namespace tr
