// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's op -> kernel table: oneDNN's dense ops and the AMX tile
// kernels here, the rest from a build of our own kernels.
#include "backends/cpu/cpu_kernels.h"

#include "backends/cpu/kernels/dense.h"
#include "backends/cpu/kernels/half_staging.h"
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

struct TileKernel {
  Kernel kernel = nullptr;
  bool (*takes)(const KernelArgs&) = nullptr;
};

TileKernel tile_kernel(ComputeOp op) noexcept {
  switch (op) {
    case ComputeOp::ATTENTION_FWD:
      return {tile_attention_fwd, tile_attention_takes};
    case ComputeOp::ATTENTION_BWD:
      return {tile_attention_bwd, tile_attention_takes};
    default:
      return {};
  }
}

}  // namespace

bool has_tile_kernel(ComputeOp op) noexcept {
  return tile_kernel(op).kernel != nullptr;
}

Kernel launch_kernel(const KernelArgs& a, const OwnKernels& own, bool matrix_tiles) {
  const GraphNode& node = *a.node;
  if (node.kind != NodeKind::COMPUTE) return range_kernel(node.range_op, own);
  if (matrix_tiles) {
    const TileKernel t = tile_kernel(node.op);
    if (t.kernel && t.takes(a)) return t.kernel;
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
