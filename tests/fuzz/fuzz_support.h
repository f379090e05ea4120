// SPDX-License-Identifier: GPL-3.0-or-later
// What the fuzz targets share: FUZZ_CHECK, and the one temporary file per
// process that targets of parsers which read a path write each input to.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

// A violated expectation stops the run like a crash, so libFuzzer keeps the input.
#define FUZZ_CHECK(condition)           \
  do {                                  \
    if (!(condition)) __builtin_trap(); \
  } while (0)

namespace tr::fuzz {

// "<temporary folder>/<name>-<pid><suffix>" ($TMPDIR, else /tmp: TMPDIR=/dev/shm
// saves the disk), rewritten for every input and removed when the process exits.
class TempFile {
 public:
  explicit TempFile(const std::string& name, const std::string& suffix = "")
      : path_((std::filesystem::temp_directory_path() /
               (name + "-" + std::to_string(::getpid()) + suffix))
                  .string()) {}
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const noexcept { return path_; }

  // Replaces the file's contents with `size` bytes; a failure is the harness's, so it traps.
  const std::string& write(const uint8_t* data, size_t size) const {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    FUZZ_CHECK(f != nullptr);
    const size_t written = size == 0 ? 0 : std::fwrite(data, 1, size, f);
    FUZZ_CHECK(std::fclose(f) == 0 && written == size);
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace tr::fuzz
