// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU compute kernels on FP16 storage (AMP): each one against its FP32
// twin on the same FP16-representable data, with padded channels, forked
// backward parts, accumulation and the stream workspace; and the array
// conversions underneath, bit for bit against the reference conversion.
//
// Stated tolerance: an FP16 result may differ from its FP32 twin's value by
// at most half an FP16 ulp (FP32 arithmetic, one rounding to FP16 at the
// end); FP32 and INT8 results must be identical.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/batch_norm.h"
#include "backends/cpu/kernels/dense.h"
#include "backends/cpu/kernels/dropout.h"
#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/kernels/half_arrays.h"
#include "backends/cpu/kernels/half_convert.h"
#include "backends/cpu/kernels/pooling.h"
#include "backends/cpu/kernels/softmax_ce.h"
#include "compile/layer_lowering.h"
#include "resolved_params.h"

using namespace tr;
using cpu::float_to_half_bits;
using cpu::half_bits_to_float;

namespace {

// What a tensor is in the AMP plan, which fixes its FP16 region and padding.
enum class Role {
  INPUT,    // I_A_DATA: FP16, C padded to 4
  FEATURE,  // F_FEATURE_FP16: C padded to 8
  GRAD,     // F_GRAD_SLOT_FP16: C padded to 8
  WEIGHT,   // A series: FP16, compact
  WGRAD,    // H series: FP16, compact
  FP32,     // FP32 under AMP too (BN statistics, saved moments, results)
  LABEL,    // INT32
  MASK,     // INT8 in S_MASK, C padded to 8
};

bool is_half_role(Role r) {
  return r == Role::INPUT || r == Role::FEATURE || r == Role::GRAD || r == Role::WEIGHT ||
         r == Role::WGRAD;
}

Region half_region(Role r) {
  switch (r) {
    case Role::INPUT:
      return Region::I_A_DATA;
    case Role::FEATURE:
      return Region::F_FEATURE_FP16;
    case Role::GRAD:
      return Region::F_GRAD_SLOT_FP16;
    case Role::WEIGHT:
      return Region::A_DEEP_CONV;
    case Role::WGRAD:
      return Region::H_DEEP_CONV;
    default:
      return Region::T_SCRATCH;
  }
}

struct Operand {
  Role role;
  Shape shape;
  float lo = -2.0f, hi = 2.0f;  // range of the random values
};

// A quiet NaN in FP16: what padding lanes hold before a kernel runs, so a
// kernel that read them would poison its result.
constexpr uint16_t kHalfNaN = 0x7E00;

// Tensors with real DTensor descriptors (region, padding) and their memory.
class Tensors {
 public:
  size_t add(const Operand& o, bool half) {
    auto d = std::make_unique<DTensor>();
    d->id = static_cast<DTensorId>(descs_.size());
    d->shape = o.shape;
    if (o.role == Role::LABEL) {
      d->dtype = DType::INT32;
    } else if (o.role == Role::MASK) {
      d->dtype = DType::INT8;
      d->region = Region::S_MASK;
    } else if (half && is_half_role(o.role)) {
      d->dtype = DType::FP16;
      d->region = half_region(o.role);
    }
    d->slot_bytes = DTensor::slot_bytes_for(d->shape, d->dtype, d->region);
    storage_.emplace_back(d->slot_bytes / 8 + 1, 0);
    descs_.push_back(std::move(d));
    return descs_.size() - 1;
  }
  const DTensor& desc(size_t i) const { return *descs_[i]; }
  void* data(size_t i) { return storage_[i].data(); }
  float* f32(size_t i) { return static_cast<float*>(data(i)); }
  uint16_t* f16(size_t i) { return static_cast<uint16_t*>(data(i)); }
  TensorArg arg(size_t i) { return {data(i), descs_[i].get()}; }

  // Logical (compact) values in and out of the device layout.
  void write(size_t i, const std::vector<float>& v) {
    const DTensor& d = desc(i);
    const int64_t c = d.shape.c, pc = d.padded_c(), rows = d.shape.elements() / c;
    if (d.dtype == DType::FP16) {
      std::fill(f16(i), f16(i) + rows * pc, kHalfNaN);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < c; ++k)
          f16(i)[r * pc + k] = float_to_half_bits(v[static_cast<size_t>(r * c + k)]);
    } else if (d.dtype == DType::INT32) {
      auto* p = static_cast<int32_t*>(data(i));
      for (size_t k = 0; k < v.size(); ++k) p[k] = static_cast<int32_t>(v[k]);
    } else if (d.dtype == DType::INT8) {
      auto* p = static_cast<int8_t*>(data(i));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < c; ++k)
          p[r * pc + k] = static_cast<int8_t>(v[static_cast<size_t>(r * c + k)]);
    } else {
      std::copy(v.begin(), v.end(), f32(i));
    }
  }
  // Fills the whole FP16 layout, padding included, with NaN: an output lane
  // the kernel does not write stays visible.
  void poison(size_t i) {
    const DTensor& d = desc(i);
    if (d.dtype == DType::FP16)
      std::fill(f16(i), f16(i) + d.shape.elements() / d.shape.c * d.padded_c(), kHalfNaN);
  }

 private:
  std::vector<std::unique_ptr<DTensor>> descs_;
  std::vector<std::vector<uint64_t>> storage_;
};

float representable(float v) {
  return half_bits_to_float(float_to_half_bits(v));
}

// Half an FP16 ulp at |f|: the most that one rounding to FP16 moves it.
double half_ulp(double f) {
  const double a = std::fabs(f);
  if (a < 6.103515625e-05) return std::ldexp(1.0, -25);  // subnormal spacing 2^-24
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e): FP16 spacing there is 2^(e-11)
  return std::ldexp(1.0, e - 12);
}

LayerNode layer_of(LayerType type, LayerParams p = {}) {
  LayerNode l;
  l.id = "layer";
  l.type = type;
  l.params = p;
  return l;
}

LayerParams conv_params(int64_t co, int64_t k, int64_t stride, int64_t pad, bool bias) {
  LayerParams p;
  p.out_channels = co;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.bias = bias;
  return p;
}

using KernelFn = void (*)(const KernelArgs&);

struct Case {
  std::string name;
  KernelFn kernel;
  std::vector<Operand> ins, outs;
  LayerNode layer;
  uint8_t accumulate = 0;
  int part = -1;
  // Softmax-CE: the FP16 run is an AMP project's, whose logits gradient is of
  // the loss times the loss scale.
  float loss_scale = 0.0f;
  // Adjusts the random input values (logical layout) before both runs.
  std::function<void(std::vector<std::vector<float>>&)> prepare = {};
};

// Outputs a forked backward part writes (in [x, w, dy] out [dw, (db), dx]).
bool part_writes(const Case& c, size_t out) {
  if (c.part < 0) return true;
  switch (static_cast<BwdPart>(c.part)) {
    case BwdPart::DW:
      return out == 0;
    case BwdPart::DB:
      return c.outs.size() == 3 && out == 1;
    case BwdPart::DX:
      return out + 1 == c.outs.size();
  }
  return true;
}

struct Outcome {
  bool ok = true;
  std::string problem;
  double worst_ulps = 0.0;  // largest |fp16 - fp32| in half-ulps
  uint64_t workspace = 0;
};

Outcome run_case(const Case& c, unsigned seed) {
  std::mt19937 rng(seed);
  Outcome out;
  auto problem = [&](const std::string& s) {
    if (out.ok) out.problem = s;
    out.ok = false;
  };

  // Logical values: FP16-representable, so both runs see the same numbers.
  std::vector<std::vector<float>> in_values;
  for (const Operand& o : c.ins) {
    std::vector<float> v(static_cast<size_t>(o.shape.elements()));
    std::uniform_real_distribution<float> u(o.lo, o.hi);
    for (float& x : v) {
      if (o.role == Role::LABEL || o.role == Role::MASK)
        x = std::floor(u(rng));
      else
        x = representable(u(rng));
    }
    in_values.push_back(std::move(v));
  }
  if (c.prepare) c.prepare(in_values);

  Tensors t32, t16;
  std::vector<size_t> in32, in16, out32, out16;
  for (size_t i = 0; i < c.ins.size(); ++i) {
    in32.push_back(t32.add(c.ins[i], false));
    in16.push_back(t16.add(c.ins[i], true));
    t32.write(in32.back(), in_values[i]);
    t16.write(in16.back(), in_values[i]);
  }
  std::vector<std::vector<float>> acc_values(c.outs.size());
  for (size_t i = 0; i < c.outs.size(); ++i) {
    out32.push_back(t32.add(c.outs[i], false));
    out16.push_back(t16.add(c.outs[i], true));
    if (c.accumulate >> i & 1u) {
      std::vector<float> v(static_cast<size_t>(c.outs[i].shape.elements()));
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (float& x : v) x = representable(u(rng));
      t32.write(out32.back(), v);
      t16.write(out16.back(), v);
      acc_values[i] = std::move(v);
    } else {
      t16.poison(out16.back());
    }
  }
  // Two outputs that name one tensor (Add's backward into one slot).
  const bool shared_out = c.outs.size() == 2 && c.accumulate == 0b10 &&
                          c.outs[0].shape == c.outs[1].shape && c.kernel == &cpu::add_bwd;

  GraphNode node;
  node.kind = NodeKind::COMPUTE;
  node.layer = 1;
  node.accumulate_mask = c.accumulate;
  TrainingConstants fp32_training, amp_training;
  amp_training.precision = Precision::AMP;
  std::vector<float> scalars32(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
  std::vector<float> scalars16 = scalars32;
  scalars16[static_cast<size_t>(ScalarSlot::LOSS_SCALE)] = c.loss_scale;
  scalars32[static_cast<size_t>(ScalarSlot::STEP)] = 3.0f;  // dropout's stream
  scalars16[static_cast<size_t>(ScalarSlot::STEP)] = 3.0f;

  auto args = [&](Tensors& t, const std::vector<size_t>& ins, const std::vector<size_t>& outs,
                  std::vector<float>& scalars) {
    KernelArgs a;
    a.node = &node;
    a.layer_params = test::resolved(c.layer);
    a.training = &fp32_training;
    a.scalars = scalars.data();
    a.seed = 99;
    a.part = c.part;
    for (size_t i : ins) a.in.push_back(t.arg(i));
    for (size_t k = 0; k < outs.size(); ++k)
      a.out.push_back(shared_out && k == 1 ? t.arg(outs[0]) : t.arg(outs[k]));
    return a;
  };
  const KernelArgs a32 = args(t32, in32, out32, scalars32);
  KernelArgs a16 = args(t16, in16, out16, scalars16);
  if (c.loss_scale > 0.0f) a16.training = &amp_training;

  if (cpu::kernel_workspace_bytes(a32) != 0) problem("the FP32 twin asks for a workspace");
  out.workspace = cpu::kernel_workspace_bytes(a16);
  if (out.workspace == 0) problem("the FP16 run asks for no workspace");
  std::vector<uint64_t> memory(out.workspace / 8 + 1);
  StreamWorkspace ws{memory.data(), out.workspace};
  a16.workspace = &ws;
  c.kernel(a32);
  c.kernel(a16);

  for (size_t i = 0; i < c.outs.size(); ++i) {
    if (shared_out && i == 1) continue;  // checked through output 0
    const std::string what = "output " + std::to_string(i);
    const DTensor& d16 = t16.desc(out16[i]);
    const int64_t ch = d16.shape.c, pc = d16.padded_c(), rows = d16.shape.elements() / ch;
    if (!part_writes(c, i)) {
      // Another part's output: not a bit of it may change.
      const uint16_t* h = t16.f16(out16[i]);
      for (int64_t k = 0; k < rows * pc; ++k)
        if (h[k] != kHalfNaN) {
          problem(what + " belongs to another part but was written");
          break;
        }
      continue;
    }
    const float* f = t32.f32(out32[i]);
    if (d16.dtype == DType::FP16) {
      const float scale = i == 1 && c.loss_scale > 0.0f ? c.loss_scale : 1.0f;
      const uint16_t* h = t16.f16(out16[i]);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = 0; k < ch; ++k) {
          const double want = static_cast<double>(f[r * ch + k]) * scale;
          const double got = half_bits_to_float(h[r * pc + k]);
          const double ulps = std::fabs(got - want) / half_ulp(want);
          out.worst_ulps = std::max(out.worst_ulps, ulps);
          if (!(ulps <= 1.0)) {
            problem(what + " element " + std::to_string(r * ch + k) + ": fp16 " +
                    std::to_string(got) + ", fp32 twin " + std::to_string(want));
            break;
          }
        }
        for (int64_t k = ch; k < pc; ++k)
          if (h[r * pc + k] != 0) {
            problem(what + ": a padding lane is not zero");
            break;
          }
      }
    } else {
      const size_t bytes = d16.dtype == DType::INT8 ? static_cast<size_t>(rows * pc)
                                                    : static_cast<size_t>(d16.shape.elements()) * 4;
      if (std::memcmp(t16.data(out16[i]), t32.data(out32[i]), bytes) != 0)
        problem(what + " (" + std::string(dtype_name(d16.dtype)) + ") differs from the fp32 run");
    }
  }
  return out;
}

// Maximum over each 2x2 window (stride 2) of x [n,h,w,c]: a consistent y for
// the max-pooling backward.
std::vector<float> max_2x2(const std::vector<float>& x, const Shape& s) {
  std::vector<float> y(static_cast<size_t>(s.n * (s.h / 2) * (s.w / 2) * s.c));
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t i = 0; i < s.h / 2; ++i)
      for (int64_t j = 0; j < s.w / 2; ++j)
        for (int64_t k = 0; k < s.c; ++k) {
          float m = -INFINITY;
          for (int64_t di = 0; di < 2; ++di)
            for (int64_t dj = 0; dj < 2; ++dj)
              m = std::max(
                  m, x[static_cast<size_t>(((b * s.h + 2 * i + di) * s.w + 2 * j + dj) * s.c + k)]);
          y[static_cast<size_t>(((b * (s.h / 2) + i) * (s.w / 2) + j) * s.c + k)] = m;
        }
  return y;
}

std::vector<Case> cases() {
  using R = Role;
  const LayerNode conv_first = layer_of(LayerType::Conv2d, conv_params(6, 3, 1, 1, true));
  const LayerNode conv_deep = layer_of(LayerType::Conv2d, conv_params(3, 3, 2, 1, false));
  const LayerNode fc = layer_of(LayerType::Linear, conv_params(5, 1, 1, 0, true));
  LayerParams pool2;
  pool2.kernel_h = pool2.kernel_w = 2;
  pool2.stride_h = pool2.stride_w = 2;
  LayerParams pool3 = pool2;
  pool3.kernel_h = pool3.kernel_w = 3;
  pool3.pad_h = pool3.pad_w = 1;
  LayerParams drop;
  drop.p = 0.3;
  const LayerNode bn = layer_of(LayerType::BatchNorm2d);

  const Shape img{2, 7, 7, 1}, f1{2, 7, 7, 6}, w1{6, 3, 3, 1}, b1{1, 1, 1, 6};
  const Shape x2{2, 6, 6, 5}, w2{3, 3, 3, 5}, y2{2, 3, 3, 3};
  const Shape fx{4, 2, 2, 3}, fw{5, 1, 1, 12}, fy{4, 1, 1, 5}, fb{1, 1, 1, 5};
  const Shape bx{3, 4, 4, 5}, bc{1, 1, 1, 5}, saved{1, 1, 2, 5};
  const Shape px{2, 6, 6, 5}, py{2, 3, 3, 5}, gy{2, 1, 1, 5}, flat{2, 1, 1, 180};
  const Shape logits{6, 1, 1, 10}, labels{6, 1, 1, 1}, result{1, 1, 1, 4};

  std::vector<Case> v;
  // Dense layers, the first one reading an input buffer (C = 1, padded to 4).
  v.push_back({"conv_fwd first layer",
               &cpu::conv_fwd,
               {{R::INPUT, img}, {R::WEIGHT, w1}, {R::WEIGHT, b1}},
               {{R::FEATURE, f1}},
               conv_first});
  v.push_back({"conv_fwd deep",
               &cpu::conv_fwd,
               {{R::FEATURE, x2}, {R::WEIGHT, w2}},
               {{R::FEATURE, y2}},
               conv_deep});
  // A 6 -> 6 channel convolution: in [x, w, dy], out [dw, db, dx].
  const LayerNode conv_mid = layer_of(LayerType::Conv2d, conv_params(6, 3, 1, 1, true));
  const Shape w66{6, 3, 3, 6};
  const std::vector<Operand> cbi{{R::FEATURE, f1}, {R::WEIGHT, w66}, {R::GRAD, f1}};
  const std::vector<Operand> cbo{{R::WGRAD, w66}, {R::WGRAD, b1}, {R::GRAD, f1}};
  v.push_back({"conv_bwd whole", &cpu::conv_bwd, cbi, cbo, conv_mid});
  v.push_back({"conv_bwd dx accumulates", &cpu::conv_bwd, cbi, cbo, conv_mid, 0b100});
  v.push_back(
      {"conv_bwd part dW", &cpu::conv_bwd, cbi, cbo, conv_mid, 0, static_cast<int>(BwdPart::DW)});
  v.push_back(
      {"conv_bwd part dB", &cpu::conv_bwd, cbi, cbo, conv_mid, 0, static_cast<int>(BwdPart::DB)});
  v.push_back(
      {"conv_bwd part dX", &cpu::conv_bwd, cbi, cbo, conv_mid, 0, static_cast<int>(BwdPart::DX)});
  // The same in 3 groups (w: 2 input channels each) and depthwise (one each).
  for (const int64_t groups : {int64_t{3}, int64_t{6}}) {
    LayerParams gp = conv_params(6, 3, 1, 1, true);
    gp.groups = groups;
    const LayerNode conv_grouped = layer_of(LayerType::Conv2d, gp);
    const Shape wg{6, 3, 3, 6 / groups};
    const std::string tag = " g" + std::to_string(groups);
    v.push_back({"conv_fwd" + tag,
                 &cpu::conv_fwd,
                 {{R::FEATURE, f1}, {R::WEIGHT, wg}, {R::WEIGHT, b1}},
                 {{R::FEATURE, f1}},
                 conv_grouped});
    v.push_back({"conv_bwd whole" + tag,
                 &cpu::conv_bwd,
                 {{R::FEATURE, f1}, {R::WEIGHT, wg}, {R::GRAD, f1}},
                 {{R::WGRAD, wg}, {R::WGRAD, b1}, {R::GRAD, f1}},
                 conv_grouped});
  }
  v.push_back({"conv_bwd_first",
               &cpu::conv_bwd_first,
               {{R::INPUT, img}, {R::GRAD, f1}},
               {{R::WGRAD, w1}, {R::WGRAD, b1}},
               conv_first});
  // Linear on an unflattened [4,2,2,3] input: padded channels inside the rows it reads.
  v.push_back({"linear_fwd",
               &cpu::linear_fwd,
               {{R::FEATURE, fx}, {R::WEIGHT, fw}, {R::WEIGHT, fb}},
               {{R::FEATURE, fy}},
               fc});
  const std::vector<Operand> lbi{{R::FEATURE, fx}, {R::WEIGHT, fw}, {R::GRAD, fy}};
  const std::vector<Operand> lbo{{R::WGRAD, fw}, {R::WGRAD, fb}, {R::GRAD, fx}};
  v.push_back({"linear_bwd whole", &cpu::linear_bwd, lbi, lbo, fc});
  v.push_back({"linear_bwd dx accumulates", &cpu::linear_bwd, lbi, lbo, fc, 0b100});
  v.push_back(
      {"linear_bwd part dW", &cpu::linear_bwd, lbi, lbo, fc, 0, static_cast<int>(BwdPart::DW)});
  v.push_back(
      {"linear_bwd part dB", &cpu::linear_bwd, lbi, lbo, fc, 0, static_cast<int>(BwdPart::DB)});
  v.push_back(
      {"linear_bwd part dX", &cpu::linear_bwd, lbi, lbo, fc, 0, static_cast<int>(BwdPart::DX)});
  v.push_back({"linear_bwd_first",
               &cpu::linear_bwd_first,
               {{R::FEATURE, fx}, {R::GRAD, fy}},
               {{R::WGRAD, fw}, {R::WGRAD, fb}},
               fc});
  // Batch norm: statistics and running estimates stay FP32.
  v.push_back({"bn_fwd_train",
               &cpu::bn_fwd_train,
               {{R::FEATURE, bx},
                {R::WEIGHT, bc, 0.5f, 1.5f},
                {R::WEIGHT, bc},
                {R::FP32, bc},
                {R::FP32, bc, 0.5f, 2.0f}},
               {{R::FEATURE, bx}, {R::FP32, saved}, {R::FP32, bc}, {R::FP32, bc}},
               bn});
  v.push_back({"bn_fwd_infer",
               &cpu::bn_fwd_infer,
               {{R::FEATURE, bx}, {R::FP32, bc}, {R::FP32, bc}},
               {{R::FEATURE, bx}},
               bn});
  const auto saved_moments = [](std::vector<std::vector<float>>& in) {
    for (size_t k = 5; k < 10; ++k) in[2][k] = 0.5f + 0.25f * static_cast<float>(k - 5);
  };
  v.push_back({"bn_bwd",
               &cpu::bn_bwd,
               {{R::FEATURE, bx}, {R::WEIGHT, bc}, {R::FP32, saved}, {R::GRAD, bx}},
               {{R::WGRAD, bc}, {R::WGRAD, bc}, {R::GRAD, bx}},
               bn,
               0,
               -1,
               0.0f,
               saved_moments});
  v.push_back({"bn_bwd dx accumulates",
               &cpu::bn_bwd,
               {{R::FEATURE, bx}, {R::WEIGHT, bc}, {R::FP32, saved}, {R::GRAD, bx}},
               {{R::WGRAD, bc}, {R::WGRAD, bc}, {R::GRAD, bx}},
               bn,
               0b100,
               -1,
               0.0f,
               saved_moments});
  // Batch norm fused with the ReLU after it; the backward also takes beta.
  v.push_back({"bn_relu_fwd_train",
               &cpu::bn_relu_fwd_train,
               {{R::FEATURE, bx},
                {R::WEIGHT, bc, 0.5f, 1.5f},
                {R::WEIGHT, bc},
                {R::FP32, bc},
                {R::FP32, bc, 0.5f, 2.0f}},
               {{R::FEATURE, bx}, {R::FP32, saved}, {R::FP32, bc}, {R::FP32, bc}},
               bn});
  v.push_back({"bn_relu_fwd_infer",
               &cpu::bn_relu_fwd_infer,
               {{R::FEATURE, bx}, {R::FP32, bc}, {R::FP32, bc}},
               {{R::FEATURE, bx}},
               bn});
  v.push_back(
      {"bn_relu_bwd",
       &cpu::bn_relu_bwd,
       {{R::FEATURE, bx}, {R::WEIGHT, bc}, {R::WEIGHT, bc}, {R::FP32, saved}, {R::GRAD, bx}},
       {{R::WGRAD, bc}, {R::WGRAD, bc}, {R::GRAD, bx}},
       bn,
       0,
       -1,
       0.0f,
       [](std::vector<std::vector<float>>& in) {
         for (size_t k = 5; k < 10; ++k) in[3][k] = 0.5f + 0.25f * static_cast<float>(k - 5);
       }});
  // Activations.
  const LayerNode act = layer_of(LayerType::ReLU);
  v.push_back({"relu_fwd", &cpu::relu_fwd, {{R::FEATURE, px}}, {{R::FEATURE, px}}, act});
  v.push_back(
      {"relu_bwd", &cpu::relu_bwd, {{R::FEATURE, px}, {R::GRAD, px}}, {{R::GRAD, px}}, act});
  // The activation family: every layer type whose forward is ACTIVATION_FWD.
  for (LayerType t : kAllLayerTypes) {
    const Activation f = layer_lowering(t).activation;
    if (f == Activation::NUM_ACTIVATIONS) continue;
    LayerParams slope;
    slope.negative_slope = 0.2;
    const LayerNode layer = layer_of(t, slope);
    const std::string name(layer_type_name(t));
    v.push_back(
        {name + " fwd", &cpu::activation_fwd, {{R::FEATURE, px}}, {{R::FEATURE, px}}, layer});
    // A backward that reads y reads an output of the forward: keep it in tanh's and sigmoid's
    // range.
    if (activation_backward_reads_output(f))
      v.push_back({name + " bwd",
                   &cpu::activation_bwd,
                   {{R::FEATURE, px, -0.9f, 0.9f}, {R::GRAD, px}},
                   {{R::GRAD, px}},
                   layer,
                   0b1});
    else
      v.push_back({name + " bwd",
                   &cpu::activation_bwd,
                   {{R::FEATURE, px}, {R::GRAD, px}},
                   {{R::GRAD, px}},
                   layer});
  }
  // Pooling.
  const LayerNode mp2 = layer_of(LayerType::MaxPool2d, pool2);
  const LayerNode mp3 = layer_of(LayerType::MaxPool2d, pool3);
  v.push_back({"maxpool_fwd 2x2", &cpu::maxpool_fwd, {{R::FEATURE, px}}, {{R::FEATURE, py}}, mp2});
  v.push_back(
      {"maxpool_fwd 3x3 pad 1", &cpu::maxpool_fwd, {{R::FEATURE, px}}, {{R::FEATURE, py}}, mp3});
  v.push_back({"maxpool_bwd 2x2",
               &cpu::maxpool_bwd,
               {{R::FEATURE, px}, {R::FEATURE, py}, {R::GRAD, py}},
               {{R::GRAD, px}},
               mp2,
               0,
               -1,
               0.0f,
               [px](std::vector<std::vector<float>>& in) { in[1] = max_2x2(in[0], px); }});
  v.push_back({"avgpool_fwd 3x3 pad 1",
               &cpu::avgpool_fwd,
               {{R::FEATURE, px}},
               {{R::FEATURE, py}},
               layer_of(LayerType::AvgPool2d, pool3)});
  v.push_back({"avgpool_bwd 3x3 pad 1",
               &cpu::avgpool_bwd,
               {{R::GRAD, py}},
               {{R::GRAD, px}},
               layer_of(LayerType::AvgPool2d, pool3),
               0b1});
  v.push_back({"gap_fwd",
               &cpu::gap_fwd,
               {{R::FEATURE, px}},
               {{R::FEATURE, gy}},
               layer_of(LayerType::GlobalAvgPool)});
  v.push_back({"gap_bwd",
               &cpu::gap_bwd,
               {{R::GRAD, gy}},
               {{R::GRAD, px}},
               layer_of(LayerType::GlobalAvgPool)});
  // Dropout: the INT8 mask keeps its own padded layout.
  const LayerNode dl = layer_of(LayerType::Dropout, drop);
  v.push_back({"dropout_fwd",
               &cpu::dropout_fwd,
               {{R::FEATURE, px}},
               {{R::FEATURE, px}, {R::MASK, px}},
               dl});
  v.push_back({"dropout_bwd",
               &cpu::dropout_bwd,
               {{R::MASK, px, 0.0f, 2.0f}, {R::GRAD, px}},
               {{R::GRAD, px}},
               dl});
  // Copies, residual adds.
  const LayerNode fl = layer_of(LayerType::Flatten);
  v.push_back({"flatten_fwd", &cpu::flatten_fwd, {{R::FEATURE, px}}, {{R::FEATURE, flat}}, fl});
  v.push_back({"flatten_bwd", &cpu::flatten_bwd, {{R::GRAD, flat}}, {{R::GRAD, px}}, fl, 0b1});
  v.push_back({"identity", &cpu::identity, {{R::FEATURE, px}}, {{R::FEATURE, px}}, dl});
  const LayerNode add = layer_of(LayerType::Add);
  v.push_back(
      {"add_fwd", &cpu::add_fwd, {{R::FEATURE, px}, {R::FEATURE, px}}, {{R::FEATURE, px}}, add});
  v.push_back(
      {"add_bwd", &cpu::add_bwd, {{R::GRAD, px}}, {{R::GRAD, px}, {R::GRAD, px}}, add, 0b01});
  v.push_back({"add_bwd into one slot",
               &cpu::add_bwd,
               {{R::GRAD, px}},
               {{R::GRAD, px}, {R::GRAD, px}},
               add,
               0b10});
  // Concat: 5 + 3 channels (rows padded to 8 in FP16), and a tensor with itself.
  const LayerNode cat = layer_of(LayerType::Concat);
  const Shape c0{2, 6, 6, 5}, c1{2, 6, 6, 3}, cy{2, 6, 6, 8};
  v.push_back({"concat_fwd",
               &cpu::concat_fwd,
               {{R::FEATURE, c0}, {R::FEATURE, c1}},
               {{R::FEATURE, cy}},
               cat});
  v.push_back(
      {"concat_bwd", &cpu::concat_bwd, {{R::GRAD, cy}}, {{R::GRAD, c0}, {R::GRAD, c1}}, cat, 0b01});
  // The loss: FP32 result block, loss-scaled FP16 gradient of padded logits.
  const LayerNode ce = layer_of(LayerType::SoftmaxCrossEntropy);
  v.push_back({"softmax_ce_fwd_bwd",
               &cpu::softmax_ce_fwd_bwd,
               {{R::FEATURE, logits, -4.0f, 4.0f}, {R::LABEL, labels, 0.0f, 10.0f}},
               {{R::FP32, result}, {R::GRAD, logits}},
               ce,
               0,
               -1,
               1024.0f});
  v.push_back({"softmax_ce_fwd",
               &cpu::softmax_ce_fwd,
               {{R::FEATURE, logits, -4.0f, 4.0f}, {R::LABEL, labels, 0.0f, 10.0f}},
               {{R::FP32, result}},
               ce});
  v.push_back({"softmax_ce_fwd adding to a confusion matrix",
               &cpu::softmax_ce_fwd,
               {{R::FEATURE, logits, -4.0f, 4.0f}, {R::LABEL, labels, 0.0f, 10.0f}},
               {{R::FP32, result}, {R::FP32, Shape{1, 1, 10, 10}}},
               ce,
               0b10});
  return v;
}

}  // namespace

class TestCpuAmpKernels : public QObject {
  Q_OBJECT

 private slots:
  void fp16KernelsMatchTheirFp32Twins_data() {
    QTest::addColumn<int>("index");
    const std::vector<Case> all = cases();
    for (size_t i = 0; i < all.size(); ++i)
      QTest::newRow(all[i].name.c_str()) << static_cast<int>(i);
  }

  void fp16KernelsMatchTheirFp32Twins() {
    QFETCH(int, index);
    const Case c = cases()[static_cast<size_t>(index)];
    const Outcome o = run_case(c, 1000u + static_cast<unsigned>(index));
    QVERIFY2(o.ok, o.problem.c_str());
    qDebug("%s: worst error %.3f half-ulps, workspace %llu bytes", c.name.c_str(), o.worst_ulps,
           static_cast<unsigned long long>(o.workspace));
  }

  void everyTrainingComputeOpIsCovered() {
    // The kernels above are what compute_kernel hands the backend for these ops.
    const std::vector<Case> all = cases();
    auto covered = [&](KernelFn k) {
      for (const Case& c : all)
        if (c.kernel == k) return true;
      return false;
    };
    for (int i = 0; i < static_cast<int>(ComputeOp::NUM_COMPUTE_OPS); ++i) {
      const ComputeOp op = static_cast<ComputeOp>(i);
      // Not tensor kernels: the backend's copy, labels, and scalar updates.
      if (op == ComputeOp::H2D_INPUT || op == ComputeOp::COPY_LABELS ||
          op == ComputeOp::LOSS_SCALE_UPDATE || op == ComputeOp::ADAM_BIAS_CORRECTION ||
          op == ComputeOp::COUNT_UPDATE)
        continue;
      QVERIFY2(covered(cpu::compute_kernel(op)), compute_op_name(op).data());
    }
  }

  void stagingNeedsAWorkspaceOfTheRightSize() {
    Case c = cases()[1];  // conv_fwd deep
    Tensors t;
    std::vector<size_t> ids;
    for (const Operand& o : c.ins) ids.push_back(t.add(o, true));
    const size_t y = t.add(c.outs[0], true);
    GraphNode node;
    node.op = ComputeOp::CONV_FWD;
    KernelArgs a;
    a.node = &node;
    a.layer_params = test::resolved(c.layer);
    for (size_t i : ids) a.in.push_back(t.arg(i));
    a.out.push_back(t.arg(y));
    // x [2,6,6,5], w [3,3,3,5], y [2,3,3,3] as FP32, each rounded up to 64 bytes
    QCOMPARE(cpu::kernel_workspace_bytes(a), uint64_t{1472 + 576 + 256});
    try {
      cpu::conv_fwd(a);
      QFAIL("no workspace accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("CONV_FWD") && QString(e.what()).contains("'layer'") &&
                   QString(e.what()).contains("workspace"),
               e.what());
    }
    std::vector<uint64_t> memory(64);
    StreamWorkspace small{memory.data(), 512};
    a.workspace = &small;
    try {
      cpu::conv_fwd(a);
      QFAIL("a small workspace accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("needs 2304 bytes"), e.what());
    }
  }

  void halvesWidenExactly() {
    // Every FP16 bit pattern, through the array path (F16C where present).
    qDebug("F16C path: %s", cpu::half_arrays_use_f16c() ? "yes" : "no");
    std::vector<uint16_t> all(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    std::vector<float> out(all.size());
    cpu::widen_half(all.data(), out.data(), static_cast<int64_t>(all.size()));
    for (size_t i = 0; i < all.size(); ++i) {
      const float want = half_bits_to_float(all[i]);
      // A NaN stays a NaN; F16C also quiets a signaling one.
      if (std::isnan(want)) {
        QVERIFY2(std::isnan(out[i]), qPrintable(QString::number(i, 16)));
        continue;
      }
      QVERIFY2(std::bit_cast<uint32_t>(out[i]) == std::bit_cast<uint32_t>(want),
               qPrintable(QString::number(i, 16)));
    }
  }

  void floatsNarrowToNearestEven() {
    std::mt19937 rng(5);
    std::vector<float> in;
    // Specials, ties (the bit just below FP16's mantissa set), the overflow
    // edge, subnormals, then random bit patterns over the whole range.
    for (float f : {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e-8f, 3e-8f,
                    5.96e-8f, 6.1e-5f, INFINITY, -INFINITY, NAN})
      in.push_back(f);
    for (uint32_t m = 0; m < 4096; ++m) in.push_back(std::bit_cast<float>(0x3F800000u + m));
    std::uniform_int_distribution<uint32_t> bits;
    while (in.size() < (size_t{1} << 20)) in.push_back(std::bit_cast<float>(bits(rng)));
    std::vector<uint16_t> out(in.size());
    cpu::narrow_to_half(in.data(), out.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); ++i)
      QVERIFY2(out[i] == float_to_half_bits(in[i]),
               qPrintable(QString::number(std::bit_cast<uint32_t>(in[i]), 16)));
  }

  void paddedRowsRoundTrip() {
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    // Strides of the input buffers (4) and of features (8, 16); rows large
    // enough for the threaded path on the last shape.
    for (int64_t rows : {int64_t{3}, int64_t{70000}})
      for (int64_t stride : {int64_t{4}, int64_t{8}, int64_t{16}})
        for (int64_t c = 1; c <= stride; ++c) {
          if (rows > 3 && c != stride - 1) continue;
          std::vector<float> compact(static_cast<size_t>(rows * c));
          for (float& x : compact) x = u(rng);
          std::vector<uint16_t> padded(static_cast<size_t>(rows * stride), kHalfNaN);
          cpu::narrow_to_half_rows(compact.data(), padded.data(), stride, rows, c);
          std::vector<float> back(compact.size() + 8, 7.0f);
          cpu::widen_half_rows(padded.data(), stride, back.data(), rows, c);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = 0; k < stride; ++k) {
              const uint16_t h = padded[static_cast<size_t>(r * stride + k)];
              if (k >= c) {
                QVERIFY2(h == 0, "padding lane not zeroed");
                continue;
              }
              const float x = compact[static_cast<size_t>(r * c + k)];
              QCOMPARE(h, float_to_half_bits(x));
              QCOMPARE(back[static_cast<size_t>(r * c + k)], half_bits_to_float(h));
            }
          // Nothing written past the compact rows.
          QCOMPARE(back[compact.size()], 7.0f);
        }
  }
};

QTEST_APPLESS_MAIN(TestCpuAmpKernels)
#include "test_cpu_amp_kernels.moc"
