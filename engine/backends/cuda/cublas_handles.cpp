// SPDX-License-Identifier: GPL-3.0-or-later
// cuBLAS handles per (device, stream): see cublas_handles.h.
//
// Workspace: each call points its handle at the stream's StreamWorkspace
// instead of giving every handle a fixed buffer. The stream workspace is
// already sized to the largest need of the kernels on that stream, and
// kernels on one stream run one after another, so sharing it costs no
// memory beyond the largest need; it also outlives every graph that captured
// a pointer to it (the backend retires replaced workspaces, never frees
// them). A user workspace matters under capture too: without one cuBLAS may
// allocate from its own pool inside the captured region.
#include "backends/cuda/cublas_handles.h"

#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "backends/cuda/cuda_check.h"

namespace tr::cuda {

namespace {

struct Entry {
  int device = 0;
  cublasHandle_t handle = nullptr;  // null until the first launch on the stream
};

// Streams of every live CublasHandles. One map for the process, as a launcher
// knows only its stream; a mutex, as rank threads launch side by side.
struct Registry {
  std::mutex mutex;
  std::unordered_map<cudaStream_t, Entry> entries;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void check_cublas(cublasStatus_t status, const char* call, int device) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("cuBLAS error in ") + call + " " + device_text(device) +
                           ": " + cublasGetStatusString(status) + " (" +
                           cublasGetStatusName(status) + ")");
}

CublasHandles::~CublasHandles() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (cudaStream_t s : streams_) {
    auto it = r.entries.find(s);
    if (it == r.entries.end()) continue;
    if (it->second.handle) (void)cublasDestroy(it->second.handle);
    r.entries.erase(it);
  }
}

void CublasHandles::adopt(cudaStream_t stream) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.entries.try_emplace(stream, Entry{device_, nullptr}).second)
    throw std::logic_error("cuBLAS handles: a stream was adopted twice");
  streams_.push_back(stream);
}

cublasHandle_t cublas_handle(cudaStream_t stream, const StreamWorkspace& workspace) {
  const int device = current_device();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(stream);
  if (it == r.entries.end())
    throw std::logic_error("cuBLAS handles: a launch on a stream without a cuBLAS handle owner");
  Entry& e = it->second;
  // cublasCreate binds the handle to the current device for life.
  if (device != e.device)
    throw std::logic_error("cuBLAS handles: a stream of device " + std::to_string(e.device) +
                           " used " + device_text(device));
  if (!e.handle) {
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cublasCreate", device);
    // Bound once: cublasSetStream also resets the workspace, set below.
    const cublasStatus_t bound = cublasSetStream(h, stream);
    if (bound != CUBLAS_STATUS_SUCCESS) (void)cublasDestroy(h);
    check_cublas(bound, "cublasSetStream", device);
    e.handle = h;
  }
  // Every call: the stream's workspace may have been replaced by a larger one.
  check_cublas(cublasSetWorkspace(e.handle, workspace.data, workspace.bytes), "cublasSetWorkspace",
               device);
  return e.handle;
}

uint64_t cublas_workspace_bytes() {
  int major = 0;
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, current_device()),
                current_device());
  return major >= 9 ? uint64_t{32} << 20 : uint64_t{4} << 20;
}

}  // namespace tr::cuda
