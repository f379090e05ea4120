// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/layer_type.h>

#include <renaissance/layer_spec.h>

namespace tr {

std::string_view layer_type_name(LayerType t) noexcept {
  return layer_spec(t).name;
}

std::optional<LayerType> layer_type_from_name(std::string_view name) noexcept {
  for (const LayerSpec& s : layer_specs())
    if (s.name == name) return s.type;
  return std::nullopt;
}

int layer_output_ports(LayerType t) noexcept {
  return layer_spec(t).outputs;
}

bool layer_has_weights(LayerType t) noexcept {
  return layer_spec(t).has_weights;
}

}  // namespace tr
