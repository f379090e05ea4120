// SPDX-License-Identifier: GPL-3.0-or-later
// Who writes a run: host, pid and a start stamp (boot id plus the process's
// start time), so a later open can tell a dead writer from a live one even
// when the pid has been reused.
#pragma once

#include <cstdint>
#include <string>

namespace tr::store {

struct ProcessIdentity {
  std::string host;
  int64_t pid = 0;
  std::string start;  // "<boot id>/<start ticks>"; empty where /proc cannot tell
};

// The calling process, read afresh each time (a forked child is someone else).
ProcessIdentity current_process();

enum class WriterState { Alive, Dead, Unknown };

// Unknown for a writer on another host: only that host can tell.
WriterState writer_state(const ProcessIdentity& writer);

}  // namespace tr::store
