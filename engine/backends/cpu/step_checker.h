// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's check of the step schedule across graphs, as the host
// issues work, beyond what end_capture proves inside one graph:
//  - two units of work (graph launches, direct launches) that no stream order
//    or event orders must not touch the same bytes where one of them writes;
//  - every read of a step-local tensor must find its bytes last written as
//    that tensor: a packed plan that gave two live tensors the same bytes is
//    caught at the read, with both tensors and both launches named.
// Order between units is tracked with one vector clock per stream, event and
// the host; nothing here runs on the workers, so the verdict does not depend
// on timing.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/launch.h"

namespace tr::cpu {

class StepChecker {
 public:
  explicit StepChecker(int rank) : rank_(rank) {}

  void record(StreamKind stream, int event);
  void wait(StreamKind stream, int event);
  void host_waits_for(StreamKind stream);  // synchronize(rank, stream)
  void host_waits_for_event(int event);    // synchronize_event(rank, event)
  // A unit issued on `stream`: its launches in an order that honours their
  // dependencies (a captured graph's node order), and the bytes they touch.
  // Throws std::logic_error on a race or a read of bytes another tensor owns.
  void issue(StreamKind stream, const std::vector<const Launch*>& launches, std::string label);

 private:
  using Clock = std::array<uint64_t, kNumStreams>;
  struct Unit {
    StreamKind stream;
    Clock clock;
    std::string label;
    std::vector<ByteRange> reads, writes;  // sorted, merged
  };
  struct Owner {
    uint64_t end = 0;
    const DTensor* tensor = nullptr;  // nullptr: written by a span or a copy
    std::string writer;
  };

  void host_sees(const Clock& c);
  void follow(const Launch& l, const Footprint& f);
  void own(ByteRange r, const DTensor* t, const std::string& writer);
  void check_read(ByteRange r, const DTensor& t, const Launch& reader) const;

  int rank_;
  std::array<Clock, kNumStreams> streams_{};
  std::vector<Clock> events_;
  Clock host_{};
  std::vector<Unit> window_;          // units the host has not seen finish
  std::map<uint64_t, Owner> owners_;  // disjoint [offset, end) -> what they hold
};

}  // namespace tr::cpu
