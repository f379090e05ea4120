// SPDX-License-Identifier: GPL-3.0-or-later
// All-reduce bandwidth between two processes on loopback for ResNet-50's
// gradient size (~100 MB of FP32): Gloo's own ring all-reduce (its file
// store and full-mesh connect, as Gloo's examples set it up) against ours
// (the CPU backend's collectives over net/gloo_mesh.h, as training runs
// them: the TCP rendezvous; an all-to-all of chunks, each process summing
// its chunk in rank order for the bits of one process, then an all-gather
// of the sums), the same buffer in the same run.
// Prints the median of the rounds and the ratio. Not a test.
// Usage: bench_gloo_allreduce [MEGABYTES=100] [ROUNDS=5]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "backends/cpu/collectives.h"
#include "net/gloo_mesh.h"
#include "net/tcp_rendezvous.h"

namespace {

using Clock = std::chrono::steady_clock;

double median_ms(int rounds, const std::function<void()>& once) {
  once();  // warm-up: connections and buffers
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    once();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// One process's part: both all-reduces over `count` floats; node 0 prints.
int run(int node, size_t count, int rounds, const std::string& store_dir, uint16_t port) {
  std::vector<float> data(count, 1.0f + static_cast<float>(node));
  // Gloo's own setup and its default (ring) all-reduce.
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(node, 2);
  context->connectFullMesh(store, device);
  const double gloo_ms = median_ms(rounds, [&] {
    gloo::AllreduceOptions o(context);
    o.setOutput(data.data(), count);
    o.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(o);
  });
  // Ours, started through our rendezvous.
  auto mesh = std::make_shared<tr::net::GlooMesh>(2, node, "127.0.0.1", std::chrono::seconds(120));
  tr::net::RendezvousOptions ro;
  ro.address = "127.0.0.1:" + std::to_string(port);
  ro.nodes = 2;
  ro.node_rank = node;
  ro.fingerprint = "bench";
  ro.node_blob = mesh->addresses();
  mesh->connect(tr::net::rendezvous(ro).node_blobs);
  tr::cpu::Collectives across(1, mesh);
  const double ours_ms =
      median_ms(rounds, [&] { across.all_reduce(0, data.data(), count, false); });
  if (node == 0) {
    const double mb = static_cast<double>(count) * 4 / 1e6;
    std::printf("all-reduce of %.1f MB between 2 processes on 127.0.0.1 (median of %d)\n", mb,
                rounds);
    std::printf("  Gloo's ring all-reduce:                         %8.1f ms  %6.2f GB/s\n", gloo_ms,
                mb / gloo_ms);
    std::printf(
        "  ours (all-to-all, rank-order sums, all-gather): %8.1f ms  %6.2f GB/s  = %.2fx Gloo's "
        "time\n",
        ours_ms, mb / ours_ms, ours_ms / gloo_ms);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const double megabytes = argc > 1 ? std::atof(argv[1]) : 100.0;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  if (megabytes <= 0 || rounds < 1) {
    std::fprintf(stderr, "usage: bench_gloo_allreduce [MEGABYTES=100] [ROUNDS=5]\n");
    return 2;
  }
  const auto count = static_cast<size_t>(megabytes * 1e6 / 4);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gloo-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  tr::net::RendezvousOptions probe;
  probe.address = "127.0.0.1:0";
  probe.nodes = 2;
  const uint16_t port = tr::net::RendezvousServer(probe).port();
  const pid_t child = ::fork();
  if (child == 0) ::_exit(run(1, count, rounds, dir.string(), port));
  const int code = run(0, count, rounds, dir.string(), port);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::filesystem::remove_all(dir);
  return code != 0 ? code : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
