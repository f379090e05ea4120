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

LoadedKernels refuse(LoadedKernels k, std::string problem) {
  k.kernels = nullptr;
  k.problem = std::move(problem);
  return k;
}

LoadedKernels find_build(const KernelBuild& b) {
  LoadedKernels k;
  k.build = &b;
#ifdef TR_OPTIONAL_KERNEL_BUILDS
  if (!b.cpu_runs()) return refuse(k, std::string("this CPU lacks ") + b.lacking);
  return load_own_kernels(b, kernels_path_beside_backend(b.file));
#else
  return refuse(k, std::string("this build has no ") + b.isa +
                       " kernels (they are built for x86-64 with GCC or Clang)");
#endif
}

}  // namespace

const std::vector<KernelBuild>& optional_kernel_builds() {
  static const std::vector<KernelBuild> builds{
      {"AVX-512", "librenaissance-cpu-avx512.so", &cpu_runs_x86_64_v4,
       "AVX-512 (F, BW, CD, DQ and VL, saved by the OS)"},
      {"AVX2", "librenaissance-cpu-avx2.so", &cpu_runs_x86_64_v3,
       "AVX2 (with FMA, F16C, BMI1, BMI2, LZCNT and MOVBE, saved by the OS)"},
  };
  return builds;
}

const OwnKernels& portable_own_kernels() {
  static const std::string build = engine_build_id();
  static const OwnKernels table{kOwnKernelsAbi, build.c_str(), "x86-64", &own_compute_kernel,
                                &own_range_kernel};
  return table;
}

std::string kernels_path_beside_backend(const std::string& file) {
  return path_beside_library(reinterpret_cast<const void*>(&kernels_path_beside_backend), file);
}

LoadedKernels load_own_kernels(const KernelBuild& b, const std::string& path) {
  LoadedKernels k;
  k.build = &b;
  k.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return refuse(k, path + " is not there (the build makes it beside librenaissance-cpu.so)");
  const LibraryEntry lib = open_library_entry(path, kOwnKernelsEntry);
  if (!lib.loaded) return refuse(k, path + " cannot be loaded: " + lib.load_error);
  const auto entry = reinterpret_cast<EntryFn>(lib.entry);
  if (!entry)
    return refuse(k, path + " is not a build of the CPU kernels (it has no " +
                         std::string(kOwnKernelsEntry) + ")");
  const OwnKernels* table = entry();
  if (!table || table->abi != kOwnKernelsAbi || !table->build || !table->isa || !table->compute ||
      !table->range)
    return refuse(k, path + " speaks another interface (version " +
                         std::to_string(table ? table->abi : 0) + ", this engine's is " +
                         std::to_string(kOwnKernelsAbi) + ")");
  if (engine_build_id() != table->build)
    return refuse(k, path + " is from build " + table->build + " and this engine is " +
                         engine_build_id() + ": it must come from the same build");
  // A file renamed or copied over another build's would run instructions the
  // CPU check did not ask about.
  if (std::string(table->isa) != b.isa)
    return refuse(k, path + " holds the " + table->isa + " kernels, not the " + b.isa + " ones");
  k.kernels = table;
  return k;
}

const std::vector<LoadedKernels>& optional_own_kernels() {
  static const std::vector<LoadedKernels> found = [] {
    std::vector<LoadedKernels> v;
    for (const KernelBuild& b : optional_kernel_builds()) v.push_back(find_build(b));
    return v;
  }();
  return found;
}

const LoadedKernels* optional_own_kernels(const std::string& isa) {
  for (const LoadedKernels& k : optional_own_kernels())
    if (isa == k.build->isa) return &k;
  return nullptr;
}

const OwnKernels& best_own_kernels() {
  for (const LoadedKernels& k : optional_own_kernels())
    if (k.kernels) return *k.kernels;
  return portable_own_kernels();
}

std::vector<const OwnKernels*> runnable_own_kernels() {
  std::vector<const OwnKernels*> v{&portable_own_kernels()};
  for (const LoadedKernels& k : optional_own_kernels())
    if (k.kernels) v.push_back(k.kernels);
  return v;
}

std::string narrower_kernels_note() {
  std::string note;
  for (const LoadedKernels& k : optional_own_kernels()) {
    if (k.kernels) break;
    note += (note.empty() ? "not the " : "; not the ") + std::string(k.build->isa) +
            " kernels: " + k.problem;
  }
  return note;
}

}  // namespace tr::cpu
