// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's per-stream workspaces (ENGINE.md §4: each stream has its
// own, sized to the largest need). A kernel launch that needs one gets its
// own copy of its KernelArgs pointing at its stream's workspace; capture
// sizes the workspaces, so a step never allocates.
#pragma once

#include <array>
#include <cstdint>

#include <renaissance/stream_kind.h>
#include "runtime/launch.h"

namespace tr::cpu {

class StreamWorkspaces {
 public:
  StreamWorkspaces() = default;
  StreamWorkspaces(const StreamWorkspaces&) = delete;
  StreamWorkspaces& operator=(const StreamWorkspaces&) = delete;
  ~StreamWorkspaces();

  // Workspace bytes the kernel of `launch` needs; 0 for none (and for
  // launches that are not kernels).
  static uint64_t need(const Launch& launch);
  // Points `launch` at `copy`, a copy of its args that must outlive it,
  // bound to `stream`'s workspace.
  void bind(StreamKind stream, Launch& launch, KernelArgs& copy) const;
  // Grows `stream`'s workspace to at least `bytes` (never shrinks). Nothing
  // may be running on that workspace meanwhile.
  void reserve(StreamKind stream, uint64_t bytes);
  uint64_t bytes(StreamKind stream) const { return at(stream).bytes; }

 private:
  const StreamWorkspace& at(StreamKind s) const { return spaces_[static_cast<size_t>(s)]; }
  std::array<StreamWorkspace, kNumStreams> spaces_;
};

}  // namespace tr::cpu
