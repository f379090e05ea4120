// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cuda/layer_norm_launchers.h"

#include <stdexcept>
#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/layer_norm_kernels.h"
#include "backends/cuda/operand_checks.h"

namespace tr::cuda::layer_norm {

namespace {

LayerNormRows rows_of(const KernelArgs& a, Elem e) {
  const Shape& s = a.in[0].shape();
  LayerNormRows r;
  r.rows = s.n * s.h * s.w;
  r.channels = s.c;
  r.stride = a.in[0].desc->padded_c();
  r.elem = e;
  r.eps = a.params().eps;
  return r;
}

// The saved statistics: two FP32 values a row.
void require_saved(const char* op, const KernelArgs& a, const TensorArg& t,
                   const LayerNormRows& r) {
  require_f32(op, a, t, "the saved statistics");
  if (t.data && t.shape().elements() != 2 * r.rows)
    fail_operand(op, a,
                 "the saved statistics hold " + std::to_string(t.shape().elements()) +
                     " values, not 2 for each of " + std::to_string(r.rows) + " rows");
}

void launched(cudaError_t err, const char* op) {
  check_cuda(err, op, current_device());
}

}  // namespace

void fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "LAYER_NORM_FWD";
  check_counts(op, a, 3, 3, 2, 2);
  const Elem e = feature_elem(op, a, {{&a.in[0], "x"}, {&a.out[0], "y"}},
                              {{&a.in[1], "gamma"}, {&a.in[2], "beta"}});
  const LayerNormRows r = rows_of(a, e);
  require_saved(op, a, a.out[1], r);
  launched(launch_layer_norm_fwd(r, a.in[0].data, a.in[1].f32(), a.in[2].f32(), a.out[0].data,
                                 has_out(a, 1) ? a.out[1].f32() : nullptr, stream),
           op);
}

void bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "LAYER_NORM_BWD";
  check_counts(op, a, 4, 4, 3, 3);
  const Elem e = feature_elem(op, a, {{&a.in[0], "x"}, {&a.in[3], "dy"}, {&a.out[2], "dx"}},
                              {{&a.in[1], "gamma"}, {&a.out[0], "dgamma"}, {&a.out[1], "dbeta"}});
  LayerNormBwd b;
  b.rows = rows_of(a, e);
  require_saved(op, a, a.in[2], b.rows);
  b.x = a.in[0].data;
  b.gamma = a.in[1].f32();
  b.saved = a.in[2].f32();
  b.dy = a.in[3].data;
  b.dgamma = has_out(a, 0) ? a.out[0].f32() : nullptr;
  b.dbeta = has_out(a, 1) ? a.out[1].f32() : nullptr;
  b.dx = has_out(a, 2) ? a.out[2].data : nullptr;
  b.accumulate_dgamma = a.accumulate(0);
  b.accumulate_dbeta = a.accumulate(1);
  b.accumulate_dx = a.accumulate(2);
  if (b.dgamma || b.dbeta) {
    const uint64_t need = layer_norm_workspace_bytes(b.rows.rows, b.rows.channels);
    if (!a.workspace || a.workspace->bytes < need)
      throw std::logic_error(std::string("CUDA backend: ") + op +
                             " launched without its workspace");
    b.workspace = a.workspace->data;
  }
  launched(launch_layer_norm_bwd(b, stream), op);
}

uint64_t workspace_bytes(const KernelArgs& a) {
  if (!a.node || a.node->kind != NodeKind::COMPUTE || a.node->op != ComputeOp::LAYER_NORM_BWD ||
      a.in.empty() || !a.in[0].desc)
    return 0;
  const Shape& s = a.in[0].shape();
  return layer_norm_workspace_bytes(s.n * s.h * s.w, s.c);
}

}  // namespace tr::cuda::layer_norm
