// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for tr::gui::parse_chrome_trace (gui/timeline/
// trace_import.cpp): the input is a Chrome trace JSON text. Allowed
// outcomes: true with at least one span, each with a rank, a stream and a
// step the timeline can show and finite times; or false with a message.
// Any exception, a crash, a hang, a leak or a sanitizer report is a
// finding. Accepted spans are written again with chrome_trace_json (the
// engine's writer) and read back: they must come back as they were (an
// empty label as "launch", a negative duration as none).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <QByteArray>
#include <QString>

#include <renaissance/profile.h>
#include <renaissance/profile_export.h>
#include "fuzz_support.h"
#include "timeline/trace_import.h"

namespace {

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::max(std::abs(a), std::abs(b)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const QByteArray text(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
  std::vector<tr::ProfileSpan> spans;
  QString error;
  if (!tr::gui::parse_chrome_trace(text, QStringLiteral("fuzz.json"), spans, &error)) {
    FUZZ_CHECK(!error.isEmpty());
    FUZZ_CHECK(spans.empty());
    return 0;
  }
  FUZZ_CHECK(!spans.empty());
  for (const tr::ProfileSpan& s : spans) {
    FUZZ_CHECK(s.rank >= 0);
    FUZZ_CHECK(static_cast<int>(s.tag.stream) < tr::kNumStreams);  // an unsigned byte
    FUZZ_CHECK(s.step >= -1);
    FUZZ_CHECK(std::isfinite(s.start_us) && std::isfinite(s.end_us));
    if (s.tag.graph == tr::GraphId::NUM_GRAPH_IDS) FUZZ_CHECK(s.tag.node == -1);
  }
  // The timeline's overlap figures read every span.
  (void)tr::stream_overlaps(spans);

  const std::string again = tr::chrome_trace_json(spans);
  std::vector<tr::ProfileSpan> back;
  QString again_error;
  FUZZ_CHECK(tr::gui::parse_chrome_trace(QByteArray::fromStdString(again),
                                         QStringLiteral("fuzz-again.json"), back, &again_error));
  FUZZ_CHECK(back.size() == spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    const tr::ProfileSpan& a = spans[i];
    const tr::ProfileSpan& b = back[i];
    FUZZ_CHECK(b.rank == a.rank && b.tag.stream == a.tag.stream && b.step == a.step);
    FUZZ_CHECK(b.tag.graph == a.tag.graph && b.tag.node == a.tag.node);
    FUZZ_CHECK(b.tag.label == (a.tag.label.empty() ? std::string("launch") : a.tag.label));
    FUZZ_CHECK(b.start_us == a.start_us);
    FUZZ_CHECK(near(b.end_us, std::max(a.end_us, a.start_us)));
  }
  return 0;
}
