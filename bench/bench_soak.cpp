// SPDX-License-Identifier: GPL-3.0-or-later
// Soak: for a given time (30 minutes unless told), renaissance-cli trains
// runs into one store and is stopped (SIGINT), killed (SIGKILL) or left to
// finish at random moments; every stopped or killed run is taken up again
// with --resume-run until it finishes, while the workbench's Runs view
// (offscreen) polls the same store and the soak reopens it and checks its
// integrity between processes. Every finished run must hold the very step
// curve of one uninterrupted run of the same project and seed: a step
// missing, repeated or different counts as a row lost (goal: 0). Prints
// runs, processes, steps, stops, kills survived, rows lost, integrity
// checks passed and what the Runs view's polls brought.
//   bench_soak [--minutes M] [--seed S] [--dir DIR] [--epochs E] [--steps-per-epoch K]
#include <QApplication>
#include <QTemporaryDir>
#include <QTimer>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <renaissance/run_store.h>
#include "runs/runs_table_model.h"
#include "runs/runs_view.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using tr::store::RunStatus;
using tr::store::RunStore;

struct Options {
  double minutes = 30;
  unsigned seed = 1;
  std::string dir;  // empty: a temporary folder
  int epochs = 6;
  int steps_per_epoch = 1000;
};

struct Figures {
  int64_t runs = 0, processes = 0, steps = 0, stops = 0, kills = 0, resumes = 0;
  int64_t killed_before_a_checkpoint = 0;  // nothing to resume: not a loss
  int64_t rows_lost = 0, curve_mismatches = 0;
  int64_t integrity_checks = 0, integrity_passed = 0, reopens = 0;
  std::atomic<int64_t> view_polls{0};
  std::atomic<int64_t> view_rows{0};
};

// The child's exit: its status and, when killed, the signal.
struct Exit {
  bool signalled = false;
  int code = 0;  // exit status, or the signal
};

class Cli {
 public:
  Cli(std::string cli, std::string log) : cli_(std::move(cli)), log_(std::move(log)) {}

  pid_t start(const std::vector<std::string>& args) {
    std::vector<std::string> all{cli_};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    // A soak started in the background of a shell has SIGINT ignored, and
    // the child would inherit that: it gets the default back, and no mask.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t set;
    sigemptyset(&set);
    posix_spawnattr_setsigmask(&attr, &set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    posix_spawnattr_setsigdefault(&attr, &set);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = 0;
    if (posix_spawn(&pid, cli_.c_str(), &fa, &attr, argv.data(), environ) != 0) pid = -1;
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
  }

  // Waits up to `limit` seconds; true with `e` set when it ended.
  static bool wait(pid_t pid, double limit, Exit& e) {
    const auto until = Clock::now() + std::chrono::duration<double>(limit);
    for (;;) {
      int status = 0;
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        e.signalled = WIFSIGNALED(status);
        e.code = e.signalled ? WTERMSIG(status) : WEXITSTATUS(status);
        return true;
      }
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  std::string cli_, log_;
};

bool integrity_ok(const std::string& path) {
  sqlite3* db = nullptr;
  bool ok = false;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
      ok = std::strcmp(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "ok") == 0;
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return ok;
}

// The last "recording run N" the CLI printed into the log.
int64_t recorded_run(const std::string& log) {
  std::ifstream f(log);
  std::string line;
  int64_t id = 0;
  while (std::getline(f, line))
    if (line.rfind("recording run ", 0) == 0) id = std::stoll(line.substr(14));
  return id;
}

class Soak {
 public:
  Soak(const Options& o, std::string cli, std::string dir)
      : o_(o),
        dir_(std::move(dir)),
        store_(dir_ + "/runs.sqlite"),
        log_(dir_ + "/cli.log"),
        cli_(std::move(cli), log_),
        rng_(o.seed) {}

  Figures& figures() { return f_; }
  const std::string& store() const { return store_; }

  // Writes the project, trains the reference run; false when it could not.
  bool prepare(const std::string& source_project) {
    std::ifstream in(source_project);
    nlohmann::json p = nlohmann::json::parse(in, nullptr, false);
    if (p.is_discarded()) return false;
    p["dataset"]["train_size"] = 64 * o_.steps_per_epoch;
    p["training"]["epochs"] = o_.epochs;
    project_ = dir_ + "/soak.json";
    std::ofstream(project_) << p.dump(2);
    Exit e;
    const pid_t pid = cli_.start({"train", project_, "--store", store_, "--no-validation"});
    if (pid <= 0 || !Cli::wait(pid, 600, e) || e.signalled || e.code != 0) return false;
    ++f_.processes;
    const RunStore s(store_);
    reference_ = s.step_curve(recorded_run(log_));
    return static_cast<int64_t>(reference_.size()) ==
           static_cast<int64_t>(o_.epochs) * o_.steps_per_epoch;
  }

  void run(const std::atomic<bool>& quit, double seconds) {
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    auto next_report = Clock::now() + std::chrono::minutes(1);
    while (Clock::now() < end && !quit) {
      lineage();
      if (Clock::now() >= next_report) {
        next_report += std::chrono::minutes(1);
        report(stderr);
      }
    }
  }

  void report(std::FILE* out) const {
    std::fprintf(
        out,
        "runs %lld  processes %lld  steps %lld  stops %lld  kills survived %lld  "
        "resumes %lld  killed before a checkpoint %lld  rows lost %lld  curve "
        "mismatches %lld  integrity checks %lld/%lld passed  store reopened %lld  "
        "runs view updates %lld (rows %lld)\n",
        static_cast<long long>(f_.runs), static_cast<long long>(f_.processes),
        static_cast<long long>(f_.steps), static_cast<long long>(f_.stops),
        static_cast<long long>(f_.kills), static_cast<long long>(f_.resumes),
        static_cast<long long>(f_.killed_before_a_checkpoint), static_cast<long long>(f_.rows_lost),
        static_cast<long long>(f_.curve_mismatches), static_cast<long long>(f_.integrity_passed),
        static_cast<long long>(f_.integrity_checks), static_cast<long long>(f_.reopens),
        static_cast<long long>(f_.view_polls.load()), static_cast<long long>(f_.view_rows.load()));
    std::fflush(out);
  }

 private:
  // One run, from its start through every stop, kill and resumption to its end.
  void lineage() {
    const std::string ckpt = dir_ + "/ckpt" + std::to_string(f_.runs);
    std::vector<std::string> args{"train", project_,         "--store", store_, "--checkpoint-dir",
                                  ckpt,    "--no-validation"};
    int64_t id = 0;
    for (;;) {
      const pid_t pid = cli_.start(args);
      if (pid <= 0) return;
      ++f_.processes;
      std::uniform_real_distribution<double> when(0.3, 2.0);
      const int action = std::uniform_int_distribution<int>(0, 9)(rng_);
      Exit e;
      if (action >= 4) {  // 60%: stopped (3 in 10) or killed (3 in 10) at a random moment
        if (!Cli::wait(pid, when(rng_), e)) {
          ::kill(pid, action >= 7 ? SIGKILL : SIGINT);
          Cli::wait(pid, 600, e);
        }
      } else {
        Cli::wait(pid, 600, e);
      }
      if (id == 0) id = recorded_run(log_);
      check_store();
      if (id == 0) {  // killed before it was recorded: nothing to follow
        ++f_.killed_before_a_checkpoint;
        return;
      }
      const RunStore s(store_);
      ++f_.reopens;
      const RunStatus status = s.run(id).summary.status;
      if (status == RunStatus::Finished) break;
      if (e.signalled && e.code == SIGKILL)
        ++f_.kills;
      else
        ++f_.stops;
      if (s.checkpoints(id).empty()) {
        ++f_.killed_before_a_checkpoint;
        ++f_.runs;
        return;
      }
      ++f_.resumes;
      args = {"train", "--resume-run", std::to_string(id), "--store", store_};
    }
    ++f_.runs;
    const RunStore s(store_);
    const auto curve = s.step_curve(id);
    f_.steps += static_cast<int64_t>(curve.size());
    f_.rows_lost += std::max<int64_t>(
        0, static_cast<int64_t>(reference_.size()) - static_cast<int64_t>(curve.size()));
    for (size_t i = 0; i < std::min(curve.size(), reference_.size()); ++i)
      if (curve[i].step != reference_[i].step || curve[i].loss != reference_[i].loss)
        ++f_.curve_mismatches;
  }

  void check_store() {
    ++f_.integrity_checks;
    if (integrity_ok(store_)) ++f_.integrity_passed;
  }

  Options o_;
  std::string dir_, store_, log_, project_;
  Cli cli_;
  std::mt19937 rng_;
  std::vector<tr::store::StepRecord> reference_;
  Figures f_;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--minutes" && more)
      o.minutes = std::stod(argv[++i]);
    else if (a == "--seed" && more)
      o.seed = static_cast<unsigned>(std::stoul(argv[++i]));
    else if (a == "--dir" && more)
      o.dir = argv[++i];
    else if (a == "--epochs" && more)
      o.epochs = std::stoi(argv[++i]);
    else if (a == "--steps-per-epoch" && more)
      o.steps_per_epoch = std::stoi(argv[++i]);
    else
      return false;
  }
  return o.minutes > 0 && o.epochs > 0 && o.steps_per_epoch > 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: bench_soak [--minutes M] [--seed S] [--dir DIR] [--epochs E] "
                 "[--steps-per-epoch K]\n");
    return 2;
  }
  QApplication app(argc, argv);
  QTemporaryDir temporary;
  const std::string dir = o.dir.empty() ? temporary.path().toStdString() : o.dir;
  Soak soak(o, TR_CLI, dir);
  if (!soak.prepare(TR_TEST_DATA "/projects/tiny-synthetic.json")) {
    std::fprintf(stderr, "bench_soak: the reference run failed; see %s/cli.log\n", dir.c_str());
    return 1;
  }
  // The workbench's Runs view on the same store, polling as it does when shown.
  tr::gui::RunsView view;
  view.setStorePath(QString::fromStdString(soak.store()));
  view.resize(1200, 800);
  view.show();
  Figures& f = soak.figures();
  // What its polls brought: rows added or changed.
  QObject::connect(view.runsModel(), &QAbstractItemModel::rowsInserted, [&] { ++f.view_polls; });
  QObject::connect(view.runsModel(), &QAbstractItemModel::dataChanged, [&] { ++f.view_polls; });
  QTimer rows;
  QObject::connect(&rows, &QTimer::timeout, [&] { f.view_rows = view.runsModel()->rowCount(); });
  rows.start(1000);

  std::atomic<bool> quit{false};
  std::thread worker([&] {
    soak.run(quit, o.minutes * 60);
    QMetaObject::invokeMethod(
        &app, [&] { app.quit(); }, Qt::QueuedConnection);
  });
  const auto t0 = Clock::now();
  app.exec();
  quit = true;
  worker.join();
  view.refresh();
  f.view_rows = view.runsModel()->rowCount();
  std::printf("soak of %.1f minutes (seed %u) in %s:\n",
              std::chrono::duration<double>(Clock::now() - t0).count() / 60, o.seed, dir.c_str());
  soak.report(stdout);
  const bool clean =
      f.rows_lost == 0 && f.curve_mismatches == 0 && f.integrity_passed == f.integrity_checks;
  std::printf("%s\n", clean ? "no row lost, every curve as uninterrupted, every check passed"
                            : "FAILED: see the figures above");
  return clean ? 0 : 1;
}
