// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cuda/attention_launchers.h"

#include <stdexcept>
#include <string>

#include "backends/cuda/attention_kernels.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/operand_checks.h"
#include "runtime/attention_dropout_args.h"

namespace tr::cuda::attention {

namespace {

AttentionShape shape_of(const char* op, const KernelArgs& a, Elem e) {
  const Shape& s = a.in[0].shape();
  AttentionShape r;
  r.heads = a.params().heads;
  if (s.c % 3 != 0)
    fail_operand(op, a,
                 "qkv holds " + std::to_string(s.c) +
                     " channels a token, not queries, keys and values of C each");
  r.channels = s.c / 3;
  if (r.heads < 1 || r.channels % r.heads != 0 || r.channels / r.heads > kAttentionMaxHeadDim)
    fail_operand(op, a,
                 std::to_string(r.heads) + " heads do not split " + std::to_string(r.channels) +
                     " channels into heads of at most " + std::to_string(kAttentionMaxHeadDim));
  r.n = s.n;
  r.tokens = s.h * s.w;
  r.qkv_stride = a.in[0].desc->padded_c();
  r.elem = e;
  return r;
}

void require_lse(const char* op, const KernelArgs& a, const TensorArg& t, const AttentionShape& s) {
  require_f32(op, a, t, "lse");
  if (t.data && t.shape().elements() != s.n * s.tokens * s.heads)
    fail_operand(op, a,
                 "lse holds " + std::to_string(t.shape().elements()) + " values, not one for " +
                     "each of " + std::to_string(s.heads) + " heads of " +
                     std::to_string(s.n * s.tokens) + " tokens");
}

// The layer's dropout, on in a training forward (one that saves lse) and its backward.
AttentionDropout dropout_of(const KernelArgs& a, const AttentionShape& s, bool training) {
  AttentionDropout d;
  d.draw = attention_dropout_args(a, training);
  if (!d.draw.on) return d;
  d.first_sample = a.global_sample(0, s.n);
  d.step = a.scalars ? a.scalars + static_cast<int>(ScalarSlot::STEP) : nullptr;
  return d;
}

void launched(cudaError_t err, const char* op) {
  check_cuda(err, op, current_device());
}

}  // namespace

void fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "ATTENTION_FWD";
  check_counts(op, a, 1, 1, 1, 2);
  const Elem e = common_elem(op, a, {{&a.in[0], "qkv"}, {&a.out[0], "o"}});
  AttentionShape s = shape_of(op, a, e);
  s.o_stride = a.out[0].desc->padded_c();
  if (a.out.size() > 1) require_lse(op, a, a.out[1], s);
  float* lse = has_out(a, 1) ? a.out[1].f32() : nullptr;
  launched(launch_attention_fwd(s, a.in[0].data, a.out[0].data, lse,
                                dropout_of(a, s, lse != nullptr), stream),
           op);
}

void bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "ATTENTION_BWD";
  check_counts(op, a, 4, 4, 1, 1);
  if (!has_out(a, 0)) return;
  const Elem e = common_elem(
      op, a, {{&a.in[0], "qkv"}, {&a.in[1], "o"}, {&a.in[3], "do"}, {&a.out[0], "dqkv"}});
  AttentionShape s = shape_of(op, a, e);
  s.o_stride = a.in[1].desc->padded_c();
  require_stride(op, a, s.qkv_stride, {{&a.out[0], "dqkv"}});
  require_stride(op, a, s.o_stride, {{&a.in[3], "do"}});
  require_lse(op, a, a.in[2], s);
  const uint64_t need = attention_workspace_bytes(s);
  if (!a.workspace || a.workspace->bytes < need)
    throw std::logic_error(std::string("CUDA backend: ") + op + " launched without its workspace");
  launched(launch_attention_bwd(s, a.in[0].data, a.in[1].data, a.in[2].f32(), a.in[3].data,
                                a.out[0].data, a.accumulate(0), dropout_of(a, s, true),
                                a.workspace->data, stream),
           op);
}

uint64_t workspace_bytes(const KernelArgs& a) {
  if (!a.node || a.node->kind != NodeKind::COMPUTE || a.node->op != ComputeOp::ATTENTION_BWD ||
      a.in.empty() || !a.in[0].desc)
    return 0;
  const Shape& s = a.in[0].shape();
  AttentionShape r;
  r.n = s.n;
  r.tokens = s.h * s.w;
  r.heads = a.params().heads;
  return attention_workspace_bytes(r);
}

}  // namespace tr::cuda::attention
