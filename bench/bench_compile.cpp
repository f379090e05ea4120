// SPDX-License-Identifier: GPL-3.0-or-later
// Compile-time benchmark: how long the compiler takes to turn a project into
// all its variants' MemoryPlans and graphs. Prints one JSON line per project.
//   bench_compile [--repeat N] [--precision fp32|amp|bf16] [--memory-budget MIB] project.json...
// --memory-budget times the planner's search for the recomputations that fit.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/error.h>
#include <renaissance/project_io.h>

int main(int argc, char** argv) {
  int repeat = 50;
  tr::CompileOptions options;
  const char* precision = nullptr;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--memory-budget") == 0 && i + 1 < argc)
      options.memory_budget = std::strtoull(argv[++i], nullptr, 10) << 20;
    else if (std::strcmp(argv[i], "--precision") == 0 && i + 1 < argc)
      precision = argv[++i];
    else
      files.emplace_back(argv[i]);
  }
  if (files.empty()) {
    std::fprintf(stderr,
                 "usage: bench_compile [--repeat N] [--precision fp32|amp|bf16] "
                 "[--memory-budget MIB] project.json...\n");
    return 2;
  }
  try {
    for (const std::string& file : files) {
      using clock = std::chrono::steady_clock;
      const auto l0 = clock::now();
      tr::Project project = tr::load_project(file);
      if (precision) {
        bool known = false;
        for (tr::Precision p : {tr::Precision::FP32, tr::Precision::AMP, tr::Precision::BF16})
          if (tr::precision_name(p) == precision) {
            project.training.precision = p;
            known = true;
          }
        if (!known) {
          std::fprintf(stderr, "bench_compile: unknown precision '%s' (fp32, amp, bf16)\n",
                       precision);
          return 2;
        }
      }
      const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - l0).count();
      std::vector<double> ms;
      size_t graphs = 0, tensors = 0;
      uint64_t bytes = 0;
      size_t recomputed = 0;
      for (int r = 0; r < repeat; ++r) {
        const auto t0 = clock::now();
        const tr::CompiledPlan cp = tr::compile_plan(project, options);
        ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
        graphs = cp.graph_count();
        tensors = cp.plans().front().dtensors().size();
        bytes = cp.bytes_per_device();
        recomputed = cp.recomputed().size();
      }
      std::sort(ms.begin(), ms.end());
      std::printf(
          "{\"project\": \"%s\", \"load_ms\": %.3f, "
          "\"compile_median_ms\": %.3f, \"compile_min_ms\": %.3f, \"compile_max_ms\": %.3f, "
          "\"repeat\": %d, \"graphs\": %zu, \"tensors_per_variant\": %zu, "
          "\"bytes_per_device\": %llu, \"memory_budget\": %llu, \"recomputed\": %zu}\n",
          project.name.c_str(), load_ms, ms[ms.size() / 2], ms.front(), ms.back(), repeat, graphs,
          tensors, static_cast<unsigned long long>(bytes),
          static_cast<unsigned long long>(options.memory_budget), recomputed);
    }
  } catch (const tr::ProjectError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_compile: %s\n", e.what());
    return 1;
  }
  return 0;
}
