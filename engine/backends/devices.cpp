// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/devices.h"

#include <fstream>
#include <sstream>
#include <thread>

namespace tr {

namespace {

uint64_t meminfo_kib(const std::string& key) {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream is(line.substr(key.size() + 1));
    uint64_t kib = 0;
    is >> kib;
    return kib;
  }
  return 0;
}

}  // namespace

DeviceScan scan_devices() {
  DeviceScan s;
  s.host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.host_memory_bytes = meminfo_kib("MemTotal") * 1024;
  s.host_available_bytes = meminfo_kib("MemAvailable") * 1024;
#ifdef TR_HAVE_CUDA
  s.cuda_built = true;
  scan_cuda_devices(s);
#else
  s.cuda_status = "this build has no CUDA backend (configure with -DTR_CUDA=ON where nvcc exists)";
#endif
  return s;
}

}  // namespace tr
