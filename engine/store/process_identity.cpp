// SPDX-License-Identifier: GPL-3.0-or-later
#include "store/process_identity.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace tr::store {

namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

struct ProcStat {
  bool found = false;
  char state = '?';
  std::string start_ticks;
};

// /proc/PID/stat: "pid (comm) state ppid ... starttime(22) ..."; comm may
// hold spaces and parentheses, so fields are counted after the last ')'.
ProcStat proc_stat(int64_t pid) {
  ProcStat out;
  const std::string line = read_line("/proc/" + std::to_string(pid) + "/stat");
  const auto close = line.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; rest >> field; ++i) {
    if (i == 3) out.state = field.empty() ? '?' : field[0];
    if (i == 22) {
      out.start_ticks = field;
      out.found = true;
      break;
    }
  }
  return out;
}

std::string boot_id() {
  return read_line("/proc/sys/kernel/random/boot_id");
}

}  // namespace

ProcessIdentity current_process() {
  ProcessIdentity id;
  id.host = host_name();
  id.pid = static_cast<int64_t>(getpid());
  const ProcStat st = proc_stat(id.pid);
  const std::string boot = boot_id();
  if (st.found && !boot.empty()) id.start = boot + "/" + st.start_ticks;
  return id;
}

WriterState writer_state(const ProcessIdentity& writer) {
  if (writer.host != host_name()) return WriterState::Unknown;
  if (writer.start.empty()) {
    // No start stamp: all that is left is whether the pid exists.
    if (kill(static_cast<pid_t>(writer.pid), 0) == 0 || errno == EPERM) return WriterState::Alive;
    return WriterState::Dead;
  }
  const auto slash = writer.start.rfind('/');
  if (slash == std::string::npos) return WriterState::Unknown;
  if (writer.start.substr(0, slash) != boot_id()) return WriterState::Dead;  // rebooted since
  const ProcStat st = proc_stat(writer.pid);
  if (!st.found || st.start_ticks != writer.start.substr(slash + 1)) return WriterState::Dead;
  // A killed child that nobody has reaped yet is still in /proc, as a zombie.
  if (st.state == 'Z' || st.state == 'X') return WriterState::Dead;
  return WriterState::Alive;
}

}  // namespace tr::store
