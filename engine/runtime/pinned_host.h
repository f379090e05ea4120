// SPDX-License-Identifier: GPL-3.0-or-later
// PinnedHost: host memory page-locked by a backend for as long as it lives
// (Backend::pin_host and unpin_host), so copies to and from it are plain
// DMA that neither stages through a driver buffer nor blocks the host.
#pragma once

#include <cstdint>
#include <utility>

#include "runtime/backend.h"

namespace tr {

class PinnedHost {
 public:
  // `data` and `bytes`: whole pages of their own (Tensor::whole_pages).
  PinnedHost(Backend& backend, const void* data, uint64_t bytes) : backend_(&backend), data_(data) {
    backend.pin_host(data, bytes);
  }
  ~PinnedHost() {
    if (data_) backend_->unpin_host(data_);
  }
  PinnedHost(PinnedHost&& o) noexcept
      : backend_(o.backend_), data_(std::exchange(o.data_, nullptr)) {}
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  PinnedHost& operator=(PinnedHost&&) = delete;

 private:
  Backend* backend_;
  const void* data_;
};

}  // namespace tr
