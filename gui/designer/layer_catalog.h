// SPDX-License-Identifier: GPL-3.0-or-later
// What the designer shows of each layer type, from the engine's layer table
// (model/layer_spec.h): its palette group and description, a freshly dropped
// node (valid parameters, so a new node never makes the file unloadable), its
// colour and a one-line summary of its parameters.
#pragma once

#include <QColor>
#include <QString>
#include <string>

#include <renaissance/layer_spec.h>
#include <renaissance/project.h>
#include <renaissance/shape.h>

namespace tr::gui {

LayerGroup layer_group(LayerType t);
QString layer_group_name(LayerGroup g);
// One sentence for the palette's tooltip.
QString layer_description(LayerType t);

// A node of type `t` with usable defaults (Conv2d: 16 channels, 3x3, padding 1).
LayerNode default_layer(LayerType t);

// Fill colour of a node of this type (a light tint; the view darkens it for dark themes).
QColor layer_colour(LayerType t);

// "6 · 5×5 · s1 · p2", "p 0.5", "28×28×1", or empty.
QString designer_summary(const LayerNode& node);

// "[128,28,28,6]"
QString shape_text(const Shape& s);
// One sample of it, H×W×C ("28×28×6"), or the features alone ("120") for [N,1,1,C].
QString sample_shape_text(const Shape& s);

// 61706 -> "61,706"
QString grouped_number(int64_t n);

}  // namespace tr::gui
