// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cuda/token_launchers.h"

#include <initializer_list>
#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/operand_checks.h"
#include "backends/cuda/token_kernels.h"

namespace tr::cuda::tokens {

namespace {

// The map of token map `x` (the op's input side), its rows `features`'
// stride, which every feature operand shares.
TokenMap map_of(const char* op, const KernelArgs& a, const TensorArg& x,
                std::initializer_list<Operand> features, std::initializer_list<Operand> params) {
  TokenMap m;
  m.elem = common_elem(op, a, features);
  for (const Operand& p : params) {
    if (!p.t->data) continue;
    if (float_elem(op, a, *p.t, p.name) != m.elem)
      fail_operand(op, a, std::string(p.name) + " should be stored as the features are");
    require_compact(op, a, p);
  }
  m.stride = features.begin()->t->desc->padded_c();
  require_stride(op, a, m.stride, features);
  const Shape& s = x.shape();
  m.n = s.n;
  m.positions = s.h * s.w;
  m.channels = s.c;
  return m;
}

void* out_or_null(const KernelArgs& a, size_t i) {
  return has_out(a, i) ? a.out[i].data : nullptr;
}

void launched(cudaError_t err, const char* op) {
  check_cuda(err, op, current_device());
}

}  // namespace

void pos_embed_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "POS_EMBED_FWD";
  check_counts(op, a, 2, 2, 1, 1);
  const TokenMap m =
      map_of(op, a, a.in[0], {{&a.in[0], "x"}, {&a.out[0], "y"}}, {{&a.in[1], "the embedding"}});
  launched(launch_pos_embed_fwd(m, a.in[0].data, a.in[1].data, a.out[0].data, stream), op);
}

void pos_embed_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "POS_EMBED_BWD";
  check_counts(op, a, 1, 1, 2, 2);
  const TokenMap m = map_of(op, a, a.in[0], {{&a.in[0], "dy"}, {&a.out[1], "dx"}},
                            {{&a.out[0], "the embedding's gradient"}});
  launched(launch_pos_embed_bwd(m, a.in[0].data, out_or_null(a, 0), a.accumulate(0),
                                out_or_null(a, 1), a.accumulate(1), stream),
           op);
}

void class_token_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "CLASS_TOKEN_FWD";
  check_counts(op, a, 2, 2, 1, 1);
  const TokenMap m =
      map_of(op, a, a.in[0], {{&a.in[0], "x"}, {&a.out[0], "y"}}, {{&a.in[1], "the token"}});
  launched(launch_class_token_fwd(m, a.in[0].data, a.in[1].data, a.out[0].data, stream), op);
}

void class_token_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "CLASS_TOKEN_BWD";
  check_counts(op, a, 1, 1, 2, 2);
  if (!has_out(a, 1)) fail_operand(op, a, "needs dx's shape: the token map it writes back into");
  const TokenMap m = map_of(op, a, a.out[1], {{&a.in[0], "dy"}, {&a.out[1], "dx"}},
                            {{&a.out[0], "the token's gradient"}});
  launched(launch_class_token_bwd(m, a.in[0].data, out_or_null(a, 0), a.accumulate(0),
                                  a.out[1].data, a.accumulate(1), stream),
           op);
}

void token_pool_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "TOKEN_POOL_FWD";
  check_counts(op, a, 1, 1, 1, 1);
  const TokenMap m = map_of(op, a, a.in[0], {{&a.in[0], "x"}, {&a.out[0], "y"}}, {});
  launched(launch_token_pool_fwd(m, a.in[0].data, a.out[0].data, stream), op);
}

void token_pool_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "TOKEN_POOL_BWD";
  check_counts(op, a, 1, 1, 1, 1);
  if (!has_out(a, 0)) return;
  const TokenMap m = map_of(op, a, a.out[0], {{&a.in[0], "dy"}, {&a.out[0], "dx"}}, {});
  launched(launch_token_pool_bwd(m, a.in[0].data, a.out[0].data, a.accumulate(0), stream), op);
}

}  // namespace tr::cuda::tokens
