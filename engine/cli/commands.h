// SPDX-License-Identifier: GPL-3.0-or-later
// The subcommands of renaissance-cli. Each takes its arguments after the
// subcommand name and returns the process exit code (0 ok, 1 failed, 2 usage).
#pragma once

#include <string>
#include <vector>

namespace tr::cli {

int cmd_plan(const std::vector<std::string>& args);
int cmd_devices(const std::vector<std::string>& args);
int cmd_train(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_runs(const std::vector<std::string>& args);
int cmd_layers(const std::vector<std::string>& args);
int cmd_settings(const std::vector<std::string>& args);
int cmd_onnx(const std::vector<std::string>& args);
int cmd_predict(const std::vector<std::string>& args);

}  // namespace tr::cli
