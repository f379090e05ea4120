// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/devices.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include <renaissance/error.h>
#include "backends/cpu/kernel_builds.h"
#include "backends/cpu/kernels/dense.h"
#include "backends/cuda_plugin.h"
#include "core/cpu_features.h"

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

std::string cpu_bf16_text(const CpuBf16& f) {
  if (f.amx_bf16 && f.avx512_bf16) return "AMX and AVX-512 BF16";
  if (f.amx_bf16) return "AMX";
  if (f.avx512_bf16) return "AVX-512 BF16";
  return "no BF16 instructions (neither AVX-512 BF16 nor AMX)";
}

std::string cpu_precision_problem(Precision p, const CpuBf16& f) {
  if (p != Precision::BF16 || f.any()) return {};
  return "precision bf16 on the CPU needs AVX-512 BF16 or AMX instructions, and this CPU has " +
         cpu_bf16_text(f) + "; train at fp32 or amp here";
}

std::string cuda_precision_problem(Precision p, const CudaDeviceInfo& d) {
  if (p != Precision::BF16 || d.cc_major >= 8) return {};
  return "precision bf16 needs compute capability 8.0 or later, and cuda:" +
         std::to_string(d.index) + " (" + d.name + ") has " + std::to_string(d.cc_major) + "." +
         std::to_string(d.cc_minor) + "; train at fp32 or amp on it";
}

std::string precision_problem(Precision p, const DeviceSet& devices, const DeviceScan& scan) {
  if (devices.kind == DeviceKind::CPU) return cpu_precision_problem(p, scan.cpu_bf16);
  for (int id : devices.ids)
    if (id >= 0 && id < static_cast<int>(scan.cuda.size()))
      if (std::string problem = cuda_precision_problem(p, scan.cuda[static_cast<size_t>(id)]);
          !problem.empty())
        return problem;
  return {};
}

DeviceScan scan_devices() {
  DeviceScan s;
  s.host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.host_memory_bytes = meminfo_kib("MemTotal") * 1024;
  s.host_available_bytes = meminfo_kib("MemAvailable") * 1024;
  s.cpu_bf16 = detect_cpu_bf16();
  s.cpu_kernels = cpu::best_own_kernels().isa;
  s.cpu_kernels_note = cpu::narrower_kernels_note();
  s.cpu_channel_block = cpu_channel_block();
  const CudaPlugin& cuda = cuda_plugin();
  s.cuda_backend_path = cuda.path;
  if (cuda.table) {
    s.cuda_backend_loaded = true;
    cuda.table->scan_devices(s);
  } else {
    s.cuda_status = cuda.problem;
  }
  return s;
}

int cpu_channel_block() {
  return cpu::conv_channel_block();
}

int feature_channel_block(const Project& project) {
  if (project.training.feature_layout != FeatureLayout::Blocked) return 0;
  const int block = cpu_channel_block();
  if (block == 0 && project.training.devices.kind == DeviceKind::CPU) {
    Diagnostic d;
    d.file = project.source_path;
    d.field = "training.feature_layout";
    d.message =
        "feature layout 'blocked': this CPU's convolutions (oneDNN) take no channel blocks; "
        "use 'nhwc'";
    throw ProjectError({d});
  }
  return block;
}

RankMemory memory_per_rank(const DeviceSet& devices, const DeviceScan& scan) {
  RankMemory m;
  if (devices.kind == DeviceKind::CPU) {
    m.bytes = scan.host_available_bytes / static_cast<uint64_t>(std::max(1, devices.world_size()));
    return m;
  }
  for (int id : devices.ids) {
    const auto it = std::find_if(scan.cuda.begin(), scan.cuda.end(),
                                 [&](const CudaDeviceInfo& d) { return d.index == id; });
    if (it == scan.cuda.end()) {
      m.bytes = 0;
      m.missing = "cuda:" + std::to_string(id) + " is not on this machine (" +
                  (scan.cuda.empty() ? scan.cuda_status : std::string("no such device")) + ")";
      return m;
    }
    if (m.bytes == 0 || it->memory_bytes < m.bytes) m.bytes = it->memory_bytes;
  }
  return m;
}

}  // namespace tr
