// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/kernel_builds.h"

#include <filesystem>
#include <system_error>

#include "core/build_id.h"
#include "core/cpu_features.h"
#include "core/sibling_library.h"

namespace tr::cpu {

namespace {

using EntryFn = const OwnKernels* (*)();

Avx512Kernels refuse(Avx512Kernels k, std::string problem) {
  k.kernels = nullptr;
  k.problem = std::move(problem);
  return k;
}

Avx512Kernels find_avx512_kernels() {
#ifdef TR_AVX512_KERNELS
  if (!cpu_runs_x86_64_v4()) {
    Avx512Kernels k;
    k.problem = "this CPU lacks AVX-512 (F, BW, CD, DQ and VL, saved by the OS)";
    return k;
  }
  return load_avx512_kernels(default_avx512_kernels_path());
#else
  Avx512Kernels k;
  k.problem = "this build has no AVX-512 kernels (they are built for x86-64 with GCC or Clang)";
  return k;
#endif
}

}  // namespace

const OwnKernels& portable_own_kernels() {
  static const std::string build = engine_build_id();
  static const OwnKernels table{kOwnKernelsAbi, build.c_str(), "x86-64", &own_compute_kernel,
                                &own_range_kernel};
  return table;
}

std::string default_avx512_kernels_path() {
  return path_beside_library(reinterpret_cast<const void*>(&default_avx512_kernels_path),
                             kAvx512KernelsFile);
}

Avx512Kernels load_avx512_kernels(const std::string& path) {
  Avx512Kernels k;
  k.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return refuse(k, path + " is not there (the build makes it beside librenaissance-cpu.so)");
  const LibraryEntry lib = open_library_entry(path, kAvx512KernelsEntry);
  if (!lib.loaded) return refuse(k, path + " cannot be loaded: " + lib.load_error);
  const auto entry = reinterpret_cast<EntryFn>(lib.entry);
  if (!entry)
    return refuse(k, path + " is not a build of the CPU kernels (it has no " +
                         std::string(kAvx512KernelsEntry) + ")");
  const OwnKernels* table = entry();
  if (!table || table->abi != kOwnKernelsAbi || !table->build || !table->compute || !table->range)
    return refuse(k, path + " speaks another interface (version " +
                         std::to_string(table ? table->abi : 0) + ", this engine's is " +
                         std::to_string(kOwnKernelsAbi) + ")");
  if (engine_build_id() != table->build)
    return refuse(k, path + " is from build " + table->build + " and this engine is " +
                         engine_build_id() + ": it must come from the same build");
  k.kernels = table;
  return k;
}

const Avx512Kernels& avx512_own_kernels() {
  static const Avx512Kernels k = find_avx512_kernels();
  return k;
}

const OwnKernels& best_own_kernels() {
  const Avx512Kernels& k = avx512_own_kernels();
  return k.kernels ? *k.kernels : portable_own_kernels();
}

}  // namespace tr::cpu
