// SPDX-License-Identifier: GPL-3.0-or-later
// Run-store benchmark: fills a store with many long runs, then times the
// `runs list` query, loading one run's full step curve, and what recording
// costs the training thread per step (against a lenet step).
//   bench_store [--runs N] [--steps S] [--store PATH] [--keep]
//               [--cli renaissance-cli] [--lenet-ms MS] [--record-steps N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <renaissance/project_io.h>
#include <renaissance/run_recorder.h>
#include <renaissance/run_store.h>

namespace {

using Clock = std::chrono::steady_clock;
using tr::store::RunStore;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

tr::store::StepRecord step_of(int64_t i, int64_t per_epoch) {
  tr::store::StepRecord s;
  s.step = i;
  s.epoch = i / per_epoch;
  s.loss = 2.3 * std::exp(-static_cast<double>(i) / 3000.0) + 0.2;
  s.top1 = 1.0 - s.loss / 2.5;
  s.lr = 0.05 * 0.5 * (1 + std::cos(3.14159 * static_cast<double>(i) / 10000.0));
  s.images_per_s = 30000 + static_cast<double>(i % 97);
  return s;
}

// Wall time of a shell command with its output thrown away.
double command_ms(const std::string& command) {
  const auto t0 = Clock::now();
  const int rc = std::system((command + " > /dev/null").c_str());
  if (rc != 0) throw std::runtime_error("failed (" + std::to_string(rc) + "): " + command);
  return ms_since(t0);
}

// The median lenet step from `renaissance-cli bench`.
double lenet_step_ms(const std::string& cli) {
  const std::string cmd =
      cli + " bench " + TR_PROJECTS_DIR + "/lenet-fashion.json --steps 30 --json";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  if (pclose(p) != 0) throw std::runtime_error("failed: " + cmd);
  return nlohmann::json::parse(out).at("median_ms_per_step").get<double>();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t runs = 1000, steps = 10000, record_steps = 2000;
  std::string path, cli;
  double lenet_ms = 0;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--runs" && more)
      runs = std::max(1LL, std::atoll(argv[++i]));
    else if (a == "--steps" && more)
      steps = std::max(1LL, std::atoll(argv[++i]));
    else if (a == "--record-steps" && more)
      record_steps = std::max(1LL, std::atoll(argv[++i]));
    else if (a == "--store" && more)
      path = argv[++i];
    else if (a == "--cli" && more)
      cli = argv[++i];
    else if (a == "--lenet-ms" && more)
      lenet_ms = std::atof(argv[++i]);
    else if (a == "--keep")
      keep = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_store [--runs N] [--steps S] [--store PATH] [--keep]\n"
                   "         [--cli renaissance-cli] [--lenet-ms MS] [--record-steps N]\n");
      return 2;
    }
  }
  namespace fs = std::filesystem;
  const fs::path scratch =
      fs::temp_directory_path() / ("bench_store_" + std::to_string(::getpid()));
  if (path.empty()) {
    fs::create_directories(scratch);
    path = (scratch / "runs.sqlite").string();
  }
  if (fs::exists(path)) {
    std::fprintf(stderr, "bench_store: '%s' exists; give a new path\n", path.c_str());
    return 2;
  }
  try {
    if (lenet_ms <= 0 && !cli.empty()) lenet_ms = lenet_step_ms(cli);

    // --- fill: one transaction per run, prepared statements reused within it ---
    tr::store::RunStart start;
    const tr::Project lenet =
        tr::load_project(std::string(TR_PROJECTS_DIR) + "/lenet-fashion.json");
    start.name = lenet.name;
    start.project_json = tr::project_to_json(lenet);
    start.hyper_json = nlohmann::json::parse(start.project_json).at("training").dump();
    start.devices = "cpu:1";
    start.precision = "fp32";
    const int64_t per_epoch = 469;  // lenet: 60,000 images / 128
    std::vector<tr::store::StepRecord> curve;
    for (int64_t i = 0; i < steps; ++i) curve.push_back(step_of(i, per_epoch));
    std::vector<tr::store::EpochRecord> epochs;
    for (int64_t e = 0; e * per_epoch < steps; ++e) {
      tr::store::EpochRecord r;
      r.epoch = e;
      r.train_loss = curve[static_cast<size_t>(e * per_epoch)].loss;
      r.val_loss = r.train_loss * 1.1;
      r.val_top1 = 0.8 + 0.001 * static_cast<double>(e);
      r.val_top5 = 0.99;
      r.confusion.assign(100, 10);
      epochs.push_back(std::move(r));
    }
    const auto t_fill = Clock::now();
    {
      RunStore s(path);
      for (int64_t r = 0; r < runs; ++r) {
        start.seed = static_cast<uint64_t>(r);
        const int64_t id = s.begin_run(start);
        s.append(id, curve, epochs);
        s.end_run(id, tr::store::RunStatus::Finished);
        if (r % 10 == 0) s.add_tag(id, "baseline");
        if (r % 50 == 0) s.add_note(id, "a note on run " + std::to_string(id));
      }
    }
    const double fill_s = ms_since(t_fill) / 1000;
    const auto size_mb = static_cast<double>(fs::file_size(path)) / 1e6;
    std::printf("store: %lld runs x %lld steps in %.1f s (%.0f rows/s), %.0f MB, %s\n",
                static_cast<long long>(runs), static_cast<long long>(steps), fill_s,
                static_cast<double>(runs * steps) / fill_s, size_mb, path.c_str());

    // --- runs list: the query `renaissance-cli runs list` makes ---
    {
      const auto t_open = Clock::now();
      const RunStore s(path);
      const double open_ms = ms_since(t_open);
      auto t0 = Clock::now();
      const size_t listed = s.list_runs().size();
      const double first_ms = ms_since(t0);
      std::vector<double> all, filtered;
      for (int k = 0; k < 20; ++k) {
        t0 = Clock::now();
        (void)s.list_runs();
        all.push_back(ms_since(t0));
        t0 = Clock::now();
        (void)s.list_runs("baseline");
        filtered.push_back(ms_since(t0));
      }
      std::printf(
          "runs list (%zu runs): open %.2f ms, first %.2f ms, median %.2f ms; "
          "--filter baseline median %.2f ms (goal < 100 ms)\n",
          listed, open_ms, first_ms, median(all), median(filtered));
      if (!cli.empty()) {
        std::vector<double> proc;
        for (int k = 0; k < 5; ++k)
          proc.push_back(command_ms(cli + " runs list --store '" + path + "'"));
        std::printf(
            "renaissance-cli runs list, whole process (table of %zu lines): median %.1f ms\n",
            listed, median(proc));
      }

      // --- one run's full step curve ---
      const int64_t id = std::max<int64_t>(1, runs / 2);
      t0 = Clock::now();
      const size_t points = s.step_curve(id).size();
      const double curve_first = ms_since(t0);
      std::vector<double> loads;
      for (int k = 0; k < 20; ++k) {
        t0 = Clock::now();
        (void)s.step_curve(id);
        loads.push_back(ms_since(t0));
      }
      std::printf(
          "step curve of run %lld (%zu steps): first %.2f ms, median %.2f ms (goal < 50 ms)\n",
          static_cast<long long>(id), points, curve_first, median(loads));
    }

    // --- recording on the training thread, at a training step's pace ---
    const double pace_ms = lenet_ms > 0 ? lenet_ms : 4.0;
    std::vector<double> push_us;
    double finish_ms = 0;
    tr::store::RecorderStats stats;
    {
      tr::store::RunRecorder rec(path, start);
      auto next = Clock::now();
      for (int64_t i = 0; i < record_steps; ++i) {
        // The "step": a spin, so the thread stays on its core with warm caches
        // as a training thread would, rather than waking from a sleep.
        next += std::chrono::microseconds(static_cast<int64_t>(pace_ms * 1000));
        while (Clock::now() < next) {
        }
        const tr::store::StepRecord record = step_of(i, per_epoch);
        const auto t0 = Clock::now();
        rec.push_step(record);
        push_us.push_back(1000 * ms_since(t0));
      }
      const auto t0 = Clock::now();
      rec.finish(tr::store::RunStatus::Finished);
      finish_ms = ms_since(t0);
      stats = rec.stats();
    }
    // Timer overhead (two clock reads) is left in: it only overstates the cost.
    double push_mean = 0;
    for (const double v : push_us) push_mean += v / static_cast<double>(push_us.size());
    std::sort(push_us.begin(), push_us.end());
    const double push_p99 = push_us[push_us.size() * 99 / 100];
    const double writer_us = 1e6 * stats.writer_cpu_seconds / static_cast<double>(record_steps);
    std::printf(
        "recording %lld steps at %.2f ms per step: push on the training thread median %.3f us, "
        "mean %.3f us, p99 %.1f us, max %.1f us; writer thread %.1f us CPU per step in %lld "
        "commits; finish %.1f ms\n",
        static_cast<long long>(record_steps), pace_ms, push_us[push_us.size() / 2], push_mean,
        push_p99, push_us.back(), writer_us, static_cast<long long>(stats.commits), finish_ms);
    if (lenet_ms > 0)
      std::printf(
          "against a lenet step of %.3f ms: push (mean) %.4f%%; push + all of the writer's CPU "
          "%.3f%% (goal < 1%%)\n",
          lenet_ms, 100 * push_mean / (1000 * lenet_ms),
          100 * (push_mean + writer_us) / (1000 * lenet_ms));
    else
      std::printf("(give --lenet-ms or --cli for the share of a lenet step)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_store: %s\n", e.what());
    return 1;
  }
  if (!keep) {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix, ec);
    fs::remove(scratch, ec);
  }
  return 0;
}
