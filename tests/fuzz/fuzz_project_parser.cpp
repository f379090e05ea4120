// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for parse_project: only a Project or a ProjectError may come out.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <renaissance/error.h>
#include <renaissance/project_io.h>

// A violated expectation stops the run like a crash, so libFuzzer keeps the input.
#define FUZZ_CHECK(condition)           \
  do {                                  \
    if (!(condition)) __builtin_trap(); \
  } while (0)

// Any other exception, a crash, a hang, a leak or a sanitizer report is a finding.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tr::Project project;
  try {
    project = tr::parse_project(text, "fuzz.json");
  } catch (const tr::ProjectError& e) {
    FUZZ_CHECK(!e.diagnostics().empty());  // an error must say what is wrong
    return 0;
  }
  // Whatever the parser accepts must be written back readably and identically:
  // the designer saves what it loaded. A ProjectError here escapes and is
  // reported by libFuzzer as a crash.
  std::string once = tr::project_to_json(project);
  std::string twice = tr::project_to_json(tr::parse_project(once, "fuzz-again.json"));
  FUZZ_CHECK(once == twice);
  return 0;
}
