// SPDX-License-Identifier: GPL-3.0-or-later
// renaissance-cli: the headless face of the engine. Every user error ends in
// one clear message and a non-zero exit code.
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <renaissance/error.h>
#include "commands.h"

namespace {

constexpr const char* kMainUsage =
    "usage: renaissance-cli <command> [options]\n"
    "commands:\n"
    "  plan <project.json>   compile a project and print its memory plan (--help for options)\n"
    "  train <project.json>  train it (--help for options)\n"
    "  bench <project.json>  time training steps, one JSON line with --json\n"
    "  runs <subcommand>     the run history: list, show, compare, export, note, tag, delete\n"
    "  devices               list the CPU and the CUDA devices this machine offers\n"
    "  layers                the layer types a project may use, with their parameters\n"
    "  settings              the dataset and training settings a project may set\n"
    "  predict <project.json>  classify images with a trained model (--help for options)\n"
    "  onnx export <project.json>  a trained model as an ONNX file (--help for options)\n"
    "  onnx import <model.onnx>    an ONNX model as a project and checkpoint; onnx ops: what it "
    "takes\n"
    "  version               print the engine version\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("renaissance-cli: missing the command; the commands are below\n", stderr);
    std::fputs(kMainUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "plan") return tr::cli::cmd_plan(args);
    if (command == "devices") return tr::cli::cmd_devices(args);
    if (command == "train") return tr::cli::cmd_train(args);
    if (command == "bench") return tr::cli::cmd_bench(args);
    if (command == "runs") return tr::cli::cmd_runs(args);
    if (command == "layers") return tr::cli::cmd_layers(args);
    if (command == "settings") return tr::cli::cmd_settings(args);
    if (command == "onnx") return tr::cli::cmd_onnx(args);
    if (command == "predict") return tr::cli::cmd_predict(args);
    if (command == "version") {
      std::printf("renaissance-cli %s\n", TR_VERSION);
      return 0;
    }
    if (command == "--help" || command == "-h" || command == "help") {
      std::fputs(kMainUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "renaissance-cli: unknown command '%s'\n%s", command.c_str(), kMainUsage);
    return 2;
  } catch (const tr::ProjectError& e) {
    std::fprintf(stderr, "renaissance-cli %s: the project has %zu problem%s:\n", command.c_str(),
                 e.diagnostics().size(), e.diagnostics().size() == 1 ? "" : "s");
    for (const tr::Diagnostic& d : e.diagnostics()) std::fprintf(stderr, "  %s\n", d.str().c_str());
    return 1;
  } catch (const tr::UsageError& e) {
    std::fprintf(stderr, "renaissance-cli %s: %s\n", command.c_str(), e.what());
    return 2;
  } catch (const std::logic_error& e) {
    std::fprintf(stderr, "renaissance-cli %s: internal error: %s\n", command.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "renaissance-cli %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
