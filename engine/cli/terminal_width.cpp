// SPDX-License-Identifier: GPL-3.0-or-later
#include "terminal_width.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace tr::cli {

size_t output_columns() {
  if (const char* columns = std::getenv("COLUMNS"); columns && *columns) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(columns, &end, 10);
    if (*end == '\0' && errno == 0 && v > 0) return static_cast<size_t>(v);
    std::fprintf(stderr, "note: ignoring COLUMNS='%s': not a positive whole number\n", columns);
  }
  winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return kDefaultColumns;
}

}  // namespace tr::cli
