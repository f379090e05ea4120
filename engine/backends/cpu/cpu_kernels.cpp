// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's op -> kernel table: oneDNN's dense ops and the kernels
// written for the CPU's bfloat16 instructions here, the rest from a build of
// our own kernels.
#include "backends/cpu/cpu_kernels.h"

#include "backends/cpu/kernels/dense.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/native_bf16.h"
#include "backends/cpu/kernels/tile_attention.h"

namespace tr::cpu {

namespace {

Kernel dense_kernel(ComputeOp op) noexcept {
  switch (op) {
    case ComputeOp::CONV_FWD:
      return conv_fwd;
    case ComputeOp::CONV_BWD:
      return conv_bwd;
    case ComputeOp::CONV_BWD_FIRST:
      return conv_bwd_first;
    case ComputeOp::LINEAR_FWD:
      return linear_fwd;
    case ComputeOp::LINEAR_BWD:
      return linear_bwd;
    case ComputeOp::LINEAR_BWD_FIRST:
      return linear_bwd_first;
    default:  // own_kernels.cpp's switch lists every op
      return nullptr;
  }
}

// A kernel written for the CPU's bfloat16 instructions, the launches it
// takes, and whether this CPU runs it.
struct NativeKernel {
  Kernel kernel = nullptr;
  bool (*takes)(const KernelArgs&) = nullptr;
  bool (*usable)() noexcept = nullptr;
};

NativeKernel native_kernel(ComputeOp op) noexcept {
  switch (op) {
    case ComputeOp::ATTENTION_FWD:
      return {tile_attention_fwd, tile_attention_takes, matrix_tiles_usable};
    case ComputeOp::ATTENTION_BWD:
      return {tile_attention_bwd, tile_attention_takes, matrix_tiles_usable};
    case ComputeOp::LAYER_NORM_FWD:
      return {native_layer_norm_fwd, native_layer_norm_takes, native_bf16_usable};
    case ComputeOp::LAYER_NORM_BWD:
      return {native_layer_norm_bwd, native_layer_norm_takes, native_bf16_usable};
    case ComputeOp::ACTIVATION_FWD:
      return {native_gelu_fwd, native_gelu_takes, native_bf16_usable};
    case ComputeOp::ACTIVATION_BWD:
      return {native_gelu_bwd, native_gelu_takes, native_bf16_usable};
    default:
      return {};
  }
}

}  // namespace

bool has_native_kernel(ComputeOp op) noexcept {
  return native_kernel(op).kernel != nullptr;
}

bool native_kernel_runs_here(ComputeOp op) noexcept {
  const NativeKernel k = native_kernel(op);
  return k.kernel && k.usable();
}

Kernel launch_kernel(const KernelArgs& a, const OwnKernels& own, bool native_bf16) {
  const GraphNode& node = *a.node;
  if (node.kind != NodeKind::COMPUTE) return range_kernel(node.range_op, own);
  if (native_bf16) {
    const NativeKernel k = native_kernel(node.op);
    if (k.kernel && k.usable() && k.takes(a)) return k.kernel;
  }
  return compute_kernel(node.op, own);
}

Kernel compute_kernel(ComputeOp op, const OwnKernels& own) noexcept {
  if (const Kernel k = dense_kernel(op)) return k;
  return own.compute(op);
}

Kernel range_kernel(RangeOp op, const OwnKernels& own) noexcept {
  return own.range(op);
}

uint64_t kernel_workspace_bytes(const KernelArgs& a) {
  if (!a.node || a.node->kind != NodeKind::COMPUTE) return 0;
  return detail::staging_bytes_16bit(a);
}

}  // namespace tr::cpu
