// SPDX-License-Identifier: GPL-3.0-or-later
// Overlap statistics as text, from the engine's own overlap measures.
#include "timeline/overlap_summary.h"

#include <QCoreApplication>
#include <QStringList>
#include <map>

#include <renaissance/profile_export.h>
#include "timeline/time_ticks.h"

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct OverlapSummaryText {
  Q_DECLARE_TR_FUNCTIONS(OverlapSummary)
};

QString stream_name(StreamKind s) {
  return QString::fromUtf8(stream_kind_name(s).data());
}

}  // namespace

QString percent_text(double fraction) {
  return QString::number(100.0 * fraction, 'f', 1) + '%';
}

QString overlap_summary(const std::vector<ProfileSpan>& spans) {
  if (spans.empty()) return {};
  std::map<int, std::map<StreamKind, double>> busy;
  std::map<int, QStringList> pairs;
  for (const StreamOverlap& o : stream_overlaps(spans)) {
    busy[o.rank][o.a] = o.busy_a_us;
    busy[o.rank][o.b] = o.busy_b_us;
    if (o.overlap_us <= 0) continue;
    pairs[o.rank] << OverlapSummaryText::tr("  %1 with %2: %3 together (%4 of %1, %5 of %2)")
                         .arg(stream_name(o.a), stream_name(o.b), duration_text(o.overlap_us),
                              percent_text(o.busy_a_us > 0 ? o.overlap_us / o.busy_a_us : 0),
                              percent_text(o.busy_b_us > 0 ? o.overlap_us / o.busy_b_us : 0));
  }
  // stream_overlaps lists pairs only: a rank with one busy stream is missing.
  std::map<int, std::map<StreamKind, double>> single;
  for (const ProfileSpan& s : spans) single[s.rank][s.tag.stream] += s.end_us - s.start_us;

  std::map<int, GraphOverlap> comm, hidden;
  for (const GraphOverlap& g : comm_overlaps(spans)) comm[g.rank] = g;
  for (const GraphOverlap& g : hidden_communication(spans)) hidden[g.rank] = g;
  bool has_deep_comm = false;
  for (const ProfileSpan& s : spans) has_deep_comm |= s.tag.graph == GraphId::DEEP_COMM;

  QStringList lines;
  for (const auto& [rank, streams] : single) {
    lines << OverlapSummaryText::tr("rank %1").arg(rank);
    const auto& measured = busy.count(rank) ? busy[rank] : streams;
    QStringList b;
    for (const auto& [stream, us] : measured)
      b << QStringLiteral("%1 %2").arg(stream_name(stream), duration_text(us));
    lines << OverlapSummaryText::tr("  busy: %1").arg(b.join(QStringLiteral(" · ")));
    if (pairs.count(rank))
      lines << pairs[rank];
    else
      lines << OverlapSummaryText::tr("  no two streams ran at the same time");
    if (auto c = comm.find(rank); c != comm.end())
      lines << OverlapSummaryText::tr(
                   "  DEEP_COMM under FIRST_LAYER_BWD: %1 of DEEP_COMM's %2 hidden (%3)")
                   .arg(percent_text(c->second.fraction_of_a()), duration_text(c->second.busy_a_us),
                        duration_text(c->second.overlap_us));
    else if (has_deep_comm)
      lines << OverlapSummaryText::tr(
          "  DEEP_COMM under FIRST_LAYER_BWD: not measured (this rank ran only one "
          "of the two in the profiled steps)");
    // Every collective, tensor parallel's sums included: how much of it
    // kernels on other streams covered.
    if (auto h = hidden.find(rank); h != hidden.end())
      lines << OverlapSummaryText::tr("  all collectives: %1, of it %2 under kernels (%3)")
                   .arg(duration_text(h->second.busy_a_us), duration_text(h->second.overlap_us),
                        percent_text(h->second.fraction_of_a()));
  }
  if (!has_deep_comm)
    lines << OverlapSummaryText::tr(
        "No DEEP_COMM in this profile: the gradient exchange runs with two or more "
        "data-parallel ranks (e.g. devices cpu:2 without tensor parallel).");
  return lines.join('\n');
}

}  // namespace tr::gui
