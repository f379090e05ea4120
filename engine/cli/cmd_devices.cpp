// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli devices`: what this machine can train on.
#include <cstdio>

#include <nlohmann/json.hpp>

#include <renaissance/devices.h>
#include <renaissance/plan_report.h>
#include "commands.h"
#include "options.h"

namespace tr::cli {

int cmd_devices(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {}, {"json"});
  if (!a.positional.empty()) throw UsageError("devices takes no arguments");
  const DeviceScan s = scan_devices();
  if (a.has("json")) {
    nlohmann::json j;
    j["cpu"] = {{"threads", s.host_threads},
                {"memory_bytes", s.host_memory_bytes},
                {"available_bytes", s.host_available_bytes},
                {"bf16", {{"avx512_bf16", s.cpu_bf16.avx512_bf16}, {"amx", s.cpu_bf16.amx_bf16}}},
                {"kernels", s.cpu_kernels},
                {"channel_block", s.cpu_channel_block}};
    if (!s.cpu_kernels_note.empty()) j["cpu"]["kernels_note"] = s.cpu_kernels_note;
    j["cuda_backend"] = {{"loaded", s.cuda_backend_loaded}, {"path", s.cuda_backend_path}};
    j["cuda_status"] = s.cuda_status;
    j["cuda_libraries"] = nlohmann::json::array();
    for (const CudaLibraryInfo& l : s.cuda_libraries) {
      nlohmann::json lib = {{"name", l.name}, {"version", l.version}, {"path", l.path}};
      if (!l.problem.empty()) lib["problem"] = l.problem;
      j["cuda_libraries"].push_back(lib);
    }
    j["cuda"] = nlohmann::json::array();
    for (const CudaDeviceInfo& d : s.cuda)
      j["cuda"].push_back(
          {{"index", d.index},
           {"name", d.name},
           {"memory_bytes", d.memory_bytes},
           {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
           {"multiprocessors", d.multiprocessors}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("cpu      %d threads, %s memory (%s available), %s, %s kernels\n", s.host_threads,
              human_bytes(s.host_memory_bytes).c_str(), human_bytes(s.host_available_bytes).c_str(),
              cpu_bf16_text(s.cpu_bf16).c_str(), s.cpu_kernels.c_str());
  if (!s.cpu_kernels_note.empty()) std::printf("         (%s)\n", s.cpu_kernels_note.c_str());
  if (s.cpu_channel_block > 0)
    std::printf(
        "         FP32 feature maps in channel blocks of %d (oneDNN's convolutions' layout)\n",
        s.cpu_channel_block);
  if (s.cuda.empty())
    std::printf("cuda     %s; training runs on the CPU backend\n", s.cuda_status.c_str());
  for (const CudaDeviceInfo& d : s.cuda)
    std::printf("cuda:%d   %s, %s, compute capability %d.%d, %d SMs\n", d.index, d.name.c_str(),
                human_bytes(d.memory_bytes).c_str(), d.cc_major, d.cc_minor, d.multiprocessors);
  if (!s.cuda.empty())
    std::printf("         (%s; backend %s)\n", s.cuda_status.c_str(), s.cuda_backend_path.c_str());
  // Which CUDA libraries the backend resolved: a wheel's copy may shadow the system's.
  for (const CudaLibraryInfo& l : s.cuda_libraries) {
    if (!l.problem.empty())
      std::printf("  %-13s %s\n", l.name.c_str(), l.problem.c_str());
    else
      std::printf("  %-13s %-8s %s\n", l.name.c_str(), l.version.c_str(), l.path.c_str());
  }
  return 0;
}

}  // namespace tr::cli
