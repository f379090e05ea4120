// SPDX-License-Identifier: GPL-3.0-or-later
// The message a refused input gets, for tests that check what it says.
#pragma once

#include <QString>

#include <functional>

#include <renaissance/error.h>

namespace tr::test {

// The message of the UsageError `f` throws ("" when it throws none).
inline QString usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace tr::test
