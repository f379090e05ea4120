// SPDX-License-Identifier: GPL-3.0-or-later
// The project templates a user starts from (File > New from template). They
// are project files compiled into the binary as Qt resources, so they exist
// wherever the workbench runs; the ready-made ones are projects/*.json.
#pragma once

#include <QString>
#include <vector>

#include <renaissance/project.h>

namespace tr::gui {

struct ProjectTemplate {
  QString key;       // "lenet-fashion"
  QString title;     // "LeNet-5"
  QString resource;  // ":/templates/lenet-fashion.json"
};

const std::vector<ProjectTemplate>& project_templates();

// Parses a template; throws ProjectError if a built-in file is broken.
Project load_template(const ProjectTemplate& t);
// The default project when no file is at hand: the LeNet template.
Project default_template_project();

}  // namespace tr::gui
