// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli onnx export|import|ops`: a trained model as an ONNX file
// for other tools (include/renaissance/onnx_export.h), and an ONNX model as
// a project and checkpoint (include/renaissance/onnx_import.h).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/onnx_export.h>
#include <renaissance/onnx_import.h>
#include <renaissance/predict.h>
#include <renaissance/project_io.h>
#include "commands.h"
#include "options.h"

namespace tr::cli {

namespace {

constexpr const char* kOnnxUsage =
    "usage: renaissance-cli onnx export <project.json> --checkpoint CKPT (-o|--output) MODEL.onnx\n"
    "         [--softmax] [--master-weights]\n"
    "  writes the project's model with the checkpoint's weights as ONNX (opset 13): input\n"
    "  NCHW float, normalised with the dataset's mean and std (recorded in the file's\n"
    "  metadata), output the logits, or the class probabilities with --softmax;\n"
    "  BatchNorm in inference form; the EMA weights where the checkpoint has them\n"
    "  (--master-weights: the trained ones).\n"
    "       renaissance-cli onnx import MODEL.onnx (-o|--output) PROJECT.json\n"
    "         [--checkpoint-out CKPT] [--name NAME] [--mean M[,M,M] --std S[,S,S]]\n"
    "  turns an ONNX model into a project the workbench designs and trains, and its\n"
    "  weights into a checkpoint (default: PROJECT.ckpt beside it) to predict with or to\n"
    "  fine-tune from (train --init-from). --mean/--std: how its inputs were normalised.\n"
    "       renaissance-cli onnx ops\n"
    "  lists the ONNX operators the importer takes.\n";

// "ankle-boot, bag, coat, ... (10)", or why there are none.
std::string class_list_text(const std::vector<std::string>& names) {
  if (names.empty())
    return "not named (the image folders that name them cannot be read), so an import calls "
           "them class 0, class 1, ...";
  std::string text;
  for (size_t i = 0; i < names.size() && i < 4; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > 4) text += ", ... (" + std::to_string(names.size()) + ")";
  return text + ", recorded in the file";
}

int onnx_export(std::vector<std::string> args) {
  for (std::string& arg : args)
    if (arg == "-o") arg = "--output";  // the short form tools use
  const ParsedArgs a =
      parse_args(args, {"checkpoint", "output"}, {"softmax", "master-weights", "help"});
  if (const int code = usage_exit_code(a, kOnnxUsage, 1, "onnx export",
                                       "the project file (onnx export <project.json>)");
      code >= 0)
    return code;
  if (!a.values.count("checkpoint"))
    throw UsageError("onnx export needs --checkpoint CKPT (a file `train --checkpoint-dir` wrote)");
  if (!a.values.count("output"))
    throw UsageError("onnx export needs -o MODEL.onnx (the file to write)");
  const Project project = load_project(a.positional[0]);
  const Checkpoint checkpoint = read_checkpoint(a.values.at("checkpoint"));
  if (checkpoint.project_name != project.name)
    throw UsageError(a.values.at("checkpoint") + " is a checkpoint of '" + checkpoint.project_name +
                     "', not of '" + project.name + "' (" + a.positional[0] + ")");
  OnnxExportOptions o;
  o.softmax = a.has("softmax");
  o.ema = !a.has("master-weights");
  o.class_names = folder_class_names(project.dataset);
  const std::string& out = a.values.at("output");
  const OnnxExportSummary s = export_onnx(project, checkpoint, out, o);
  std::printf(
      "wrote %s: %lld ONNX nodes, %lld weight tensors (%lld values, %s weights), "
      "input '%s' [N, %lld, %lld, %lld], output '%s' [N, %lld]\n",
      out.c_str(), static_cast<long long>(s.nodes), static_cast<long long>(s.initializers),
      static_cast<long long>(s.parameters), s.used_ema ? "EMA" : "trained", s.input.c_str(),
      static_cast<long long>(project.dataset.channels),
      static_cast<long long>(project.dataset.height), static_cast<long long>(project.dataset.width),
      s.output.c_str(), static_cast<long long>(s.classes));
  std::printf("  classes: %s\n", class_list_text(s.class_names).c_str());
  return 0;
}

// "0.485,0.456,0.406" (or one value for every channel).
std::vector<double> number_list(const std::string& option, const std::string& text) {
  std::vector<double> v;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    char* stop = nullptr;
    errno = 0;
    const double d = std::strtod(item.c_str(), &stop);
    if (item.empty() || *stop != '\0' || errno != 0)
      throw UsageError("--" + option +
                       " takes numbers separated by commas (one per channel), got '" + text + "'");
    v.push_back(d);
    at = end + 1;
  }
  return v;
}

int onnx_import(std::vector<std::string> args) {
  for (std::string& arg : args)
    if (arg == "-o") arg = "--output";
  const ParsedArgs a =
      parse_args(args, {"output", "checkpoint-out", "name", "mean", "std"}, {"help"});
  if (const int code = usage_exit_code(a, kOnnxUsage, 1, "onnx import",
                                       "the ONNX file (onnx import <model.onnx>)");
      code >= 0)
    return code;
  if (!a.values.count("output"))
    throw UsageError("onnx import needs -o PROJECT.json (the project file to write)");
  if (a.values.count("mean") != a.values.count("std"))
    throw UsageError("give --mean and --std together (how the model's inputs were normalised)");
  OnnxImportOptions o;
  if (a.values.count("name")) o.name = a.values.at("name");
  if (a.values.count("mean")) o.mean = number_list("mean", a.values.at("mean"));
  if (a.values.count("std")) o.std = number_list("std", a.values.at("std"));
  const std::string& project_path = a.values.at("output");
  if (o.name.empty()) o.name = std::filesystem::path(project_path).stem().string();
  const std::string ckpt =
      a.values.count("checkpoint-out")
          ? a.values.at("checkpoint-out")
          : std::filesystem::path(project_path).replace_extension(".ckpt").string();
  OnnxImportResult r = import_onnx(a.positional[0], o);
  // Training the imported project fine-tunes from the model's weights.
  r.project.training.init_from = path_from_project_file(project_path, ckpt);
  const Project& p = r.project;
  write_checkpoint(r.checkpoint, ckpt);
  save_project(p, project_path);
  int64_t layers = 0;
  for (const LayerNode& n : p.model.nodes)
    layers += n.type != LayerType::Input && n.type != LayerType::SoftmaxCrossEntropy;
  std::printf("imported %s (opset %lld%s%s): %lld ONNX nodes -> %lld layers, %lld weights\n",
              a.positional[0].c_str(), static_cast<long long>(r.opset),
              r.producer.empty() ? "" : ", from ", r.producer.c_str(),
              static_cast<long long>(r.onnx_nodes), static_cast<long long>(layers),
              static_cast<long long>(r.parameters));
  std::printf("  input [N, %lld, %lld, %lld], %lld classes\n",
              static_cast<long long>(p.dataset.channels), static_cast<long long>(p.dataset.height),
              static_cast<long long>(p.dataset.width), static_cast<long long>(p.dataset.classes));
  for (const std::string& note : r.notes) std::printf("  %s\n", note.c_str());
  std::printf("wrote %s and %s\n", project_path.c_str(), ckpt.c_str());
  std::printf(
      "next: renaissance-cli predict %s --checkpoint %s IMAGE..., or train it: it starts from "
      "those weights (its \"training.init_from\")\n",
      project_path.c_str(), ckpt.c_str());
  return 0;
}

int onnx_ops() {
  std::printf("%-22s %s\n", "ONNX operator", "becomes");
  for (const OnnxOpSupport& op : onnx_import_ops())
    std::printf("%-22s %s\n", std::string(op.op).c_str(), std::string(op.becomes).c_str());
  return 0;
}

}  // namespace

int cmd_onnx(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    if (args.empty())
      std::fputs("renaissance-cli onnx: missing the subcommand (export, import or ops)\n", stderr);
    std::fputs(kOnnxUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "export") return onnx_export({args.begin() + 1, args.end()});
  if (args[0] == "import") return onnx_import({args.begin() + 1, args.end()});
  if (args[0] == "ops" && args.size() == 1) return onnx_ops();
  if (args[0] == "ops")
    throw UsageError("onnx ops takes no arguments; 'renaissance-cli onnx ops' lists the operators");
  throw UsageError("unknown onnx subcommand '" + args[0] +
                   "'; expected export, import or ops ('renaissance-cli onnx --help' shows their "
                   "usage)");
}

}  // namespace tr::cli
