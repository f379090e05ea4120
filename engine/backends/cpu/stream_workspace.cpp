// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/stream_workspace.h"

#include <new>

#include "backends/cpu/cpu_kernels.h"

namespace tr::cpu {

namespace {

// A cache line, and AVX-512's vector width.
constexpr std::align_val_t kAlignment{64};

void release(StreamWorkspace& w) {
  if (w.data) ::operator delete(w.data, kAlignment);
  w.data = nullptr;
  w.bytes = 0;
}

}  // namespace

StreamWorkspaces::~StreamWorkspaces() {
  for (StreamWorkspace& w : spaces_) release(w);
}

uint64_t StreamWorkspaces::need(const Launch& launch) {
  if (launch.kind != LaunchKind::KERNEL || !launch.args) return 0;
  return kernel_workspace_bytes(*launch.args);
}

void StreamWorkspaces::bind(StreamKind stream, Launch& launch, KernelArgs& copy) const {
  copy.workspace = &at(stream);
  launch.args = &copy;
}

void StreamWorkspaces::reserve(StreamKind stream, uint64_t bytes) {
  StreamWorkspace& w = spaces_[static_cast<size_t>(stream)];
  if (bytes <= w.bytes) return;
  release(w);
  // Whole pages: the next larger need often differs by a few bytes.
  const uint64_t rounded = (bytes + 4095) & ~uint64_t{4095};
  w.data = ::operator new(rounded, kAlignment);
  w.bytes = rounded;
}

}  // namespace tr::cpu
