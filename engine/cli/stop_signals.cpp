// SPDX-License-Identifier: GPL-3.0-or-later
#include "stop_signals.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace tr::cli {

namespace {

// A signal handler can reach only process-wide state, and a process has
// one disposition per signal anyway; StopSignals is the only writer.
// Lock-free atomics are the one kind of shared state a handler may touch.
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
std::atomic<int64_t> g_first_ns{0};  // CLOCK_MONOTONIC time of the first signal; 0: none yet
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free &&
              std::atomic<int64_t>::is_always_lock_free);

// Tools deliver one request twice: `timeout` signals the process and then
// its process group, which holds the process too. A repeat this soon after
// the first is taken as the same request; a person's second Ctrl-C comes
// later.
constexpr int64_t kSameRequestNs = 500'000'000;

constexpr int kSignals[] = {SIGINT, SIGTERM};
struct sigaction g_previous[2];
bool g_caught[2] = {false, false};  // whether we replaced that signal's disposition
bool g_installed = false;

int64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  // At least 1: 0 stands for no signal yet.
  return std::max<int64_t>(1, static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec);
}

// Only async-signal-safe work: atomics, clock_gettime, sigaction and
// raise. The training loop reads the flag before every step. Another
// thread may take a signal while this one is in the handler, so the first
// signal's time is claimed in one step.
extern "C" void on_stop_signal(int signal) {
  const int64_t now = monotonic_ns();
  int64_t first = 0;
  if (g_first_ns.compare_exchange_strong(first, now)) {
    g_signal.store(signal);
    g_stop.store(true);
    return;
  }
  if (now - first < kSameRequestNs) return;
  // A second request: the default action ends the process at once, for a
  // user who does not want to wait for the step. The signal is blocked
  // while this handler runs, so it is delivered as soon as the handler returns.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(signal, &dfl, nullptr);
  raise(signal);
}

}  // namespace

StopSignals::StopSignals() {
  if (g_installed) throw std::logic_error("StopSignals: one at a time");
  g_installed = true;
  g_stop.store(false);
  g_signal.store(0);
  g_first_ns.store(0);
  for (int i = 0; i < 2; ++i) {
    sigaction(kSignals[i], nullptr, &g_previous[i]);
    g_caught[i] = g_previous[i].sa_handler != SIG_IGN;
  }
  for (int i = 0; i < 2; ++i) {
    if (!g_caught[i]) continue;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    // Both are blocked in the thread that runs the handler while it runs.
    for (const int s : kSignals) sigaddset(&sa.sa_mask, s);
    // Interrupted reads and waits go on: the step loop polls the flag.
    sa.sa_flags = SA_RESTART;
    sigaction(kSignals[i], &sa, nullptr);
  }
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 2; ++i)
    if (g_caught[i]) sigaction(kSignals[i], &g_previous[i], nullptr);
  g_installed = false;
}

const std::atomic<bool>* StopSignals::flag() const noexcept {
  return &g_stop;
}

int StopSignals::received() const noexcept {
  return g_signal.load();
}

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

int signal_exit_code(int signal) noexcept {
  return 128 + signal;
}

}  // namespace tr::cli
