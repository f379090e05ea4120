// SPDX-License-Identifier: GPL-3.0-or-later
// cuBLAS and cuDNN handles per (device, stream): see stream_handles.h.
//
// cuBLAS workspace: each call points its handle at the stream's
// StreamWorkspace instead of giving every handle a fixed buffer. The stream
// workspace is already sized to the largest need of the kernels on that
// stream, and kernels on one stream run one after another, so sharing it
// costs no memory beyond the largest need; it also outlives every graph that
// captured a pointer to it (the backend retires replaced workspaces, never
// frees them). A user workspace matters under capture too: without one cuBLAS
// may allocate from its own pool inside the captured region.
#include "backends/cuda/stream_handles.h"

#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "backends/cuda/cuda_check.h"

namespace tr::cuda {

namespace {

struct Entry {
  int device = 0;
  cublasHandle_t blas = nullptr;  // both made when the stream is adopted
  cudnnHandle_t dnn = nullptr;
};

// Streams of every live StreamHandles. One map for the process, as a launcher
// knows only its stream; a mutex, as rank threads launch side by side.
struct Registry {
  std::mutex mutex;
  std::unordered_map<cudaStream_t, Entry> entries;
};

Registry& registry() {
  static Registry r;
  return r;
}

// The entry of `stream`, checked; call with the registry locked.
Entry& entry_of(Registry& r, cudaStream_t stream, int device) {
  auto it = r.entries.find(stream);
  if (it == r.entries.end())
    throw std::logic_error("stream handles: a launch on a stream without a handle owner");
  Entry& e = it->second;
  // Both libraries bind a handle to the device current at its creation.
  if (device != e.device)
    throw std::logic_error("stream handles: a stream of device " + std::to_string(e.device) +
                           " used " + device_text(device));
  return e;
}

}  // namespace

void check_cublas(cublasStatus_t status, const char* call, int device) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("cuBLAS error in ") + call + " " + device_text(device) +
                           ": " + cublasGetStatusString(status) + " (" +
                           cublasGetStatusName(status) + ")");
}

void check_cudnn(cudnnStatus_t status, const char* call, int device) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("cuDNN error in ") + call + " " + device_text(device) +
                           ": " + cudnnGetErrorString(status));
}

StreamHandles::~StreamHandles() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (cudaStream_t s : streams_) {
    auto it = r.entries.find(s);
    if (it == r.entries.end()) continue;
    if (it->second.blas) (void)cublasDestroy(it->second.blas);
    if (it->second.dnn) (void)cudnnDestroy(it->second.dnn);
    r.entries.erase(it);
  }
}

void StreamHandles::adopt(cudaStream_t stream) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.entries.try_emplace(stream, Entry{device_, nullptr, nullptr}).second)
    throw std::logic_error("stream handles: a stream was adopted twice");
  streams_.push_back(stream);
  // Both handles now, with the stream: creating one allocates and may
  // synchronise, which would invalidate a capture under way.
  Entry& e = r.entries.at(stream);
  cublasHandle_t blas = nullptr;
  check_cublas(cublasCreate(&blas), "cublasCreate", device_);
  e.blas = blas;  // owned from here: the destructor frees it on any failure below
  check_cublas(cublasSetStream(blas, stream), "cublasSetStream", device_);
  cudnnHandle_t dnn = nullptr;
  check_cudnn(cudnnCreate(&dnn), "cudnnCreate", device_);
  e.dnn = dnn;
  check_cudnn(cudnnSetStream(dnn, stream), "cudnnSetStream", device_);
}

cublasHandle_t cublas_handle(cudaStream_t stream, const StreamWorkspace& workspace) {
  const int device = current_device();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  Entry& e = entry_of(r, stream, device);
  if (!e.blas) throw std::logic_error("stream handles: no cuBLAS handle for an adopted stream");
  // Every call: the stream's workspace may have been replaced by a larger one.
  check_cublas(cublasSetWorkspace(e.blas, workspace.data, workspace.bytes), "cublasSetWorkspace",
               device);
  return e.blas;
}

cudnnHandle_t cudnn_handle(cudaStream_t stream) {
  const int device = current_device();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  Entry& e = entry_of(r, stream, device);
  if (!e.dnn) throw std::logic_error("stream handles: no cuDNN handle for an adopted stream");
  return e.dnn;
}

uint64_t cublas_workspace_bytes() {
  int major = 0;
  TR_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, current_device()),
                current_device());
  return major >= 9 ? uint64_t{32} << 20 : uint64_t{4} << 20;
}

}  // namespace tr::cuda
