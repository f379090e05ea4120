// SPDX-License-Identifier: GPL-3.0-or-later
// The details of one run as HTML, with what `renaissance-cli runs show`
// prints: project, status and times, devices and precision, engine and
// writer, the error of a failed run, tags, configuration, final metrics,
// epochs, per-class accuracy and confusion matrix, checkpoints and notes.
#pragma once

#include <QString>
#include <cstdint>

#include <renaissance/run_store.h>

namespace tr::gui {

// Throws StoreError for an unknown run.
QString run_details_html(const store::RunStore& store, int64_t run);

}  // namespace tr::gui
