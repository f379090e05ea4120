// SPDX-License-Identifier: GPL-3.0-or-later
// Reading, validating and writing project files (docs/project-format.md).
#include "model/project_io.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/project_limits.h"

namespace tr {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr int kFormat = 1;
constexpr size_t kMaxFileBytes = size_t{16} << 20;
// nlohmann's value copies, comparisons and dumps recurse, so depth is capped
// before anything is built; real projects nest about six levels.
constexpr int kMaxDepth = 64;
// A hostile file can produce one problem per node; past this many the rest
// are counted instead of listed so the message stays readable.
constexpr size_t kMaxDiagnostics = 200;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
using namespace limits;
constexpr int64_t kMaxPort = std::numeric_limits<int>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------
// Text helpers for messages.

// Cuts to about `max` bytes without splitting a UTF-8 sequence.
std::string truncate(std::string s, size_t max) {
  if (s.size() <= max) return s;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  s += "...";
  return s;
}

// Strings from the file are quoted JSON-style so control characters and
// stray quotes cannot garble the message.
std::string quote(std::string_view s) {
  return json(truncate(std::string(s), 64)).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return quote(v.get_ref<const std::string&>());
    case json::value_t::array: {
      if (v.empty()) return "[]";
      bool small = v.size() <= 8 && std::all_of(v.begin(), v.end(), [](const json& e) {
                     return !e.is_structured() &&
                            (!e.is_string() || e.get_ref<const std::string&>().size() <= 40);
                   });
      if (small) {
        std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
        if (s.size() <= 40) return s;
      }
      return "an array of " + std::to_string(v.size()) + " values";
    }
    case json::value_t::object:
      return v.empty() ? "{}" : "an object";
    case json::value_t::binary:
      return "binary data";
    case json::value_t::discarded:
      return "nothing";
    default:
      return v.dump();
  }
}

std::string number_text(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15)
    return std::to_string(static_cast<int64_t>(d));
  return json(d).dump();
}

std::string int_phrase(int64_t lo, int64_t hi) {
  std::string bound = hi == kInt64Max ? "" : " (at most " + std::to_string(hi) + ")";
  if (lo == 1) return "a positive integer" + bound;
  if (lo == 0) return "a non-negative integer" + bound;
  return "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
}

struct Range {
  double lo = -kInf;
  bool lo_open = false;
  double hi = kInf;
  bool hi_open = false;

  bool contains(double d) const {
    if (lo_open ? !(d > lo) : !(d >= lo)) return false;
    if (hi_open ? !(d < hi) : !(d <= hi)) return false;
    return true;
  }
  std::string phrase() const {
    if (lo == -kInf && hi == kInf) return "a number";
    if (hi == kInf) return std::string("a number ") + (lo_open ? "> " : ">= ") + number_text(lo);
    return std::string("a number in ") + (lo_open ? "(" : "[") + number_text(lo) + ", " +
           number_text(hi) + (hi_open ? ")" : "]");
  }
};

constexpr Range kAnyNumber{};
constexpr Range kPositive{0, true, kInf, false};
constexpr Range kNonNegative{0, false, kInf, false};
constexpr Range kUnitClosed{0, false, 1, false};
constexpr Range kUnitHalfOpen{0, false, 1, true};
constexpr Range kUnitOpen{0, true, 1, true};

// Optimal string alignment distance: a swapped pair of letters counts once,
// which is the commonest typo in key names.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The known name closest to `word` within two edits, or empty.
std::string_view closest(std::string_view word, const std::vector<std::string_view>& known) {
  std::string_view best;
  size_t best_distance = 3;
  for (std::string_view k : known) {
    size_t longer = std::max(word.size(), k.size());
    if (longer - std::min(word.size(), k.size()) > 2) continue;  // cheap bound first
    size_t d = edit_distance(word, k);
    // Two edits turn any two-letter word into any other; demand some overlap.
    if (d < best_distance && d * 2 <= longer) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

std::string join_path(std::string_view base, std::string_view field) {
  if (base.empty()) return std::string(field);
  if (field.empty()) return std::string(base);
  if (field.front() == '[') return std::string(base) + std::string(field);
  return std::string(base) + "." + std::string(field);
}

std::string index_path(std::string_view base, size_t i) {
  return std::string(base) + "[" + std::to_string(i) + "]";
}

std::string list_names(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  return out;
}

// ---------------------------------------------------------------------------
// Value conversions: JSON does not distinguish 3 from 3.0, so an integral
// float is accepted wherever an integer is expected.

bool to_int(const json& v, int64_t& out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(kInt64Max)) return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return false;
    if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return false;
    out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

bool to_uint64(const json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0) return false;
    out = static_cast<uint64_t>(i);
    return true;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < 0 || d >= 18446744073709551616.0)
      return false;
    out = static_cast<uint64_t>(d);
    return true;
  }
  return false;
}

const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

template <typename Enum>
struct Choice {
  std::string_view name;
  Enum value;
};

// ---------------------------------------------------------------------------
// JSON text to DOM. A SAX builder instead of json::parse because the SAX
// error callback reports the byte position of every error, including number
// overflow, which json::parse throws without one; it also sees duplicate keys,
// which json::parse silently merges.

class DomBuilder {
 public:
  struct Failure {
    bool failed = false;
    size_t position = 0;  // bytes read when the error was found, 1-based
    std::string message;
  };

  json& root() { return root_; }
  const Failure& failure() const { return failure_; }
  const std::vector<std::string>& duplicate_keys() const { return duplicates_; }

  bool null() { return put(nullptr); }
  bool boolean(bool b) { return put(b); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return put(v); }
  bool string(json::string_t& s) { return put(std::move(s)); }
  bool binary(json::binary_t& b) { return put(json::binary(std::move(b))); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& k) {
    Frame& f = stack_.back();
    if (f.value->contains(k)) duplicates_.push_back(join_path(path(), k));
    f.key = k;
    slot_ = &(*f.value)[k];
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const json::exception& ex) {
    failure_ = {true, position, ex.what()};
    return false;
  }

 private:
  struct Frame {
    json* value;
    std::string name;  // "nodes" or "[3]": how the parent reaches it
    std::string key;   // the member being read, for objects
  };

  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json* parent = stack_.back().value;
    if (parent->is_array()) {
      parent->push_back(std::move(v));
      return &parent->back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool put(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json&& v) {
    if (stack_.size() >= static_cast<size_t>(kMaxDepth)) {
      // The pre-scan rejects this first; kept so the builder is safe alone.
      failure_ = {true, 0, "nested deeper than " + std::to_string(kMaxDepth) + " levels"};
      return false;
    }
    std::string name;
    if (!stack_.empty()) {
      const Frame& parent = stack_.back();
      name =
          parent.value->is_array() ? "[" + std::to_string(parent.value->size()) + "]" : parent.key;
    }
    json* placed = place(std::move(v));
    stack_.push_back({placed, std::move(name), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  std::string path() const {
    std::string p;
    for (size_t i = 1; i < stack_.size(); ++i) p = join_path(p, stack_[i].name);
    return p;
  }

  json root_;
  std::vector<Frame> stack_;
  json* slot_ = nullptr;
  Failure failure_;
  std::vector<std::string> duplicates_;
};

void line_column(std::string_view text, size_t offset, int& line, int& column) {
  offset = std::min(offset, text.size());
  size_t line_start = 0;
  int64_t l = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++l;
      line_start = i + 1;
    }
  }
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  line = static_cast<int>(std::min(l, kIntMax));
  column =
      static_cast<int>(std::min<int64_t>(static_cast<int64_t>(offset - line_start) + 1, kIntMax));
}

// nlohmann's messages carry an id prefix, its own line/column and parser
// context; keep only the part a user can act on, in printable ASCII.
std::string clean_parse_message(const std::string& what) {
  std::string s = what;
  if (s.rfind("[json.exception.", 0) == 0) {
    size_t end = s.find("] ");
    if (end != std::string::npos) s.erase(0, end + 2);
  }
  if (s.rfind("parse error", 0) == 0) {
    size_t colon = s.find(": ");
    if (colon != std::string::npos) s.erase(0, colon + 2);
  }
  if (s.rfind("syntax error while parsing ", 0) == 0) {
    size_t dash = s.find(" - ");
    if (dash != std::string::npos) s.erase(0, dash + 3);
  }
  // nlohmann reads "//" as an invalid literal; say what the user did.
  size_t last_read = s.rfind("last read: '");
  if (last_read != std::string::npos) {
    size_t start = last_read + 12;
    size_t end = s.find('\'', start);
    if (end != std::string::npos && end > start && s[end - 1] == '/')
      s += " (JSON has no comments)";
  }
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
    if (out.size() > 200) {
      out += "...";
      break;
    }
  }
  return "invalid JSON: " + out;
}

// Finds where nesting first exceeds kMaxDepth, counting brackets outside
// strings; returns the byte offset or npos.
size_t find_too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

// ---------------------------------------------------------------------------
// Validation of the DOM into a Project, collecting every problem.

// Which node a problem is about and the path its fields hang from.
struct Scope {
  std::string node;     // label, or empty
  std::string node_id;  // bare id, or empty
  std::string base;     // path prefix: "" for node-relative fields, "training", ...
};

std::vector<std::string_view> params_of(LayerType t) {
  switch (t) {
    case LayerType::Input:
      return {"height", "width", "channels"};
    case LayerType::Conv2d:
      return {"out_channels", "kernel", "stride", "padding", "bias"};
    case LayerType::BatchNorm2d:
      return {"eps", "momentum"};
    case LayerType::MaxPool2d:
    case LayerType::AvgPool2d:
      return {"kernel", "stride", "padding"};
    case LayerType::Dropout:
      return {"p"};
    case LayerType::Linear:
      return {"out_features", "bias"};
    default:
      return {};
  }
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

  template <typename Enum>
  bool read_choice(const json& obj, const Scope& s, std::string_view path, const char* key,
                   const char* what, std::initializer_list<Choice<Enum>> choices, Enum& out,
                   bool required = false) {
    const json* v = member(obj, key);
    std::string field = join_path(path, key);
    std::vector<std::string_view> names;
    for (const auto& c : choices) names.push_back(c.name);
    std::string expected = "expected one of " + list_names(names);
    if (!v) {
      if (required) error(s, field, "missing; " + expected);
      return false;
    }
    if (!v->is_string()) {
      error(s, field, expected + ", got " + describe(*v));
      return false;
    }
    const std::string& text = v->get_ref<const std::string&>();
    for (const auto& c : choices) {
      if (c.name == text) {
        out = c.value;
        return true;
      }
    }
    std::string msg = "unknown " + std::string(what) + " " + quote(text) + "; " + expected;
    std::string_view near = closest(text, names);
    if (!near.empty()) msg += "; did you mean " + quote(near) + "?";
    error(s, field, std::move(msg));
    return false;
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
  void read_dataset(const json& d, DatasetSpec& ds);
  bool read_values(const json& obj, const Scope& s, const char* key, const Range& r,
                   std::vector<double>& out);
  bool read_training(const json& t, TrainingSpec& ts);
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
    } else if (v > kFormat) {
      error(top, "format",
            "format " + std::to_string(v) + " is newer than this version reads (" +
                std::to_string(kFormat) + ")");
      return p;
    } else if (v != kFormat) {
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
    if (expect_object(*d, top, "dataset")) read_dataset(*d, p.dataset);
  bool training_ok = true;
  if (const json* t = member(root, "training")) {
    if (expect_object(*t, top, "training"))
      training_ok = read_training(*t, p.training);
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
  switch (t) {
    case LayerType::Input:
      read_int(params, s, P, "height", 1, kMaxExtent, lp.height, true);
      read_int(params, s, P, "width", 1, kMaxExtent, lp.width, true);
      read_int(params, s, P, "channels", 1, kMaxExtent, lp.channels, true);
      break;
    case LayerType::Conv2d:
      read_int(params, s, P, "out_channels", 1, kMaxFeatures, lp.out_channels, true);
      read_hw(params, s, P, "kernel", 1, kMaxKernel, lp.kernel_h, lp.kernel_w, true);
      read_hw(params, s, P, "stride", 1, kMaxStride, lp.stride_h, lp.stride_w, false);
      read_hw(params, s, P, "padding", 0, kMaxPadding, lp.pad_h, lp.pad_w, false);
      read_bool(params, s, P, "bias", lp.bias);
      break;
    case LayerType::BatchNorm2d:
      read_number(params, s, P, "eps", kPositive, lp.eps);
      read_number(params, s, P, "momentum", kUnitClosed, lp.momentum);
      break;
    case LayerType::MaxPool2d:
    case LayerType::AvgPool2d:
      read_hw(params, s, P, "kernel", 1, kMaxKernel, lp.kernel_h, lp.kernel_w, true);
      if (!read_hw(params, s, P, "stride", 1, kMaxStride, lp.stride_h, lp.stride_w, false)) {
        lp.stride_h = lp.kernel_h;
        lp.stride_w = lp.kernel_w;
      }
      read_hw(params, s, P, "padding", 0, kMaxPadding, lp.pad_h, lp.pad_w, false);
      break;
    case LayerType::Dropout:
      read_number(params, s, P, "p", kUnitHalfOpen, lp.p);
      break;
    case LayerType::Linear:
      read_int(params, s, P, "out_features", 1, kMaxFeatures, lp.out_channels, true);
      read_bool(params, s, P, "bias", lp.bias);
      break;
    default:
      break;
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
      int inputs = layer_input_ports(n.type);
      Scope s{n.label(), n.id, path};
      std::string field = member(e, "to_port") ? "to_port" : "to";
      if (to_port >= inputs) {
        if (inputs == 0) {
          error(s, field, n.label() + " has no input ports; nothing can feed it");
        } else {
          error(s, field,
                "expected an input port of " + n.label() + " in 0.." + std::to_string(inputs - 1) +
                    ", got " + std::to_string(to_port));
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

bool Reader::read_values(const json& obj, const Scope& s, const char* key, const Range& r,
                         std::vector<double>& out) {
  const json* v = member(obj, key);
  if (!v) return false;
  std::string field = join_path("dataset", key);
  if (!v->is_array() || v->empty()) {
    error(s, field, "expected an array of numbers, one per channel, got " + describe(*v));
    return false;
  }
  std::vector<double> values;
  bool ok = true;
  for (size_t i = 0; i < v->size(); ++i) {
    double d = 0;
    if (number_value((*v)[i], s, index_path(field, i), r, d))
      values.push_back(d);
    else
      ok = false;
  }
  if (ok) out = std::move(values);
  return ok;
}

void Reader::read_dataset(const json& d, DatasetSpec& ds) {
  const Scope s;
  static const char* const kSyntheticOnly[] = {"height",  "width",      "channels",
                                               "classes", "train_size", "val_size"};
  check_keys(d, s, "dataset",
             {"kind", "path", "height", "width", "channels", "classes", "train_size", "val_size",
              "mean", "std", "random_crop_padding", "random_flip"});
  read_choice<DatasetKind>(
      d, s, "dataset", "kind", "dataset kind",
      {{"fashion-mnist", DatasetKind::FashionMnist}, {"synthetic", DatasetKind::Synthetic}},
      ds.kind);
  bool channels_ok = true;
  if (ds.kind == DatasetKind::Synthetic) {
    if (member(d, "path"))
      error(s, "dataset.path", "only for fashion-mnist datasets; a synthetic dataset has no files");
    read_int(d, s, "dataset", "height", 1, kMaxExtent, ds.height);
    read_int(d, s, "dataset", "width", 1, kMaxExtent, ds.width);
    const json* c = member(d, "channels");
    if (c) channels_ok = read_int(d, s, "dataset", "channels", 1, kMaxExtent, ds.channels);
    read_int(d, s, "dataset", "classes", 2, kMaxFeatures, ds.classes);
    read_int(d, s, "dataset", "train_size", 1, kMaxSamples, ds.train_size);
    read_int(d, s, "dataset", "val_size", 1, kMaxSamples, ds.val_size);
  } else {
    for (const char* key : kSyntheticOnly) {
      if (member(d, key))
        error(s, join_path("dataset", key),
              "only for synthetic datasets; Fashion-MNIST is always 28x28x1 with 10 classes, "
              "60000 training and 10000 validation images");
    }
    read_string(d, s, "dataset", "path", ds.path, false, true);
    ds.height = 28;
    ds.width = 28;
    ds.channels = 1;
    ds.classes = 10;
    ds.train_size = 60000;
    ds.val_size = 10000;
  }
  // Absent statistics repeat the default for every channel.
  const DatasetSpec defaults;
  size_t channels = static_cast<size_t>(ds.channels);
  ds.mean.assign(channels, defaults.mean.front());
  ds.std.assign(channels, defaults.std.front());
  const std::pair<const char*, std::vector<double>*> stats[] = {{"mean", &ds.mean},
                                                                {"std", &ds.std}};
  for (const auto& [key, values] : stats) {
    std::vector<double> read;
    if (!read_values(d, s, key, std::string_view(key) == "std" ? kPositive : kAnyNumber, read))
      continue;
    if (channels_ok && read.size() != channels) {
      error(s, join_path("dataset", key),
            "expected " + std::to_string(channels) + " value" + (channels == 1 ? "" : "s") +
                " (one per channel), got " + std::to_string(read.size()));
      continue;
    }
    *values = std::move(read);
  }
  read_int(d, s, "dataset", "random_crop_padding", 0, kMaxPadding, ds.random_crop_padding);
  read_bool(d, s, "dataset", "random_flip", ds.random_flip);
}

bool Reader::read_training(const json& t, TrainingSpec& ts) {
  const Scope s;
  bool ok = true;
  check_keys(t, s, "training",
             {"optimizer", "schedule", "epochs", "global_batch", "devices", "precision", "seed",
              "ema", "sync_batch_norm"});
  if (const json* o = member(t, "optimizer"); o && expect_object(*o, s, "training.optimizer")) {
    // Every optimizer accepts every optimizer key: the writer stores them all,
    // so switching the type in the designer keeps the other settings.
    const char* P = "training.optimizer";
    OptimizerSpec& op = ts.optimizer;
    check_keys(*o, s, P,
               {"type", "lr", "momentum", "weight_decay", "nesterov", "beta1", "beta2", "eps",
                "trust_coefficient"});
    read_choice<OptimizerKind>(
        *o, s, P, "type", "optimizer",
        {{"sgd", OptimizerKind::SGD}, {"adam", OptimizerKind::Adam}, {"lars", OptimizerKind::LARS}},
        op.kind);
    read_number(*o, s, P, "lr", kPositive, op.lr);
    read_number(*o, s, P, "momentum", kUnitHalfOpen, op.momentum);
    read_number(*o, s, P, "weight_decay", kNonNegative, op.weight_decay);
    read_bool(*o, s, P, "nesterov", op.nesterov);
    read_number(*o, s, P, "beta1", kUnitHalfOpen, op.beta1);
    read_number(*o, s, P, "beta2", kUnitHalfOpen, op.beta2);
    read_number(*o, s, P, "eps", kPositive, op.adam_eps);
    read_number(*o, s, P, "trust_coefficient", kPositive, op.trust_coefficient);
  }
  if (const json* c = member(t, "schedule"); c && expect_object(*c, s, "training.schedule")) {
    const char* P = "training.schedule";
    ScheduleSpec& sc = ts.schedule;
    check_keys(*c, s, P, {"type", "warmup_epochs", "min_lr", "step_epochs", "gamma"});
    read_choice<ScheduleKind>(*c, s, P, "type", "schedule",
                              {{"constant", ScheduleKind::Constant},
                               {"step", ScheduleKind::Step},
                               {"cosine", ScheduleKind::Cosine}},
                              sc.kind);
    read_number(*c, s, P, "warmup_epochs", kNonNegative, sc.warmup_epochs);
    read_number(*c, s, P, "min_lr", kNonNegative, sc.min_lr);
    read_int(*c, s, P, "step_epochs", 1, kMaxEpochs, sc.step_epochs);
    read_number(*c, s, P, "gamma", kPositive, sc.gamma);
  }
  const char* P = "training";
  read_int(t, s, P, "epochs", 1, kMaxEpochs, ts.epochs);
  bool batch_ok = !member(t, "global_batch") ||
                  read_int(t, s, P, "global_batch", 1, kMaxBatch, ts.global_batch);
  bool devices_ok = true;
  if (const json* d = member(t, "devices")) {
    std::string why;
    if (!d->is_string()) {
      error(s, "training.devices",
            "expected a device string such as \"cpu:2\" or \"cuda:0-3\", got " + describe(*d));
      devices_ok = false;
    } else if (!parse_device_set(d->get_ref<const std::string&>(), ts.devices, why)) {
      error(s, "training.devices", why);
      devices_ok = false;
    }
  }
  if (batch_ok && devices_ok && ts.global_batch % ts.devices.world_size() != 0) {
    error(s, "training.global_batch",
          "global_batch " + std::to_string(ts.global_batch) + " is not divisible by the " +
              std::to_string(ts.devices.world_size()) + " ranks of " + ts.devices.str() +
              "; every rank takes the same share");
    batch_ok = false;
  }
  ok = batch_ok && devices_ok;
  read_choice<Precision>(t, s, P, "precision", "precision",
                         {{"fp32", Precision::FP32}, {"amp", Precision::AMP}}, ts.precision);
  if (const json* seed = member(t, "seed")) {
    if (!to_uint64(*seed, ts.seed))
      error(
          s, "training.seed",
          "expected a non-negative integer (at most 18446744073709551615), got " + describe(*seed));
  }
  if (const json* e = member(t, "ema"); e && expect_object(*e, s, "training.ema")) {
    check_keys(*e, s, "training.ema", {"enabled", "decay"});
    read_bool(*e, s, "training.ema", "enabled", ts.ema);
    read_number(*e, s, "training.ema", "decay", kUnitOpen, ts.ema_decay);
  }
  read_bool(t, s, "training", "sync_batch_norm", ts.sync_batch_norm);
  return ok;
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

// ---------------------------------------------------------------------------
// Device strings.

// Digits only, at most nine, so the value always fits.
bool parse_count(std::string_view text, int& out) {
  if (text.empty() || text.size() > 9) return false;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

bool power_of_two(size_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// ---------------------------------------------------------------------------
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
  switch (n.type) {
    case LayerType::Input:
      o["height"] = lp.height;
      o["width"] = lp.width;
      o["channels"] = lp.channels;
      break;
    case LayerType::Conv2d:
      o["out_channels"] = lp.out_channels;
      o["kernel"] = hw_json(lp.kernel_h, lp.kernel_w);
      o["stride"] = hw_json(lp.stride_h, lp.stride_w);
      o["padding"] = hw_json(lp.pad_h, lp.pad_w);
      o["bias"] = lp.bias;
      break;
    case LayerType::BatchNorm2d:
      o["eps"] = lp.eps;
      o["momentum"] = lp.momentum;
      break;
    case LayerType::MaxPool2d:
    case LayerType::AvgPool2d:
      o["kernel"] = hw_json(lp.kernel_h, lp.kernel_w);
      o["stride"] = hw_json(lp.stride_h, lp.stride_w);
      o["padding"] = hw_json(lp.pad_h, lp.pad_w);
      break;
    case LayerType::Dropout:
      o["p"] = lp.p;
      break;
    case LayerType::Linear:
      o["out_features"] = lp.out_channels;
      o["bias"] = lp.bias;
      break;
    default:
      break;
  }
  return o;
}

ProjectError write_error(const std::string& field, const std::string& message) {
  Diagnostic d;
  d.field = field;
  d.message = message;
  return ProjectError({d});
}

std::string errno_text(int err) {
  return std::strerror(err);
}

}  // namespace

bool parse_device_set(std::string_view text, DeviceSet& out, std::string& error) {
  bool printable = text.size() <= 32 && std::all_of(text.begin(), text.end(),
                                                    [](char c) { return c > 0x20 && c < 0x7F; });
  std::string shown = printable ? std::string(text) : quote(text);
  auto fail = [&](const std::string& why) {
    error = shown + ": " + why;
    return false;
  };
  DeviceSet result;
  if (text == "cpu") {
    out = result;
    error.clear();
    return true;
  }
  if (text.rfind("cpu:", 0) == 0) {
    int n = 0;
    if (!parse_count(text.substr(4), n))
      return fail("expected cpu:N with N the number of ranks, e.g. cpu:4");
    if (!power_of_two(static_cast<size_t>(n)))
      return fail("the number of ranks must be a power of two (1, 2, 4, 8...)");
    if (n > kMaxRanks) return fail("at most " + std::to_string(kMaxRanks) + " ranks");
    result.kind = DeviceKind::CPU;
    result.ids.clear();
    for (int i = 0; i < n; ++i) result.ids.push_back(i);
    out = std::move(result);
    error.clear();
    return true;
  }
  if (text.rfind("cuda:", 0) == 0) {
    result.kind = DeviceKind::CUDA;
    result.ids.clear();
    std::string_view rest = text.substr(5);
    bool seen[kMaxDeviceId + 1] = {};
    const std::string form = "expected cuda:IDS with IDS like 0, 0-3 or 0,2";
    while (true) {
      size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      size_t dash = item.find('-');
      int first = 0, last = 0;
      if (dash == std::string_view::npos) {
        if (!parse_count(item, first)) return fail(form);
        last = first;
      } else if (!parse_count(item.substr(0, dash), first) ||
                 !parse_count(item.substr(dash + 1), last)) {
        return fail(form);
      }
      if (first > kMaxDeviceId || last > kMaxDeviceId)
        return fail("device ids go from 0 to " + std::to_string(kMaxDeviceId));
      if (first > last)
        return fail("the range " + std::string(item) + " runs backwards; write " +
                    std::to_string(last) + "-" + std::to_string(first));
      for (int id = first; id <= last; ++id) {
        if (seen[id]) return fail("device " + std::to_string(id) + " is listed twice");
        seen[id] = true;
        result.ids.push_back(id);
      }
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    if (!power_of_two(result.ids.size()))
      return fail("the number of devices must be a power of two (1, 2, 4, 8...), got " +
                  std::to_string(result.ids.size()));
    out = std::move(result);
    error.clear();
    return true;
  }
  return fail("expected cpu, cpu:N or cuda:IDS (e.g. cpu:4, cuda:0-3, cuda:0,2)");
}

Project parse_project(std::string_view text, const std::string& file) {
  auto single = [&](std::string message, int line = 0, int column = 0) {
    Diagnostic d;
    d.file = file;
    d.message = std::move(message);
    d.line = line;
    d.column = column;
    return ProjectError({d});
  };
  try {
    if (text.size() > kMaxFileBytes)
      throw single("the project is larger than 16 MiB (" + std::to_string(text.size()) +
                   " bytes); that is not a project file");
    size_t deep = find_too_deep(text);
    if (deep != std::string_view::npos) {
      int line = 0, column = 0;
      line_column(text, deep, line, column);
      throw single("invalid JSON: nested deeper than " + std::to_string(kMaxDepth) +
                       " levels; a project never needs that",
                   line, column);
    }
    DomBuilder builder;
    bool parsed = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                                  true, false);
    const DomBuilder::Failure& failure = builder.failure();
    if (!parsed || failure.failed) {
      int line = 0, column = 0;
      if (failure.position > 0) line_column(text, failure.position - 1, line, column);
      std::string message =
          failure.message.empty() ? "invalid JSON" : clean_parse_message(failure.message);
      throw single(std::move(message), line, column);
    }
    Reader reader(file);
    for (const std::string& path : builder.duplicate_keys()) reader.add_duplicate_key(path);
    Project project = reader.read(builder.root());
    std::vector<Diagnostic> diags = reader.take_diagnostics();
    if (!diags.empty()) throw ProjectError(std::move(diags));
    return project;
  } catch (const ProjectError&) {
    throw;
  } catch (const std::exception& e) {
    // A library failure (allocation, a nlohmann invariant) is still reported
    // as a problem with this file, never as a crash of the caller.
    throw single(std::string("cannot read the project: ") + e.what());
  }
}

Project load_project(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw UsageError("cannot open project file '" + path + "': " + errno_text(errno));
  std::string text;
  char buf[65536];
  int read_errno = 0;
  bool too_big = false;
  while (true) {
    size_t n = std::fread(buf, 1, sizeof buf, f);
    text.append(buf, n);
    if (text.size() > kMaxFileBytes) {
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
    throw UsageError("cannot open project file '" + path + "': " + errno_text(read_errno));
  Project p = parse_project(text, path);
  p.source_path = path;
  return p;
}

std::string project_to_json(const Project& project) {
  try {
    const Project& p = project;
    ojson root = ojson::object();
    root["format"] = kFormat;
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
    if (d.kind == DatasetKind::Synthetic) {
      ds["kind"] = "synthetic";
      ds["height"] = d.height;
      ds["width"] = d.width;
      ds["channels"] = d.channels;
      ds["classes"] = d.classes;
      ds["train_size"] = d.train_size;
      ds["val_size"] = d.val_size;
    } else {
      ds["kind"] = "fashion-mnist";
      if (!d.path.empty()) ds["path"] = d.path;
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
  if (!f) throw UsageError("cannot write project file '" + tmp + "': " + errno_text(errno));
  int err = 0;
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) err = errno ? errno : EIO;
  if (!err && std::fflush(f) != 0) err = errno ? errno : EIO;
  if (!err && ::fsync(::fileno(f)) != 0) err = errno ? errno : EIO;
  if (std::fclose(f) != 0 && !err) err = errno ? errno : EIO;
  if (err) {
    std::remove(tmp.c_str());
    throw UsageError("cannot write project file '" + tmp + "': " + errno_text(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    throw UsageError("cannot replace project file '" + path + "': " + errno_text(err));
  }
}

}  // namespace tr
