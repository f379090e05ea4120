// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli predict`: a trained model's top classes for image files,
// and for a labelled folder its accuracy and confusion matrix
// (include/renaissance/predict.h).
#include <cstdio>

#include <nlohmann/json.hpp>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/predict.h>
#include <renaissance/project_io.h>
#include "commands.h"
#include "options.h"
#include "text_table.h"

namespace tr::cli {

namespace {

constexpr const char* kPredictUsage =
    "usage: renaissance-cli predict <project.json> --checkpoint CKPT (IMAGE... | --folder DIR)\n"
    "         [--top K] [--json [--logits]]\n"
    "  prints each PNG or JPEG image's K (5) most likely classes with their probabilities;\n"
    "  the images are fitted to the project's input and normalised as its dataset is.\n"
    "  --folder DIR: the images in DIR, or, when DIR has one subfolder per class (named as\n"
    "  the model's classes, or in lower case with dashes: \"T-shirt/top\" as t-shirt-top),\n"
    "  every image in them, with the accuracy and the confusion matrix.\n"
    "  --json writes [{\"file\", \"top5\": [{\"class\", \"index\", \"p\"}, ...]}, ...]\n"
    "  (\"topK\" for --top K; \"label\" for a labelled image, \"error\" for an unreadable one;\n"
    "  \"logits\": the model's raw output per class, with --logits).\n";

}  // namespace

int cmd_predict(const std::vector<std::string>& args) {
  const ParsedArgs a =
      parse_args(args, {"checkpoint", "folder", "top"}, {"json", "logits", "help"});
  if (a.has("help")) {
    std::fputs(kPredictUsage, stdout);
    return 0;
  }
  if (a.positional.empty())
    wrong_arguments(a.positional, 1, "predict",
                    "the project file (predict <project.json> --checkpoint CKPT IMAGE...)");
  if (!a.values.count("checkpoint"))
    throw UsageError("predict needs --checkpoint CKPT (a file `train --checkpoint-dir` wrote)");
  if (a.has("logits") && !a.has("json"))
    throw UsageError("--logits adds the raw outputs to --json's list; give --json too");
  const bool folder = a.values.count("folder") > 0;
  if (folder == (a.positional.size() > 1))
    throw UsageError(folder ? "give either image files or --folder DIR, not both"
                            : "predict needs image files or --folder DIR");
  const int top =
      a.values.count("top") ? static_cast<int>(positive_integer("top", a.values.at("top"))) : 5;
  const Project project = load_project(a.positional[0]);
  const Checkpoint checkpoint = read_checkpoint(a.values.at("checkpoint"));
  std::vector<PredictImage> images;
  if (folder)
    images = folder_images(a.values.at("folder"), class_names_of(project.dataset));
  else
    for (size_t i = 1; i < a.positional.size(); ++i) images.push_back({a.positional[i], -1});
  const PredictReport r = predict_images(project, checkpoint, images, top);

  if (a.has("json")) {
    nlohmann::json list = nlohmann::json::array();
    const std::string key = "top" + std::to_string(top);
    for (const Prediction& p : r.predictions) {
      nlohmann::json o;
      o["file"] = p.file;
      if (p.label >= 0) o["label"] = r.class_names[static_cast<size_t>(p.label)];
      if (!p.error.empty()) o["error"] = p.error;
      nlohmann::json t = nlohmann::json::array();
      for (const ClassScore& c : p.top)
        t.push_back({{"class", c.name}, {"index", c.index}, {"p", c.p}});
      o[key] = std::move(t);
      if (a.has("logits") && p.error.empty()) o["logits"] = p.logits;
      list.push_back(std::move(o));
    }
    std::printf("%s\n", list.dump(2).c_str());
    return 0;
  }
  int64_t unreadable = 0;
  for (const Prediction& p : r.predictions) {
    if (!p.error.empty()) {
      std::printf("%s: unreadable: %s\n", p.file.c_str(), p.error.c_str());
      ++unreadable;
      continue;
    }
    std::printf("%s:", p.file.c_str());
    for (const ClassScore& c : p.top) std::printf("  %s %.2f%%", c.name.c_str(), 100 * c.p);
    if (p.label >= 0)
      std::printf("   (is %s%s)", r.class_names[static_cast<size_t>(p.label)].c_str(),
                  p.top.front().index == p.label ? "" : ", wrong");
    std::printf("\n");
  }
  if (r.labelled > 0) {
    std::printf("\naccuracy %.2f%% (%lld of %lld)\n",
                100.0 * static_cast<double>(r.correct) / static_cast<double>(r.labelled),
                static_cast<long long>(r.correct), static_cast<long long>(r.labelled));
    // Rows: the true class; columns: the predicted one.
    const size_t k = r.class_names.size();
    std::vector<std::vector<std::string>> rows{{"true \\ predicted"}};
    std::vector<bool> right{false};
    for (const std::string& c : r.class_names) {
      rows[0].push_back(c);
      right.push_back(true);
    }
    for (size_t i = 0; i < k; ++i) {
      std::vector<std::string> row{r.class_names[i]};
      for (size_t j = 0; j < k; ++j) row.push_back(std::to_string(r.confusion[i * k + j]));
      rows.push_back(std::move(row));
    }
    print_table(rows, right);
  }
  if (unreadable > 0)
    std::printf("%lld of %zu images unreadable\n", static_cast<long long>(unreadable),
                r.predictions.size());
  return 0;
}

}  // namespace tr::cli
