// SPDX-License-Identifier: GPL-3.0-or-later
// A machine scan for GUI tests where every plan fits the host: the fit
// verdict then depends on the plan alone, not on the machine running CI.
#pragma once

#include <renaissance/devices.h>

inline tr::DeviceScan roomy_host() {
  tr::DeviceScan s;
  s.host_available_bytes = uint64_t{64} << 30;
  s.host_memory_bytes = uint64_t{64} << 30;
  s.cuda_status = "no CUDA here";
  return s;
}
