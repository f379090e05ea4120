// SPDX-License-Identifier: GPL-3.0-or-later
// Each layer type's shape rule, named by its entry in the layer table
// (model/layer_spec.h): from the input shapes and the parameters, the output
// shape, the trainable parameter count and the forward FLOPs, or what does
// not fit. Shape inference (model/shape_inference.h) runs them in order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/layer_spec.h>
#include <renaissance/project.h>
#include <renaissance/shape.h>

namespace tr {

// The widest head an attention kernel holds (the CPU's and the CUDA's).
inline constexpr int64_t kMaxHeadChannels = 512;

// "[N,28,28,1]"
std::string dims(const Shape& s);

bool input_shape(ShapeQuery& q);
bool conv_shape(ShapeQuery& q);
bool batch_norm_shape(ShapeQuery& q);
bool layer_norm_shape(ShapeQuery& q);
bool elementwise_shape(ShapeQuery& q);  // ReLU, Tanh, SiLU, Dropout
bool pool_shape(ShapeQuery& q);
bool global_pool_shape(ShapeQuery& q);
bool flatten_shape(ShapeQuery& q);
bool linear_shape(ShapeQuery& q);
bool token_linear_shape(ShapeQuery& q);
bool self_attention_shape(ShapeQuery& q);
bool multi_head_attention_shape(ShapeQuery& q);
bool position_embedding_shape(ShapeQuery& q);
bool class_token_shape(ShapeQuery& q);
bool token_pool_shape(ShapeQuery& q);
bool add_shape(ShapeQuery& q);
bool concat_shape(ShapeQuery& q);
bool loss_shape(ShapeQuery& q);

}  // namespace tr
