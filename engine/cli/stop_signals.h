// SPDX-License-Identifier: GPL-3.0-or-later
// StopSignals: while one lives, SIGINT (Ctrl-C) and SIGTERM do not kill the
// process but ask training to stop at the next step boundary, through the
// trainer's stop flag (which a run across machines passes on to every
// node). A second signal, half a second or more after the first, ends the
// process at once (by that signal's default action); one sooner is the same
// request delivered twice, as `timeout` does.
#pragma once

#include <atomic>
#include <string>

namespace tr::cli {

class StopSignals {
 public:
  // Catches SIGINT and SIGTERM, except one that this process inherited as
  // ignored (a background job of a script, nohup): it stays ignored, as it
  // would be without this.
  StopSignals();
  // Puts back what was there before.
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // For TrainOptions::stop: true from the first signal on.
  const std::atomic<bool>* flag() const noexcept;
  // The first signal caught (SIGINT, SIGTERM), 0 while none was.
  int received() const noexcept;
};

// "SIGINT", "SIGTERM" (or "signal N").
std::string signal_name(int signal);

// The exit status a shell reports for a process ended by `signal`: 128 + N
// (130 for SIGINT, 143 for SIGTERM).
int signal_exit_code(int signal) noexcept;

}  // namespace tr::cli
