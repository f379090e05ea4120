// SPDX-License-Identifier: GPL-3.0-or-later
// Layer-by-layer differences between the models of several runs.
#include "runs/model_node_diff.h"

#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace tr::gui {

namespace {

// Ordered, so a layer's parameters read in the order its project file has them.
using Json = nlohmann::ordered_json;
// (field, value as text); "type" first, "from" (the layer's inputs) last.
using Fields = std::vector<std::pair<std::string, std::string>>;

struct Model {
  bool valid = false;
  std::vector<std::string> order;            // layer ids as the file lists them
  std::map<std::string, Fields> layers;      // by id
  std::map<std::string, std::string> types;  // by id
};

std::string value_text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

// Each layer's inputs in input-port order: "s1b1_bn2, relu1" for an Add.
std::map<std::string, std::string> inputs_of(const Json& edges) {
  std::map<std::string, std::multimap<int64_t, std::string>> ports;
  if (edges.is_array()) {
    for (const Json& e : edges) {
      if (!e.is_object() || !e.contains("from") || !e.contains("to")) continue;
      if (!e["from"].is_string() || !e["to"].is_string()) continue;
      std::string from = e["from"].get<std::string>();
      const Json from_port = e.value("from_port", Json(0));
      if (from_port != Json(0)) from += ':' + value_text(from_port);
      const Json to_port = e.value("to_port", Json(0));
      ports[e["to"].get<std::string>()].emplace(
          to_port.is_number_integer() ? to_port.get<int64_t>() : 0, std::move(from));
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& [to, sources] : ports) {
    std::vector<std::string> names;
    for (const auto& [port, from] : sources) names.push_back(from);
    out[to] = join(names, ", ");
  }
  return out;
}

Model model_of(const std::string& project_json) {
  Model m;
  const Json project = Json::parse(project_json, nullptr, false);
  if (!project.is_object() || !project.contains("model") || !project["model"].is_object()) return m;
  const Json& model = project["model"];
  m.valid = true;
  const std::map<std::string, std::string> inputs = inputs_of(model.value("edges", Json::array()));
  const Json nodes = model.value("nodes", Json::array());
  if (!nodes.is_array()) return m;
  for (const Json& node : nodes) {
    if (!node.is_object() || !node.contains("id") || !node["id"].is_string()) continue;
    const std::string id = node["id"].get<std::string>();
    Fields fields;
    const std::string type = node.contains("type") ? value_text(node["type"]) : std::string();
    fields.emplace_back("type", type);
    for (const auto& [key, value] : node.items()) {
      // The id matches layers up; where the designer placed one does not change what trains.
      if (key == "id" || key == "pos" || key == "type") continue;
      if (key == "params" && value.is_object()) {
        for (const auto& [param, v] : value.items()) fields.emplace_back(param, value_text(v));
      } else {
        fields.emplace_back(key, value_text(value));
      }
    }
    if (const auto it = inputs.find(id); it != inputs.end())
      fields.emplace_back("from", it->second);
    m.order.push_back(id);
    m.layers[id] = std::move(fields);
    m.types[id] = type;
  }
  return m;
}

// "Conv2d(out_channels 16, kernel 3) ← input".
std::string whole_layer(const Fields& fields) {
  std::string type, from;
  std::vector<std::string> params;
  for (const auto& [key, value] : fields) {
    if (key == "type")
      type = value;
    else if (key == "from")
      from = value;
    else
      params.push_back(key + ' ' + value);
  }
  std::string out = type;
  if (!params.empty()) out += '(' + join(params, ", ") + ')';
  if (!from.empty()) out += " ← " + from;
  return out;
}

const std::string* field(const Fields& fields, const std::string& key) {
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

LayerDifference changed_layer(const std::string& id, const std::vector<const Fields*>& per_run) {
  // Every field any run gives the layer, in the order the first run lists them.
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const Fields* f : per_run)
    for (const auto& [key, value] : *f)
      if (seen.insert(key).second) keys.push_back(key);
  std::vector<std::vector<std::string>> parts(per_run.size());
  std::vector<std::string> summary;
  for (const std::string& key : keys) {
    std::vector<std::string> values;
    // A parameter a run leaves out takes the layer type's default.
    for (const Fields* f : per_run) {
      const std::string* v = field(*f, key);
      values.push_back(v ? *v : std::string("(default)"));
    }
    bool differ = false;
    for (const std::string& v : values) differ = differ || v != values.front();
    if (!differ) continue;
    for (size_t r = 0; r < values.size(); ++r) parts[r].push_back(key + ' ' + values[r]);
    summary.push_back(key + ' ' + join(values, " → "));
  }
  LayerDifference d;
  d.kind = LayerDifference::Kind::Changed;
  d.id = id;
  for (const std::vector<std::string>& p : parts) d.values.push_back(join(p, ", "));
  d.summary = id + ": " + join(summary, ", ");
  return d;
}

}  // namespace

ModelDifferences diff_models(const std::vector<std::string>& project_json) {
  std::vector<Model> models;
  for (const std::string& text : project_json) models.push_back(model_of(text));
  ModelDifferences out;
  for (const Model& m : models)
    out.layers.push_back(m.valid ? static_cast<int>(m.order.size()) : -1);
  if (models.empty()) return out;

  // Model order: the first run's layers, then those only later runs have.
  std::vector<std::string> ids;
  std::set<std::string> listed;
  for (const Model& m : models)
    for (const std::string& id : m.order)
      if (listed.insert(id).second) ids.push_back(id);

  std::vector<LayerDifference> changed, removed, added;
  for (const std::string& id : ids) {
    std::vector<const Fields*> per_run;
    std::string type;
    for (const Model& m : models) {
      const auto it = m.layers.find(id);
      per_run.push_back(it == m.layers.end() ? nullptr : &it->second);
      if (it != m.layers.end() && type.empty()) type = m.types.at(id);
    }
    bool everywhere = true;
    for (const Fields* f : per_run) everywhere = everywhere && f;
    if (everywhere) {
      bool same = true;
      for (const Fields* f : per_run) same = same && *f == *per_run.front();
      if (same) continue;
      // Equal field lists in another order are no difference either.
      LayerDifference d = changed_layer(id, per_run);
      bool any = false;
      for (const std::string& v : d.values) any = any || !v.empty();
      if (!any) continue;
      d.type = type;
      changed.push_back(std::move(d));
      continue;
    }
    LayerDifference d;
    d.kind = per_run.front() ? LayerDifference::Kind::Removed : LayerDifference::Kind::Added;
    d.id = id;
    d.type = type;
    std::string first;
    for (const Fields* f : per_run) {
      d.values.push_back(f ? whole_layer(*f) : std::string("-"));
      if (f && first.empty()) first = d.values.back();
    }
    d.summary = id + (d.kind == LayerDifference::Kind::Added ? ": added, " : ": removed, ") + first;
    (d.kind == LayerDifference::Kind::Added ? added : removed).push_back(std::move(d));
  }
  for (auto* list : {&changed, &removed, &added})
    for (LayerDifference& d : *list) out.differences.push_back(std::move(d));
  return out;
}

}  // namespace tr::gui
