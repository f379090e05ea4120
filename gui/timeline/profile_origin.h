// SPDX-License-Identifier: GPL-3.0-or-later
// Where a profile shown in the timeline comes from (the run and project it was
// trained in, or the trace file it was opened from), and the caption that
// says what the timeline shows: origin, steps and ranks.
#pragma once

#include <QString>
#include <QtGlobal>
#include <cstdint>
#include <optional>
#include <vector>

namespace tr::gui {

struct ProfileOrigin {
  qint64 run_id = 0;   // the run store's id; 0: not recorded, or not known
  QString project;     // the project's name; empty: not known
  QString trace_file;  // the Chrome trace it was read from; empty: from training
};

struct ProfileContents {
  std::vector<int64_t> steps;    // the profile's known steps, ascending
  bool unknown_steps = false;    // some spans say no step
  std::optional<int64_t> shown;  // the one step shown; none: all of them
  std::vector<int64_t> ranks;    // the ranks shown, ascending
};

// "Run 12 · lenet-fashion · steps 3–4 · ranks 0–1"; an opened trace names its
// file ("trace.json · step 3 of steps 3–4 · rank 0"), and a trace without
// steps says so.
QString profile_caption(const ProfileOrigin& origin, const ProfileContents& contents);

}  // namespace tr::gui
