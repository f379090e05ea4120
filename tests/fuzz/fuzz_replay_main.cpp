// SPDX-License-Identifier: GPL-3.0-or-later
// Replays a fuzz target's corpus without libFuzzer: runs its
// LLVMFuzzerTestOneInput once on every file in the folders (or on the files)
// given on the command line, in name order, and prints how many it ran. A
// violated expectation in the target traps or aborts; the signal handler
// names the input that did it. Built against the normal engine libraries
// (tests/fuzz/replay.cmake), so CTest keeps each corpus passing with any
// compiler.
#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// The input being run, for the signal handler (which may only write(2)).
char current[4096] = "";

void name_the_input(int sig) {
  const char head[] = "\nfuzz replay: the input ";
  const char tail[] = " stopped the target\n";
  ssize_t ignored = ::write(STDERR_FILENO, head, sizeof head - 1);
  ignored = ::write(STDERR_FILENO, current, std::strlen(current));
  ignored = ::write(STDERR_FILENO, tail, sizeof tail - 1);
  (void)ignored;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FOLDER|FILE...\n", argv[0]);
    return 2;
  }
  for (const int sig : {SIGILL, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGTRAP})
    std::signal(sig, &name_the_input);

  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> files;
      for (const fs::directory_entry& e : fs::directory_iterator(arg, ec))
        if (e.is_regular_file(ec)) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: no such folder or file\n", argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "no inputs in the folders given\n");
    return 2;
  }
  for (const fs::path& p : inputs) {
    std::snprintf(current, sizeof current, "%s", p.c_str());
    std::ifstream in(p, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
    if (!in.eof() && in.fail()) {
      std::fprintf(stderr, "%s: cannot be read\n", p.c_str());
      return 2;
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("ran %zu inputs from %d folders or files\n", inputs.size(), argc - 1);
  return 0;
}
