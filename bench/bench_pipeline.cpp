// SPDX-License-Identifier: GPL-3.0-or-later
// How many images per second the host input pipeline produces for an
// ImageNet-size synthetic batch (ResNet-50's input), by fill threads and
// dtype: the ceiling the host puts on a GPU's training throughput.
//
//   bench_pipeline [--batch 256] [--batches 8] [--threads 1,2,N]
//   -> one JSON line per (dtype, threads): images_per_s, ms_per_batch
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "data/batch_pipeline.h"
#include "data/synthetic.h"

using namespace tr;

int main(int argc, char** argv) {
  int64_t batch = 256, batches = 8;
  std::vector<int> threads{1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batches")) batches = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) {
      threads.clear();
      std::stringstream s(argv[i + 1]);
      for (std::string t; std::getline(s, t, ',');) threads.push_back(std::atoi(t.c_str()));
    } else {
      std::fprintf(stderr, "usage: bench_pipeline [--batch B] [--batches N] [--threads 1,2,...]\n");
      return 2;
    }
  }
  const SyntheticSource source(224, 224, 3, 1000, batch * (batches + 1), batch, 1);
  for (DType dtype : {DType::FP16, DType::FP32})
    for (int t : threads) {
      BatchSpec spec;
      spec.batch = batch;
      spec.mean = {0.485, 0.456, 0.406};
      spec.std = {0.229, 0.224, 0.225};
      spec.dtype = dtype;
      spec.fill_threads = t;
      BatchPipeline pipeline(source, Split::Train, spec);
      // The first batch includes start-up; time the rest.
      pipeline.release(pipeline.next());
      const auto t0 = std::chrono::steady_clock::now();
      int64_t done = 0;
      for (; done < batches - 1; ++done) {
        const Batch* b = pipeline.next();
        if (!b) break;
        pipeline.release(b);
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf(
          "{\"dtype\": \"%s\", \"fill_threads\": %d, \"batch\": %lld, \"ms_per_batch\": %.1f, "
          "\"images_per_s\": %.0f}\n",
          dtype == DType::FP16 ? "fp16" : "fp32", t, static_cast<long long>(batch),
          1000 * s / static_cast<double>(done), static_cast<double>(done * batch) / s);
    }
  return 0;
}
