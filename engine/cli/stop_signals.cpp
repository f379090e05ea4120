// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/stop_signals.h"

#include <signal.h>

#include <stdexcept>

namespace tr::cli {

namespace {

// A signal handler can reach only process-wide state, and a process has
// one disposition per signal anyway; StopSignals is the only writer.
// Lock-free atomics are the one kind of shared state a handler may touch.
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

constexpr int kSignals[] = {SIGINT, SIGTERM};
struct sigaction g_previous[2];
bool g_caught[2] = {false, false};  // whether we replaced that signal's disposition
bool g_installed = false;

void set_default(int signal) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(signal, &dfl, nullptr);
}

// Only async-signal-safe work: two atomic stores and sigaction. The
// training loop reads the flag before every step.
extern "C" void on_stop_signal(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
  g_stop.store(true);
  // The next SIGINT or SIGTERM takes the default action: it ends the
  // process at once, for a user who does not want to wait for the step.
  for (int i = 0; i < 2; ++i)
    if (g_caught[i]) set_default(kSignals[i]);
}

}  // namespace

StopSignals::StopSignals() {
  if (g_installed) throw std::logic_error("StopSignals: one at a time");
  g_installed = true;
  g_stop.store(false);
  g_signal.store(0);
  for (int i = 0; i < 2; ++i) {
    sigaction(kSignals[i], nullptr, &g_previous[i]);
    g_caught[i] = g_previous[i].sa_handler != SIG_IGN;
  }
  for (int i = 0; i < 2; ++i) {
    if (!g_caught[i]) continue;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    // Both are blocked while the handler runs, so it sees one signal at a time.
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
