// SPDX-License-Identifier: GPL-3.0-or-later
// The convolution and linear layers of the sample CNNs on 28x28x1 Fashion-MNIST
// (projects/*.json), for the kernel benchmarks that time them one by one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace tr::bench {

struct ConvLayer {
  const char* name;
  int64_t h, w, ci, co, k, stride, pad;
  bool bias, first;
};

struct LinearLayer {
  const char* name;
  int64_t in, out;
  bool bias;
};

struct ZooModel {
  const char* name;
  std::vector<ConvLayer> convs;
  std::vector<LinearLayer> linears;
};

// The kernel benchmarks' options: [--batch N] [--repeat N] [--model NAME].
struct ZooOptions {
  int64_t batch = 128;
  int repeat = 30;
  std::string model;  // empty: all
};

// False (with the usage on stderr, naming `tool`) for anything else.
inline bool parse_zoo_options(int argc, char** argv, const char* tool, ZooOptions& o) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
      o.batch = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
      o.repeat = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc)
      o.model = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--batch N] [--repeat N] [--model NAME]\n", tool);
      return false;
    }
  }
  return true;
}

inline std::vector<ZooModel> zoo_models() {
  return {
      {"lenet",
       {{"conv1", 28, 28, 1, 6, 5, 1, 2, true, true},
        {"conv2", 14, 14, 6, 16, 5, 1, 0, true, false}},
       {{"fc1", 400, 120, true}, {"fc2", 120, 84, true}, {"fc3", 84, 10, true}}},
      {"resnet8",
       {{"conv1", 28, 28, 1, 16, 3, 1, 1, false, true},
        {"s1b1_conv1", 28, 28, 16, 16, 3, 1, 1, false, false},
        {"s1b1_conv2", 28, 28, 16, 16, 3, 1, 1, false, false},
        {"s2b1_conv1", 28, 28, 16, 32, 3, 2, 1, false, false},
        {"s2b1_conv2", 14, 14, 32, 32, 3, 1, 1, false, false},
        {"s2b1_sc_conv", 28, 28, 16, 32, 1, 2, 0, false, false},
        {"s3b1_conv1", 14, 14, 32, 64, 3, 2, 1, false, false},
        {"s3b1_conv2", 7, 7, 64, 64, 3, 1, 1, false, false},
        {"s3b1_sc_conv", 14, 14, 32, 64, 1, 2, 0, false, false}},
       {{"fc", 64, 10, true}}},
      {"cnn-bn",
       {{"conv1", 28, 28, 1, 32, 3, 1, 1, false, true},
        {"conv2", 28, 28, 32, 32, 3, 1, 1, false, false},
        {"conv3", 14, 14, 32, 64, 3, 1, 1, false, false},
        {"conv4", 14, 14, 64, 64, 3, 1, 1, false, false}},
       {{"fc", 64, 10, true}}},
  };
}

}  // namespace tr::bench
