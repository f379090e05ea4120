// SPDX-License-Identifier: GPL-3.0-or-later
// How wide the command line's tables may be: $COLUMNS, else the width of
// the terminal that stdout is, else 80.
#pragma once

#include <cstddef>

namespace tr::cli {

constexpr size_t kDefaultColumns = 80;

// $COLUMNS when it is a positive whole number (the user's choice, as POSIX
// has it, and what a script or test sets); else the width of the terminal
// on stdout; else (a pipe or a file) kDefaultColumns. A COLUMNS that is no
// such number is named in a note on stderr and not used.
size_t output_columns();

}  // namespace tr::cli
