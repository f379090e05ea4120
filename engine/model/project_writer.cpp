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

    const DatasetSpec& d = p.dataset;
    ojson ds = ojson::object();
    const DatasetKindInfo& info = dataset_kind_info(d.kind);
    ds["kind"] = info.name;
    if (d.kind == DatasetKind::ImageFolder) {
      if (!d.path.empty()) ds["train_dir"] = d.path;
      if (!d.val_path.empty()) ds["val_dir"] = d.val_path;
      if (d.skip_bad_images) ds["on_bad_image"] = "skip";
    } else if (info.files && !d.path.empty()) {
      ds[info.folder_key] = d.path;
    }
    if (!info.fixed_shape) {
      ds["height"] = d.height;
      ds["width"] = d.width;
      ds["channels"] = d.channels;
      ds["classes"] = d.classes;
      // Names that no longer fit the class count (it was edited) are dropped.
      if (!d.class_names.empty() && static_cast<int64_t>(d.class_names.size()) == d.classes)
        ds["class_names"] = d.class_names;
      if (!info.counted) {
        ds["train_size"] = d.train_size;
        ds["val_size"] = d.val_size;
      }
    }
    ds["mean"] = d.mean;
    ds["std"] = d.std;
    ds["random_crop_padding"] = d.random_crop_padding;
    ds["random_flip"] = d.random_flip;
    root["dataset"] = std::move(ds);

    const TrainingSpec& t = p.training;
    ojson tr = ojson::object();
    ojson opt = ojson::object();
    opt["type"] = std::string(optimizer_name(t.optimizer.kind));
    opt["lr"] = t.optimizer.lr;
    opt["momentum"] = t.optimizer.momentum;
    opt["weight_decay"] = t.optimizer.weight_decay;
    opt["nesterov"] = t.optimizer.nesterov;
    opt["beta1"] = t.optimizer.beta1;
    opt["beta2"] = t.optimizer.beta2;
    opt["eps"] = t.optimizer.adam_eps;
    opt["trust_coefficient"] = t.optimizer.trust_coefficient;
    tr["optimizer"] = std::move(opt);
    ojson sched = ojson::object();
    sched["type"] = std::string(schedule_name(t.schedule.kind));
    sched["warmup_epochs"] = t.schedule.warmup_epochs;
    sched["min_lr"] = t.schedule.min_lr;
    sched["step_epochs"] = t.schedule.step_epochs;
    sched["gamma"] = t.schedule.gamma;
    tr["schedule"] = std::move(sched);
    tr["epochs"] = t.epochs;
    tr["global_batch"] = t.global_batch;
    tr["devices"] = t.devices.str();
    tr["precision"] = std::string(precision_name(t.precision));
    tr["seed"] = t.seed;
    tr["ema"] = {{"enabled", t.ema}, {"decay", t.ema_decay}};
    // Written only when on, so projects that never use it stay as they were.
    if (t.sync_batch_norm) tr["sync_batch_norm"] = true;
    if (!t.init_from.empty()) tr["init_from"] = t.init_from;
    root["training"] = std::move(tr);

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
