// SPDX-License-Identifier: GPL-3.0-or-later
// cuBLAS and cuDNN handles per (device, stream), as ENGINE.md §4 asks: a
// handle bound to one stream for life means a launch never rebinds a handle
// another stream may be using, and both libraries' results stay reproducible
// (each documents run-to-run identical results for a handle used on one stream).
//
// The backend owns one StreamHandles per device and adopts its streams; a
// launcher, which only sees its stream, finds the handles through
// cublas_handle(stream) and cudnn_handle(stream). Handles are created when
// a stream is adopted, never later: creating one allocates and may
// synchronise, which would invalidate a stream capture under way.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <vector>

#include "runtime/kernel_args.h"

namespace tr::cuda {

class StreamHandles {
 public:
  explicit StreamHandles(int device) : device_(device) {}
  // Destroys the handles: call after the streams have drained, before they go.
  ~StreamHandles();
  StreamHandles(const StreamHandles&) = delete;
  StreamHandles& operator=(const StreamHandles&) = delete;

  // Creates `stream`'s cuBLAS and cuDNN handles (on this object's device,
  // which must be current); launches on it find them here until this object goes.
  void adopt(cudaStream_t stream);

 private:
  int device_;
  std::vector<cudaStream_t> streams_;
};

// The cuBLAS handle of `stream`, with its workspace set
// to the stream's workspace. Throws std::logic_error for a stream no
// StreamHandles adopted, or one used from another device; std::runtime_error
// when cuBLAS fails.
cublasHandle_t cublas_handle(cudaStream_t stream, const StreamWorkspace& workspace);

// The cuDNN handle of `stream` (cuDNN takes its workspace per call). Throws
// as cublas_handle does.
cudnnHandle_t cudnn_handle(cudaStream_t stream);

// Stream workspace bytes to ask for a cuBLAS call: NVIDIA's recommendation
// for the current device (32 MiB on Hopper and later, 4 MiB before).
uint64_t cublas_workspace_bytes();

// Throw std::runtime_error naming the call and device unless `status` is success.
void check_cublas(cublasStatus_t status, const char* call, int device);
void check_cudnn(cudnnStatus_t status, const char* call, int device);

}  // namespace tr::cuda
