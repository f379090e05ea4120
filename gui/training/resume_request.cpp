// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/resume_request.h"

#include <exception>

#include <renaissance/project_io.h>
#include <renaissance/run_resume.h>

namespace tr::gui {

bool resume_request(const QString& store_path, qint64 id, Project* project,
                    TrainingRequest* request, QString* error) {
  try {
    const store::RunStore s(store_path.toStdString());
    // The checkpoint itself is read on the training thread.
    const store::RunResume r = store::describe_run_resume(s, id);
    *project =
        parse_project(r.run.project_json, "run " + std::to_string(id) + "'s recorded project");
    TrainingRequest q;
    q.resume_run = id;
    // Shown by the progress bar; the training thread applies the same.
    q.epochs = r.epochs;
    q.max_steps = r.max_steps;
    q.validate = r.validate;
    q.eval_ema = r.eval_ema;
    *request = q;
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

}  // namespace tr::gui
