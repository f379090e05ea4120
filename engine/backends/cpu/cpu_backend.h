// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend: CUDA's execution model on host threads. Per rank, five
// streams (worker threads with FIFO work), events, stream capture into a
// dependency graph and graph replay, one zero-filled arena of exactly the
// plan's bytes, and in-process collectives between ranks.
#pragma once

#include <cstdint>
#include <memory>

#include "core/process_group.h"
#include "runtime/backend.h"

namespace tr::cpu {

struct OwnKernels;

struct CpuBackendOptions {
  int world = 1;  // the rank threads of this process
  // Prove at every end_capture that the recorded edges order each pair of
  // launches touching the same bytes (a missing barrier throws).
  bool check_dependencies = true;
  // Prove, as the host issues work, that units no stream or event orders
  // touch disjoint bytes, and that every read of a step-local tensor finds
  // the bytes last written as that tensor (StepChecker). On in tests; a
  // training run switches it off, since it costs time on every step.
  bool check_step_schedule = true;
  // Run each compute graph once before capturing it, as the CUDA backend
  // does (Backend::warm_up_before_capture): for tests that show it changes
  // no result.
  bool warm_up_before_capture = false;
  // The build of our own kernels to run (kernel_builds.h); nullptr: the
  // widest that runs here. For tests that compare the builds.
  const OwnKernels* kernels = nullptr;
  // Run the kernels written for the CPU's bfloat16 instructions (AMX tiles,
  // AVX-512 BF16 with FMA; cpu_kernels.h) for the BF16 launches they take,
  // where the CPU has them; off for tests that compare our own kernels' builds.
  bool native_bf16 = true;
  // The device mesh's tensor dimension: consecutive groups of this many
  // ranks run the tensor-parallel collectives (CommGroup::Tensor), the
  // ranks with one tensor index the data-parallel ones.
  int tensor = 1;
  // The run's other processes, each with `world` ranks (training across
  // processes and machines, net/gloo_mesh.h); none: this process is the world.
  std::shared_ptr<ProcessGroup> processes = nullptr;
};

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options);

struct CpuGraph;
// The graph a CPU backend captured (for tests and the graph inspector);
// nullptr when `backend` is not a CPU backend.
const CpuGraph* captured_graph(Backend& backend, int rank, GraphHandle graph);
// Bytes of the kernel workspace `stream` has on `rank` (0 while none of its
// kernels needed one, or when `backend` is not a CPU backend). For tests.
uint64_t stream_workspace_bytes(Backend& backend, int rank, StreamKind stream);

}  // namespace tr::cpu
