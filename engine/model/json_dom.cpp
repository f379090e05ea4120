// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/json_dom.h"

#include <algorithm>
#include <utility>

#include <renaissance/error.h>
#include "model/json_text.h"

namespace tr {

namespace {

using json = nlohmann::json;
using json_text::join_path;
using json_text::member;

// nlohmann's value copies, comparisons and dumps recurse, so depth is capped
// before anything is built; real projects nest about six levels.
constexpr int kMaxDepth = 64;

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

ProjectError single(const std::string& file, std::string message, int line = 0, int column = 0) {
  Diagnostic d;
  d.file = file;
  d.message = std::move(message);
  d.line = line;
  d.column = column;
  return ProjectError({d});
}

}  // namespace

JsonDom parse_json_dom(std::string_view text, const std::string& file) {
  if (text.size() > kMaxProjectBytes)
    throw single(file, "the project is larger than 16 MiB (" + std::to_string(text.size()) +
                           " bytes); that is not a project file");
  size_t deep = find_too_deep(text);
  if (deep != std::string_view::npos) {
    int line = 0, column = 0;
    line_column(text, deep, line, column);
    throw single(file,
                 "invalid JSON: nested deeper than " + std::to_string(kMaxDepth) +
                     " levels; a project never needs that",
                 line, column);
  }
  DomBuilder builder;
  bool parsed =
      json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json, true, false);
  const DomBuilder::Failure& failure = builder.failure();
  if (!parsed || failure.failed) {
    int line = 0, column = 0;
    if (failure.position > 0) line_column(text, failure.position - 1, line, column);
    std::string message =
        failure.message.empty() ? "invalid JSON" : clean_parse_message(failure.message);
    throw single(file, std::move(message), line, column);
  }
  JsonDom dom;
  dom.root = std::move(builder.root());
  dom.duplicate_keys = builder.duplicate_keys();
  return dom;
}

}  // namespace tr
