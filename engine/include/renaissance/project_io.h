// SPDX-License-Identifier: GPL-3.0-or-later
// Reading and writing project files (docs/project-format.md). The loader
// never crashes on malformed input: it throws ProjectError listing every
// problem with file, node and field.
#pragma once

#include <string>
#include <string_view>

#include <renaissance/project.h>

namespace tr {

// Reads and validates a project file. Throws ProjectError (bad content) or
// UsageError (file missing or unreadable).
Project load_project(const std::string& path);

// Parses project text; `file` is only used in messages.
Project parse_project(std::string_view text, const std::string& file);

// Serialises to the same format, pretty-printed (2-space indent, stable order).
std::string project_to_json(const Project& project);
void save_project(const Project& project, const std::string& path);

// A path the project names (training.init_from) as a file to open: a
// relative one is taken from the project file's folder (from the working
// folder for a project never loaded from a file).
std::string resolve_project_path(const Project& project, const std::string& path);

// How a project written to `project_file` names `file`: relative to the
// project's folder when the file is in it or below, else as given.
std::string path_from_project_file(const std::string& project_file, const std::string& file);

// Parses "cpu:2", "cpu", "cuda:0", "cuda:0-3", "cuda:0,2". Returns false with
// `error` set on bad text.
bool parse_device_set(std::string_view text, DeviceSet& out, std::string& error);

}  // namespace tr
