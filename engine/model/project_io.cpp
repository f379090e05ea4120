// SPDX-License-Identifier: GPL-3.0-or-later
// Reading project files: the bytes from disk, then JSON (model/json_dom.h),
// then the validating reader (model/project_reader.h). Writing is in
// project_writer.cpp, device strings in device_text.cpp.
#include <renaissance/project_io.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <renaissance/error.h>
#include "model/json_dom.h"
#include "model/project_reader.h"

namespace tr {

Project parse_project(std::string_view text, const std::string& file) {
  try {
    return read_project(parse_json_dom(text, file), file);
  } catch (const ProjectError&) {
    throw;
  } catch (const std::exception& e) {
    // A library failure (allocation, a nlohmann invariant) is still reported
    // as a problem with this file, never as a crash of the caller.
    Diagnostic d;
    d.file = file;
    d.message = std::string("cannot read the project: ") + e.what();
    throw ProjectError({d});
  }
}

std::string resolve_project_path(const Project& project, const std::string& path) {
  const std::filesystem::path file(path);
  if (file.empty() || file.is_absolute() || project.source_path.empty()) return path;
  return (std::filesystem::path(project.source_path).parent_path() / file).string();
}

std::string path_from_project_file(const std::string& project_file, const std::string& file) {
  std::error_code ec;
  const std::filesystem::path folder =
      std::filesystem::absolute(project_file, ec).lexically_normal().parent_path();
  const std::filesystem::path target = std::filesystem::absolute(file, ec).lexically_normal();
  if (ec) return file;
  const std::filesystem::path rel = target.lexically_relative(folder);
  if (rel.empty() || *rel.begin() == "..") return file;
  return rel.string();
}

Project load_project(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw UsageError("cannot open project file '" + path + "': " + std::strerror(errno));
  std::string text;
  char buf[65536];
  int read_errno = 0;
  bool too_big = false;
  while (true) {
    size_t n = std::fread(buf, 1, sizeof buf, f);
    text.append(buf, n);
    if (text.size() > kMaxProjectBytes) {
      too_big = true;
      break;
    }
    if (n < sizeof buf) {
      if (std::ferror(f)) read_errno = errno ? errno : EIO;
      break;
    }
  }
  std::fclose(f);
  if (too_big)
    throw UsageError("project file '" + path +
                     "' is larger than 16 MiB; refusing to read it as a project");
  if (read_errno)
    throw UsageError("cannot open project file '" + path + "': " + std::strerror(read_errno));
  Project p = parse_project(text, path);
  p.source_path = path;
  return p;
}

}  // namespace tr
