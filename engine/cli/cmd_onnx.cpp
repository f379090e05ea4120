// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli onnx export`: a trained model as an ONNX file for other
// tools (include/renaissance/onnx_export.h).
#include <cstdio>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/onnx_export.h>
#include <renaissance/project_io.h>
#include "commands.h"
#include "options.h"

namespace tr::cli {

namespace {

constexpr const char* kUsage =
    "usage: renaissance-cli onnx export <project.json> --checkpoint CKPT (-o|--output) MODEL.onnx\n"
    "         [--softmax] [--master-weights]\n"
    "  writes the project's model with the checkpoint's weights as ONNX (opset 13): input\n"
    "  NCHW float, normalised with the dataset's mean and std (recorded in the file's\n"
    "  metadata), output the logits, or the class probabilities with --softmax;\n"
    "  BatchNorm in inference form; the EMA weights where the checkpoint has them\n"
    "  (--master-weights: the trained ones).\n";

int onnx_export(std::vector<std::string> args) {
  for (std::string& arg : args)
    if (arg == "-o") arg = "--output";  // the short form tools use
  const ParsedArgs a =
      parse_args(args, {"checkpoint", "output"}, {"softmax", "master-weights", "help"});
  if (const int code = usage_exit_code(a, kUsage, 1); code >= 0) return code;
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
  return 0;
}

}  // namespace

int cmd_onnx(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "export") return onnx_export({args.begin() + 1, args.end()});
  throw UsageError("unknown onnx subcommand '" + args[0] + "'; expected export\n" + kUsage);
}

}  // namespace tr::cli
