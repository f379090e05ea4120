// SPDX-License-Identifier: GPL-3.0-or-later
// Writing project files, pretty-printed in the style of the ready-made
// projects and saved atomically.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include <renaissance/dataset_kinds.h>
#include <renaissance/error.h>
#include <renaissance/layer_spec.h>
#include <renaissance/project_io.h>
#include <renaissance/setting_spec.h>
#include "model/json_text.h"
#include "model/project_reader.h"

namespace tr {

namespace {

using ojson = nlohmann::ordered_json;
using json_text::index_path;

// Writing.

// Pretty printing in the style of the ready-made projects: a value goes on
// one line when it fits in kLineWidth columns (nodes, edges, pairs), else one
// member per line, indented by two spaces. nlohmann's own indented dump puts
// every array element on its own line, which makes a saved graph hard to diff.
constexpr size_t kLineWidth = 100;

std::string scalar_text(const ojson& v) {
  if (v.is_number_float()) {
    // 90 rather than 90.0: both read back as the same double.
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15 && !std::signbit(d))
      return std::to_string(static_cast<int64_t>(d));
  }
  return v.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string key_text(const std::string& key) {
  return ojson(key).dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string compact_text(const ojson& v) {
  if (!v.is_structured()) return scalar_text(v);
  std::string out = v.is_object() ? "{" : "[";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out += ", ";
    first = false;
    if (v.is_object()) out += key_text(it.key()) + ": ";
    out += compact_text(*it);
  }
  out += v.is_object() ? "}" : "]";
  return out;
}

// `column` is where the value starts on its line; nesting is bounded by the
// writer's own structure, so the recursion is shallow.
void write_pretty(const ojson& v, size_t indent, size_t column, bool top, std::string& out) {
  if (!v.is_structured() || v.empty()) {
    out += compact_text(v);
    return;
  }
  if (!top) {
    std::string one_line = compact_text(v);
    if (column + one_line.size() + 1 <= kLineWidth) {  // +1 for a trailing comma
      out += one_line;
      return;
    }
  }
  const std::string pad(indent + 2, ' ');
  out += v.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out += ",\n";
    first = false;
    out += pad;
    size_t col = pad.size();
    if (v.is_object()) {
      std::string key = key_text(it.key()) + ": ";
      out += key;
      col += key.size();
    }
    write_pretty(*it, indent + 2, col, false, out);
  }
  out += "\n" + std::string(indent, ' ') + (v.is_object() ? "}" : "]");
}

ojson hw_json(int64_t h, int64_t w) {
  if (h == w) return h;
  return ojson::array({h, w});
}

ojson params_json(const LayerNode& n) {
  const LayerParams& lp = n.params;
  ojson o = ojson::object();
  for (const ParamSpec& p : layer_spec(n.type).params) {
    const std::string key(p.key);
    switch (p.kind) {
      case LayerParamKind::Int:
        // An optional setting at its default stays out (Conv2d's groups = 1).
        if (!p.required && lp.*p.int_field == LayerParams{}.*p.int_field) break;
        o[key] = lp.*p.int_field;
        break;
      case LayerParamKind::Window:
        o[key] = hw_json(lp.*p.int_field, lp.*p.int_field_w);
        break;
      case LayerParamKind::Number:
        o[key] = lp.*p.number_field;
        break;
      case LayerParamKind::Bool:
        o[key] = lp.*p.bool_field;
        break;
    }
  }
  return o;
}

ProjectError write_error(const std::string& field, const std::string& message) {
  Diagnostic d;
  d.field = field;
  d.message = message;
  return ProjectError({d});
}

// The settings table's rows under `object` as the file has them, each where
// its key puts it (training.optimizer.lr in an "optimizer" object), in the
// table's order; a dataset key only for the kinds it is for, a WriteWhen::Set
// one only away from its default.
ojson settings_json(const Project& project, std::string_view object) {
  Project& p = const_cast<Project&>(project);  // the rows' references; nothing is written
  static Project defaults;
  const DatasetKindInfo& info = dataset_kind_info(p.dataset.kind);
  ojson out = ojson::object();
  for (const SettingSpec& s : project_settings()) {
    if (s.key.size() <= object.size() || s.key.substr(0, object.size()) != object ||
        s.key[object.size()] != '.')
      continue;
    if (!setting_in_dataset(s, p.dataset.kind)) continue;
    ojson value;
    bool is_default = false;
    switch (s.kind) {
      case SettingKind::Int:
        value = s.int_ref(p);
        is_default = s.int_ref(p) == s.int_ref(defaults);
        break;
      case SettingKind::Number:
        value = s.number_ref(p);
        is_default = s.number_ref(p) == s.number_ref(defaults);
        break;
      case SettingKind::Bool:
        value = s.bool_ref(p);
        is_default = s.bool_ref(p) == s.bool_ref(defaults);
        break;
      case SettingKind::Choice:
        for (const SettingChoice& c : s.choices)
          if (c.value == s.choice_get(p)) value = std::string(c.name);
        is_default = s.choice_get(p) == s.choice_get(defaults);
        break;
      case SettingKind::Text:
      case SettingKind::Path:
        value = s.text_ref(p);
        is_default = s.text_ref(p).empty();
        break;
      case SettingKind::Seed:
        value = s.seed_ref(p);
        is_default = s.seed_ref(p) == s.seed_ref(defaults);
        break;
      case SettingKind::Devices:
        value = s.devices_ref(p).str();
        is_default = s.devices_ref(p) == s.devices_ref(defaults);
        break;
      case SettingKind::Values:
        value = s.values_ref(p);
        break;
      case SettingKind::Names:
        value = s.names_ref(p);
        // Names that no longer fit the class count (it was edited) are dropped.
        is_default = static_cast<int64_t>(s.names_ref(p).size()) != p.dataset.classes;
        break;
    }
    if (s.write == WriteWhen::Set && is_default) continue;
    // The key's parts below `object`: the last is the value's, the others objects.
    std::string_view rest = s.key.substr(object.size() + 1);
    ojson* at = &out;
    for (size_t dot = rest.find('.'); dot != std::string_view::npos; dot = rest.find('.')) {
      at = &(*at)[std::string(rest.substr(0, dot))];
      rest = rest.substr(dot + 1);
    }
    (*at)[s.kind_key ? std::string(info.folder_key) : std::string(rest)] = std::move(value);
  }
  return out;
}

}  // namespace

std::string project_to_json(const Project& project) {
  try {
    const Project& p = project;
    ojson root = ojson::object();
    root["format"] = kProjectFormat;
    root["name"] = p.name;
    if (!p.description.empty()) root["description"] = p.description;

    ojson nodes = ojson::array();
    for (const LayerNode& n : p.model.nodes) {
      ojson o = ojson::object();
      o["id"] = n.id;
      o["type"] = std::string(layer_type_name(n.type));
      ojson params = params_json(n);
      if (!params.empty()) o["params"] = std::move(params);
      if (n.has_position) o["pos"] = ojson::array({n.x, n.y});
      nodes.push_back(std::move(o));
    }
    ojson edges = ojson::array();
    const auto& ns = p.model.nodes;
    for (size_t i = 0; i < p.model.edges.size(); ++i) {
      const Edge& e = p.model.edges[i];
      auto valid = [&](int index) { return index >= 0 && static_cast<size_t>(index) < ns.size(); };
      if (!valid(e.from) || !valid(e.to))
        throw write_error(index_path("model.edges", i),
                          "the edge refers to a node index that does not exist");
      ojson o = ojson::object();
      o["from"] = ns[static_cast<size_t>(e.from)].id;
      if (e.from_port != 0) o["from_port"] = e.from_port;
      o["to"] = ns[static_cast<size_t>(e.to)].id;
      if (e.to_port != 0) o["to_port"] = e.to_port;
      edges.push_back(std::move(o));
    }
    root["model"] = {{"nodes", std::move(nodes)}, {"edges", std::move(edges)}};

    root["dataset"] = settings_json(p, "dataset");
    root["training"] = settings_json(p, "training");

    ojson variants = ojson::array();
    for (const VariantSpec& v : p.variants) {
      ojson o = ojson::object();
      o["name"] = v.name;
      o["kind"] = std::string(variant_kind_name(v.kind));
      if (v.batch > 0) o["batch"] = v.batch;
      if (v.height > 0) o["height"] = v.height;
      if (v.width > 0) o["width"] = v.width;
      variants.push_back(std::move(o));
    }
    root["variants"] = std::move(variants);
    std::string out;
    write_pretty(root, 0, 0, true, out);
    out += "\n";
    return out;
  } catch (const ProjectError&) {
    throw;
  } catch (const std::exception& e) {
    throw write_error("", std::string("cannot write the project: ") + e.what());
  }
}

void save_project(const Project& project, const std::string& path) {
  std::string text;
  try {
    text = project_to_json(project);
  } catch (const ProjectError& e) {
    throw UsageError("cannot save project file '" + path + "': " + e.what());
  }
  // Written next to the target and renamed over it, so a failure at any
  // point leaves the previous file whole.
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw UsageError("cannot write project file '" + tmp + "': " + std::strerror(errno));
  int err = 0;
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) err = errno ? errno : EIO;
  if (!err && std::fflush(f) != 0) err = errno ? errno : EIO;
  if (!err && ::fsync(::fileno(f)) != 0) err = errno ? errno : EIO;
  if (std::fclose(f) != 0 && !err) err = errno ? errno : EIO;
  if (err) {
    std::remove(tmp.c_str());
    throw UsageError("cannot write project file '" + tmp + "': " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    throw UsageError("cannot replace project file '" + path + "': " + std::strerror(err));
  }
}

}  // namespace tr
