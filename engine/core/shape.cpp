// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/shape.h>

namespace tr {

std::string Shape::str() const {
  return "[" + std::to_string(n) + "," + std::to_string(h) + "," + std::to_string(w) + "," +
         std::to_string(c) + "]";
}

}  // namespace tr
