// SPDX-License-Identifier: GPL-3.0-or-later
// A Backend that hands every call to a real one, for tests that watch or hold
// back particular calls (override those, call the base for the rest).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/backend.h"

class ForwardingBackend : public tr::Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<tr::Backend> inner) : inner_(std::move(inner)) {}

  std::string name() const override { return inner_->name(); }
  int world_size() const override { return inner_->world_size(); }
  void allocate_arenas(uint64_t bytes) override { inner_->allocate_arenas(bytes); }
  uint8_t* arena(int r) override { return inner_->arena(r); }
  uint64_t arena_bytes() const override { return inner_->arena_bytes(); }
  tr::EventId create_event(int r) override { return inner_->create_event(r); }
  void record(int r, tr::StreamKind s, tr::EventId e) override { inner_->record(r, s, e); }
  void wait(int r, tr::StreamKind s, tr::EventId e) override { inner_->wait(r, s, e); }
  void synchronize(int r, tr::StreamKind s) override { inner_->synchronize(r, s); }
  void synchronize(int r) override { inner_->synchronize(r); }
  void synchronize_event(int r, tr::EventId e) override { inner_->synchronize_event(r, e); }
  void enqueue(int r, tr::StreamKind s, tr::Launch l) override {
    inner_->enqueue(r, s, std::move(l));
  }
  void prepare_launch(int r, tr::StreamKind s, const tr::Launch& l) override {
    inner_->prepare_launch(r, s, l);
  }
  bool warm_up_before_capture() const override { return inner_->warm_up_before_capture(); }
  void begin_capture(int r, tr::StreamKind s) override { inner_->begin_capture(r, s); }
  tr::GraphHandle end_capture(int r, tr::StreamKind s) override {
    return inner_->end_capture(r, s);
  }
  void abort_capture(int r) noexcept override { inner_->abort_capture(r); }
  void launch_graph(int r, tr::StreamKind s, tr::GraphHandle h) override {
    inner_->launch_graph(r, s, h);
  }
  void all_reduce(int r, tr::StreamKind s, tr::ByteRange range, tr::ReduceOp op) override {
    inner_->all_reduce(r, s, range, op);
  }
  void broadcast(int r, tr::StreamKind s, tr::ByteRange range, int root) override {
    inner_->broadcast(r, s, range, root);
  }
  void group_start(int r) override { inner_->group_start(r); }
  void group_end(int r) override { inner_->group_end(r); }
  void abort_collectives(const std::string& why) override { inner_->abort_collectives(why); }
  void set_profiling(bool on) override { inner_->set_profiling(on); }
  std::vector<tr::ProfileSpan> take_profile() override { return inner_->take_profile(); }

 private:
  std::unique_ptr<tr::Backend> inner_;
};
