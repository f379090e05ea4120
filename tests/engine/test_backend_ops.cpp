// SPDX-License-Identifier: GPL-3.0-or-later
// One test for the ops on every backend (the habit of ggml's test-backend-ops):
// each case lays its tensors out in one arena, copies the inputs in, runs one
// launch through the Backend interface (the CPU backend always, the CUDA
// backend where a device is there, skipped otherwise), copies the outputs
// back and compares them with a plain reference in double (loops written for
// obviousness, not oneDNN against cuDNN); backward cases are also checked
// against central differences of that reference's forward. The table has an
// entry per ComputeOp and RangeOp, in enum order, checked when the test
// builds: a new op without an entry does not compile. Entries without cases
// yet name the tests that cover the op today, and show as skipped rows.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <renaissance/devices.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda_backend_options.h"
#include "backends/cuda_plugin.h"
#include "compile/computation_graph.h"
#include "compile/layer_lowering.h"
#include "compile/node_params.h"
#include "compile/scalar_slot.h"
#include "runtime/backend.h"

using namespace tr;

namespace {

using Values = std::vector<double>;
using Tensors = std::vector<std::vector<float>>;

// One launch of one op: its tensors (FP32, compact), its layer settings, and
// what the outputs must be.
struct OpCase {
  std::string name;
  ComputeOp op = ComputeOp::NUM_COMPUTE_OPS;
  std::vector<Shape> in, out;
  LayerNode layer;
  uint8_t accumulate = 0;  // outputs added onto (they start random)
  // Adjusts the random inputs to what the op's contract asks (MAXPOOL_BWD's y
  // is the forward's output of its x).
  std::function<void(Tensors& in)> prepare;
  // What the backend is handed instead of the inputs the reference reads (a
  // backward that reads y is handed y where the reference reads x).
  std::function<Tensors(const Tensors& in)> backend_view;
  // The expected outputs from the inputs and the outputs' values before the launch.
  std::function<std::vector<Values>(const Tensors& in, const Tensors& before)> reference;
  double tolerance = 1e-5;  // relative to the largest expected value of the output
  // Backward cases: the forward (in double) whose gradient output `grad_out` is,
  // with respect to input `grad_of` of that forward, given the backward's dy (input
  // `dy`). The forward's other inputs are the backward's inputs `forward_inputs`.
  std::function<Values(const Tensors& forward_in)> forward;
  std::vector<size_t> forward_inputs;
  size_t grad_of = 0, dy = 0, grad_out = 0;
};

// What the table holds for one op: its cases, or why it has none yet.
struct OpEntry {
  std::vector<OpCase> (*cases)() = nullptr;
  const char* elsewhere = nullptr;  // the tests that cover it until it has cases here
};

// ---- layout and running ---------------------------------------------------

struct Placed {
  std::vector<std::unique_ptr<DTensor>> descs;
  uint64_t bytes = 0;
  uint64_t scalars = 0;  // arena offset of the S_SCALARS block
};

uint64_t align256(uint64_t v) {
  return (v + 255) / 256 * 256;
}

Placed place(const OpCase& c) {
  Placed p;
  auto add = [&](const Shape& s, DType dtype) {
    auto d = std::make_unique<DTensor>();
    d->id = static_cast<DTensorId>(p.descs.size());
    d->shape = s;
    d->dtype = dtype;
    d->region = Region::T_SCRATCH;
    d->slot_bytes = DTensor::slot_bytes_for(s, dtype, d->region);
    d->offset = p.bytes;
    p.bytes = align256(p.bytes + d->slot_bytes);
    p.descs.push_back(std::move(d));
  };
  const bool labels = c.op == ComputeOp::COPY_LABELS;
  for (const Shape& s : c.in) add(s, labels ? DType::INT32 : DType::FP32);
  for (const Shape& s : c.out) add(s, labels ? DType::INT32 : DType::FP32);
  p.scalars = p.bytes;
  p.bytes = align256(p.bytes + static_cast<uint64_t>(ScalarSlot::COUNT) * sizeof(float));
  return p;
}

// Runs `c` on `backend` from `in` and the outputs' starting values `out`,
// which it overwrites with what the launch left.
void run_case(Backend& backend, const OpCase& c, const Tensors& in, Tensors& out) {
  const Placed p = place(c);
  backend.allocate_arenas(p.bytes);
  uint8_t* arena = backend.arena(0);
  GraphNode node;
  node.kind = NodeKind::COMPUTE;
  node.op = c.op;
  node.layer = 0;
  node.accumulate_mask = c.accumulate;
  node.params = layer_node_params(c.layer);
  const TrainingConstants constants;
  KernelArgs args;
  args.node = &node;
  args.layer_params = &node.params;
  args.training = &constants;
  args.scalars = reinterpret_cast<float*>(arena + p.scalars);
  std::vector<float> scalars(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
  std::vector<Launch> copies;
  auto copy = [&](LaunchKind kind, const DTensor& d, void* host) {
    Launch l;
    l.kind = kind;
    l.offset = d.offset;
    l.host = host;
    l.bytes = static_cast<uint64_t>(d.shape.elements()) * 4;
    l.tag.stream = StreamKind::COMP_1;
    l.tag.label = c.name;
    backend.enqueue(0, StreamKind::COMP_1, l);
  };
  Tensors host_in = in;
  for (size_t i = 0; i < c.in.size(); ++i) {
    args.in.push_back({arena + p.descs[i]->offset, p.descs[i].get()});
    copy(LaunchKind::COPY_H2D, *p.descs[i], host_in[i].data());
  }
  for (size_t i = 0; i < c.out.size(); ++i) {
    const DTensor& d = *p.descs[c.in.size() + i];
    args.out.push_back({arena + d.offset, &d});
    copy(LaunchKind::COPY_H2D, d, out[i].data());
  }
  Launch scalar_copy;
  scalar_copy.kind = LaunchKind::COPY_H2D;
  scalar_copy.offset = p.scalars;
  scalar_copy.host = scalars.data();
  scalar_copy.bytes = scalars.size() * sizeof(float);
  scalar_copy.tag.stream = StreamKind::COMP_1;
  backend.enqueue(0, StreamKind::COMP_1, scalar_copy);
  Launch k;
  k.kind = LaunchKind::KERNEL;
  k.args = &args;
  k.tag.stream = StreamKind::COMP_1;
  k.tag.label = c.name;
  backend.prepare_launch(0, StreamKind::COMP_1, k);
  backend.enqueue(0, StreamKind::COMP_1, k);
  for (size_t i = 0; i < c.out.size(); ++i)
    copy(LaunchKind::COPY_D2H, *p.descs[c.in.size() + i], out[i].data());
  backend.synchronize(0);
}

// ---- the backends -----------------------------------------------------------

std::unique_ptr<Backend> make_backend(const std::string& which, std::string& why_not) {
  if (which == "cpu") {
    cpu::CpuBackendOptions o;
    o.check_step_schedule = false;  // one launch, no schedule
    return cpu::make_cpu_backend(o);
  }
  const DeviceScan scan = scan_devices();
  if (scan.cuda.empty()) {
    why_not = "no CUDA device here: " + scan.cuda_status;
    return nullptr;
  }
  cuda::CudaBackendOptions o;
  o.devices = {0};
  return cuda_plugin().table->make_backend(o);
}

// ---- references -------------------------------------------------------------

Tensors random_tensors(const std::vector<Shape>& shapes, std::mt19937& rng, float lo = -1.0f,
                       float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  Tensors t;
  for (const Shape& s : shapes) {
    std::vector<float> v(static_cast<size_t>(s.elements()));
    for (float& x : v) x = u(rng);
    t.push_back(std::move(v));
  }
  return t;
}

Values as_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

// out = (accumulate ? before : 0) + value
Values onto(const Values& value, const std::vector<float>& before, bool accumulate) {
  Values out = value;
  if (accumulate)
    for (size_t i = 0; i < out.size(); ++i) out[i] += before[i];
  return out;
}

struct ConvGeom {
  int64_t n, h, w, ci, co, k, s, p, g;
  int64_t ho() const { return (h + 2 * p - k) / s + 1; }
  int64_t wo() const { return (w + 2 * p - k) / s + 1; }
  int64_t cig() const { return ci / g; }
  Shape x() const { return {n, h, w, ci}; }
  Shape wt() const { return {co, k, k, cig()}; }
  Shape y() const { return {n, ho(), wo(), co}; }
  // f(x index, w index, y index) for every multiply.
  template <class F>
  void taps(F f) const {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oy = 0; oy < ho(); ++oy)
        for (int64_t ox = 0; ox < wo(); ++ox)
          for (int64_t o = 0; o < co; ++o)
            for (int64_t i = 0; i < k; ++i)
              for (int64_t j = 0; j < k; ++j) {
                const int64_t iy = oy * s - p + i, ix = ox * s - p + j;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const int64_t first = o / (co / g) * cig();
                for (int64_t c = 0; c < cig(); ++c)
                  f(((b * h + iy) * w + ix) * ci + first + c, ((o * k + i) * k + j) * cig() + c,
                    ((b * ho() + oy) * wo() + ox) * co + o);
              }
  }
  LayerNode layer(bool bias) const {
    LayerNode l;
    l.id = "conv";
    l.type = LayerType::Conv2d;
    l.params.out_channels = co;
    l.params.kernel_h = l.params.kernel_w = k;
    l.params.stride_h = l.params.stride_w = s;
    l.params.pad_h = l.params.pad_w = p;
    l.params.groups = g;
    l.params.bias = bias;
    return l;
  }
  Values fwd(const std::vector<float>& x, const std::vector<float>& wt,
             const std::vector<float>* bias) const {
    Values out(static_cast<size_t>(y().elements()), 0.0);
    taps([&](int64_t a, int64_t b, int64_t c) {
      out[static_cast<size_t>(c)] += double(x[a]) * wt[b];
    });
    if (bias)
      for (size_t i = 0; i < out.size(); ++i) out[i] += (*bias)[i % static_cast<size_t>(co)];
    return out;
  }
};

const ConvGeom kConvs[] = {
    {2, 7, 7, 3, 4, 3, 1, 1, 1}, {2, 8, 8, 8, 6, 3, 2, 1, 2}, {2, 6, 6, 4, 8, 3, 1, 1, 4}};

std::string conv_name(const char* op, const ConvGeom& g) {
  return std::string(op) + " " + g.x().str() + " k" + std::to_string(g.k) + "s" +
         std::to_string(g.s) + "p" + std::to_string(g.p) + "->" + std::to_string(g.co) + " g" +
         std::to_string(g.g);
}

std::vector<OpCase> conv_fwd_cases() {
  std::vector<OpCase> v;
  for (const ConvGeom& g : kConvs) {
    OpCase c;
    c.name = conv_name("CONV_FWD", g);
    c.op = ComputeOp::CONV_FWD;
    c.in = {g.x(), g.wt(), {1, 1, 1, g.co}};
    c.out = {g.y()};
    c.layer = g.layer(true);
    c.tolerance = 1e-4;
    c.reference = [g](const Tensors& in, const Tensors&) {
      return std::vector<Values>{g.fwd(in[0], in[1], &in[2])};
    };
    v.push_back(c);
  }
  return v;
}

// in [x, w, dy] out [dw, db, dx] (first: in [x, dy] out [dw, db])
std::vector<OpCase> conv_bwd_cases(bool first) {
  std::vector<OpCase> v;
  for (const ConvGeom& g : kConvs) {
    OpCase c;
    c.name = conv_name(first ? "CONV_BWD_FIRST" : "CONV_BWD", g);
    c.op = first ? ComputeOp::CONV_BWD_FIRST : ComputeOp::CONV_BWD;
    c.in = first ? std::vector<Shape>{g.x(), g.y()} : std::vector<Shape>{g.x(), g.wt(), g.y()};
    c.out = {g.wt(), {1, 1, 1, g.co}};
    if (!first) c.out.push_back(g.x());
    c.layer = g.layer(true);
    c.tolerance = 1e-4;
    if (!first) c.accumulate = 0b100;  // dx adds onto a gradient slot already written
    c.reference = [g, first](const Tensors& in, const Tensors& before) {
      const std::vector<float>& x = in[0];
      const std::vector<float>& dy = first ? in[1] : in[2];
      Values dw(static_cast<size_t>(g.wt().elements()), 0.0), db(static_cast<size_t>(g.co), 0.0);
      g.taps([&](int64_t a, int64_t b, int64_t o) {
        dw[static_cast<size_t>(b)] += double(dy[o]) * x[a];
      });
      for (size_t i = 0; i < dy.size(); ++i) db[i % static_cast<size_t>(g.co)] += dy[i];
      std::vector<Values> out{dw, db};
      if (!first) {
        Values dx(x.size(), 0.0);
        g.taps([&](int64_t a, int64_t b, int64_t o) {
          dx[static_cast<size_t>(a)] += double(dy[o]) * in[1][static_cast<size_t>(b)];
        });
        out.push_back(onto(dx, before[2], true));
      }
      return out;
    };
    if (!first) {
      // dx is the gradient of sum(conv(x, w) * dy) with respect to x (the
      // accumulated slot's start taken off before comparing).
      c.forward = [g](const Tensors& f) { return g.fwd(f[0], f[1], nullptr); };
      c.forward_inputs = {0, 1};
      c.grad_of = 0;
      c.dy = 2;
      c.grad_out = 2;
    }
    v.push_back(c);
  }
  return v;
}

struct LinearGeom {
  int64_t n, k, o;
};
const LinearGeom kLinears[] = {{3, 7, 5}, {4, 16, 10}};

LayerNode linear_layer(int64_t out) {
  LayerNode l;
  l.id = "fc";
  l.type = LayerType::Linear;
  l.params.out_channels = out;
  return l;
}

Values linear_fwd(const LinearGeom& g, const std::vector<float>& x, const std::vector<float>& w,
                  const std::vector<float>* b) {
  Values y(static_cast<size_t>(g.n * g.o), 0.0);
  for (int64_t r = 0; r < g.n; ++r)
    for (int64_t j = 0; j < g.o; ++j) {
      double s = b ? (*b)[static_cast<size_t>(j)] : 0.0;
      for (int64_t i = 0; i < g.k; ++i)
        s += double(x[static_cast<size_t>(r * g.k + i)]) * w[static_cast<size_t>(j * g.k + i)];
      y[static_cast<size_t>(r * g.o + j)] = s;
    }
  return y;
}

std::vector<OpCase> linear_fwd_cases() {
  std::vector<OpCase> v;
  for (const LinearGeom& g : kLinears) {
    OpCase c;
    c.name = "LINEAR_FWD " + std::to_string(g.k) + "->" + std::to_string(g.o);
    c.op = ComputeOp::LINEAR_FWD;
    c.in = {{g.n, 1, 1, g.k}, {g.o, 1, 1, g.k}, {1, 1, 1, g.o}};
    c.out = {{g.n, 1, 1, g.o}};
    c.layer = linear_layer(g.o);
    c.reference = [g](const Tensors& in, const Tensors&) {
      return std::vector<Values>{linear_fwd(g, in[0], in[1], &in[2])};
    };
    v.push_back(c);
  }
  return v;
}

std::vector<OpCase> linear_bwd_cases(bool first) {
  std::vector<OpCase> v;
  for (const LinearGeom& g : kLinears) {
    OpCase c;
    c.name = std::string(first ? "LINEAR_BWD_FIRST " : "LINEAR_BWD ") + std::to_string(g.k) + "->" +
             std::to_string(g.o);
    c.op = first ? ComputeOp::LINEAR_BWD_FIRST : ComputeOp::LINEAR_BWD;
    const Shape x{g.n, 1, 1, g.k}, w{g.o, 1, 1, g.k}, y{g.n, 1, 1, g.o}, b{1, 1, 1, g.o};
    c.in = first ? std::vector<Shape>{x, y} : std::vector<Shape>{x, w, y};
    c.out = {w, b};
    if (!first) c.out.push_back(x);
    c.layer = linear_layer(g.o);
    c.reference = [g, first](const Tensors& in, const Tensors& before) {
      const std::vector<float>& xs = in[0];
      const std::vector<float>& dy = first ? in[1] : in[2];
      Values dw(static_cast<size_t>(g.o * g.k), 0.0), db(static_cast<size_t>(g.o), 0.0),
          dx(static_cast<size_t>(g.n * g.k), 0.0);
      for (int64_t r = 0; r < g.n; ++r)
        for (int64_t j = 0; j < g.o; ++j) {
          const double d = dy[static_cast<size_t>(r * g.o + j)];
          db[static_cast<size_t>(j)] += d;
          for (int64_t i = 0; i < g.k; ++i) {
            dw[static_cast<size_t>(j * g.k + i)] += d * xs[static_cast<size_t>(r * g.k + i)];
            if (!first)
              dx[static_cast<size_t>(r * g.k + i)] += d * in[1][static_cast<size_t>(j * g.k + i)];
          }
        }
      std::vector<Values> out{dw, db};
      if (!first) out.push_back(onto(dx, before[2], false));
      return out;
    };
    if (!first) {
      c.forward = [g](const Tensors& f) { return linear_fwd(g, f[0], f[1], nullptr); };
      c.forward_inputs = {0, 1};
      c.grad_of = 0;
      c.dy = 2;
      c.grad_out = 2;
    }
    v.push_back(c);
  }
  return v;
}

// ---- elementwise: ReLU and the activation family -----------------------------

double activation_value(Activation f, double x, double slope) {
  switch (f) {
    case Activation::TANH:
      return std::tanh(x);
    case Activation::SILU:
      return x / (1.0 + std::exp(-x));
    case Activation::RELU6:
      return std::min(std::max(x, 0.0), 6.0);
    case Activation::LEAKY_RELU:
      return x > 0 ? x : slope * x;
    case Activation::GELU:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::SIGMOID:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::NUM_ACTIVATIONS:
      break;
  }
  return x > 0 ? x : 0.0;  // ReLU
}

// ReLU (no sub-kind) and every layer type of the family, with its sub-kind.
struct Elementwise {
  LayerNode layer;
  Activation f;  // NUM_ACTIVATIONS: ReLU
  ComputeOp fwd, bwd;
};

std::vector<Elementwise> elementwise_layers() {
  std::vector<Elementwise> v;
  LayerNode relu;
  relu.id = "act";
  relu.type = LayerType::ReLU;
  v.push_back({relu, Activation::NUM_ACTIVATIONS, ComputeOp::RELU_FWD, ComputeOp::RELU_BWD});
  for (LayerType t : kAllLayerTypes) {
    const Activation f = layer_lowering(t).activation;
    if (f == Activation::NUM_ACTIVATIONS) continue;
    LayerNode l;
    l.id = "act";
    l.type = t;
    l.params.negative_slope = 0.2;
    v.push_back({l, f, ComputeOp::ACTIVATION_FWD, ComputeOp::ACTIVATION_BWD});
  }
  return v;
}

const Shape kFeature{2, 5, 3, 7};

Values apply(const Elementwise& e, const std::vector<float>& x) {
  Values y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = activation_value(e.f, x[i], 0.2);
  return y;
}

std::vector<OpCase> activation_cases(bool backward) {
  std::vector<OpCase> v;
  for (const Elementwise& e : elementwise_layers()) {
    OpCase c;
    c.layer = e.layer;
    const std::string type(layer_type_name(e.layer.type));
    if (!backward) {
      c.name = std::string(compute_op_name(e.fwd)) + " " + type;
      c.op = e.fwd;
      c.in = {kFeature};
      c.out = {kFeature};
      c.tolerance = 2e-6;
      c.reference = [e](const Tensors& in, const Tensors&) {
        return std::vector<Values>{apply(e, in[0])};
      };
    } else {
      // The backward reads y or x, as the compiler wires it (ReLU either: y here).
      const bool reads_y =
          e.f == Activation::NUM_ACTIVATIONS || activation_backward_reads_output(e.f);
      c.name = std::string(compute_op_name(e.bwd)) + " " + type;
      c.op = e.bwd;
      c.in = {kFeature, kFeature};  // [saved, dy]; the case turns x into y where y is read
      c.out = {kFeature};
      c.accumulate = 0b1;
      c.tolerance = 2e-5;
      if (reads_y)
        c.backend_view = [e](const Tensors& in) {
          Tensors b = in;
          for (float& x : b[0]) x = static_cast<float>(activation_value(e.f, x, 0.2));
          return b;
        };
      // The derivative of the plain forward at x, by a central difference in double.
      c.reference = [e](const Tensors& in, const Tensors& before) {
        Values dx(in[1].size());
        for (size_t i = 0; i < dx.size(); ++i) {
          const double x = in[0][i], h = 1e-6;
          const double d =
              (activation_value(e.f, x + h, 0.2) - activation_value(e.f, x - h, 0.2)) / (2 * h);
          dx[i] = in[1][i] * d;
        }
        return std::vector<Values>{onto(dx, before[0], true)};
      };
    }
    v.push_back(c);
  }
  return v;
}

std::vector<OpCase> activation_fwd_cases() {
  return activation_cases(false);
}
std::vector<OpCase> activation_bwd_cases() {
  return activation_cases(true);
}

// ---- pooling --------------------------------------------------------------------

struct Pool {
  int64_t k, s, p;
  LayerNode layer(LayerType t) const {
    LayerNode l;
    l.id = "pool";
    l.type = t;
    l.params.kernel_h = l.params.kernel_w = k;
    l.params.stride_h = l.params.stride_w = s;
    l.params.pad_h = l.params.pad_w = p;
    return l;
  }
  Shape out(const Shape& x) const {
    return {x.n, (x.h + 2 * p - k) / s + 1, (x.w + 2 * p - k) / s + 1, x.c};
  }
  // f(y index, list of x indices in the window (inside the image), the window's
  // size clipped to the padded image: torch's count_include_pad divisor)
  template <class F>
  void windows(const Shape& x, F f) const {
    const Shape y = out(x);
    for (int64_t b = 0; b < x.n; ++b)
      for (int64_t oy = 0; oy < y.h; ++oy)
        for (int64_t ox = 0; ox < y.w; ++ox)
          for (int64_t c = 0; c < x.c; ++c) {
            std::vector<int64_t> in;
            const int64_t y0 = oy * s - p, x0 = ox * s - p;
            const int64_t y1 = std::min(y0 + k, x.h + p), x1 = std::min(x0 + k, x.w + p);
            for (int64_t iy = y0; iy < y0 + k; ++iy)
              for (int64_t ix = x0; ix < x0 + k; ++ix)
                if (iy >= 0 && iy < x.h && ix >= 0 && ix < x.w)
                  in.push_back(((b * x.h + iy) * x.w + ix) * x.c + c);
            f(((b * y.h + oy) * y.w + ox) * y.c + c, in, (y1 - y0) * (x1 - x0));
          }
  }
};

const Pool kPools[] = {{2, 2, 0}, {3, 2, 1}};
const Shape kPoolIn{2, 6, 5, 3};

std::vector<OpCase> pool_cases(ComputeOp op) {
  std::vector<OpCase> v;
  const bool max = op == ComputeOp::MAXPOOL_FWD || op == ComputeOp::MAXPOOL_BWD;
  const bool bwd = op == ComputeOp::MAXPOOL_BWD || op == ComputeOp::AVGPOOL_BWD;
  for (const Pool& pl : kPools) {
    OpCase c;
    c.name = std::string(compute_op_name(op)) + " k" + std::to_string(pl.k) + "s" +
             std::to_string(pl.s) + "p" + std::to_string(pl.p);
    c.op = op;
    c.layer = pl.layer(max ? LayerType::MaxPool2d : LayerType::AvgPool2d);
    const Shape y = pl.out(kPoolIn);
    auto forward = [pl, max](const std::vector<float>& x) {
      Values out(static_cast<size_t>(pl.out(kPoolIn).elements()));
      pl.windows(kPoolIn, [&](int64_t o, const std::vector<int64_t>& in, int64_t divisor) {
        double r = max ? -INFINITY : 0.0;
        for (int64_t i : in) r = max ? std::max(r, double(x[i])) : r + x[i];
        out[static_cast<size_t>(o)] = max ? r : r / static_cast<double>(divisor);
      });
      return out;
    };
    if (!bwd) {
      c.in = {kPoolIn};
      c.out = {y};
      c.reference = [forward](const Tensors& in, const Tensors&) {
        return std::vector<Values>{forward(in[0])};
      };
    } else {
      // max: in [x, y, dy]; average: in [dy]. dx is added onto (overlapping windows).
      c.in = max ? std::vector<Shape>{kPoolIn, y, y} : std::vector<Shape>{y};
      if (max)
        c.prepare = [forward](Tensors& in) {
          const Values out = forward(in[0]);
          in[1].assign(out.begin(), out.end());
        };
      c.out = {kPoolIn};
      c.accumulate = 0b1;
      c.tolerance = 1e-5;
      c.reference = [pl, max](const Tensors& in, const Tensors& before) {
        const std::vector<float>& dy = max ? in[2] : in[0];
        Values dx(static_cast<size_t>(kPoolIn.elements()), 0.0);
        pl.windows(kPoolIn, [&](int64_t o, const std::vector<int64_t>& win, int64_t divisor) {
          if (max) {
            int64_t best = win.front();
            for (int64_t i : win)
              if (in[0][static_cast<size_t>(i)] > in[0][static_cast<size_t>(best)]) best = i;
            dx[static_cast<size_t>(best)] += dy[static_cast<size_t>(o)];
          } else {
            for (int64_t i : win)
              dx[static_cast<size_t>(i)] += dy[static_cast<size_t>(o)] / double(divisor);
          }
        });
        return std::vector<Values>{onto(dx, before[0], true)};
      };
    }
    v.push_back(c);
  }
  return v;
}

std::vector<OpCase> maxpool_fwd_cases() {
  return pool_cases(ComputeOp::MAXPOOL_FWD);
}
std::vector<OpCase> maxpool_bwd_cases() {
  return pool_cases(ComputeOp::MAXPOOL_BWD);
}
std::vector<OpCase> avgpool_fwd_cases() {
  return pool_cases(ComputeOp::AVGPOOL_FWD);
}
std::vector<OpCase> avgpool_bwd_cases() {
  return pool_cases(ComputeOp::AVGPOOL_BWD);
}

std::vector<OpCase> gap_cases(bool bwd) {
  OpCase c;
  c.op = bwd ? ComputeOp::GAP_BWD : ComputeOp::GAP_FWD;
  c.name = std::string(compute_op_name(c.op));
  c.layer.type = LayerType::GlobalAvgPool;
  const Shape x = kPoolIn, y{x.n, 1, 1, x.c};
  const int64_t hw = x.h * x.w;
  c.in = {bwd ? y : x};
  c.out = {bwd ? x : y};
  if (bwd) c.accumulate = 0b1;
  c.reference = [x, hw, bwd](const Tensors& in, const Tensors& before) {
    Values out(static_cast<size_t>(bwd ? x.elements() : x.n * x.c), 0.0);
    for (int64_t b = 0; b < x.n; ++b)
      for (int64_t p = 0; p < hw; ++p)
        for (int64_t c2 = 0; c2 < x.c; ++c2) {
          const size_t xi = static_cast<size_t>((b * hw + p) * x.c + c2);
          const size_t yi = static_cast<size_t>(b * x.c + c2);
          if (bwd)
            out[xi] = in[0][yi] / double(hw);
          else
            out[yi] += in[0][xi] / double(hw);
        }
    return std::vector<Values>{bwd ? onto(out, before[0], true) : out};
  };
  return {c};
}

std::vector<OpCase> gap_fwd_cases() {
  return gap_cases(false);
}
std::vector<OpCase> gap_bwd_cases() {
  return gap_cases(true);
}

// ---- copies, adds, concatenation -------------------------------------------------

using Reference = std::function<std::vector<Values>(const Tensors&, const Tensors&)>;

// A case of a layer without settings.
std::vector<OpCase> one_case(ComputeOp op, std::string name, LayerType type, std::vector<Shape> in,
                             std::vector<Shape> out, uint8_t accumulate, Reference reference) {
  OpCase c;
  c.op = op;
  c.name = std::move(name);
  c.layer.type = type;
  c.in = std::move(in);
  c.out = std::move(out);
  c.accumulate = accumulate;
  c.reference = std::move(reference);
  return {c};
}

std::vector<OpCase> copy_case(ComputeOp op, const Shape& from, const Shape& to, bool accumulate) {
  return one_case(op, std::string(compute_op_name(op)) + (accumulate ? " accumulating" : ""),
                  LayerType::Flatten, {from}, {to}, accumulate ? 0b1 : 0,
                  [accumulate](const Tensors& in, const Tensors& before) {
                    return std::vector<Values>{onto(as_double(in[0]), before[0], accumulate)};
                  });
}

std::vector<OpCase> flatten_fwd_cases() {
  return copy_case(ComputeOp::FLATTEN_FWD, kFeature, {2, 1, 1, 105}, false);
}
std::vector<OpCase> flatten_bwd_cases() {
  return copy_case(ComputeOp::FLATTEN_BWD, {2, 1, 1, 105}, kFeature, true);
}
std::vector<OpCase> identity_cases() {
  return copy_case(ComputeOp::IDENTITY, kFeature, kFeature, false);
}

std::vector<OpCase> add_fwd_cases() {
  return one_case(ComputeOp::ADD_FWD, "ADD_FWD", LayerType::Add, {kFeature, kFeature}, {kFeature},
                  0, [](const Tensors& in, const Tensors&) {
                    Values y(in[0].size());
                    for (size_t i = 0; i < y.size(); ++i) y[i] = double(in[0][i]) + in[1][i];
                    return std::vector<Values>{y};
                  });
}

std::vector<OpCase> add_bwd_cases() {
  return one_case(
      ComputeOp::ADD_BWD, "ADD_BWD dx1 accumulating", LayerType::Add, {kFeature},
      {kFeature, kFeature}, 0b10, [](const Tensors& in, const Tensors& before) {
        return std::vector<Values>{as_double(in[0]), onto(as_double(in[0]), before[1], true)};
      });
}

const Shape kCat0{2, 4, 3, 5}, kCat1{2, 4, 3, 3}, kCat{2, 4, 3, 8};

std::vector<OpCase> concat_fwd_cases() {
  return one_case(ComputeOp::CONCAT_FWD, "CONCAT_FWD 5+3", LayerType::Concat, {kCat0, kCat1},
                  {kCat}, 0, [](const Tensors& in, const Tensors&) {
                    Values y;
                    for (int64_t r = 0; r < kCat.n * kCat.h * kCat.w; ++r) {
                      for (int64_t k = 0; k < kCat0.c; ++k)
                        y.push_back(in[0][static_cast<size_t>(r * kCat0.c + k)]);
                      for (int64_t k = 0; k < kCat1.c; ++k)
                        y.push_back(in[1][static_cast<size_t>(r * kCat1.c + k)]);
                    }
                    return std::vector<Values>{y};
                  });
}

std::vector<OpCase> concat_bwd_cases() {
  return one_case(
      ComputeOp::CONCAT_BWD, "CONCAT_BWD 5+3, dx1 accumulating", LayerType::Concat, {kCat},
      {kCat0, kCat1}, 0b10, [](const Tensors& in, const Tensors& before) {
        Values d0, d1;
        for (int64_t r = 0; r < kCat.n * kCat.h * kCat.w; ++r)
          for (int64_t k = 0; k < kCat.c; ++k)
            (k < kCat0.c ? d0 : d1).push_back(in[0][static_cast<size_t>(r * kCat.c + k)]);
        return std::vector<Values>{d0, onto(d1, before[1], true)};
      });
}

// ---- the table, in enum order -------------------------------------------------

constexpr OpEntry elsewhere(const char* tests) {
  return {nullptr, tests};
}

constexpr OpEntry kComputeOps[] = {
    elsewhere("the backend's own copy: engine.input_overlap, engine.training"),  // H2D_INPUT
    elsewhere("engine.cpu_kernels (flattenIdentityAndLabelsCopy), cuda.cuda_compute_kernels"),
    {&conv_fwd_cases},
    {[] { return conv_bwd_cases(false); }},
    {[] { return conv_bwd_cases(true); }},
    {&linear_fwd_cases},
    {[] { return linear_bwd_cases(false); }},
    {[] { return linear_bwd_cases(true); }},
    elsewhere("engine.cpu_kernels (BN against finite differences), cuda.cuda_batch_norm"),
    elsewhere("engine.cpu_kernels, cuda.cuda_batch_norm"),  // BN_FWD_INFER
    elsewhere("engine.cpu_kernels, cuda.cuda_batch_norm"),  // BN_BWD
    elsewhere("engine.cpu_kernels (fused against unfused), cuda.cuda_batch_norm"),
    elsewhere("engine.cpu_kernels, cuda.cuda_batch_norm"),  // BN_RELU_FWD_INFER
    elsewhere("engine.cpu_kernels, cuda.cuda_batch_norm"),  // BN_RELU_BWD
    {&activation_fwd_cases},                                // RELU_FWD (with the family)
    {&activation_bwd_cases},                                // RELU_BWD
    {&activation_fwd_cases},                                // ACTIVATION_FWD
    {&activation_bwd_cases},                                // ACTIVATION_BWD
    {&maxpool_fwd_cases},
    {&maxpool_bwd_cases},
    {&avgpool_fwd_cases},
    {&avgpool_bwd_cases},
    {&gap_fwd_cases},
    {&gap_bwd_cases},
    elsewhere("engine.cpu_kernels (counter-based masks), cuda.cuda_compute_kernels"),
    elsewhere("engine.cpu_kernels, cuda.cuda_compute_kernels"),  // DROPOUT_BWD
    {&identity_cases},
    {&flatten_fwd_cases},
    {&flatten_bwd_cases},
    {&add_fwd_cases},
    {&add_bwd_cases},
    {&concat_fwd_cases},
    {&concat_bwd_cases},
    elsewhere("engine.cpu_kernels (softmax CE against the log-sum-exp), cuda.cuda_compute_kernels"),
    elsewhere("engine.cpu_kernels, cuda.cuda_compute_kernels"),      // SOFTMAX_CE_FWD
    elsewhere("engine.cpu_range_kernels, engine.amp_training"),      // LOSS_SCALE_UPDATE
    elsewhere("engine.cpu_range_kernels, cuda.cuda_range_kernels"),  // ADAM_BIAS_CORRECTION
    elsewhere("engine.amp_training"),                                // COUNT_UPDATE
};
static_assert(std::size(kComputeOps) == static_cast<size_t>(ComputeOp::NUM_COMPUTE_OPS),
              "every ComputeOp needs its entry in kComputeOps, in enum order");

// Range ops work on spans of regions; their cases are still in the range-kernel tests.
constexpr const char* kRangeOpsElsewhere[] = {
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // CLEAR
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // CAST_FP32_TO_FP16
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // CAST_FP16_TO_FP32
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // SCALE
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // NAN_CHECK
    "engine.collectives, engine.data_parallel",           // ALLREDUCE_MEAN
    "engine.collectives, engine.data_parallel",           // ALLREDUCE_SUM
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // COPY
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // ACCUMULATE
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // BN_EQ_PARAMS
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // SGD_UPDATE
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // ADAM_UPDATE
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // LARS_NORMS
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // LARS_UPDATE
    "engine.cpu_range_kernels, cuda.cuda_range_kernels",  // EMA_UPDATE
};
static_assert(std::size(kRangeOpsElsewhere) == static_cast<size_t>(RangeOp::NUM_RANGE_OPS),
              "every RangeOp needs its entry in kRangeOpsElsewhere, in enum order");

// The cases of `op` (the activation entries list ReLU and the family for both
// of their ops: keep each op's own).
std::vector<OpCase> cases_of(ComputeOp op) {
  const OpEntry& e = kComputeOps[static_cast<size_t>(op)];
  std::vector<OpCase> out;
  if (!e.cases) return out;
  for (OpCase& c : e.cases())
    if (c.op == op) out.push_back(std::move(c));
  return out;
}

double worst_error(const std::vector<float>& got, const Values& want) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return diff / scale;
}

}  // namespace

class TestBackendOps : public QObject {
  Q_OBJECT

 private slots:
  void everyOpHasAnEntryAndMostHaveCases() {
    int with_cases = 0;
    for (size_t i = 0; i < std::size(kComputeOps); ++i) {
      const OpEntry& e = kComputeOps[i];
      QVERIFY2(e.cases || e.elsewhere, compute_op_name(static_cast<ComputeOp>(i)).data());
      if (!cases_of(static_cast<ComputeOp>(i)).empty()) ++with_cases;
    }
    qInfo("%d of %d compute ops have cases here; range ops: 0 of %d", with_cases,
          static_cast<int>(ComputeOp::NUM_COMPUTE_OPS), static_cast<int>(RangeOp::NUM_RANGE_OPS));
    QVERIFY(with_cases >= 23);
  }

  void opMatchesItsReference_data() {
    QTest::addColumn<QString>("backend");
    QTest::addColumn<int>("op");
    QTest::addColumn<int>("index");
    for (const char* b : {"cpu", "cuda"})
      for (int op = 0; op < static_cast<int>(ComputeOp::NUM_COMPUTE_OPS); ++op) {
        const std::vector<OpCase> cs = cases_of(static_cast<ComputeOp>(op));
        if (cs.empty()) {
          QTest::newRow(qPrintable(QStringLiteral("%1/%2").arg(b).arg(
              compute_op_name(static_cast<ComputeOp>(op)).data())))
              << QString(b) << op << -1;
          continue;
        }
        for (size_t i = 0; i < cs.size(); ++i)
          QTest::newRow(qPrintable(QStringLiteral("%1/%2").arg(b).arg(cs[i].name.c_str())))
              << QString(b) << op << static_cast<int>(i);
      }
  }

  void opMatchesItsReference() {
    QFETCH(QString, backend);
    QFETCH(int, op);
    QFETCH(int, index);
    if (index < 0)
      QSKIP(qPrintable(QStringLiteral("no case here yet; covered by %1")
                           .arg(kComputeOps[static_cast<size_t>(op)].elsewhere)));
    std::string why_not;
    std::unique_ptr<Backend> b = make_backend(backend.toStdString(), why_not);
    if (!b) QSKIP(why_not.c_str());
    const OpCase c = cases_of(static_cast<ComputeOp>(op))[static_cast<size_t>(index)];
    std::mt19937 rng(1234 + static_cast<unsigned>(op) * 31 + static_cast<unsigned>(index));
    Tensors in = random_tensors(c.in, rng);
    if (c.prepare) c.prepare(in);
    const Tensors before = random_tensors(c.out, rng);
    Tensors out = before;
    run_case(*b, c, c.backend_view ? c.backend_view(in) : in, out);
    const std::vector<Values> want = c.reference(in, before);
    QCOMPARE(want.size(), out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const double err = worst_error(out[i], want[i]);
      QVERIFY2(err <= c.tolerance, qPrintable(QStringLiteral("output %1: relative error %2 > %3")
                                                  .arg(i)
                                                  .arg(err)
                                                  .arg(c.tolerance)));
    }
    // The backward against central differences of the plain forward.
    if (c.forward) {
      Tensors f;
      for (size_t k : c.forward_inputs) f.push_back(in[k]);
      const std::vector<float>& dy = in[c.dy];
      auto loss = [&] {
        const Values y = c.forward(f);
        double s = 0;
        for (size_t i = 0; i < y.size(); ++i) s += y[i] * dy[i];
        return s;
      };
      std::vector<float>& x = f[c.grad_of];
      const size_t step = std::max<size_t>(1, x.size() / 24);
      for (size_t i = 0; i < x.size(); i += step) {
        const float keep = x[i];
        x[i] = keep + 1e-2f;
        const double up = loss();
        x[i] = keep - 1e-2f;
        const double down = loss();
        x[i] = keep;
        const double numeric = (up - down) / (2e-2);
        // The accumulated slot started at `before`: take it off.
        const double analytic =
            double(out[c.grad_out][i]) -
            ((c.accumulate >> c.grad_out & 1u) ? double(before[c.grad_out][i]) : 0.0);
        QVERIFY2(std::fabs(analytic - numeric) <=
                     1e-3 * std::max(1.0, std::fabs(analytic) + std::fabs(numeric)),
                 qPrintable(QStringLiteral("d/dx[%1]: %2, finite differences %3")
                                .arg(i)
                                .arg(analytic)
                                .arg(numeric)));
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestBackendOps)
#include "test_backend_ops.moc"
