// SPDX-License-Identifier: GPL-3.0-or-later
// Launchers for the CUDA compute kernels in activation_kernels.cu,
// dropout_kernels.cu, pooling_kernels.cu and softmax_kernels.cu.
#include "backends/cuda/compute_launchers.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/activation_kernels.h"
#include "backends/cuda/bn_launchers.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dropout_kernels.h"
#include "backends/cuda/operand_checks.h"
#include "backends/cuda/pooling_kernels.h"
#include "backends/cuda/softmax_kernels.h"
#include "runtime/concat_slices.h"

namespace tr::cuda::compute {

namespace {

void launched(cudaError_t err, const char* what) {
  check_cuda(err, what, current_device());
}

uint64_t elements(const TensorArg& t) {
  return static_cast<uint64_t>(t.shape().elements());
}

const float* scalar_at(const KernelArgs& a, ScalarSlot s) {
  return a.scalars ? a.scalars + static_cast<int>(s) : nullptr;
}

bool same_layout(const FeatureView& x, const FeatureView& y) {
  return x.cols == y.cols && x.stride == y.stride;
}

// A copy, or an add into a gradient slot another consumer already wrote
// (read, add in float, round once). `twice` adds src a second time: both
// outputs of an add's backward are one slot, whose value the CPU's staging
// rounds once.
void copy_or_add(const KernelArgs& a, size_t out_index, const TensorArg& src, Elem e,
                 cudaStream_t stream, const char* op, bool twice = false) {
  const uint64_t n = elements(src);
  if (!has_out(a, out_index) || n == 0) return;
  const TensorArg& dst = a.out[out_index];
  if (dst.shape().elements() != src.shape().elements())
    fail_operand(op, a,
                 "the output has " + std::to_string(dst.shape().elements()) +
                     " values, the input " + std::to_string(n));
  const FeatureView from = feature_view(src), to = feature_view(dst);
  const bool accumulate = a.accumulate(out_index);
  if (!accumulate && !twice) {
    if (dst.data == src.data) return;
    if (from.cols == from.stride && to.cols == to.stride) {
      const uint64_t bytes = n * elem_bytes(e);
      launched(cudaMemcpyAsync(dst.data, src.data, bytes, cudaMemcpyDeviceToDevice, stream), op);
      return;
    }
  }
  launched(launch_sum(e, n, from, twice ? &from : nullptr, to, accumulate, stream), op);
}

// An add's operands (ADD_FWD, ADD_RELU_FWD): x0, x1 and y of one shape and layout.
Elem add_operands(const KernelArgs& a, const char* op, FeatureView& x0, FeatureView& x1,
                  FeatureView& y) {
  const Elem e = common_elem(op, a, {{&a.in[0], "x0"}, {&a.in[1], "x1"}, {&a.out[0], "y"}});
  x0 = feature_view(a.in[0]);
  x1 = feature_view(a.in[1]);
  y = feature_view(a.out[0]);
  if (a.in[0].shape() != a.out[0].shape() || a.in[1].shape() != a.out[0].shape() ||
      !same_layout(x0, y) || !same_layout(x1, y))
    fail_operand(op, a, "both inputs and y should have one shape");
  return e;
}

// The elementwise ops' operands: x and y (or the saved tensor, dy and dx) of one shape.
Elem unary_operands(const KernelArgs& a, const char* op, FeatureView& x, FeatureView& y) {
  const Elem e = common_elem(op, a, {{&a.in[0], "x"}, {&a.out[0], "y"}});
  x = feature_view(a.in[0]);
  y = feature_view(a.out[0]);
  if (a.in[0].shape() != a.out[0].shape() || !same_layout(x, y))
    fail_operand(op, a, "x and y should have one shape");
  return e;
}

Elem backward_operands(const KernelArgs& a, const char* op, FeatureView& saved, FeatureView& dy,
                       FeatureView& dx) {
  const Elem e =
      common_elem(op, a, {{&a.in[0], "the saved tensor"}, {&a.in[1], "dy"}, {&a.out[0], "dx"}});
  saved = feature_view(a.in[0]);
  dy = feature_view(a.in[1]);
  dx = feature_view(a.out[0]);
  if (a.in[0].shape() != a.in[1].shape() || a.out[0].shape() != a.in[1].shape() ||
      !same_layout(saved, dy) || !same_layout(dx, dy))
    fail_operand(op, a, "the saved tensor, dy and dx should have one shape");
  return e;
}

// The CPU twin's rows: per NHW position when the mask's channels are
// padded, else one flat row. FP16 features pad their channels as the mask
// does, so both walk the same rows.
DropoutRows rows_of(const KernelArgs& a, const TensorArg& feature, const TensorArg& mask,
                    const char* op) {
  const Shape& s = feature.shape();
  const int64_t mask_c = mask.desc->padded_c();
  const int64_t feature_c = feature.desc->padded_c();
  if (feature_c != s.c && feature_c != mask_c)
    fail_operand(op, a,
                 "the features' rows are " + std::to_string(feature_c) + " apart, the mask's " +
                     std::to_string(mask_c));
  if (mask_c == s.c) return {1, s.elements(), s.elements(), s.elements()};
  return {s.n * s.h * s.w, s.c, mask_c, feature_c};
}

void require_mask(const KernelArgs& a, const TensorArg& mask, const TensorArg& feature,
                  const char* op) {
  if (!mask.desc || mask.desc->dtype != DType::INT8) fail_operand(op, a, "the mask should be int8");
  if (mask.shape() != feature.shape())
    fail_operand(op, a, "the mask should have the features' shape");
}

uint64_t drop_threshold(double p) {
  if (!(p > 0.0)) return 0;
  if (p >= 1.0) return uint64_t{1} << 32;
  return static_cast<uint64_t>(std::llround(p * 4294967296.0));
}

float keep_scale(double p) {
  return p >= 1.0 ? 0.0f : static_cast<float>(1.0 / (1.0 - p));
}

PoolGeometry geometry(const Shape& in, const Shape& out, const NodeParams& p) {
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
  g.cs = in.c;
  return g;
}

// The storage and channel stride every operand of a pooling op shares.
PoolGeometry pool_geometry(const KernelArgs& a, const Shape& in, const Shape& out,
                           const NodeParams& p, std::initializer_list<Operand> operands,
                           const char* op) {
  PoolGeometry g = geometry(in, out, p);
  g.elem = common_elem(op, a, operands);
  g.cs = operands.begin()->t->desc->padded_c();
  require_stride(op, a, g.cs, operands);
  return g;
}

void softmax_ce(const KernelArgs& a, bool backward, cudaStream_t stream, const char* op) {
  const Shape& s = a.in[0].shape();
  SoftmaxCe c;
  c.elem = float_elem(op, a, a.in[0], "the logits");
  c.logits = a.in[0].data;
  c.labels = a.in[1].i32();
  c.n = s.n;
  c.k = s.per_sample();
  c.stride = c.k;
  if (!a.in[0].desc->is_compact()) {
    // Padded rows are rows only when each sample is one row of channels.
    if (s.h * s.w != 1)
      fail_operand(op, a, "fp16 logits " + s.str() + " with padded channels should be [N,1,1,K]");
    c.stride = a.in[0].desc->padded_c();
  }
  if (float_elem(op, a, a.out[0], "the result") != Elem::F32)
    fail_operand(op, a, "the result block should be fp32");
  c.result = a.out[0].f32();
  if (has_out(a, 1)) {
    if (backward) {
      if (common_elem(op, a, {{&a.in[0], "the logits"}, {&a.out[1], "the gradient"}}) != c.elem ||
          a.out[1].shape() != s)
        fail_operand(op, a, "the gradient should have the logits' shape");
      require_stride(op, a, a.in[0].desc->padded_c(), {{&a.out[1], "the gradient"}});
      c.grad = a.out[1].data;
    } else {
      if (float_elem(op, a, a.out[1], "the confusion counts") != Elem::F32)
        fail_operand(op, a, "the confusion counts should be fp32");
      c.confusion = a.out[1].f32();
    }
  }
  c.accumulate = a.accumulate(1);
  // The mean over the samples of the rank's tensor-parallel group (loss_group).
  c.inv_n = 1.0f / static_cast<float>(s.n * a.constants().loss_group);
  // Under AMP the gradient is of the scaled loss, the scale read on the device.
  if (a.constants().amp()) c.loss_scale = scalar_at(a, ScalarSlot::LOSS_SCALE);
  const uint64_t need = softmax_ce_workspace_bytes(s.n);
  if (!a.workspace || a.workspace->bytes < need)
    throw std::logic_error(std::string("CUDA backend: ") + op + " launched without its workspace");
  c.workspace = a.workspace->data;
  launched(launch_softmax_ce(c, stream), op);
}

void copy_like(const KernelArgs& a, cudaStream_t stream, const char* op) {
  const Elem e = common_elem(op, a, {{&a.in[0], "x"}, {&a.out[0], "y"}});
  copy_or_add(a, 0, a.in[0], e, stream, op);
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
  copy_like(a, stream, "IDENTITY");
}

void flatten(const KernelArgs& a, cudaStream_t stream) {
  copy_like(a, stream, "FLATTEN");
}

void relu_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "RELU_FWD";
  FeatureView x, y;
  const Elem e = unary_operands(a, op, x, y);
  launched(launch_relu_fwd(e, elements(a.in[0]), x, y, stream), op);
}

void relu_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "RELU_BWD";
  if (!has_out(a, 0)) return;
  FeatureView saved, dy, dx;
  const Elem e = backward_operands(a, op, saved, dy, dx);
  launched(launch_relu_bwd(e, elements(a.in[1]), saved, dy, dx, a.accumulate(0), stream), op);
}

void activation_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "ACTIVATION_FWD";
  FeatureView x, y;
  const Elem e = unary_operands(a, op, x, y);
  const NodeParams& p = a.params();
  launched(launch_activation_fwd(p.activation, static_cast<float>(p.negative_slope), e,
                                 elements(a.in[0]), x, y, stream),
           op);
}

void activation_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "ACTIVATION_BWD";
  if (!has_out(a, 0)) return;
  FeatureView saved, dy, dx;
  const Elem e = backward_operands(a, op, saved, dy, dx);
  const NodeParams& p = a.params();
  launched(launch_activation_bwd(p.activation, static_cast<float>(p.negative_slope), e,
                                 elements(a.in[1]), saved, dy, dx, a.accumulate(0), stream),
           op);
}

void add_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "ADD_FWD";
  FeatureView x0, x1, y;
  const Elem e = add_operands(a, op, x0, x1, y);
  launched(launch_sum(e, elements(a.out[0]), x0, &x1, y, false, stream), op);
}

void add_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "ADD_BWD";
  const TensorArg none{};
  const Elem e = common_elem(op, a,
                             {{&a.in[0], "dy"},
                              {has_out(a, 0) ? &a.out[0] : &none, "dx0"},
                              {has_out(a, 1) ? &a.out[1] : &none, "dx1"}});
  // When both outputs are one tensor, out[1] carries the accumulate flag and
  // adds onto what out[0] wrote: one pass adds dy twice, rounding once.
  if (has_out(a, 0) && has_out(a, 1) && a.out[0].data == a.out[1].data) {
    copy_or_add(a, 0, a.in[0], e, stream, op, true);
    return;
  }
  copy_or_add(a, 0, a.in[0], e, stream, op);
  copy_or_add(a, 1, a.in[0], e, stream, op);
}

void add_relu_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "ADD_RELU_FWD";
  FeatureView x0, x1, y;
  const Elem e = add_operands(a, op, x0, x1, y);
  launched(launch_add_relu_fwd(e, elements(a.out[0]), x0, x1, y, stream), op);
}

void add_relu_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "ADD_RELU_BWD";
  const TensorArg none{};
  AddReluOutputs o;
  o.has0 = has_out(a, 0);
  o.has1 = has_out(a, 1);
  const Elem e = common_elem(op, a,
                             {{&a.in[0], "dy"},
                              {&a.in[1], "y"},
                              {o.has0 ? &a.out[0] : &none, "dx0"},
                              {o.has1 ? &a.out[1] : &none, "dx1"}});
  const FeatureView dy = feature_view(a.in[0]), y = feature_view(a.in[1]);
  FeatureView dx[2] = {y, y};
  for (size_t k = 0; k < 2; ++k) {
    if (!has_out(a, k)) continue;
    dx[k] = feature_view(a.out[k]);
    if (a.out[k].shape() != a.in[0].shape() || !same_layout(dx[k], dy))
      fail_operand(op, a, "y, dy and both gradients should have one shape");
  }
  if (a.in[0].shape() != a.in[1].shape() || !same_layout(y, dy))
    fail_operand(op, a, "y, dy and both gradients should have one shape");
  o.add0 = o.has0 && a.accumulate(0);
  o.add1 = o.has1 && a.accumulate(1);
  o.same = o.has0 && o.has1 && a.out[0].data == a.out[1].data;
  if (o.same) o.has1 = false;  // one tensor, written once
  launched(launch_add_relu_bwd(e, elements(a.in[0]), y, dy, dx[0], dx[1], o, stream), op);
}

// One row per N*H*W position, whether or not the tensor pads its channels.
FeatureView channel_rows(const TensorArg& t) {
  return {t.data, t.desc->shape.c, t.desc->padded_c()};
}

uint64_t positions_of(const Shape& s) {
  return static_cast<uint64_t>(s.n * s.h * s.w);
}

namespace {

constexpr const char* kPortNames[kMaxInputPorts] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};
constexpr const char* kGradNames[kMaxInputPorts] = {"dx0", "dx1", "dx2", "dx3",
                                                    "dx4", "dx5", "dx6", "dx7"};

void require_ports(const char* op, const KernelArgs& a, size_t ports) {
  if (ports < 1 || ports > static_cast<size_t>(kMaxInputPorts))
    fail_operand(op, a,
                 "joins " + std::to_string(ports) + " parts; a concatenation takes 1 to " +
                     std::to_string(kMaxInputPorts));
}

}  // namespace

void concat_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "CONCAT_FWD";
  require_ports(op, a, a.in.size());
  std::vector<Operand> operands{{&a.out[0], "y"}};
  for (size_t q = 0; q < a.in.size(); ++q) {
    check_present(op, a, a.in[q], kPortNames[q]);
    operands.push_back({&a.in[q], kPortNames[q]});
  }
  const Elem e = common_elem(op, a, operands);
  const Shape& s = a.out[0].shape();
  ConcatParts parts;
  int64_t channels = 0;
  for (const TensorArg& x : a.in) {
    const Shape& sq = x.shape();
    if (sq.n != s.n || sq.h != s.h || sq.w != s.w)
      fail_operand(op, a, "y should have the inputs' height and width");
    channels += sq.c;
    parts.part[parts.count++] = channel_rows(x);
  }
  if (channels != s.c) fail_operand(op, a, "y should have the inputs' channels together");
  launched(launch_concat_fwd(e, positions_of(s), parts, channel_rows(a.out[0]), stream), op);
}

void concat_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "CONCAT_BWD";
  require_ports(op, a, a.out.size());
  std::vector<Operand> operands{{&a.in[0], "dy"}};
  for (size_t q = 0; q < a.out.size(); ++q) operands.push_back({&a.out[q], kGradNames[q]});
  const Elem e = common_elem(op, a, operands);
  const Shape& s = a.in[0].shape();
  std::vector<int64_t> from;
  std::string error;
  if (!concat_slices(a.out, s.c, from, error)) fail_operand(op, a, error);
  const FeatureView dy = channel_rows(a.in[0]);
  // Ports that read one tensor (x with itself) add their slices in one pass,
  // rounding once; the first of them says whether it adds onto the slot.
  for (size_t q = 0; q < a.out.size(); ++q) {
    if (!has_out(a, q)) continue;
    bool seen = false;
    for (size_t p = 0; p < q; ++p) seen = seen || (has_out(a, p) && a.out[p].data == a.out[q].data);
    if (seen) continue;
    ConcatSlices slices;
    for (size_t p = q; p < a.out.size(); ++p)
      if (has_out(a, p) && a.out[p].data == a.out[q].data) slices.from[slices.count++] = from[p];
    launched(launch_concat_bwd(e, positions_of(s), dy, slices, channel_rows(a.out[q]),
                               a.accumulate(q), stream),
             op);
  }
}

void dropout_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "DROPOUT_FWD";
  const Elem e = common_elem(op, a, {{&a.in[0], "x"}, {&a.out[0], "y"}});
  require_mask(a, a.out[1], a.in[0], op);
  if (a.out[0].shape() != a.in[0].shape() || a.out[0].desc->padded_c() != a.in[0].desc->padded_c())
    fail_operand(op, a, "x and y should have one shape");
  const Shape& s = a.in[0].shape();
  const double p = a.params().p;
  DropoutDraw d;
  d.seed = a.seed;
  d.layer = a.node ? a.node->layer : -1;
  d.threshold = drop_threshold(p);
  d.scale = keep_scale(p);
  // Ranks draw disjoint slices of one global batch, as on the CPU.
  d.first = static_cast<uint64_t>(a.rank) * static_cast<uint64_t>(s.elements());
  launched(launch_dropout_fwd(e, a.in[0].data, a.out[0].data, a.out[1].i8(),
                              rows_of(a, a.in[0], a.out[1], op), d, scalar_at(a, ScalarSlot::STEP),
                              stream),
           op);
}

void dropout_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "DROPOUT_BWD";
  if (!has_out(a, 0)) return;
  const Elem e = common_elem(op, a, {{&a.in[1], "dy"}, {&a.out[0], "dx"}});
  require_mask(a, a.in[0], a.in[1], op);
  if (a.out[0].shape() != a.in[1].shape() || a.out[0].desc->padded_c() != a.in[1].desc->padded_c())
    fail_operand(op, a, "dy and dx should have one shape");
  launched(launch_dropout_bwd(e, a.in[0].i8(), a.in[1].data, a.out[0].data,
                              rows_of(a, a.in[1], a.in[0], op), keep_scale(a.params().p),
                              a.accumulate(0), stream),
           op);
}

void maxpool_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "MAXPOOL_FWD";
  const PoolGeometry g = pool_geometry(a, a.in[0].shape(), a.out[0].shape(), a.params(),
                                       {{&a.in[0], "x"}, {&a.out[0], "y"}}, op);
  launched(launch_maxpool_fwd(g, a.in[0].data, a.out[0].data, stream), op);
}

void maxpool_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "MAXPOOL_BWD";
  if (!has_out(a, 0)) return;
  const PoolGeometry g =
      pool_geometry(a, a.in[0].shape(), a.in[1].shape(), a.params(),
                    {{&a.in[0], "x"}, {&a.in[1], "y"}, {&a.in[2], "dy"}, {&a.out[0], "dx"}}, op);
  launched(launch_maxpool_bwd(g, a.in[0].data, a.in[1].data, a.in[2].data, a.out[0].data,
                              a.accumulate(0), stream),
           op);
}

void maxpool_fwd_where(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "MAXPOOL_FWD_WHERE";
  const PoolGeometry g = pool_geometry(a, a.in[0].shape(), a.out[0].shape(), a.params(),
                                       {{&a.in[0], "x"}, {&a.out[0], "y"}}, op);
  require_mask(a, a.out[1], a.out[0], op);
  launched(launch_maxpool_fwd_where(g, a.in[0].data, a.out[0].data, a.out[1].i8(),
                                    a.out[1].desc->padded_c(), stream),
           op);
}

void maxpool_bwd_where(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "MAXPOOL_BWD_WHERE";
  if (!has_out(a, 0)) return;
  const PoolGeometry g = pool_geometry(a, a.out[0].shape(), a.in[1].shape(), a.params(),
                                       {{&a.in[1], "dy"}, {&a.out[0], "dx"}}, op);
  require_mask(a, a.in[0], a.in[1], op);
  launched(launch_maxpool_bwd_where(g, a.in[0].i8(), a.in[0].desc->padded_c(), a.in[1].data,
                                    a.out[0].data, a.accumulate(0), stream),
           op);
}

void avgpool_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "AVGPOOL_FWD";
  const PoolGeometry g = pool_geometry(a, a.in[0].shape(), a.out[0].shape(), a.params(),
                                       {{&a.in[0], "x"}, {&a.out[0], "y"}}, op);
  launched(launch_avgpool_fwd(g, a.in[0].data, a.out[0].data, stream), op);
}

void avgpool_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "AVGPOOL_BWD";
  if (!has_out(a, 0)) return;
  const PoolGeometry g = pool_geometry(a, a.out[0].shape(), a.in[0].shape(), a.params(),
                                       {{&a.in[0], "dy"}, {&a.out[0], "dx"}}, op);
  launched(launch_avgpool_bwd(g, a.in[0].data, a.out[0].data, a.accumulate(0), stream), op);
}

void gap_fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "GAP_FWD";
  const Shape& s = a.in[0].shape();
  const PoolGeometry g =
      pool_geometry(a, s, s, NodeParams{}, {{&a.in[0], "x"}, {&a.out[0], "y"}}, op);
  launched(launch_gap_fwd(g, a.in[0].data, a.out[0].data, stream), op);
}

void gap_bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "GAP_BWD";
  if (!has_out(a, 0)) return;
  const Shape& s = a.out[0].shape();
  const PoolGeometry g =
      pool_geometry(a, s, s, NodeParams{}, {{&a.in[0], "dy"}, {&a.out[0], "dx"}}, op);
  launched(launch_gap_bwd(g, a.in[0].data, a.out[0].data, a.accumulate(0), stream), op);
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
