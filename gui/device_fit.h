// SPDX-License-Identifier: GPL-3.0-or-later
// Whether a compiled plan fits the devices it is meant for on this machine:
// every rank's arena in host memory for CPU ranks, one arena per CUDA device
// otherwise. The answer carries the numbers, as users need them to decide.
#pragma once

#include <QString>

#include <renaissance/compiled_plan.h>
#include <renaissance/devices.h>

namespace tr::gui {

struct DeviceFit {
  bool checked = false;  // false: no way to tell here (e.g. CUDA devices absent)
  bool fits = false;
  QString text;  // "fits cpu:2: yes (2.4 MiB for 2 rank arenas, 20 GiB of host memory available)"
};

DeviceFit check_device_fit(const CompiledPlan& cp, const DeviceScan& scan);

}  // namespace tr::gui
