// SPDX-License-Identifier: GPL-3.0-or-later
// Chrome trace JSON -> ProfileSpans, the inverse of chrome_trace_json.
#include "timeline/trace_import.h"

#include <QCoreApplication>
#include <QFile>
#include <nlohmann/json.hpp>

#include <climits>
#include <cmath>

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct TraceImportText {
  Q_DECLARE_TR_FUNCTIONS(TraceImport)
};

bool fail(QString* error, const QString& why) {
  if (error) *error = why;
  return false;
}

std::string text_of(const nlohmann::json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A value as a message shows it: a number or a string as written, an array
// or an object by its kind (its text may be long, or nested deeper than
// dump() can recurse).
QString shown(const nlohmann::json& v) {
  return v.is_primitive() ? QString::fromStdString(v.dump()) : QString::fromUtf8(v.type_name());
}

GraphId graph_named(const std::string& name) {
  for (int g = 0; g < kNumGraphIds; ++g)
    if (graph_id_name(static_cast<GraphId>(g)) == name) return static_cast<GraphId>(g);
  return GraphId::NUM_GRAPH_IDS;
}

}  // namespace

bool parse_chrome_trace(const QByteArray& text, const QString& source,
                        std::vector<ProfileSpan>& spans, QString* error) {
  using nlohmann::json;
  const json doc = json::parse(text.constData(), text.constData() + text.size(), nullptr, false);
  if (doc.is_discarded())
    return fail(error, TraceImportText::tr("%1 is not JSON, so not a Chrome trace").arg(source));
  // The format allows the bare event array as well as the object around it.
  const json* events = doc.is_array() ? &doc : nullptr;
  if (doc.is_object() && doc.contains("traceEvents")) events = &doc["traceEvents"];
  if (!events || !events->is_array())
    return fail(
        error,
        TraceImportText::tr("%1 is not a Chrome trace: it has no list of traceEvents").arg(source));

  std::vector<ProfileSpan> out;
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object() || text_of(e, "ph") != "X") continue;  // metadata, instants, counters
    auto bad = [&](const QString& why) {
      return fail(error, TraceImportText::tr("%1: event %2 (\"%3\") %4")
                             .arg(source)
                             .arg(i)
                             .arg(QString::fromStdString(text_of(e, "name")), why));
    };
    if (!e.contains("ts") || !e["ts"].is_number())
      return bad(TraceImportText::tr("has no numeric ts"));
    if (e.contains("dur") && !e["dur"].is_number())
      return bad(TraceImportText::tr("has a dur that is no number"));
    if (e.contains("dur") && e["dur"].get<double>() < 0)
      return bad(TraceImportText::tr("has the negative dur %1").arg(shown(e["dur"])));
    if (!e.contains("pid") || !e["pid"].is_number_integer())
      return bad(TraceImportText::tr("has no integer pid (the rank)"));
    if (!e.contains("tid") || !e["tid"].is_number_integer())
      return bad(TraceImportText::tr("has no integer tid (the stream)"));
    const int64_t tid = e["tid"].get<int64_t>();
    if (tid < 0 || tid >= kNumStreams)
      return bad(TraceImportText::tr("has tid %1, not a stream (0 TRANS to 4 UPDATE)").arg(tid));
    const int64_t pid = e["pid"].get<int64_t>();
    if (pid < 0 || pid > 1'000'000)
      return bad(TraceImportText::tr("has pid %1, not a rank").arg(pid));

    ProfileSpan s;
    s.rank = static_cast<int>(pid);
    s.tag.stream = static_cast<StreamKind>(tid);
    s.tag.label = text_of(e, "name");
    s.start_us = e["ts"].get<double>();
    s.end_us = s.start_us + (e.contains("dur") ? e["dur"].get<double>() : 0.0);
    if (!std::isfinite(s.end_us))
      return bad(TraceImportText::tr("ends beyond any time the timeline shows (ts + dur is %1)")
                     .arg(s.end_us));
    if (const auto args = e.find("args"); args != e.end() && args->is_object()) {
      s.tag.graph = graph_named(text_of(*args, "graph"));
      if (const auto n = args->find("node"); n != args->end() && n->is_number_integer()) {
        if (n->get<int64_t>() < -1 || n->get<int64_t>() > INT_MAX)
          return bad(
              TraceImportText::tr("has node %1 in its args, not a node number").arg(shown(*n)));
        s.tag.node = n->get<int>();
      }
      // Absent in traces written before spans knew their step: unknown (-1).
      if (const auto st = args->find("step"); st != args->end()) {
        if (!st->is_number_integer() || st->get<int64_t>() < 0)
          return bad(TraceImportText::tr(
                         "has step %1 in its args, not a step number (a whole number from 0)")
                         .arg(shown(*st)));
        s.step = st->get<int64_t>();
      }
    }
    if (s.tag.graph == GraphId::NUM_GRAPH_IDS) s.tag.node = -1;
    out.push_back(std::move(s));
  }
  if (out.empty())
    return fail(error,
                TraceImportText::tr("%1 holds no spans (no complete \"X\" events)").arg(source));
  spans = std::move(out);
  return true;
}

bool read_chrome_trace(const QString& path, std::vector<ProfileSpan>& spans, QString* error) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly))
    return fail(error, TraceImportText::tr("Cannot read %1: %2").arg(path, f.errorString()));
  return parse_chrome_trace(f.readAll(), path, spans, error);
}

}  // namespace tr::gui
