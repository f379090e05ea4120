// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/run_compare.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace tr::store {

namespace {

using Config = std::map<std::string, std::string>;

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// Designer positions and the description do not change what trains.
bool ignored_project_key(const std::string& key) {
  return key.rfind("/training", 0) == 0 || key.rfind("/description", 0) == 0 ||
         key.find("/pos/") != std::string::npos;
}

void add_flat(Config& out, const std::string& json_text, bool is_project) {
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_object()) return;
  const nlohmann::json flat = j.flatten();  // items() of a temporary would dangle
  for (const auto& [key, value] : flat.items()) {
    if (is_project && ignored_project_key(key)) continue;
    out[(is_project ? "project" : "training") + key] = value_text(value);
  }
}

Config config_of(const RunDetail& d) {
  // Devices, precision and seed are in the training settings already.
  Config c;
  c["run/world_size"] = std::to_string(d.summary.world_size);
  c["run/engine_version"] = d.engine_version;
  c["run/git_commit"] = d.git_commit;
  add_flat(c, d.hyper_json, false);
  add_flat(c, d.project_json, true);
  return c;
}

}  // namespace

const std::vector<std::string_view>& comparable_metrics() noexcept {
  static const std::vector<std::string_view> names{"train_loss", "train_top1", "val_loss",
                                                   "val_top1",   "val_top5",   "images_per_s"};
  return names;
}

bool lower_is_better(std::string_view metric) noexcept {
  return metric == "train_loss" || metric == "val_loss";
}

std::optional<double> epoch_metric(const EpochRecord& e, std::string_view metric) {
  if (metric == "train_loss") return e.train_loss;
  if (metric == "train_top1") return e.train_top1;
  if (metric == "val_loss") return e.val_loss;
  if (metric == "val_top1") return e.val_top1;
  if (metric == "val_top5") return e.val_top5;
  if (metric == "images_per_s") return e.images_per_s;
  return std::nullopt;
}

RunComparison compare_runs(const RunStore& store, const std::vector<int64_t>& runs,
                           const std::string& metric) {
  bool known = false;
  std::string names;
  for (const std::string_view m : comparable_metrics()) {
    known = known || m == metric;
    names += (names.empty() ? "" : ", ") + std::string(m);
  }
  if (!known) throw StoreError("unknown metric '" + metric + "'; compare takes " + names);

  RunComparison out;
  out.metric = metric;
  std::vector<Config> configs;
  for (const int64_t id : runs) {
    out.runs.push_back(store.run(id));
    configs.push_back(config_of(out.runs.back()));
    const std::vector<EpochRecord> epochs = store.epochs(id);
    const size_t i = out.runs.size() - 1;
    std::optional<double> last;
    for (const EpochRecord& e : epochs) {
      // An epoch cut short is no row beside whole ones; its validation (a
      // step limit's) is still the run's last word on the model.
      if (e.partial()) {
        if (metric.rfind("val_", 0) == 0)
          if (const auto v = epoch_metric(e, metric)) last = v;
        continue;
      }
      const auto row = static_cast<size_t>(e.epoch);
      if (out.metric_by_epoch.size() <= row) out.metric_by_epoch.resize(row + 1);
      out.metric_by_epoch[row].resize(runs.size());
      out.metric_by_epoch[row][i] = epoch_metric(e, metric);
      if (const auto v = epoch_metric(e, metric)) last = v;
    }
    out.final_metric.push_back(last);
  }
  for (auto& row : out.metric_by_epoch) row.resize(runs.size());

  std::set<std::string> keys;
  for (const Config& c : configs)
    for (const auto& kv : c) keys.insert(kv.first);
  for (const std::string& key : keys) {
    ConfigDifference d{key, {}};
    for (const Config& c : configs) {
      const auto it = c.find(key);
      d.values.push_back(it == c.end() ? "-" : it->second);
    }
    bool differ = false;
    for (const std::string& v : d.values) differ = differ || v != d.values.front();
    if (differ) out.differences.push_back(std::move(d));
  }

  for (size_t i = 0; i < out.final_metric.size(); ++i) {
    const auto& v = out.final_metric[i];
    if (!v) continue;
    if (!out.best || (lower_is_better(metric) ? *v < *out.final_metric[*out.best]
                                              : *v > *out.final_metric[*out.best]))
      out.best = i;
  }
  return out;
}

}  // namespace tr::store
