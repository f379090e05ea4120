// SPDX-License-Identifier: GPL-3.0-or-later
// A run's curves against steps, epochs and wall time.
#include "runs/run_curves.h"

#include <QObject>
#include <algorithm>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include <renaissance/run_compare.h>

namespace tr::gui {

namespace {

// The trainer records the whole training section, so the global batch is in
// the hyper-parameters; a run written by other means may have it only in the project.
double global_batch_of(const store::RunDetail& d) {
  const auto batch_in = [](const std::string& text, const char* section) -> double {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (section && j.is_object() && j.contains(section)) j = j.at(section);
    if (!j.is_object() || !j.contains("global_batch") || !j.at("global_batch").is_number())
      return 0;
    return j.at("global_batch").get<double>();
  };
  const double hyper = batch_in(d.hyper_json, nullptr);
  return hyper > 0 ? hyper : batch_in(d.project_json, "training");
}

std::optional<double> step_value(const store::StepRecord& s, const std::string& key) {
  if (key == "loss") return s.loss;
  if (key == "top1") return s.top1;
  if (key == "lr") return s.lr;
  if (key == "loss_scale") return s.loss_scale;
  if (key == "step_images_per_s") return s.images_per_s;
  return std::nullopt;
}

// Steps are recorded without a time of their own. A step's time is the end
// of the previous epoch (its ended_at, which includes that epoch's
// validation) or the run's start, plus the seconds of the steps before it
// in its epoch and its own, each global_batch / images_per_s. The partial
// last batch of an epoch counts as a full one, and time between steps
// (data waits, the start-up before the first step) is not seen, so the
// estimate drifts a little within an epoch and is set right at every epoch
// end the run recorded.
std::vector<double> step_seconds(const RunCurves& run) {
  std::map<int64_t, double> epoch_end;
  for (const store::EpochRecord& e : run.epochs)
    if (e.ended_at > 0) epoch_end[e.epoch] = e.ended_at - run.started_at;
  std::vector<double> t;
  t.reserve(run.steps.size());
  double now = 0;
  int64_t epoch = -1;
  for (const store::StepRecord& s : run.steps) {
    if (s.epoch != epoch) {
      epoch = s.epoch;
      if (const auto it = epoch_end.find(epoch - 1); it != epoch_end.end())
        now = std::max(now, it->second);
    }
    if (s.images_per_s > 0 && run.global_batch > 0) now += run.global_batch / s.images_per_s;
    t.push_back(now);
  }
  return t;
}

// Fractional epochs: a step ends 1/n of its epoch's n steps after the one
// before. An epoch the run has not finished (or stopped in) is taken to be as
// long as the one before it, so its steps do not stretch to its end.
std::vector<double> step_epochs(const RunCurves& run) {
  std::map<int64_t, int64_t> count;
  for (const store::StepRecord& s : run.steps) ++count[s.epoch];
  std::vector<double> x;
  x.reserve(run.steps.size());
  int64_t epoch = -1, within = 0, n = 1, previous = 0;
  for (const store::StepRecord& s : run.steps) {
    if (s.epoch != epoch) {
      previous = epoch >= 0 ? count[epoch] : 0;
      epoch = s.epoch;
      within = 0;
      n = count[epoch];
      const auto record = std::find_if(run.epochs.begin(), run.epochs.end(),
                                       [&](const auto& e) { return e.epoch == epoch; });
      if (record != run.epochs.end() && record->partial())
        n = std::max(n, record->batches);  // cut short: the steps it did of those it had
      else if (record == run.epochs.end())
        n = std::max(n, previous);
    }
    ++within;
    x.push_back(static_cast<double>(epoch) + static_cast<double>(within) / static_cast<double>(n));
  }
  return x;
}

}  // namespace

const std::vector<CurveMetric>& curve_metrics() {
  static const std::vector<CurveMetric> metrics = [] {
    std::vector<CurveMetric> m{
        {"loss", QObject::tr("Loss (per step)"), true, false},
        {"top1", QObject::tr("Top-1 % (per step)"), true, true},
        {"lr", QObject::tr("Learning rate (per step)"), true, false},
        {"loss_scale", QObject::tr("Loss scale (per step, AMP)"), true, false},
        {"step_images_per_s", QObject::tr("Images/s (per step)"), true, false},
    };
    const std::map<std::string, QString> labels{
        {"train_loss", QObject::tr("Train loss (per epoch)")},
        {"train_top1", QObject::tr("Train top-1 % (per epoch)")},
        {"val_loss", QObject::tr("Val loss (per epoch)")},
        {"val_top1", QObject::tr("Val top-1 % (per epoch)")},
        {"val_top5", QObject::tr("Val top-5 % (per epoch)")},
        {"images_per_s", QObject::tr("Images/s (per epoch)")}};
    for (const std::string_view key : store::comparable_metrics()) {
      const std::string k(key);
      const auto it = labels.find(k);
      m.push_back({k, it != labels.end() ? it->second : QString::fromStdString(k), false,
                   k.find("top") != std::string::npos});
    }
    return m;
  }();
  return metrics;
}

const CurveMetric* find_curve_metric(const std::string& key) {
  for (const CurveMetric& m : curve_metrics())
    if (m.key == key) return &m;
  return nullptr;
}

RunCurves load_run_curves(const store::RunStore& store, int64_t run) {
  const store::RunDetail d = store.run(run);
  RunCurves c;
  c.id = run;
  c.started_at = d.summary.started_at;
  c.global_batch = global_batch_of(d);
  c.steps = store.step_curve(run);
  c.epochs = store.epochs(run);
  return c;
}

CurveSeries curve_series(const RunCurves& run, const CurveMetric& metric, CurveAxis axis) {
  CurveSeries out;
  const double scale = metric.percent ? 100.0 : 1.0;
  if (metric.perStep) {
    std::vector<double> x;
    if (axis == CurveAxis::WallTime)
      x = step_seconds(run);
    else if (axis == CurveAxis::Epoch)
      x = step_epochs(run);
    out.x.reserve(run.steps.size());
    out.y.reserve(run.steps.size());
    for (size_t i = 0; i < run.steps.size(); ++i) {
      const std::optional<double> v = step_value(run.steps[i], metric.key);
      if (!v) continue;
      out.x.push_back(axis == CurveAxis::Step ? static_cast<double>(run.steps[i].step) : x[i]);
      out.y.push_back(scale * *v);
    }
    return out;
  }
  // An epoch's point sits where it ended: after its last step, after the
  // epochs done, or at its end time.
  std::map<int64_t, double> steps_done;
  for (const store::StepRecord& s : run.steps)
    steps_done[s.epoch] = std::max(steps_done[s.epoch], static_cast<double>(s.step + 1));
  double last = 0;
  for (const store::EpochRecord& e : run.epochs) {
    const std::optional<double> v = store::epoch_metric(e, metric.key);
    double x = static_cast<double>(e.epoch + 1);
    if (e.partial())  // where it was cut short
      x = static_cast<double>(e.epoch) +
          static_cast<double>(e.steps) / static_cast<double>(e.batches);
    if (axis == CurveAxis::WallTime) x = e.ended_at - run.started_at;
    if (axis == CurveAxis::Step) {
      const auto it = steps_done.upper_bound(e.epoch);
      x = it == steps_done.begin() ? 0 : std::prev(it)->second;
    }
    last = std::max(last, x);  // x must ascend, even if clocks were set back
    if (!v) continue;
    out.x.push_back(last);
    out.y.push_back(scale * *v);
  }
  return out;
}

}  // namespace tr::gui
