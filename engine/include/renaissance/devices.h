// SPDX-License-Identifier: GPL-3.0-or-later
// What the machine offers: host threads and memory, and the CUDA devices the
// driver reports (or why there are none: no CUDA backend installed, its
// libraries missing, no driver, no device), so the CLI and the workbench can
// offer devices and check that a plan fits before allocating anything.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/cpu_bf16.h>
#include <renaissance/project.h>

namespace tr {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  uint64_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  int multiprocessors = 0;
};

// "AMX and AVX-512 BF16", "AVX-512 BF16", or what is missing.
std::string cpu_bf16_text(const CpuBf16& f);

// Why the CPU backend cannot train at precision `p` on a CPU with the BF16
// instructions `f`, or empty: BF16 runs on oneDNN's AVX-512 BF16 or AMX kernels.
std::string cpu_precision_problem(Precision p, const CpuBf16& f);

// Why CUDA device `d` cannot train at precision `p`, or empty: cuDNN's and
// cuBLAS's bfloat16 kernels need compute capability 8.0 (Ampere) or later.
std::string cuda_precision_problem(Precision p, const CudaDeviceInfo& d);

// A library the CUDA backend runs on, as the loader resolved it.
struct CudaLibraryInfo {
  std::string name;     // "CUDA runtime", "cuBLAS", "cuDNN", "NCCL"
  std::string version;  // "9.19.0"
  std::string path;     // the file, links resolved
  std::string problem;  // why it cannot be used (NCCL, loaded only for more than one GPU)
};

struct DeviceScan {
  int host_threads = 1;
  uint64_t host_memory_bytes = 0;     // MemTotal
  uint64_t host_available_bytes = 0;  // MemAvailable
  CpuBf16 cpu_bf16;
  // The build of the CPU backend's own kernels in use: the widest the CPU
  // runs and whose library loaded, "AVX-512", "AVX2" or "x86-64".
  std::string cpu_kernels;
  // Why not a wider build ("not the AVX-512 kernels: this CPU lacks ...",
  // clauses joined by "; "); empty when the widest runs.
  std::string cpu_kernels_note;
  // The channel block of the feature layout the CPU's FP32 plans use
  // (cpu_channel_block()).
  int cpu_channel_block = 0;
  bool cuda_backend_loaded = false;  // the CUDA backend's library is here and loaded
  std::string cuda_backend_path;     // where it was looked for
  std::vector<CudaDeviceInfo> cuda;
  std::string cuda_status;  // why there are no CUDA devices, or the driver/runtime versions
  std::vector<CudaLibraryInfo> cuda_libraries;  // when the CUDA backend loaded
};

DeviceScan scan_devices();

// The channel block oneDNN's FP32 direct convolutions take features in on
// this CPU (8 with AVX2, 16 with AVX-512; 0: none), the layout a CPU plan's
// feature maps take (CompileOptions::channel_block). Asked once.
int cpu_channel_block();

// The channel block the project's training.feature_layout asks for on this
// machine (CompileOptions::channel_block): 0 for nhwc, cpu_channel_block()
// for blocked. Throws ProjectError, naming the setting, where a CPU plan
// asks for blocks this CPU's convolutions do not take.
int feature_channel_block(const Project& project);

// Why `devices` (as `scan` found them) cannot train at precision `p`, or
// empty: the CPU's instructions or the first listed GPU that lacks the
// compute capability. Devices the scan did not find are another check's.
std::string precision_problem(Precision p, const DeviceSet& devices, const DeviceScan& scan);

// The bytes one rank's arena may take here: the host's available memory
// shared by the CPU ranks, or the smallest chosen CUDA device's memory.
// 0 with `missing` saying why when a chosen device is not on this machine.
struct RankMemory {
  uint64_t bytes = 0;
  std::string missing;
};
RankMemory memory_per_rank(const DeviceSet& devices, const DeviceScan& scan);

}  // namespace tr
