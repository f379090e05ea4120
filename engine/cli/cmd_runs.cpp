// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli runs`: the run history in the run store: list, show,
// compare, export as CSV, notes, tags and deletion.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <renaissance/error.h>
#include <renaissance/run_compare.h>
#include <renaissance/run_export.h>
#include <renaissance/run_store.h>
#include <renaissance/store_location.h>
#include "commands.h"
#include "options.h"
#include "terminal_width.h"
#include "text_table.h"

namespace tr::cli {

namespace {

using store::RunStore;

constexpr const char* kRunsUsage =
    "usage: renaissance-cli runs <subcommand> [--store PATH] ...\n"
    "  list [--filter TEXT] [--wide] [--json]\n"
    "                                  every recorded run, oldest first; --filter keeps runs\n"
    "                                  whose name, status, devices, precision, commit, tags or\n"
    "                                  notes contain TEXT. Lines fit $COLUMNS, else the\n"
    "                                  terminal's width, else 80 columns: long projects,\n"
    "                                  devices and tags are cut short with an ellipsis (and\n"
    "                                  so is a line still too wide); --wide prints it all\n"
    "  show ID [--project]             configuration, final metrics, epochs, checkpoints, tags,\n"
    "                                  notes; --project prints only the project as trained\n"
    "  compare ID ID... [--metric M]   configuration differences and final metrics side by\n"
    "                                  side, M by epoch (default val_top1)\n"
    "  export ID... --csv FILE         step and epoch curves as one CSV table ('-': stdout)\n"
    "  note ID TEXT                    add a note to a run\n"
    "  tag ID TAG [--remove]           add (or remove) a tag\n"
    "  delete ID                       remove a run and everything recorded for it\n"
    "The store is --store PATH, else $RENAISSANCE_STORE, else\n"
    "$XDG_DATA_HOME/renaissance/runs.sqlite (~/.local/share/renaissance/runs.sqlite).\n";

int64_t run_id(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v <= 0)
    throw UsageError("a run id is a positive integer (see 'runs list'), got '" + text + "'");
  return v;
}

std::vector<int64_t> run_ids(const std::vector<std::string>& positional, size_t from) {
  std::vector<int64_t> ids;
  for (size_t i = from; i < positional.size(); ++i) ids.push_back(run_id(positional[i]));
  return ids;
}

std::string local_time(double unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string duration(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds) + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

std::string run_time(const store::RunSummary& r) {
  return duration(r.ended_at.value_or(r.updated_at) - r.started_at);
}

// "131 of 469 steps": how far an epoch cut short went.
std::string cut_short_text(const store::EpochRecord& e) {
  return std::to_string(e.steps) + " of " + std::to_string(e.batches) + " steps";
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string percent(const std::optional<double>& v) {
  return v ? fmt("%.2f%%", 100 * *v) : std::string("-");
}

std::string loss(const std::optional<double>& v) {
  return v ? fmt("%.4f", *v) : "-";
}

std::string metric_text(std::string_view metric, const std::optional<double>& v) {
  if (!v) return "-";
  if (metric.find("top") != std::string_view::npos) return percent(v);
  if (metric == "images_per_s") return fmt("%.0f", *v);
  return loss(v);
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json summary_json(const store::RunSummary& r) {
  return {{"id", r.id},
          {"name", r.name},
          {"status", std::string(store::run_status_name(r.status))},
          {"started_at", r.started_at},
          {"ended_at", optional_json(r.ended_at)},
          {"updated_at", r.updated_at},
          {"devices", r.devices},
          {"world_size", r.world_size},
          {"precision", r.precision},
          {"seed", r.seed},
          {"steps", r.steps},
          {"epochs", r.epochs},
          {"final",
           {{"train_loss", optional_json(r.final_train_loss)},
            {"train_top1", optional_json(r.final_train_top1)},
            {"val_loss", optional_json(r.final_val_loss)},
            {"val_top1", optional_json(r.final_val_top1)},
            {"val_top5", optional_json(r.final_val_top5)}}},
          {"tags", r.tags}};
}

// Marks left by this open: runs whose writer died are interrupted from now on.
void report_interrupted(const RunStore& s) {
  for (const int64_t id : s.interrupted_on_open())
    std::fprintf(stderr, "note: run %lld was interrupted (its writing process is gone)\n",
                 static_cast<long long>(id));
}

int list(RunStore& s, const ParsedArgs& a) {
  const std::string filter = a.values.count("filter") ? a.values.at("filter") : std::string();
  const std::vector<store::RunSummary> runs = s.list_runs(filter);
  if (a.has("json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : runs) out.push_back(summary_json(r));
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  if (runs.empty()) {
    if (filter.empty())
      std::printf("no runs recorded in %s\n", s.path().c_str());
    else
      std::printf("no run in %s matches '%s'\n", s.path().c_str(), filter.c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows{{"ID", "STATUS", "PROJECT", "DEVICES", "PRECISION",
                                              "STARTED", "TIME", "STEPS", "EPOCHS", "VAL TOP-1",
                                              "TAGS"}};
  for (const auto& r : runs)
    rows.push_back({std::to_string(r.id), std::string(store::run_status_name(r.status)), r.name,
                    r.devices, r.precision, local_time(r.started_at).substr(0, 16), run_time(r),
                    std::to_string(r.steps), std::to_string(r.epochs), percent(r.final_val_top1),
                    join(r.tags, ",")});
  // The project, devices and tags are free text: they give up width first.
  TableLayout layout;
  layout.right = {true, false, false, false, false, false, true, true, true, true, false};
  layout.elidable = {false, false, true, true, false, false, false, false, false, false, true};
  layout.max_width = a.has("wide") ? 0 : output_columns();
  print_table(rows, layout);
  return 0;
}

void print_config(const std::string& hyper_json) {
  const auto j = nlohmann::json::parse(hyper_json, nullptr, false);
  if (!j.is_object()) return;
  std::vector<std::vector<std::string>> rows;
  const nlohmann::json flat = j.flatten();  // items() of a temporary would dangle
  for (const auto& [key, value] : flat.items())
    rows.push_back({key.substr(1), value.is_string() ? value.get<std::string>() : value.dump()});
  std::printf("configuration:\n");
  print_table(rows, {}, "  ");
}

void print_matrix(const std::vector<int64_t>& m) {
  const int64_t k = store::confusion_classes(m.size());
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{"true\\pred"};
  for (int64_t c = 0; c < k; ++c) header.push_back(std::to_string(c));
  rows.push_back(header);
  for (int64_t r = 0; r < k; ++r) {
    std::vector<std::string> row{std::to_string(r)};
    for (int64_t c = 0; c < k; ++c)
      row.push_back(std::to_string(m[static_cast<size_t>(r * k + c)]));
    rows.push_back(row);
  }
  print_table(rows, std::vector<bool>(static_cast<size_t>(k + 1), true), "  ");
}

int show(const RunStore& s, int64_t id, bool project_only) {
  const store::RunDetail d = s.run(id);
  if (project_only) {
    const auto j = nlohmann::json::parse(d.project_json, nullptr, false);
    std::printf("%s\n", j.is_discarded() ? d.project_json.c_str() : j.dump(2).c_str());
    return 0;
  }
  const store::RunSummary& r = d.summary;
  std::printf("run %lld: %s (%s)\n", static_cast<long long>(r.id), r.name.c_str(),
              std::string(store::run_status_name(r.status)).c_str());
  std::printf("  started   %s", local_time(r.started_at).c_str());
  if (r.ended_at) std::printf(", ended %s", local_time(*r.ended_at).c_str());
  std::printf(" (%s)\n", run_time(r).c_str());
  std::printf("  devices   %s (world size %d), %s, seed %llu\n", r.devices.c_str(), r.world_size,
              r.precision.c_str(), static_cast<unsigned long long>(r.seed));
  std::printf("  engine    %s (git %s), written by pid %lld on %s\n", d.engine_version.c_str(),
              d.git_commit.c_str(), static_cast<long long>(d.writer_pid), d.writer_host.c_str());
  if (!d.error.empty()) std::printf("  error     %s\n", d.error.c_str());
  if (!r.tags.empty()) std::printf("  tags      %s\n", join(r.tags, ", ").c_str());
  if (!r.final_weights.empty())
    std::printf(
        "  weights   %s (the weights it ended with: predict --checkpoint, train "
        "--init-from)\n",
        r.final_weights.c_str());
  if (store::ended_early(r.status) && !s.checkpoints(id).empty())
    std::printf("  continue  renaissance-cli train --resume-run %lld\n",
                static_cast<long long>(r.id));
  print_config(d.hyper_json);
  const std::vector<store::EpochRecord> epochs = s.epochs(id);
  std::string cut;  // the epoch a stop cut short, after the whole ones
  if (!epochs.empty() && epochs.back().partial())
    cut = " and " + cut_short_text(epochs.back()) + " of epoch " +
          std::to_string(epochs.back().epoch + 1);
  std::printf(
      "final metrics: steps %lld, epochs %lld%s, train_loss %s, train_top1 %s, "
      "val_loss %s, val_top1 %s, val_top5 %s\n",
      static_cast<long long>(r.steps), static_cast<long long>(r.epochs), cut.c_str(),
      loss(r.final_train_loss).c_str(), percent(r.final_train_top1).c_str(),
      loss(r.final_val_loss).c_str(), percent(r.final_val_top1).c_str(),
      percent(r.final_val_top5).c_str());

  if (!epochs.empty()) {
    std::printf("epochs:\n");
    std::vector<std::vector<std::string>> rows{{"EPOCH", "TRAIN LOSS", "TRAIN TOP-1", "VAL LOSS",
                                                "VAL TOP-1", "VAL TOP-5", "IMG/S", "TIME"}};
    for (const auto& e : epochs)
      rows.push_back({std::to_string(e.epoch + 1) +
                          (e.partial() ? " (" + cut_short_text(e) + ")" : std::string()),
                      loss(e.train_loss), percent(e.train_top1), loss(e.val_loss),
                      percent(e.val_top1), percent(e.val_top5), fmt("%.0f", e.images_per_s),
                      duration(e.seconds)});
    print_table(rows, std::vector<bool>(8, true), "  ");
    const auto with_classes = std::find_if(epochs.rbegin(), epochs.rend(), [](const auto& e) {
      return !e.per_class_accuracy.empty();
    });
    if (with_classes != epochs.rend()) {
      std::printf("per-class accuracy (epoch %lld):",
                  static_cast<long long>(with_classes->epoch + 1));
      for (size_t c = 0; c < with_classes->per_class_accuracy.size(); ++c)
        std::printf(" %zu: %s", c, percent(with_classes->per_class_accuracy[c]).c_str());
      std::printf("\n");
      if (!with_classes->confusion.empty() &&
          store::confusion_classes(with_classes->confusion.size()) <= 20) {
        std::printf("confusion matrix (epoch %lld; row: true class, column: predicted):\n",
                    static_cast<long long>(with_classes->epoch + 1));
        print_matrix(with_classes->confusion);
      }
    }
  }
  const auto checkpoints = s.checkpoints(id);
  if (!checkpoints.empty()) {
    std::printf("checkpoints:\n");
    for (const auto& c : checkpoints) {
      std::printf("  %s", c.path.c_str());
      if (c.epoch) std::printf("  after epoch %lld", static_cast<long long>(*c.epoch));
      if (c.step) std::printf("  at step %lld", static_cast<long long>(*c.step));
      if (!c.metrics_json.empty()) std::printf("  %s", c.metrics_json.c_str());
      std::printf("\n");
    }
  }
  for (const store::ResumeRecord& resume : s.resumes(id)) {
    std::printf("resumed %s from %s at step %lld (was %s; a gap of %s",
                local_time(resume.resumed_at).c_str(), resume.checkpoint_path.c_str(),
                static_cast<long long>(resume.from_step),
                std::string(store::run_status_name(resume.previous_status)).c_str(),
                duration(resume.resumed_at - resume.last_update).c_str());
    if (resume.retrained_steps > 0)
      std::printf("; %lld step%s trained again", static_cast<long long>(resume.retrained_steps),
                  resume.retrained_steps == 1 ? "" : "s");
    std::printf(")\n");
  }
  const auto notes = s.notes(id);
  if (!notes.empty()) {
    std::printf("notes:\n");
    for (const auto& n : notes)
      std::printf("  %s  %s\n", local_time(n.created_at).c_str(), n.text.c_str());
  }
  return 0;
}

int compare(const RunStore& s, const std::vector<int64_t>& ids, const std::string& metric) {
  const store::RunComparison c = store::compare_runs(s, ids, metric);
  std::vector<std::string> head{""};
  for (const auto& d : c.runs) head.push_back("run " + std::to_string(d.summary.id));
  const std::vector<bool> right(head.size(), false);

  std::vector<std::vector<std::string>> rows{head};
  std::vector<std::string> name{"project"}, status{"status"}, started{"started"};
  for (const auto& d : c.runs) {
    name.push_back(d.summary.name);
    status.push_back(std::string(store::run_status_name(d.summary.status)));
    started.push_back(local_time(d.summary.started_at).substr(0, 16));
  }
  rows.push_back(name);
  rows.push_back(status);
  rows.push_back(started);
  print_table(rows, right);

  if (c.differences.empty()) {
    std::printf("configuration: identical\n");
  } else {
    std::printf("configuration differences:\n");
    rows = {head};
    for (const auto& d : c.differences) {
      std::vector<std::string> row{d.key};
      row.insert(row.end(), d.values.begin(), d.values.end());
      rows.push_back(row);
    }
    print_table(rows, right, "  ");
  }

  std::printf("final metrics:\n");
  rows = {head};
  const auto add = [&](const char* label, auto get, auto text) {
    std::vector<std::string> row{label};
    for (const auto& d : c.runs) row.push_back(text(get(d.summary)));
    rows.push_back(row);
  };
  add(
      "steps", [](const auto& r) { return r.steps; }, [](int64_t v) { return std::to_string(v); });
  add(
      "epochs", [](const auto& r) { return r.epochs; },
      [](int64_t v) { return std::to_string(v); });
  add(
      "train_loss", [](const auto& r) { return r.final_train_loss; }, loss);
  add(
      "train_top1", [](const auto& r) { return r.final_train_top1; }, percent);
  add(
      "val_loss", [](const auto& r) { return r.final_val_loss; }, loss);
  add(
      "val_top1", [](const auto& r) { return r.final_val_top1; }, percent);
  add(
      "val_top5", [](const auto& r) { return r.final_val_top5; }, percent);
  print_table(rows, right, "  ");

  if (!c.metric_by_epoch.empty()) {
    std::printf("%s by epoch:\n", c.metric.c_str());
    rows = {head};
    rows[0][0] = "epoch";
    for (size_t e = 0; e < c.metric_by_epoch.size(); ++e) {
      std::vector<std::string> row{std::to_string(e + 1)};
      for (const auto& v : c.metric_by_epoch[e]) row.push_back(metric_text(c.metric, v));
      rows.push_back(row);
    }
    print_table(rows, right, "  ");
  }
  if (c.best)
    std::printf("best %s: run %lld (%s)\n", c.metric.c_str(),
                static_cast<long long>(c.runs[*c.best].summary.id),
                metric_text(c.metric, c.final_metric[*c.best]).c_str());
  return 0;
}

int export_csv(const RunStore& s, const std::vector<int64_t>& ids, const std::string& file) {
  std::ostringstream text;
  store::write_curves_csv(s, ids, text);
  if (file == "-") {
    std::fputs(text.str().c_str(), stdout);
    return 0;
  }
  std::ofstream f(file, std::ios::binary);
  if (!f || !(f << text.str()) || !f.flush()) throw UsageError("cannot write '" + file + "'");
  std::printf("wrote the curves of %zu run%s to %s\n", ids.size(), ids.size() == 1 ? "" : "s",
              file.c_str());
  return 0;
}

// Checks the number of positional arguments after the subcommand; a wrong
// count is a UsageError saying what the subcommand takes.
void arity(const ParsedArgs& a, size_t least, size_t most, const char* takes) {
  const size_t n = a.positional.size() - 1;
  if (n >= least && n <= most) return;
  const std::vector<std::string> after(a.positional.begin() + 1, a.positional.end());
  wrong_arguments(after, n < least ? least : most, "runs " + a.positional.front(), takes);
}

}  // namespace

int cmd_runs(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.empty())
      std::fputs(
          "renaissance-cli runs: missing the subcommand (list, show, compare, export, "
          "note, tag or delete)\n",
          stderr);
    std::fputs(kRunsUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string sub = args[0];
  std::set<std::string> values{"store"}, flags{"help"};
  if (sub == "list") {
    values.insert("filter");
    flags.insert("json");
    flags.insert("wide");
  } else if (sub == "show") {
    flags.insert("project");
  } else if (sub == "compare") {
    values.insert("metric");
  } else if (sub == "export") {
    values.insert("csv");
  } else if (sub == "tag") {
    flags.insert("remove");
  } else if (!sub.empty() && sub[0] == '-') {
    throw UsageError(
        "the subcommand comes first: runs list|show|compare|export|note|tag|delete, "
        "then its arguments and options");
  } else if (sub != "note" && sub != "delete") {
    throw UsageError("unknown subcommand 'runs " + sub +
                     "'; runs takes list, show, compare, export, note, tag or delete");
  }
  const ParsedArgs a = parse_args(args, values, flags);
  if (a.has("help")) {
    std::fputs(kRunsUsage, stdout);
    return 0;
  }
  const size_t many = 1000000;
  if (sub == "list") arity(a, 0, 0, "no arguments, only options (runs list [--filter TEXT])");
  if (sub == "show") arity(a, 1, 1, "one run id (runs show ID)");
  if (sub == "compare") arity(a, 2, many, "two or more run ids (runs compare ID ID...)");
  if (sub == "export") arity(a, 1, many, "one or more run ids (runs export ID... --csv FILE)");
  if (sub == "note") arity(a, 2, many, "a run id and the note's text (runs note ID TEXT...)");
  if (sub == "tag") arity(a, 2, 2, "a run id and one tag (runs tag ID TAG [--remove])");
  if (sub == "delete") arity(a, 1, 1, "one run id (runs delete ID)");
  if (sub == "export" && !a.values.count("csv"))
    throw UsageError("runs export needs --csv FILE ('-' writes to stdout)");
  // Ids are checked before the store is opened (or created).
  std::vector<int64_t> ids;
  if (sub == "note" || sub == "tag")
    ids = {run_id(a.positional[1])};
  else
    ids = run_ids(a.positional, 1);

  RunStore s(store::resolve_store_path(a.values.count("store") ? a.values.at("store") : ""));
  report_interrupted(s);
  if (sub == "list") return list(s, a);
  if (sub == "show") return show(s, ids[0], a.has("project"));
  if (sub == "compare")
    return compare(s, ids, a.values.count("metric") ? a.values.at("metric") : "val_top1");
  if (sub == "export") return export_csv(s, ids, a.values.at("csv"));
  if (sub == "note") {
    const std::vector<std::string> words(a.positional.begin() + 2, a.positional.end());
    s.add_note(ids[0], join(words, " "));
    std::printf("added a note to run %lld\n", static_cast<long long>(ids[0]));
    return 0;
  }
  if (sub == "tag") {
    const std::string& tag = a.positional[2];
    if (a.has("remove")) {
      s.remove_tag(ids[0], tag);
      std::printf("removed tag '%s' from run %lld\n", tag.c_str(), static_cast<long long>(ids[0]));
    } else {
      s.add_tag(ids[0], tag);
      std::printf("tagged run %lld '%s'\n", static_cast<long long>(ids[0]), tag.c_str());
    }
    return 0;
  }
  const std::string name = s.run(ids[0]).summary.name;
  s.delete_run(ids[0]);
  std::printf("deleted run %lld (%s)\n", static_cast<long long>(ids[0]), name.c_str());
  return 0;
}

}  // namespace tr::cli
