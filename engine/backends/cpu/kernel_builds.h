// SPDX-License-Identifier: GPL-3.0-or-later
// Our own CPU kernels (own_kernels.h) come in two builds of the same
// sources: one for any x86-64, inside librenaissance-cpu.so, and one for
// x86-64-v4, librenaissance-cpu-avx512.so, where the compiler works 16 floats
// at a time. Both give the same bits: neither contracts a multiply and an add
// into one rounding nor reorders a sum (tests compare the two op by op). The
// backend runs the AVX-512 build where the CPU has AVX-512 and the library
// loads. That library is opened at run time, never linked, so not one of its
// instructions runs on a CPU without AVX-512, not even an initialiser.
#pragma once

#include <string>

#include "backends/cpu/own_kernels.h"

namespace tr::cpu {

// Bumped whenever the table's layout or meaning changes.
inline constexpr int kOwnKernelsAbi = 1;
inline constexpr const char* kAvx512KernelsFile = "librenaissance-cpu-avx512.so";
// extern "C" const OwnKernels* tr_cpu_avx512_kernels(): the one symbol the
// backend looks up there.
inline constexpr const char* kAvx512KernelsEntry = "tr_cpu_avx512_kernels";

struct OwnKernels {
  int abi = 0;                  // kOwnKernelsAbi of the build
  const char* build = nullptr;  // engine_build_id() of the build
  const char* isa = nullptr;    // "x86-64" or "AVX-512"
  Kernel (*compute)(ComputeOp) noexcept = nullptr;
  Kernel (*range)(RangeOp) noexcept = nullptr;
};

// The build inside this library.
const OwnKernels& portable_own_kernels();

// The AVX-512 build, or why there is none here.
struct Avx512Kernels {
  const OwnKernels* kernels = nullptr;
  std::string path;     // the file looked for (empty when the CPU rules it out)
  std::string problem;  // empty exactly when kernels is set
};
// Looked for once (later calls, from any thread, return the same answer).
const Avx512Kernels& avx512_own_kernels();
// Tries the library at `path` now, on a CPU that runs it: for tests.
Avx512Kernels load_avx512_kernels(const std::string& path);
// kAvx512KernelsFile in the folder of this library.
std::string default_avx512_kernels_path();

// The build the backend runs: AVX-512 where it loaded, else the portable one.
const OwnKernels& best_own_kernels();

}  // namespace tr::cpu
