// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/project_reader.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <renaissance/dataset_kinds.h>
#include <renaissance/error.h>
#include <renaissance/layer_spec.h>
#include <renaissance/project_io.h>
#include <renaissance/project_limits.h>
#include <renaissance/setting_spec.h>
#include "model/json_text.h"

namespace tr {

namespace {

using json = nlohmann::json;
using namespace json_text;
using namespace limits;

// A hostile file can produce one problem per node; past this many the rest
// are counted instead of listed so the message stays readable.
constexpr size_t kMaxDiagnostics = 200;
constexpr int64_t kMaxPort = std::numeric_limits<int>::max();

// Validation of the DOM into a Project, collecting every problem.

// Which node a problem is about and the path its fields hang from.
struct Scope {
  std::string node;     // label, or empty
  std::string node_id;  // bare id, or empty
  std::string base;     // path prefix: "" for node-relative fields, "training", ...
};

std::vector<std::string_view> params_of(LayerType t) {
  std::vector<std::string_view> keys;
  for (const ParamSpec& p : layer_spec(t).params) keys.push_back(p.key);
  return keys;
}

bool valid_node_id(const std::string& id) {
  if (id.empty() || id.size() > kMaxNodeIdLength) return false;
  for (unsigned char c : id)
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  Project read(const json& root);
  std::vector<Diagnostic> take_diagnostics() {
    if (dropped_ > 0) {
      Diagnostic d;
      d.file = file_;
      d.message = "and " + std::to_string(dropped_) + " more problems not listed";
      diags_.push_back(std::move(d));
    }
    return std::move(diags_);
  }
  void add_duplicate_key(const std::string& path) {
    size_t dot = path.find_last_of(".");
    std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
    error({}, path, "duplicate key " + quote(key) + "; each key may appear only once");
  }

 private:
  void error(const Scope& s, std::string_view field, std::string message) {
    if (diags_.size() >= kMaxDiagnostics) {
      ++dropped_;
      return;
    }
    Diagnostic d;
    d.file = file_;
    d.node = s.node;
    d.node_id = s.node_id;
    d.field = join_path(s.base, field);
    d.message = std::move(message);
    diags_.push_back(std::move(d));
  }

  bool expect_object(const json& v, const Scope& s, std::string_view field) {
    if (v.is_object()) return true;
    error(s, field, "expected an object, got " + describe(v));
    return false;
  }

  void check_keys(const json& obj, const Scope& s, std::string_view path,
                  const std::vector<std::string_view>& known, const std::string& hint = {}) {
    for (const auto& item : obj.items()) {
      const std::string& k = item.key();
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      std::string msg = "unknown key " + quote(k);
      std::string_view near = closest(k, known);
      if (!near.empty()) {
        msg += "; did you mean " + quote(near) + "?";
      } else if (!hint.empty()) {
        msg += "; " + hint;
      }
      error(s, join_path(path, k), std::move(msg));
    }
  }

  // Member readers. `path` is the object's path within the scope; each
  // returns true when it stored a value.
  bool read_int(const json& obj, const Scope& s, std::string_view path, const char* key, int64_t lo,
                int64_t hi, int64_t& out, bool required = false) {
    const json* v = member(obj, key);
    std::string field = join_path(path, key);
    if (!v) {
      if (required) error(s, field, "missing; expected " + int_phrase(lo, hi));
      return false;
    }
    return int_value(*v, s, field, lo, hi, out);
  }

  bool int_value(const json& v, const Scope& s, const std::string& field, int64_t lo, int64_t hi,
                 int64_t& out) {
    int64_t x = 0;
    if (!to_int(v, x) || x < lo || x > hi) {
      error(s, field, "expected " + int_phrase(lo, hi) + ", got " + describe(v));
      return false;
    }
    out = x;
    return true;
  }

  bool read_number(const json& obj, const Scope& s, std::string_view path, const char* key,
                   const Range& r, double& out) {
    const json* v = member(obj, key);
    if (!v) return false;
    return number_value(*v, s, join_path(path, key), r, out);
  }

  bool number_value(const json& v, const Scope& s, const std::string& field, const Range& r,
                    double& out) {
    if (!v.is_number() || !r.contains(v.get<double>())) {
      error(s, field, "expected " + r.phrase() + ", got " + describe(v));
      return false;
    }
    out = v.get<double>();
    return true;
  }

  bool read_bool(const json& obj, const Scope& s, std::string_view path, const char* key,
                 bool& out) {
    const json* v = member(obj, key);
    if (!v) return false;
    if (!v->is_boolean()) {
      error(s, join_path(path, key), "expected true or false, got " + describe(*v));
      return false;
    }
    out = v->get<bool>();
    return true;
  }

  bool read_string(const json& obj, const Scope& s, std::string_view path, const char* key,
                   std::string& out, bool required, bool allow_empty) {
    const json* v = member(obj, key);
    std::string field = join_path(path, key);
    const char* what = allow_empty ? "a string" : "a non-empty string";
    if (!v) {
      if (required) error(s, field, std::string("missing; expected ") + what);
      return false;
    }
    if (!v->is_string() || (!allow_empty && v->get_ref<const std::string&>().empty())) {
      error(s, field, std::string("expected ") + what + ", got " + describe(*v));
      return false;
    }
    out = v->get<std::string>();
    return true;
  }

  // Which of `names` the string `v` is; -1 (said, with the nearest name)
  // when it is none of them. `what` names the choice ("optimizer").
  int choice_index(const json& v, const Scope& s, const std::string& field, std::string_view what,
                   const std::vector<std::string_view>& names) {
    const std::string expected = "expected one of " + list_names(names);
    if (!v.is_string()) {
      error(s, field, expected + ", got " + describe(v));
      return -1;
    }
    const std::string& text = v.get_ref<const std::string&>();
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == text) return static_cast<int>(i);
    std::string msg = "unknown " + std::string(what) + " " + quote(text) + "; " + expected;
    std::string_view near = closest(text, names);
    if (!near.empty()) msg += "; did you mean " + quote(near) + "?";
    error(s, field, std::move(msg));
    return -1;
  }

  template <typename Enum>
  bool read_choice(const json& obj, const Scope& s, std::string_view path, const char* key,
                   const char* what, std::initializer_list<Choice<Enum>> choices, Enum& out,
                   bool required = false) {
    const json* v = member(obj, key);
    const std::string field = join_path(path, key);
    std::vector<std::string_view> names;
    for (const auto& c : choices) names.push_back(c.name);
    if (!v) {
      if (required) error(s, field, "missing; expected one of " + list_names(names));
      return false;
    }
    const int i = choice_index(*v, s, field, what, names);
    if (i < 0) return false;
    out = std::data(choices)[i].value;
    return true;
  }

  // An integer or a pair [h, w] (kernel, stride, padding).
  bool read_hw(const json& obj, const Scope& s, std::string_view path, const char* key, int64_t lo,
               int64_t hi, int64_t& h, int64_t& w, bool required) {
    const json* v = member(obj, key);
    std::string field = join_path(path, key);
    std::string expected = int_phrase(lo, hi) + " or a pair [h, w] of them";
    if (!v) {
      if (required) error(s, field, "missing; expected " + expected);
      return false;
    }
    int64_t x = 0;
    if (to_int(*v, x)) {
      if (x < lo || x > hi) {
        error(s, field, "expected " + expected + ", got " + describe(*v));
        return false;
      }
      h = w = x;
      return true;
    }
    if (!v->is_array()) {
      error(s, field, "expected " + expected + ", got " + describe(*v));
      return false;
    }
    if (v->size() != 2) {
      error(s, field,
            "expected " + expected + ", got an array of " + std::to_string(v->size()) + " values");
      return false;
    }
    int64_t a = 0, b = 0;
    bool ok = int_value((*v)[0], s, field + "[0]", lo, hi, a);
    ok = int_value((*v)[1], s, field + "[1]", lo, hi, b) && ok;
    if (!ok) return false;
    h = a;
    w = b;
    return true;
  }

  void read_model(const json& m, Project& p);
  void read_node(const json& n, size_t index, Project& p);
  void read_params(const json& params, LayerType t, const Scope& s, LayerParams& lp);
  void read_edges(const json& edges, Project& p);
  void read_dataset(const json& d, Project& p);
  bool read_training(const json& t, Project& p);
  // The settings table's rows under `object` ("dataset", "training.optimizer"):
  // its keys, in the table's order, for check_keys.
  std::vector<std::string_view> setting_keys(std::string_view object) const;
  void check_setting_objects(const json& top, std::string_view object);
  // Reads one setting by its row from `obj` (the object its key hangs in);
  // false when the value was there and wrong (said), or absent.
  bool read_setting(const json& obj, const SettingSpec& spec, std::string_view key, Project& p);
  bool read_values(const json& v, const SettingSpec& spec, const std::string& field,
                   size_t channels, bool channels_ok, std::vector<double>& out);
  bool read_names(const json& v, const std::string& field, int64_t classes,
                  std::vector<std::string>& out);
  void read_variants(const json* v, Project& p, bool derive_ok);

  std::string file_;
  std::vector<Diagnostic> diags_;
  size_t dropped_ = 0;
  // Every node that declared a string id, even a broken one, so an edge to it
  // is not reported a second time as pointing nowhere.
  struct Declared {
    int index;        // into Project::model.nodes
    size_t position;  // in the file's node array, for messages
    bool type_known;
  };
  std::unordered_map<std::string, Declared> declared_;
};

Project Reader::read(const json& root) {
  Project p;
  const Scope top;
  if (!root.is_object()) {
    error(top, "", "expected a JSON object at the top level, got " + describe(root));
    return p;
  }
  // A newer format is reported alone: its other keys would only be noise.
  if (const json* f = member(root, "format")) {
    int64_t v = 0;
    if (!to_int(*f, v)) {
      error(top, "format", "expected the integer 1, got " + describe(*f));
    } else if (v > kProjectFormat) {
      error(top, "format",
            "format " + std::to_string(v) + " is newer than this version reads (" +
                std::to_string(kProjectFormat) + ")");
      return p;
    } else if (v != kProjectFormat) {
      error(top, "format", "expected 1, got " + std::to_string(v));
    }
  } else {
    error(top, "format", "missing; expected 1");
  }
  check_keys(root, top, "",
             {"format", "name", "description", "model", "dataset", "training", "variants"});
  read_string(root, top, "", "name", p.name, true, false);
  read_string(root, top, "", "description", p.description, false, true);

  if (const json* m = member(root, "model")) {
    if (expect_object(*m, top, "model")) read_model(*m, p);
  } else {
    error(top, "model", "missing; expected an object with \"nodes\" and \"edges\"");
  }
  if (const json* d = member(root, "dataset"))
    if (expect_object(*d, top, "dataset")) read_dataset(*d, p);
  bool training_ok = true;
  if (const json* t = member(root, "training")) {
    if (expect_object(*t, top, "training"))
      training_ok = read_training(*t, p);
    else
      training_ok = false;
  }
  read_variants(member(root, "variants"), p, training_ok);
  return p;
}

void Reader::read_model(const json& m, Project& p) {
  const Scope s;
  check_keys(m, s, "model", {"nodes", "edges"});
  if (const json* nodes = member(m, "nodes")) {
    if (!nodes->is_array()) {
      error(s, "model.nodes", "expected an array of nodes, got " + describe(*nodes));
    } else {
      for (size_t i = 0; i < nodes->size(); ++i) read_node((*nodes)[i], i, p);
    }
  }
  if (const json* edges = member(m, "edges")) read_edges(*edges, p);
}

void Reader::read_node(const json& n, size_t index, Project& p) {
  const std::string path = index_path("model.nodes", index);
  Scope s{"", "", path};
  if (!n.is_object()) {
    error(s, "", "expected a node object, got " + describe(n));
    return;
  }
  LayerNode node;
  bool id_ok = false;
  bool has_string_id = false;
  if (const json* id = member(n, "id")) {
    if (!id->is_string()) {
      error(s, "id", "expected a node id (a string), got " + describe(*id));
    } else {
      node.id = id->get<std::string>();
      has_string_id = true;
      if (valid_node_id(node.id)) {
        id_ok = true;
        // Fields of a named node are reported relative to it, as the designer shows them.
        s = Scope{"'" + node.id + "'", node.id, ""};
      } else {
        error(s, "id",
              "invalid node id " + quote(node.id) + "; expected 1 to " +
                  std::to_string(kMaxNodeIdLength) + " letters, digits, '_', '-' or '.'");
      }
    }
  } else {
    error(s, "id", "missing; expected a node id (letters, digits, '_', '-' or '.')");
  }

  bool type_ok = false;
  if (const json* t = member(n, "type")) {
    std::vector<std::string_view> names;
    for (LayerType lt : kAllLayerTypes) names.push_back(layer_type_name(lt));
    if (!t->is_string()) {
      error(s, "type",
            "expected a layer type name, one of " + list_names(names) + ", got " + describe(*t));
    } else if (auto lt = layer_type_from_name(t->get_ref<const std::string&>())) {
      node.type = *lt;
      type_ok = true;
      if (id_ok) s.node = node.label();
    } else {
      const std::string& text = t->get_ref<const std::string&>();
      std::string msg =
          "unknown layer type " + quote(text) + "; expected one of " + list_names(names);
      std::string_view near = closest(text, names);
      if (near.empty()) {
        // Case slips ("conv2d") are far in edit distance but obvious.
        for (std::string_view name : names) {
          if (name.size() == text.size() &&
              std::equal(name.begin(), name.end(), text.begin(), [](char a, char b) {
                return std::tolower(static_cast<unsigned char>(a)) ==
                       std::tolower(static_cast<unsigned char>(b));
              }))
            near = name;
        }
      }
      if (!near.empty()) msg += "; did you mean " + quote(near) + "?";
      error(s, "type", std::move(msg));
    }
  } else {
    error(s, "type", "missing; expected a layer type name");
  }

  if (has_string_id) {
    auto [it, inserted] = declared_.try_emplace(
        node.id, Declared{static_cast<int>(p.model.nodes.size()), index, type_ok});
    if (!inserted)
      error(s, "id",
            "duplicate node id " + quote(node.id) + "; " +
                index_path("model.nodes", it->second.position) + " already has it");
  }

  check_keys(n, s, "", {"id", "type", "params", "pos"});

  const json* params = member(n, "params");
  if (params && !expect_object(*params, s, "params")) params = nullptr;
  if (type_ok) {
    static const json kNoParams = json::object();
    read_params(params ? *params : kNoParams, node.type, s, node.params);
  }

  if (const json* pos = member(n, "pos")) {
    if (pos->is_array() && pos->size() == 2 && (*pos)[0].is_number() && (*pos)[1].is_number()) {
      node.x = (*pos)[0].get<double>();
      node.y = (*pos)[1].get<double>();
      node.has_position = true;
    } else {
      error(s, "pos", "expected a pair [x, y] of numbers, got " + describe(*pos));
    }
  }
  p.model.nodes.push_back(std::move(node));
}

void Reader::read_params(const json& params, LayerType t, const Scope& s, LayerParams& lp) {
  const std::vector<std::string_view> known = params_of(t);
  std::string type_name(layer_type_name(t));
  std::string hint = known.empty() ? type_name + " takes no parameters"
                                   : type_name + " takes " + list_names(known);
  check_keys(params, s, "params", known, hint);
  const char* P = "params";
  const LayerSpec& spec = layer_spec(t);
  for (const ParamSpec& p : spec.params) {
    const char* key = p.key.data();  // the table's keys are literals
    switch (p.kind) {
      case LayerParamKind::Int:
        read_int(params, s, P, key, p.min, p.max, lp.*p.int_field, p.required);
        break;
      case LayerParamKind::Window:
        if (!read_hw(params, s, P, key, p.min, p.max, lp.*p.int_field, lp.*p.int_field_w,
                     p.required) &&
            spec.stride_defaults_to_kernel && p.int_field == &LayerParams::stride_h) {
          lp.stride_h = lp.kernel_h;
          lp.stride_w = lp.kernel_w;
        }
        break;
      case LayerParamKind::Number:
        read_number(params, s, P, key, Range{p.lo, p.lo_open, p.hi, p.hi_open}, lp.*p.number_field);
        break;
      case LayerParamKind::Bool:
        read_bool(params, s, P, key, lp.*p.bool_field);
        break;
    }
  }
}

void Reader::read_edges(const json& edges, Project& p) {
  const Scope top;
  if (!edges.is_array()) {
    error(top, "model.edges", "expected an array of edges, got " + describe(edges));
    return;
  }
  struct Feed {
    size_t edge;
    std::string from;
  };
  std::map<std::pair<int, int64_t>, Feed> fed;  // (node, input port) -> first edge into it
  for (size_t i = 0; i < edges.size(); ++i) {
    const json& e = edges[i];
    const std::string path = index_path("model.edges", i);
    if (!e.is_object()) {
      error(top, path, "expected an edge object {\"from\": ID, \"to\": ID}, got " + describe(e));
      continue;
    }
    check_keys(e, top, path, {"from", "to", "from_port", "to_port"});
    // Resolves one end; -1 when it names no usable node.
    auto end = [&](const char* key, bool& known_type) -> int {
      known_type = false;
      const json* v = member(e, key);
      std::string field = join_path(path, key);
      if (!v) {
        error(top, field, "missing; expected a node id");
        return -1;
      }
      if (!v->is_string()) {
        error(top, field, "expected a node id (a string), got " + describe(*v));
        return -1;
      }
      auto it = declared_.find(v->get_ref<const std::string&>());
      if (it == declared_.end()) {
        error(top, field, "no node with id " + describe(*v));
        return -1;
      }
      known_type = it->second.type_known;
      return it->second.index;
    };
    bool from_typed = false, to_typed = false;
    int from = end("from", from_typed);
    int to = end("to", to_typed);
    int64_t from_port = 0, to_port = 0;
    bool ports_ok = true;
    if (member(e, "from_port") && !read_int(e, top, path, "from_port", 0, kMaxPort, from_port))
      ports_ok = false;
    if (member(e, "to_port") && !read_int(e, top, path, "to_port", 0, kMaxPort, to_port))
      ports_ok = false;

    if (from >= 0 && from_typed && ports_ok) {
      const LayerNode& n = p.model.nodes[static_cast<size_t>(from)];
      int outputs = layer_output_ports(n.type);
      if (from_port >= outputs) {
        Scope s{n.label(), n.id, path};
        std::string field = member(e, "from_port") ? "from_port" : "from";
        if (outputs == 0) {
          error(s, field, n.label() + " has no output ports; it cannot feed another node");
        } else {
          error(s, field,
                "expected an output port of " + n.label() + " in 0.." +
                    std::to_string(outputs - 1) + ", got " + std::to_string(from_port));
        }
        ports_ok = false;
      }
    }
    if (to >= 0 && to_typed && ports_ok) {
      const LayerNode& n = p.model.nodes[static_cast<size_t>(to)];
      int inputs = layer_input_ports(n);
      Scope s{n.label(), n.id, path};
      std::string field = member(e, "to_port") ? "to_port" : "to";
      if (to_port >= inputs) {
        if (inputs == 0) {
          error(s, field, n.label() + " has no input ports; nothing can feed it");
        } else {
          const bool counted = layer_spec(n.type).input_count != nullptr;
          error(s, field,
                "expected an input port of " + n.label() + " in 0.." + std::to_string(inputs - 1) +
                    ", got " + std::to_string(to_port) +
                    (counted ? "; raise its \"inputs\" to join more" : ""));
        }
        ports_ok = false;
      } else {
        std::string source = from >= 0
                                 ? (from_typed ? p.model.nodes[static_cast<size_t>(from)].label()
                                               : quote(p.model.nodes[static_cast<size_t>(from)].id))
                                 : std::string("?");
        auto [it, inserted] = fed.try_emplace({to, to_port}, Feed{i, source});
        if (!inserted) {
          error(s, field,
                "input port " + std::to_string(to_port) + " of " + n.label() +
                    " already receives an edge from " + it->second.from + " (" +
                    index_path("model.edges", it->second.edge) + "); this second edge comes from " +
                    source + "; an input port takes exactly one edge");
          ports_ok = false;
        }
      }
    }
    if (from >= 0 && to >= 0 && ports_ok)
      p.model.edges.push_back(
          Edge{from, static_cast<int>(from_port), to, static_cast<int>(to_port)});
  }
}

// The last part of a setting's key: "lr" of "training.optimizer.lr".
std::string_view leaf_of(std::string_view key) {
  return key.substr(key.find_last_of('.') + 1);
}

// The object a setting's key hangs in: "training.optimizer" of "training.optimizer.lr".
std::string_view parent_of(std::string_view key) {
  return key.substr(0, key.find_last_of('.'));
}

bool under(std::string_view key, std::string_view object) {
  return key.size() > object.size() && key.substr(0, object.size()) == object &&
         key[object.size()] == '.';
}

std::vector<std::string_view> Reader::setting_keys(std::string_view object) const {
  std::vector<std::string_view> keys;
  const auto add = [&](std::string_view k) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  };
  for (const SettingSpec& spec : project_settings()) {
    if (!under(spec.key, object)) continue;
    std::string_view rest = spec.key.substr(object.size() + 1);
    if (spec.kind_key) {
      // The dataset folder: every kind's key for it.
      for (const DatasetKindInfo& k : dataset_kinds())
        if (k.files) add(k.folder_key);
      continue;
    }
    add(rest.substr(0, rest.find('.')));
  }
  return keys;
}

// Every object the rows of `object` hang in below it (training.optimizer,
// training.schedule, training.ema): an object, with known keys only.
void Reader::check_setting_objects(const json& top, std::string_view object) {
  const Scope s;
  check_keys(top, s, object, setting_keys(object));
  std::vector<std::string_view> seen;
  for (const SettingSpec& spec : project_settings()) {
    if (!under(spec.key, object)) continue;
    const std::string_view parent = parent_of(spec.key);
    if (parent == object || std::find(seen.begin(), seen.end(), parent) != seen.end()) continue;
    seen.push_back(parent);
    const json* sub = member(top, std::string(leaf_of(parent)).c_str());
    if (sub && expect_object(*sub, s, parent)) check_keys(*sub, s, parent, setting_keys(parent));
  }
}

bool Reader::read_values(const json& v, const SettingSpec& spec, const std::string& field,
                         size_t channels, bool channels_ok, std::vector<double>& out) {
  const Scope s;
  if (!v.is_array() || v.empty()) {
    error(s, field, "expected an array of numbers, one per channel, got " + describe(v));
    return false;
  }
  const Range r{spec.lo, spec.lo_open, spec.hi, spec.hi_open};
  std::vector<double> values;
  bool ok = true;
  for (size_t i = 0; i < v.size(); ++i) {
    double d = 0;
    if (number_value(v[i], s, index_path(field, i), r, d))
      values.push_back(d);
    else
      ok = false;
  }
  if (!ok) return false;
  if (channels_ok && values.size() != channels) {
    error(s, field,
          "expected " + std::to_string(channels) + " value" + (channels == 1 ? "" : "s") +
              " (one per channel), got " + std::to_string(values.size()));
    return false;
  }
  out = std::move(values);
  return true;
}

bool Reader::read_names(const json& v, const std::string& field, int64_t classes,
                        std::vector<std::string>& out) {
  const Scope s;
  const std::string expected = "expected an array of " +
                               (classes > 0 ? std::to_string(classes) + " " : std::string()) +
                               "distinct non-empty strings, one per class in label order";
  if (!v.is_array() || v.empty()) {
    error(s, field, expected + ", got " + describe(v));
    return false;
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < v.size(); ++i) {
    const json& n = v[i];
    if (!n.is_string() || n.get_ref<const std::string&>().empty()) {
      error(s, index_path(field, i),
            "expected a class name (a non-empty string), got " + describe(n));
      return false;
    }
    const std::string& name = n.get_ref<const std::string&>();
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      error(s, index_path(field, i), quote(name) + " names two classes; each class needs its own");
      return false;
    }
    names.push_back(name);
  }
  if (classes > 0 && static_cast<int64_t>(names.size()) != classes) {
    error(s, field,
          "names " + std::to_string(names.size()) + " classes but \"dataset.classes\" is " +
              std::to_string(classes) + "; give one name per class");
    return false;
  }
  out = std::move(names);
  return true;
}

bool Reader::read_setting(const json& obj, const SettingSpec& spec, std::string_view key,
                          Project& p) {
  const Scope s;
  const std::string path(parent_of(spec.key));
  const std::string k(key);
  const json* v = member(obj, k.c_str());
  if (!v) return false;
  const std::string field = join_path(path, k);
  switch (spec.kind) {
    case SettingKind::Int:
      return int_value(*v, s, field, spec.min, spec.max, spec.int_ref(p));
    case SettingKind::Number:
      return number_value(*v, s, field, Range{spec.lo, spec.lo_open, spec.hi, spec.hi_open},
                          spec.number_ref(p));
    case SettingKind::Bool:
      return read_bool(obj, s, path, k.c_str(), spec.bool_ref(p));
    case SettingKind::Choice: {
      std::vector<std::string_view> names;
      for (const SettingChoice& c : spec.choices) names.push_back(c.name);
      const int i = choice_index(*v, s, field, spec.choice_what, names);
      if (i < 0) return false;
      spec.choice_set(p, spec.choices[static_cast<size_t>(i)].value);
      return true;
    }
    case SettingKind::Text:
    case SettingKind::Path:
      return read_string(obj, s, path, k.c_str(), spec.text_ref(p), false, false);
    case SettingKind::Seed:
      if (!to_uint64(*v, spec.seed_ref(p))) {
        error(
            s, field,
            "expected a non-negative integer (at most 18446744073709551615), got " + describe(*v));
        return false;
      }
      return true;
    case SettingKind::Devices: {
      std::string why;
      if (!v->is_string()) {
        error(s, field,
              "expected a device string such as \"cpu:2\" or \"cuda:0-3\", got " + describe(*v));
        return false;
      }
      if (!parse_device_set(v->get_ref<const std::string&>(), spec.devices_ref(p), why)) {
        error(s, field, why);
        return false;
      }
      return true;
    }
    case SettingKind::Values:
    case SettingKind::Names:
      break;  // read where the dataset's channels and classes are known
  }
  return false;
}

void Reader::read_dataset(const json& d, Project& p) {
  const Scope s;
  DatasetSpec& ds = p.dataset;
  check_setting_objects(d, "dataset");
  // The kind first: the other keys are read for it.
  const SettingSpec& kind_row = *find_setting("dataset.kind");
  read_setting(d, kind_row, "kind", p);
  const DatasetKindInfo& info = dataset_kind_info(ds.kind);
  // The files fix some kinds' shape and sizes; image folders count theirs.
  if (info.fixed_shape) {
    ds.height = info.height;
    ds.width = info.width;
    ds.channels = info.channels;
    ds.classes = info.classes;
    ds.train_size = info.train_size;
    ds.val_size = info.val_size;
  } else if (info.counted) {
    ds.train_size = ds.val_size = 0;
  }
  // Why a key is not this kind's.
  const auto not_for_kind = [&](const SettingSpec& spec) -> std::string {
    if (spec.dataset == DatasetScope::ImageFolder)
      return std::string("only for image-folder datasets, not ") + info.name + " ones";
    if (info.fixed_shape)
      return "only for " + dataset_scope_text(spec.dataset) + " datasets; " + info.title +
             " is always " + std::to_string(info.height) + "x" + std::to_string(info.width) + "x" +
             std::to_string(info.channels) + " with " + std::to_string(info.classes) +
             " classes, " + std::to_string(info.train_size) + " training and " +
             std::to_string(info.val_size) + " validation images";
    return "not for image folders: the images in them are counted when the data is loaded";
  };
  bool channels_ok = true;
  for (const SettingSpec& spec : project_settings()) {
    if (!under(spec.key, "dataset") || &spec == &kind_row) continue;
    if (spec.kind_key) {
      // The folder: only this kind's key for it.
      for (const DatasetKindInfo& k : dataset_kinds()) {
        if (!k.files || !member(d, k.folder_key) ||
            (info.files && std::string_view(k.folder_key) == info.folder_key))
          continue;
        const std::string why = info.files ? std::string("; ") + info.title +
                                                 "'s folder is \"dataset." + info.folder_key + "\""
                                           : "; a synthetic dataset has no files";
        error(s, join_path("dataset", k.folder_key),
              std::string("not a key of ") + info.name + " datasets" + why);
      }
      // Either folder may be unset while the model is designed: loading the
      // data asks for it. Image folders need a name; the others' empty is
      // their default folder.
      if (info.files)
        read_string(d, s, "dataset", info.folder_key, spec.text_ref(p), false, info.fixed_shape);
      continue;
    }
    const std::string key(leaf_of(spec.key));
    const json* v = member(d, key.c_str());
    if (spec.kind == SettingKind::Values) {
      // Absent statistics are the kind's usual ones, or repeat the default
      // for every channel of data the project shapes.
      const size_t channels = static_cast<size_t>(ds.channels);
      std::vector<double>& values = spec.values_ref(p);
      Project defaults;
      values.assign(channels, spec.values_ref(defaults).front());
      if (info.fixed_shape)
        for (size_t c = 0; c < channels; ++c) values[c] = spec.usual(info, c);
      if (v) read_values(*v, spec, join_path("dataset", key), channels, channels_ok, values);
      continue;
    }
    if (!v) continue;
    if (!setting_in_dataset(spec, ds.kind)) {
      error(s, join_path("dataset", key), not_for_kind(spec));
      continue;
    }
    if (spec.kind == SettingKind::Names) {
      read_names(*v, join_path("dataset", key), ds.classes, spec.names_ref(p));
      continue;
    }
    const bool read = read_setting(d, spec, key, p);
    // Statistics are checked against the channels only when those read well.
    if (!read && spec.key == "dataset.channels") channels_ok = false;
  }
}

bool Reader::read_training(const json& t, Project& p) {
  const Scope s;
  TrainingSpec& ts = p.training;
  check_setting_objects(t, "training");
  bool batch_ok = true, devices_ok = true;
  for (const SettingSpec& spec : project_settings()) {
    if (!under(spec.key, "training")) continue;
    // The object the key hangs in: training itself, or one inside it.
    const json* obj = &t;
    const std::string_view parent = parent_of(spec.key);
    if (parent != "training") {
      obj = member(t, std::string(leaf_of(parent)).c_str());
      if (!obj || !obj->is_object()) continue;  // said by check_setting_objects
    }
    const std::string key(leaf_of(spec.key));
    if (!member(*obj, key.c_str())) continue;
    const bool ok = read_setting(*obj, spec, key, p);
    if (spec.kind == SettingKind::Devices) devices_ok = ok;
    if (spec.key == "training.global_batch") batch_ok = ok;
  }
  if (devices_ok && ts.data_ranks() == 0) {
    error(s, "training.mesh.tensor",
          "mesh tensor=" + std::to_string(ts.tensor_ranks) + " does not divide the " +
              std::to_string(ts.devices.world_size()) + " ranks of " + ts.devices.str() +
              "; the ranks split into groups of that many");
    devices_ok = false;
  }
  if (batch_ok && devices_ok && !ts.global_batch_problem().empty()) {
    error(s, "training.global_batch", ts.global_batch_problem());
    batch_ok = false;
  }
  return batch_ok && devices_ok;
}

void Reader::read_variants(const json* v, Project& p, bool derive_ok) {
  const Scope s;
  if (!v) {
    int64_t world = std::max(1, p.training.devices.world_size());
    int64_t val_batch = derive_ok ? p.training.global_batch / world : 0;
    // Validation has no partial last batch: take the largest batch up to the
    // training one that splits the validation set evenly over the ranks.
    const int64_t val_size = p.dataset.val_size;
    if (val_batch > 0 && val_size > 0 && val_size % world == 0)
      while (val_size % (val_batch * world) != 0) --val_batch;
    p.variants = {{"train", VariantKind::Train, 0, 0, 0},
                  {"last", VariantKind::LastBatch, 0, 0, 0},
                  {"val", VariantKind::Validation, std::max<int64_t>(val_batch, 1), 0, 0}};
    return;
  }
  if (!v->is_array()) {
    error(s, "variants", "expected an array of variants, got " + describe(*v));
    return;
  }
  std::unordered_map<std::string, size_t> names;
  std::optional<size_t> train_at, last_at;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& item = (*v)[i];
    const std::string path = index_path("variants", i);
    if (!item.is_object()) {
      error(s, path, "expected a variant object, got " + describe(item));
      continue;
    }
    check_keys(item, s, path, {"name", "kind", "batch", "height", "width"});
    VariantSpec vs;
    if (read_string(item, s, path, "name", vs.name, true, false)) {
      auto [it, inserted] = names.try_emplace(vs.name, i);
      if (!inserted)
        error(s, join_path(path, "name"),
              "duplicate variant name " + quote(vs.name) + "; " +
                  index_path("variants", it->second) + " has it already");
    }
    bool kind_ok = read_choice<VariantKind>(item, s, path, "kind", "variant kind",
                                            {{"train", VariantKind::Train},
                                             {"last_batch", VariantKind::LastBatch},
                                             {"validation", VariantKind::Validation}},
                                            vs.kind, true);
    bool has_batch = member(item, "batch") != nullptr;
    read_int(item, s, path, "batch", 1, kMaxBatch, vs.batch);
    read_int(item, s, path, "height", 1, kMaxExtent, vs.height);
    read_int(item, s, path, "width", 1, kMaxExtent, vs.width);
    if (kind_ok) {
      if (vs.kind == VariantKind::Validation && !has_batch)
        error(s, join_path(path, "batch"),
              "missing; a validation variant needs its per-device batch (a positive integer)");
      std::optional<size_t>* first = vs.kind == VariantKind::Train       ? &train_at
                                     : vs.kind == VariantKind::LastBatch ? &last_at
                                                                         : nullptr;
      if (first && *first) {
        error(s, join_path(path, "kind"),
              "a second " + std::string(variant_kind_name(vs.kind)) + " variant; " +
                  index_path("variants", **first) + " is one already and only one is allowed");
      } else if (first) {
        *first = i;
      }
    }
    p.variants.push_back(std::move(vs));
  }
  if (!train_at) error(s, "variants", "expected exactly one variant of kind \"train\", found none");
}

}  // namespace

Project read_project(const JsonDom& dom, const std::string& file) {
  Reader reader(file);
  for (const std::string& path : dom.duplicate_keys) reader.add_duplicate_key(path);
  Project project = reader.read(dom.root);
  std::vector<Diagnostic> diags = reader.take_diagnostics();
  if (!diags.empty()) throw ProjectError(std::move(diags));
  return project;
}

}  // namespace tr
