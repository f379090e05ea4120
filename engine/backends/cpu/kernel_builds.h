// SPDX-License-Identifier: GPL-3.0-or-later
// Our own CPU kernels (own_kernels.h) come in three builds of the same
// sources: one for any x86-64, inside librenaissance-cpu.so; one for
// x86-64-v3 (AVX2), librenaissance-cpu-avx2.so, where the compiler works 8
// floats at a time; and one for x86-64-v4, librenaissance-cpu-avx512.so, 16
// at a time. All give the same bits: none contracts a multiply and an add
// into one rounding nor reorders a sum (tests compare them op by op). The
// backend runs the widest build the CPU runs and whose library loads. Those
// libraries are opened at run time, never linked, so not one of their
// instructions runs on a CPU without them, not even an initialiser.
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/own_kernels.h"

namespace tr::cpu {

// Bumped whenever the table's layout or meaning changes.
inline constexpr int kOwnKernelsAbi = 2;
// extern "C" const OwnKernels* tr_cpu_own_kernels(): the one symbol each
// optional build's library exports.
inline constexpr const char* kOwnKernelsEntry = "tr_cpu_own_kernels";

struct OwnKernels {
  int abi = 0;                  // kOwnKernelsAbi of the build
  const char* build = nullptr;  // engine_build_id() of the build
  const char* isa = nullptr;    // "x86-64", "AVX2" or "AVX-512"
  Kernel (*compute)(ComputeOp) noexcept = nullptr;
  Kernel (*range)(RangeOp) noexcept = nullptr;
};

// An optional build: what it needs of the CPU and where it lives.
struct KernelBuild {
  const char* isa;   // as its table names it
  const char* file;  // its library, beside librenaissance-cpu.so
  bool (*cpu_runs)() noexcept;
  const char* lacking;  // what a CPU that cannot run it lacks
};

// The optional builds, widest first: AVX-512, then AVX2.
const std::vector<KernelBuild>& optional_kernel_builds();

// An optional build as found here: its table, or why there is none.
struct LoadedKernels {
  const KernelBuild* build = nullptr;
  const OwnKernels* kernels = nullptr;
  std::string path;     // the file looked for (empty when the CPU rules it out)
  std::string problem;  // empty exactly when kernels is set
};

// The build inside this library.
const OwnKernels& portable_own_kernels();

// Each optional build, in optional_kernel_builds()'s order, looked for once
// (later calls, from any thread, return the same answer).
const std::vector<LoadedKernels>& optional_own_kernels();
// The optional build of that ISA as found here; nullptr for another name.
const LoadedKernels* optional_own_kernels(const std::string& isa);
// Tries the library at `path` as build `b` now, on a CPU that runs it: for
// tests.
LoadedKernels load_own_kernels(const KernelBuild& b, const std::string& path);
// `file` in the folder of this library.
std::string kernels_path_beside_backend(const std::string& file);

// The build the backend runs: the widest that loaded, else the portable one.
const OwnKernels& best_own_kernels();
// Every build that runs here: the portable one first, then those that loaded.
std::vector<const OwnKernels*> runnable_own_kernels();
// Why the backend runs no wider build than it does, one clause per wider
// build ("not the AVX-512 kernels: this CPU lacks ..."), joined by "; ";
// empty when it runs the widest.
std::string narrower_kernels_note();

}  // namespace tr::cpu
