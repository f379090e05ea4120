// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/step_checker.h"

#include <algorithm>
#include <stdexcept>

namespace tr::cpu {

namespace {

void merge_into(std::vector<ByteRange>& out, const std::vector<ByteRange>& in) {
  for (const ByteRange& r : in)
    if (r.bytes > 0) out.push_back(r);
}

std::vector<ByteRange> merged(std::vector<ByteRange> v) {
  std::sort(v.begin(), v.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : v) {
    if (!out.empty() && r.offset <= out.back().end()) {
      out.back().bytes = std::max(out.back().end(), r.end()) - out.back().offset;
      continue;
    }
    out.push_back(r);
  }
  return out;
}

bool intersect(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b, ByteRange* at) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].end() <= b[j].offset) {
      ++i;
    } else if (b[j].end() <= a[i].offset) {
      ++j;
    } else {
      const uint64_t lo = std::max(a[i].offset, b[j].offset);
      *at = {lo, std::min(a[i].end(), b[j].end()) - lo};
      return true;
    }
  }
  return false;
}

// The launch's footprint, or a copy's bytes in `derived` when its launch
// came without one.
const Footprint& footprint_of(const Launch& l, Footprint& derived) {
  if (!l.footprint.reads.empty() || !l.footprint.writes.empty()) return l.footprint;
  const ByteRange r{l.offset, l.rows ? l.rows * l.pitch : l.bytes};
  if (l.kind == LaunchKind::COPY_H2D) derived.write(r);
  if (l.kind == LaunchKind::COPY_D2H) derived.read(r);
  return derived;
}

std::string label_of(const Launch& l) {
  return (l.tag.label.empty() ? std::string("(unnamed launch)") : l.tag.label) + " on " +
         std::string(stream_kind_name(l.tag.stream));
}

std::string range_text(ByteRange r) {
  return "[" + std::to_string(r.offset) + ", " + std::to_string(r.end()) + ")";
}

}  // namespace

void StepChecker::record(StreamKind stream, int event) {
  if (event < 0) return;
  if (static_cast<size_t>(event) >= events_.size()) events_.resize(static_cast<size_t>(event) + 1);
  events_[static_cast<size_t>(event)] = streams_[stream_index(stream)];
}

void StepChecker::wait(StreamKind stream, int event) {
  if (event < 0 || static_cast<size_t>(event) >= events_.size()) return;
  Clock& c = streams_[stream_index(stream)];
  const Clock& e = events_[static_cast<size_t>(event)];
  for (size_t s = 0; s < c.size(); ++s) c[s] = std::max(c[s], e[s]);
}

void StepChecker::host_waits_for(StreamKind stream) {
  host_sees(streams_[stream_index(stream)]);
}

void StepChecker::host_waits_for_event(int event) {
  if (event < 0 || static_cast<size_t>(event) >= events_.size()) return;
  host_sees(events_[static_cast<size_t>(event)]);
}

void StepChecker::host_sees(const Clock& c) {
  for (size_t s = 0; s < host_.size(); ++s) host_[s] = std::max(host_[s], c[s]);
  // What the host has seen finish is ordered before all it issues later.
  std::erase_if(window_, [&](const Unit& u) {
    return u.clock[stream_index(u.stream)] <= host_[stream_index(u.stream)];
  });
}

void StepChecker::issue(StreamKind stream, const std::vector<const Launch*>& launches,
                        std::string label) {
  Clock& c = streams_[stream_index(stream)];
  for (size_t s = 0; s < c.size(); ++s) c[s] = std::max(c[s], host_[s]);
  ++c[stream_index(stream)];
  Unit u{stream, c, std::move(label), {}, {}};
  // Each launch's footprint once: for the unit's bytes and for following it.
  std::vector<Footprint> derived(launches.size());
  std::vector<const Footprint*> prints(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    prints[i] = &footprint_of(*launches[i], derived[i]);
    merge_into(u.reads, prints[i]->reads);
    merge_into(u.writes, prints[i]->writes);
  }
  u.reads = merged(std::move(u.reads));
  u.writes = merged(std::move(u.writes));
  for (const Unit& w : window_) {
    // Ordered: this unit's clock has seen w's own tick.
    if (w.clock[stream_index(w.stream)] <= u.clock[stream_index(w.stream)]) continue;
    ByteRange at;
    if (intersect(w.writes, u.reads, &at) || intersect(w.writes, u.writes, &at) ||
        intersect(w.reads, u.writes, &at))
      throw std::logic_error("step schedule on rank " + std::to_string(rank_) + ": " + u.label +
                             " on " + std::string(stream_kind_name(u.stream)) + " and " + w.label +
                             " on " + std::string(stream_kind_name(w.stream)) +
                             " may run at the same time and both touch bytes " + range_text(at) +
                             ", one of them writing (no event orders them)");
  }
  for (size_t i = 0; i < launches.size(); ++i) follow(*launches[i], *prints[i]);
  window_.push_back(std::move(u));
}

void StepChecker::follow(const Launch& l, const Footprint& f) {
  for (size_t i = 0; i < f.reads.size(); ++i) {
    const DTensor* t = i < f.read_tensors.size() ? f.read_tensors[i] : nullptr;
    if (t && is_step_local(t->region)) check_read(f.reads[i], *t, l);
  }
  const std::string writer = label_of(l);
  for (size_t i = 0; i < f.writes.size(); ++i) {
    const DTensor* t = i < f.write_tensors.size() ? f.write_tensors[i] : nullptr;
    own(f.writes[i], t && is_step_local(t->region) ? t : nullptr, writer);
  }
}

void StepChecker::own(ByteRange r, const DTensor* t, const std::string& writer) {
  if (r.bytes == 0) return;
  // Bytes outside any step-local tensor need following only where they
  // overwrite one (a span or a copy into the pool would be a plan error).
  auto it = owners_.upper_bound(r.offset);
  if (it != owners_.begin()) --it;
  bool overlaps = false;
  std::vector<std::pair<uint64_t, Owner>> keep;
  while (it != owners_.end() && it->first < r.end()) {
    if (it->second.end <= r.offset) {
      ++it;
      continue;
    }
    overlaps = true;
    if (it->first < r.offset)
      keep.emplace_back(it->first, Owner{r.offset, it->second.tensor, it->second.writer});
    if (it->second.end > r.end())
      keep.emplace_back(r.end(), Owner{it->second.end, it->second.tensor, it->second.writer});
    it = owners_.erase(it);
  }
  for (auto& [at, o] : keep) owners_.emplace(at, std::move(o));
  if (t || overlaps) owners_[r.offset] = Owner{r.end(), t, writer};
}

void StepChecker::check_read(ByteRange r, const DTensor& t, const Launch& reader) const {
  auto it = owners_.upper_bound(r.offset);
  if (it != owners_.begin()) --it;
  for (; it != owners_.end() && it->first < r.end(); ++it) {
    const Owner& o = it->second;
    if (o.end <= r.offset || o.tensor == &t) continue;
    const uint64_t lo = std::max(it->first, r.offset);
    const ByteRange at{lo, std::min(o.end, r.end()) - lo};
    const std::string held =
        o.tensor ? "'" + o.tensor->name + "' (" + std::string(region_name(o.tensor->region)) + ")"
                 : std::string("something outside the step-local tensors");
    throw std::logic_error("step schedule on rank " + std::to_string(rank_) + ": " +
                           label_of(reader) + " reads '" + t.name + "' (" +
                           std::string(region_name(t.region)) + "), but its bytes " +
                           range_text(at) + " were last written as " + held + " by " + o.writer +
                           ": the plan gives both the same bytes while both are live");
  }
}

}  // namespace tr::cpu
