// SPDX-License-Identifier: GPL-3.0-or-later
// Launchers for the CUDA compute kernels in activation_kernels.cu,
// dropout_kernels.cu, pooling_kernels.cu and softmax_kernels.cu.
#include "backends/cuda/compute_launchers.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "backends/cuda/activation_kernels.h"
#include "backends/cuda/bn_launchers.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dropout_kernels.h"
#include "backends/cuda/pooling_kernels.h"
#include "backends/cuda/range_kernels.h"
#include "backends/cuda/softmax_kernels.h"

namespace tr::cuda::compute {

namespace {

void launched(cudaError_t err, const char* what) {
  check_cuda(err, what, current_device());
}

// An output slot can be absent (no gradient towards the input node).
bool has_out(const KernelArgs& a, size_t i) {
  return i < a.out.size() && a.out[i].data != nullptr;
}

bool is_half(const TensorArg& t) {
  return t.data && t.desc && t.desc->dtype == DType::FP16;
}

// The CPU stages FP16 operands through FP32; these kernels would read them
// as FP32, so until FP16 kernels exist an AMP plan must fail loudly.
void require_fp32(const KernelArgs& a, const char* op) {
  for (const TensorArg& t : a.in)
    if (is_half(t)) throw std::logic_error(std::string("CUDA backend: no FP16 kernel for ") + op);
  for (const TensorArg& t : a.out)
    if (is_half(t)) throw std::logic_error(std::string("CUDA backend: no FP16 kernel for ") + op);
}

uint64_t elements(const TensorArg& t) {
  return static_cast<uint64_t>(t.shape().elements());
}

const LayerParams& layer_params(const KernelArgs& a) {
  static const LayerParams defaults{};
  return a.layer ? a.layer->params : defaults;
}

const float* scalar_at(const KernelArgs& a, ScalarSlot s) {
  return a.scalars ? a.scalars + static_cast<int>(s) : nullptr;
}

// A copy, or an add into a gradient slot another consumer already wrote.
void copy_or_add(const KernelArgs& a, size_t out_index, const float* src, uint64_t n,
                 cudaStream_t stream, const char* op) {
  if (!has_out(a, out_index) || n == 0) return;
  float* dst = a.out[out_index].f32();
  if (a.accumulate(out_index)) {
    launched(launch_accumulate(dst, src, n, stream), op);
    return;
  }
  if (dst == src) return;
  launched(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream), op);
}

void activation_fwd(const KernelArgs& a, Activation f, cudaStream_t stream, const char* op) {
  require_fp32(a, op);
  launched(launch_activation_fwd(f, a.in[0].f32(), a.out[0].f32(), elements(a.in[0]), stream), op);
}

void activation_bwd(const KernelArgs& a, Activation f, cudaStream_t stream, const char* op) {
  if (!has_out(a, 0)) return;
  require_fp32(a, op);
  launched(launch_activation_bwd(f, a.in[0].f32(), a.in[1].f32(), a.out[0].f32(), elements(a.in[1]),
                                 a.accumulate(0), stream),
           op);
}

// The CPU twin's rows: per NHW position when the mask's channels are
// padded, else one flat row.
DropoutRows rows_of(const Shape& s, int64_t mask_c) {
  if (mask_c == s.c) return {1, s.elements(), s.elements()};
  return {s.n * s.h * s.w, s.c, mask_c};
}

uint64_t drop_threshold(double p) {
  if (!(p > 0.0)) return 0;
  if (p >= 1.0) return uint64_t{1} << 32;
  return static_cast<uint64_t>(std::llround(p * 4294967296.0));
}

float keep_scale(double p) {
  return p >= 1.0 ? 0.0f : static_cast<float>(1.0 / (1.0 - p));
}

PoolGeometry geometry(const Shape& in, const Shape& out, const LayerParams& p) {
  PoolGeometry g;
  g.n = in.n;
  g.h = in.h;
  g.w = in.w;
  g.c = in.c;
  g.oh = out.h;
  g.ow = out.w;
  g.kh = p.kernel_h;
  g.kw = p.kernel_w;
  g.sh = p.stride_h;
  g.sw = p.stride_w;
  g.ph = p.pad_h;
  g.pw = p.pad_w;
  return g;
}

void softmax_ce(const KernelArgs& a, bool backward, cudaStream_t stream, const char* op) {
  require_fp32(a, op);
  const Shape& s = a.in[0].shape();
  SoftmaxCe c;
  c.logits = a.in[0].f32();
  c.labels = a.in[1].i32();
  c.n = s.n;
  c.k = s.per_sample();
  c.result = a.out[0].f32();
  if (has_out(a, 1)) (backward ? c.grad : c.confusion) = a.out[1].f32();
  c.accumulate = a.accumulate(1);
  c.inv_n = 1.0f / static_cast<float>(s.n);
  // Under AMP the gradient is of the scaled loss, the scale read on the device.
  if (a.training && a.training->precision == Precision::AMP)
    c.loss_scale = scalar_at(a, ScalarSlot::LOSS_SCALE);
  const uint64_t need = softmax_ce_workspace_bytes(s.n);
  if (!a.workspace || a.workspace->bytes < need)
    throw std::logic_error(std::string("CUDA backend: ") + op + " launched without its workspace");
  c.workspace = a.workspace->data;
  launched(launch_softmax_ce(c, stream), op);
}

}  // namespace

void copy_labels(const KernelArgs& a, cudaStream_t stream) {
  const uint64_t n = elements(a.in[0]);
  if (n == 0 || a.out[0].data == a.in[0].data) return;
  launched(cudaMemcpyAsync(a.out[0].data, a.in[0].data, n * sizeof(int32_t),
                           cudaMemcpyDeviceToDevice, stream),
           "COPY_LABELS");
}

void identity(const KernelArgs& a, cudaStream_t stream) {
  if (a.in.empty() || a.out.empty()) return;  // nothing to copy
  require_fp32(a, "IDENTITY");
  copy_or_add(a, 0, a.in[0].f32(), elements(a.in[0]), stream, "IDENTITY");
}

void flatten(const KernelArgs& a, cudaStream_t stream) {
  require_fp32(a, "FLATTEN");
  copy_or_add(a, 0, a.in[0].f32(), elements(a.in[0]), stream, "FLATTEN");
}

void relu_fwd(const KernelArgs& a, cudaStream_t stream) {
  activation_fwd(a, Activation::RELU, stream, "RELU_FWD");
}
void relu_bwd(const KernelArgs& a, cudaStream_t stream) {
  activation_bwd(a, Activation::RELU, stream, "RELU_BWD");
}
void tanh_fwd(const KernelArgs& a, cudaStream_t stream) {
  activation_fwd(a, Activation::TANH, stream, "TANH_FWD");
}
void tanh_bwd(const KernelArgs& a, cudaStream_t stream) {
  activation_bwd(a, Activation::TANH, stream, "TANH_BWD");
}
void silu_fwd(const KernelArgs& a, cudaStream_t stream) {
  activation_fwd(a, Activation::SILU, stream, "SILU_FWD");
}
void silu_bwd(const KernelArgs& a, cudaStream_t stream) {
  activation_bwd(a, Activation::SILU, stream, "SILU_BWD");
}

void add_fwd(const KernelArgs& a, cudaStream_t stream) {
  require_fp32(a, "ADD_FWD");
  launched(launch_add(a.in[0].f32(), a.in[1].f32(), a.out[0].f32(), elements(a.out[0]), stream),
           "ADD_FWD");
}

void add_bwd(const KernelArgs& a, cudaStream_t stream) {
  require_fp32(a, "ADD_BWD");
  const uint64_t n = elements(a.in[0]);
  // In order on one stream: when both outputs are one tensor, out[1] carries
  // the accumulate flag and adds onto what out[0] just wrote.
  copy_or_add(a, 0, a.in[0].f32(), n, stream, "ADD_BWD");
  copy_or_add(a, 1, a.in[0].f32(), n, stream, "ADD_BWD");
}

void dropout_fwd(const KernelArgs& a, cudaStream_t stream) {
  require_fp32(a, "DROPOUT_FWD");
  const Shape& s = a.in[0].shape();
  const double p = layer_params(a).p;
  DropoutDraw d;
  d.seed = a.seed;
  d.layer = a.node ? a.node->layer : -1;
  d.threshold = drop_threshold(p);
  d.scale = keep_scale(p);
  // Ranks draw disjoint slices of one global batch, as on the CPU.
  d.first = static_cast<uint64_t>(a.rank) * static_cast<uint64_t>(s.elements());
  launched(launch_dropout_fwd(a.in[0].f32(), a.out[0].f32(), a.out[1].i8(),
                              rows_of(s, a.out[1].desc->padded_c()), d,
                              scalar_at(a, ScalarSlot::STEP), stream),
           "DROPOUT_FWD");
}

void dropout_bwd(const KernelArgs& a, cudaStream_t stream) {
  if (!has_out(a, 0)) return;
  require_fp32(a, "DROPOUT_BWD");
  launched(launch_dropout_bwd(a.in[0].i8(), a.in[1].f32(), a.out[0].f32(),
                              rows_of(a.in[1].shape(), a.in[0].desc->padded_c()),
                              keep_scale(layer_params(a).p), a.accumulate(0), stream),
           "DROPOUT_BWD");
}

void maxpool_fwd(const KernelArgs& a, cudaStream_t stream) {
  require_fp32(a, "MAXPOOL_FWD");
  const PoolGeometry g = geometry(a.in[0].shape(), a.out[0].shape(), layer_params(a));
  launched(launch_maxpool_fwd(g, a.in[0].f32(), a.out[0].f32(), stream), "MAXPOOL_FWD");
}

void maxpool_bwd(const KernelArgs& a, cudaStream_t stream) {
  if (!has_out(a, 0)) return;
  require_fp32(a, "MAXPOOL_BWD");
  const PoolGeometry g = geometry(a.in[0].shape(), a.in[1].shape(), layer_params(a));
  launched(launch_maxpool_bwd(g, a.in[0].f32(), a.in[1].f32(), a.in[2].f32(), a.out[0].f32(),
                              a.accumulate(0), stream),
           "MAXPOOL_BWD");
}

void avgpool_fwd(const KernelArgs& a, cudaStream_t stream) {
  require_fp32(a, "AVGPOOL_FWD");
  const PoolGeometry g = geometry(a.in[0].shape(), a.out[0].shape(), layer_params(a));
  launched(launch_avgpool_fwd(g, a.in[0].f32(), a.out[0].f32(), stream), "AVGPOOL_FWD");
}

void avgpool_bwd(const KernelArgs& a, cudaStream_t stream) {
  if (!has_out(a, 0)) return;
  require_fp32(a, "AVGPOOL_BWD");
  const PoolGeometry g = geometry(a.out[0].shape(), a.in[0].shape(), layer_params(a));
  launched(launch_avgpool_bwd(g, a.in[0].f32(), a.out[0].f32(), a.accumulate(0), stream),
           "AVGPOOL_BWD");
}

void gap_fwd(const KernelArgs& a, cudaStream_t stream) {
  require_fp32(a, "GAP_FWD");
  const Shape& s = a.in[0].shape();
  launched(launch_gap_fwd(geometry(s, s, LayerParams{}), a.in[0].f32(), a.out[0].f32(), stream),
           "GAP_FWD");
}

void gap_bwd(const KernelArgs& a, cudaStream_t stream) {
  if (!has_out(a, 0)) return;
  require_fp32(a, "GAP_BWD");
  const Shape& s = a.out[0].shape();
  launched(launch_gap_bwd(geometry(s, s, LayerParams{}), a.in[0].f32(), a.out[0].f32(),
                          a.accumulate(0), stream),
           "GAP_BWD");
}

void softmax_ce_fwd_bwd(const KernelArgs& a, cudaStream_t stream) {
  softmax_ce(a, true, stream, "SOFTMAX_CE_FWD_BWD");
}

void softmax_ce_fwd(const KernelArgs& a, cudaStream_t stream) {
  softmax_ce(a, false, stream, "SOFTMAX_CE_FWD");
}

uint64_t workspace_bytes(const KernelArgs& a) {
  if (!a.node || a.node->kind != NodeKind::COMPUTE) return 0;
  if (const uint64_t bn_bytes = bn::workspace_bytes(a)) return bn_bytes;  // statistics partials
  if (a.node->op != ComputeOp::SOFTMAX_CE_FWD_BWD && a.node->op != ComputeOp::SOFTMAX_CE_FWD)
    return 0;
  return softmax_ce_workspace_bytes(a.in.empty() ? 0 : a.in[0].shape().n);
}

}  // namespace tr::cuda::compute
