// SPDX-License-Identifier: GPL-3.0-or-later
// One test for the ops on every backend (the habit of ggml's test-backend-ops):
// each case lays its tensors out in one arena, copies the inputs in, runs one
// launch through the Backend interface (the CPU backend always, the CUDA
// backend where a device is there, skipped otherwise), copies the outputs
// back and compares them with a plain reference in double (loops written for
// obviousness, not oneDNN against cuDNN); backward cases are also checked
// against central differences of that reference's forward. Every case runs in
// FP32 and, where the op has an FP16 form, again in an AMP plan's layout (FP16
// features with padded channels and NaN in the padding, FP16 weights, FP32
// statistics), where every output padding lane must come back zero; a forked
// backward also runs as its parts one after another, and the ops a packed plan
// may run in place also with the output in the input's bytes. The table
// has an entry per ComputeOp and RangeOp, in enum order, checked when the test
// builds: a new op without an entry does not compile. Entries without cases
// yet name the tests that cover the op today, and show as skipped rows.
#include <QtTest>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <renaissance/devices.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernel_builds.h"
#include "backends/cpu/kernels/dropout.h"
#include "backends/cuda_backend_options.h"
#include "backends/cuda_plugin.h"
#include "compile/computation_graph.h"
#include "compile/layer_lowering.h"
#include "compile/node_params.h"
#include "compile/scalar_slot.h"
#include "compile/step_packing.h"
#include "compile/stream_policy.h"
#include "core/attention_dropout.h"
#include "core/bf16_convert.h"
#include "data/half.h"
#include "runtime/backend.h"

using namespace tr;

namespace {

using Values = std::vector<double>;
using Tensors = std::vector<std::vector<float>>;

// A tensor inside a span: its region, owning layer and element count.
struct SpanTensor {
  Region region;
  int owner;
  int64_t elements;
  std::string name = {};  // LARS tells a bias by it
};

// One launch of one op: its tensors (FP32, compact), its layer settings, and
// what the outputs must be.
struct OpCase {
  std::string name;
  ComputeOp op = ComputeOp::NUM_COMPUTE_OPS;
  RangeOp range = RangeOp::NUM_RANGE_OPS;  // set: a RANGE node over spans
  // Spans of a range op, by element count, after the tensors in the inputs and
  // outputs; FP16 spans travel as floats.
  std::vector<int64_t> in_spans, out_spans;
  std::vector<DType> in_span_types, out_span_types;
  // The DTensors inside each span, in address order (ops that work per layer
  // inside their spans find them by region and owner); empty: none.
  std::vector<std::vector<SpanTensor>> in_span_tensors, out_span_tensors;
  std::vector<OwnerEps> owner_eps;                    // BN_EQ_PARAMS: each owner's eps
  std::vector<std::pair<ScalarSlot, float>> scalars;  // S_SCALARS before (the rest 0)
  bool scalars_out = false;  // the last output is the S_SCALARS block after
  // A collective over this many ranks: one in span, in place; the inputs and
  // outputs are that span on each rank, in rank order.
  int world = 1;
  // The node works on its rank's share (GraphNode::data_sharded).
  bool data_sharded = false;
  // The launch's place in a data-parallel world (not a collective: dropout
  // masks number the global batch by it) and the project seed.
  int rank = 0, ranks = 1;
  uint64_t seed = 0;
  bool fp16_only = false;  // runs in the FP16 mode alone (the AMP loss scale)
  std::vector<Shape> in, out;
  std::vector<DType> in_types, out_types;  // FP32 where empty; INT32 values travel as floats
  // The 16-bit modes: each tensor's role in an AMP or BF16 plan (see sixteen_layout); empty
  // where the op has no FP16 form.
  std::string in_roles, out_roles;
  LayerNode layer;
  TrainingConstants training = {};  // the run's settings (the FP16 mode makes it AMP)
  uint8_t accumulate = 0;           // outputs added onto (they start random)
  // Adjusts the random inputs to what the op's contract asks (MAXPOOL_BWD's y
  // is the forward's output of its x).
  std::function<void(Tensors& in)> prepare;
  std::function<void(Tensors& before)> prepare_before;  // the same for the outputs' start
  // What the backend is handed instead of the inputs the reference reads (a
  // backward that reads y is handed y where the reference reads x).
  std::function<Tensors(const Tensors& in)> backend_view;
  // The expected outputs from the inputs and the outputs' values before the launch.
  std::function<std::vector<Values>(const Tensors& in, const Tensors& before)> reference;
  double tolerance = 1e-5;  // relative to the largest expected value of the output
  // A matrix product: the CUDA backend runs FP32 ones on TF32 tensor cores
  // (operands rounded to 10 mantissa bits), so its FP32 rows allow 5e-3.
  bool tensor_cores = false;
  // The CPU's AMX tile kernels (cpu_kernels.h) round intermediate operands
  // of their products to bfloat16 (attention's probabilities and their
  // gradients): on top of the outputs' own rounding, "cpu-native" allows 1e-2.
  bool tile_products = false;
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

struct PlacedSpan {
  uint64_t offset = 0, bytes = 0;
  DType dtype = DType::FP32;
  std::vector<std::unique_ptr<DTensor>> tensors;  // inside it, in address order
};

struct Placed {
  std::vector<std::unique_ptr<DTensor>> descs;
  std::vector<PlacedSpan> spans;  // in spans, then out spans
  uint64_t bytes = 0;
  uint64_t scalars = 0;  // arena offset of the S_SCALARS block
};

uint64_t align256(uint64_t v) {
  return (v + 255) / 256 * 256;
}

PlacedSpan span_at(Placed& p, int64_t elements, DType dtype) {
  PlacedSpan s;
  s.offset = p.bytes;
  s.bytes = static_cast<uint64_t>(elements) * (is_16bit_float(dtype) ? 2 : 4);
  s.dtype = dtype;
  p.bytes = align256(p.bytes + s.bytes);
  return s;
}

// A tensor's role in an AMP plan, which fixes its type, region and padding in
// the FP16 mode (letters in OpCase::in_roles / out_roles):
//   I input buffer (FP16, C padded to 4)   F feature (FP16, padded to 8)
//   G gradient slot (FP16, padded to 8)    W weights, A series (FP16, compact)
//   D weight gradients, H series (FP16)    S FP32 under AMP too
//   L labels (INT32)                       M dropout mask (INT8, padded to 8)
//   P batch norm's scale or shift (W series, FP32 at every precision)
//   Q their gradients (G series, FP32 at every precision)
struct Layout {
  DType dtype;
  Region region;
};

// A BF16 plan places every tensor as an AMP one does, in bfloat16.
Layout sixteen_layout(char role, DType half) {
  const bool bf16 = half == DType::BF16;
  switch (role) {
    case 'I':
      return {half, Region::I_A_DATA};
    case 'F':
      return {half, bf16 ? Region::F_FEATURE_BF16 : Region::F_FEATURE_FP16};
    case 'G':
      return {half, bf16 ? Region::F_GRAD_SLOT_BF16 : Region::F_GRAD_SLOT_FP16};
    case 'W':
      return {half, Region::A_DEEP_CONV};
    case 'D':
      return {half, Region::H_DEEP_CONV};
    case 'L':
      return {DType::INT32, Region::T_SCRATCH};
    case 'M':
      return {DType::INT8, Region::S_MASK};
    case 'P':
      return {DType::FP32, Region::W_BN_WEIGHT};
    case 'Q':
      return {DType::FP32, Region::G_BN_WEIGHT};
    default:
      return {DType::FP32, Region::T_SCRATCH};
  }
}

// The BLOCKED mode's choice: a feature map, gradient or mask of an op that
// takes channel blocks, with whole blocks of 8 channels (AVX2's; the input
// buffer never is). Weights and everything else stay as they are.
bool blocked_role(const OpCase& c, char role, const Shape& s) {
  return compute_op_info(c.op).channel_blocks != ChannelBlocks::None &&
         (role == 'F' || role == 'G' || role == 'M') && s.c % 8 == 0;
}

// `half`: the 16-bit mode's type (FP32: the plain FP32 layout). `blocked`:
// FP32 with the features in channel blocks of 8 (blocked_role).
Placed place(const OpCase& c, DType half, bool blocked = false) {
  Placed p;
  auto add = [&](const Shape& s, Layout l, char role) {
    auto d = std::make_unique<DTensor>();
    d->id = static_cast<DTensorId>(p.descs.size());
    d->shape = s;
    d->dtype = l.dtype;
    d->region = l.region;
    if (blocked && blocked_role(c, role, s)) {
      d->pad_channels = false;
      d->channel_block = 8;
    }
    d->slot_bytes = DTensor::slot_bytes_for(s, l.dtype, d->region);
    d->offset = p.bytes;
    p.bytes = align256(p.bytes + d->slot_bytes);
    p.descs.push_back(std::move(d));
  };
  auto type = [](const std::vector<DType>& t, size_t i) {
    return i < t.size() ? t[i] : DType::FP32;
  };
  auto layout = [&](const std::string& roles, const std::vector<DType>& types, size_t i) {
    if (half != DType::FP32) return sixteen_layout(roles[i], half);
    const DType t = type(types, i);
    return Layout{t, t == DType::INT8 ? Region::S_MASK : Region::T_SCRATCH};
  };
  auto role = [](const std::string& roles, size_t i) { return i < roles.size() ? roles[i] : ' '; };
  for (size_t i = 0; i < c.in.size(); ++i)
    add(c.in[i], layout(c.in_roles, c.in_types, i), role(c.in_roles, i));
  for (size_t i = 0; i < c.out.size(); ++i)
    add(c.out[i], layout(c.out_roles, c.out_types, i), role(c.out_roles, i));
  auto add_span = [&](int64_t elements, DType dtype, const std::vector<SpanTensor>* inside) {
    PlacedSpan sp = span_at(p, elements, dtype);
    uint64_t at = sp.offset;
    if (inside)
      for (const SpanTensor& t : *inside) {
        auto d = std::make_unique<DTensor>();
        d->shape = {1, 1, 1, t.elements};
        d->region = t.region;
        d->owner = t.owner;
        d->name = t.name;
        d->offset = at;
        d->slot_bytes = static_cast<uint64_t>(t.elements) * 4;
        at += d->slot_bytes;
        sp.tensors.push_back(std::move(d));
      }
    p.spans.push_back(std::move(sp));
  };
  for (size_t i = 0; i < c.in_spans.size(); ++i)
    add_span(c.in_spans[i], type(c.in_span_types, i),
             i < c.in_span_tensors.size() ? &c.in_span_tensors[i] : nullptr);
  for (size_t i = 0; i < c.out_spans.size(); ++i)
    add_span(c.out_spans[i], type(c.out_span_types, i),
             i < c.out_span_tensors.size() ? &c.out_span_tensors[i] : nullptr);
  p.scalars = p.bytes;
  p.bytes = align256(p.bytes + static_cast<uint64_t>(ScalarSlot::COUNT) * sizeof(float));
  return p;
}

constexpr uint16_t kHalfNaN = 0x7E00, kBf16NaN = 0x7FC0;

// A tensor's bytes as the device lays them out (rows of padded_c), from its
// logical values; padding lanes hold NaN (FP16) so a kernel that read them
// shows. Except an input buffer's: the transfer writes its padding lanes as
// zero, which the first convolution counts on (it reads them as channels
// that its zero-padded filter multiplies by zero).
// Where logical element (row r of the NHWC rows, channel k) lies on the device.
size_t device_index(const DTensor& d, int64_t r, int64_t k) {
  if (!d.is_blocked()) return static_cast<size_t>(r * d.padded_c() + k);
  const int64_t hw = d.shape.h * d.shape.w, n = r / hw, p = r % hw;
  return static_cast<size_t>(d.element_index(n, p / d.shape.w, p % d.shape.w, k));
}

std::vector<uint8_t> device_bytes(const DTensor& d, const std::vector<float>& v) {
  const int64_t c = d.shape.c, pc = d.padded_c(), rows = d.shape.elements() / c;
  const bool input = d.region == Region::I_A_DATA || d.region == Region::I_B_DATA;
  const uint16_t half_pad = input ? 0 : kHalfNaN, bf16_pad = input ? 0 : kBf16NaN;
  std::vector<uint8_t> b(d.slot_bytes, 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < pc; ++k) {
      const size_t at = device_index(d, r, k);
      const float x = k < c ? v[static_cast<size_t>(r * c + k)] : 0.0f;
      switch (d.dtype) {
        case DType::FP16: {
          const uint16_t h = k < c ? fp32_to_fp16(x) : half_pad;
          std::memcpy(b.data() + at * 2, &h, 2);
          break;
        }
        case DType::BF16: {
          const uint16_t h = k < c ? float_to_bf16_bits(x) : bf16_pad;
          std::memcpy(b.data() + at * 2, &h, 2);
          break;
        }
        case DType::INT8:
          b[at] = static_cast<uint8_t>(static_cast<int8_t>(x));
          break;
        case DType::INT32: {
          const int32_t i = static_cast<int32_t>(x);
          std::memcpy(b.data() + at * 4, &i, 4);
          break;
        }
        default:
          std::memcpy(b.data() + at * 4, &x, 4);
      }
    }
  return b;
}

// The logical values back; false when an FP16 padding lane is not zero.
bool logical_values(const DTensor& d, const std::vector<uint8_t>& b, std::vector<float>& v) {
  const int64_t c = d.shape.c, pc = d.padded_c(), rows = d.shape.elements() / c;
  bool padding_zero = true;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < pc; ++k) {
      const size_t at = device_index(d, r, k);
      float x = 0;
      switch (d.dtype) {
        case DType::FP16:
        case DType::BF16: {
          uint16_t h;
          std::memcpy(&h, b.data() + at * 2, 2);
          x = d.dtype == DType::FP16 ? fp16_to_fp32(h) : bf16_bits_to_float(h);
          if (k >= c && h != 0) padding_zero = false;
          break;
        }
        case DType::INT8:
          x = static_cast<int8_t>(b[at]);
          break;
        case DType::INT32: {
          int32_t i;
          std::memcpy(&i, b.data() + at * 4, 4);
          x = static_cast<float>(i);
          break;
        }
        default:
          std::memcpy(&x, b.data() + at * 4, 4);
      }
      if (k < c) v[static_cast<size_t>(r * c + k)] = x;
    }
  return padding_zero;
}

// How a case runs: FP32, in the AMP plan's FP16 layout, as the parts of a
// forked backward one after another (dW, dB, dX), or with its output in the
// bytes of its first input (the ops a packed plan may run in place).
// OVERWRITE: a case whose outputs accumulate, run with the mask clear (the
// outputs start random and must be overwritten).
// BF16: the FP16 mode's layout with bfloat16 storage.
// BLOCKED: FP32 with the feature maps in channel blocks of 8 (the CPU's
// layout for oneDNN's direct convolutions), which must give the FP32 bits.
enum class Mode { FP32, FP16, PARTS, IN_PLACE, OVERWRITE, BF16, BLOCKED };

DType half_of(Mode m) {
  return m == Mode::FP16 ? DType::FP16 : m == Mode::BF16 ? DType::BF16 : DType::FP32;
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::FP32:
      return "fp32";
    case Mode::FP16:
      return "fp16";
    case Mode::PARTS:
      return "parts";
    case Mode::IN_PLACE:
      return "in-place";
    case Mode::OVERWRITE:
      return "overwrite";
    case Mode::BF16:
      return "bf16";
    case Mode::BLOCKED:
      return "blocked";
  }
  return "?";
}

// The modes a case runs in besides FP32.
std::vector<Mode> modes_of(const OpCase& c) {
  if (c.fp16_only) return {Mode::FP16};
  std::vector<Mode> m{Mode::FP32};
  if (!c.in_roles.empty()) {
    m.push_back(Mode::FP16);
    m.push_back(Mode::BF16);
  }
  if (c.range == RangeOp::NUM_RANGE_OPS && !fork_parts(c.op, c.out.size() == 3).empty())
    m.push_back(Mode::PARTS);
  if (c.range == RangeOp::NUM_RANGE_OPS && compute_op_info(c.op).in_place && c.accumulate == 0)
    m.push_back(Mode::IN_PLACE);
  if (c.range == RangeOp::NUM_RANGE_OPS && c.accumulate != 0) m.push_back(Mode::OVERWRITE);
  bool blocks = false;
  for (size_t i = 0; i < c.in.size() && i < c.in_roles.size(); ++i)
    blocks |= blocked_role(c, c.in_roles[i], c.in[i]);
  for (size_t i = 0; i < c.out.size() && i < c.out_roles.size(); ++i)
    blocks |= blocked_role(c, c.out_roles[i], c.out[i]);
  if (c.range == RangeOp::NUM_RANGE_OPS && blocks) m.push_back(Mode::BLOCKED);
  return m;
}

// Runs `c` on `backend` from `in` and the outputs' starting values `out`,
// which it overwrites with what the launch left (in the PARTS mode, the launch
// of part `only` alone where it is set). Returns false when an FP16 output's
// padding lane is not zero.
// Perf mode: the launch repeated `repeats` times, and how long they took
// (the copies in and out left out).
struct Timing {
  int repeats = 1;
  double seconds = 0;
};

bool run_case(Backend& backend, const OpCase& c, const Tensors& in, Tensors& out, Mode mode,
              int only = -1, Timing* timing = nullptr) {
  const bool fp16 = mode == Mode::FP16;
  Placed p = place(c, half_of(mode), mode == Mode::BLOCKED);
  // In place: output 0 is input 0's bytes (same shape and type).
  if (mode == Mode::IN_PLACE) p.descs[c.in.size()]->offset = p.descs[0]->offset;
  backend.allocate_arenas(p.bytes);
  uint8_t* arena = backend.arena(0);
  GraphNode node;
  node.kind = c.range != RangeOp::NUM_RANGE_OPS ? NodeKind::RANGE : NodeKind::COMPUTE;
  node.op = c.op;
  node.range_op = c.range;
  node.layer = 0;
  node.accumulate_mask = c.accumulate;
  node.data_sharded = c.data_sharded;
  node.params = layer_node_params(c.layer);
  node.params.owner_eps = c.owner_eps;
  TrainingConstants constants = c.training;
  if (fp16) constants.precision = Precision::AMP;
  KernelArgs args;
  args.node = &node;
  args.layer_params = &node.params;
  args.training = &constants;
  args.scalars = reinterpret_cast<float*>(arena + p.scalars);
  args.seed = c.seed;
  args.rank = c.rank;
  args.world = c.ranks;
  std::vector<float> scalars(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
  if (fp16) scalars[static_cast<size_t>(ScalarSlot::LOSS_SCALE)] = 1.0f;  // gradients unscaled
  for (auto [slot, value] : c.scalars) scalars[static_cast<size_t>(slot)] = value;
  auto enqueue_copy = [&](LaunchKind kind, uint64_t offset, void* host, uint64_t bytes) {
    Launch l;
    l.kind = kind;
    l.offset = offset;
    l.host = host;
    l.bytes = bytes;
    l.tag.stream = StreamKind::COMP_1;
    l.tag.label = c.name;
    backend.enqueue(0, StreamKind::COMP_1, l);
  };
  // Tensors in their device layout.
  std::vector<std::vector<uint8_t>> bytes(p.descs.size());
  for (size_t i = 0; i < p.descs.size(); ++i) {
    const DTensor& d = *p.descs[i];
    const bool input = i < c.in.size();
    bytes[i] = device_bytes(d, input ? in[i] : out[i - c.in.size()]);
    (input ? args.in : args.out).push_back({arena + d.offset, &d});
    // In place, the output's bytes are the input's: nothing of its own to copy in.
    if (mode == Mode::IN_PLACE && i == c.in.size()) continue;
    enqueue_copy(LaunchKind::COPY_H2D, d.offset, bytes[i].data(), bytes[i].size());
  }
  // Spans: FP16 ones as half bits.
  const size_t n_in_spans = c.in_spans.size();
  std::vector<std::vector<uint16_t>> halves(p.spans.size());
  std::vector<std::vector<float>> floats(p.spans.size());
  for (size_t k = 0; k < p.spans.size(); ++k) {
    const PlacedSpan& sp = p.spans[k];
    floats[k] = k < n_in_spans ? in[c.in.size() + k] : out[c.out.size() + (k - n_in_spans)];
    SpanArg arg;
    arg.data = arena + sp.offset;
    arg.bytes = sp.bytes;
    arg.offset = sp.offset;
    for (const auto& t : sp.tensors) arg.tensors.push_back(t.get());
    (k < n_in_spans ? args.in_spans : args.out_spans).push_back(arg);
    void* host = floats[k].data();
    if (is_16bit_float(sp.dtype)) {
      halves[k].resize(floats[k].size());
      for (size_t i = 0; i < floats[k].size(); ++i)
        halves[k][i] =
            sp.dtype == DType::FP16 ? fp32_to_fp16(floats[k][i]) : float_to_bf16_bits(floats[k][i]);
      host = halves[k].data();
    }
    enqueue_copy(LaunchKind::COPY_H2D, sp.offset, host, sp.bytes);
  }
  enqueue_copy(LaunchKind::COPY_H2D, p.scalars, scalars.data(), scalars.size() * sizeof(float));
  // One launch, or one per part of a forked backward, in order on one stream.
  std::vector<KernelArgs> launches;
  if (mode == Mode::PARTS) {
    const std::vector<ForkPart> parts = fork_parts(c.op, c.out.size() == 3);
    for (size_t k = 0; k < parts.size(); ++k) {
      if (only >= 0 && static_cast<size_t>(only) != k) continue;
      const ForkPart& f = parts[k];
      launches.push_back(args);
      launches.back().part = static_cast<int>(f.part);
    }
  } else {
    launches.push_back(args);
  }
  // Prepared once, as a captured graph's launches are; a timed run repeats
  // only the enqueues.
  std::vector<Launch> kernels(launches.size());
  for (size_t k = 0; k < launches.size(); ++k) {
    kernels[k].kind = LaunchKind::KERNEL;
    kernels[k].args = &launches[k];
    kernels[k].tag.stream = StreamKind::COMP_1;
    kernels[k].tag.label = c.name;
    backend.prepare_launch(0, StreamKind::COMP_1, kernels[k]);
  }
  std::chrono::steady_clock::time_point started;
  if (timing) {
    backend.synchronize(0);  // the inputs are in: only the launches are timed
    started = std::chrono::steady_clock::now();
  }
  for (int r = 0; r < (timing ? timing->repeats : 1); ++r)
    for (Launch& kernel : kernels) backend.enqueue(0, StreamKind::COMP_1, kernel);
  if (timing) {
    backend.synchronize(0);
    timing->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  for (size_t i = c.in.size(); i < p.descs.size(); ++i)
    enqueue_copy(LaunchKind::COPY_D2H, p.descs[i]->offset, bytes[i].data(), bytes[i].size());
  for (size_t k = n_in_spans; k < p.spans.size(); ++k)
    enqueue_copy(
        LaunchKind::COPY_D2H, p.spans[k].offset,
        is_16bit_float(p.spans[k].dtype) ? static_cast<void*>(halves[k].data()) : floats[k].data(),
        p.spans[k].bytes);
  if (c.scalars_out)
    enqueue_copy(LaunchKind::COPY_D2H, p.scalars, out.back().data(),
                 scalars.size() * sizeof(float));
  backend.synchronize(0);
  bool padding_zero = true;
  for (size_t i = c.in.size(); i < p.descs.size(); ++i)
    padding_zero &= logical_values(*p.descs[i], bytes[i], out[i - c.in.size()]);
  for (size_t k = n_in_spans; k < p.spans.size(); ++k) {
    if (p.spans[k].dtype == DType::FP16)
      fp16_to_fp32(halves[k].data(), floats[k].data(), halves[k].size());
    if (p.spans[k].dtype == DType::BF16)
      for (size_t i = 0; i < halves[k].size(); ++i) floats[k][i] = bf16_bits_to_float(halves[k][i]);
    out[c.out.size() + (k - n_in_spans)] = floats[k];
  }
  return padding_zero;
}

// A collective: each rank's span copied into its arena, one COLLECTIVE
// launch per rank, every rank's span copied back (a reduce-scatter's out
// span, zeroed first, lies after its in span). Sequence parallel's batch
// collectives take their spans as FP32 features of 4 channels instead.
void run_collective(Backend& backend, const OpCase& c, const Tensors& in, Tensors& out) {
  const uint64_t bytes = static_cast<uint64_t>(c.in_spans[0]) * 4;
  const uint64_t out_bytes = static_cast<uint64_t>(c.out_spans[0]) * 4;
  const bool batch =
      c.range == RangeOp::ALLGATHER_BATCH || c.range == RangeOp::REDUCE_SCATTER_BATCH;
  const bool apart = c.range == RangeOp::REDUCE_SCATTER || batch;
  const uint64_t out_at = apart ? align256(bytes) : 0;
  backend.allocate_arenas(out_at + align256(std::max(bytes, out_bytes)));
  const std::vector<float> zeros(static_cast<size_t>(c.in_spans[0]), 0.0f);
  GraphNode node;
  node.kind = NodeKind::RANGE;
  node.range_op = c.range;
  // The harness's backends have no tensor dimension: the batch collectives
  // run over every rank, a tensor group's semantics over the two.
  node.group = batch ? CommGroup::World : CommGroup::Data;
  DTensor in_desc, out_desc;
  in_desc.shape = {c.in_spans[0] / 4, 1, 1, 4};
  out_desc.shape = {c.out_spans[0] / 4, 1, 1, 4};
  in_desc.region = out_desc.region = Region::F_FEATURE_FP32;
  std::vector<KernelArgs> args(static_cast<size_t>(c.world));
  Tensors host = in;
  for (int r = 0; r < c.world; ++r) {
    KernelArgs& a = args[static_cast<size_t>(r)];
    a.node = &node;
    a.rank = r;
    a.world = c.world;
    if (batch) {
      a.in = {{backend.arena(r), &in_desc}};
      a.out = {{backend.arena(r) + out_at, &out_desc}};
    }
    SpanArg span;
    span.data = backend.arena(r);
    span.bytes = bytes;
    a.in_spans = {span};
    span.data = backend.arena(r) + out_at;
    span.offset = out_at;
    a.out_spans = {span};
    Launch copy_in;
    copy_in.kind = LaunchKind::COPY_H2D;
    copy_in.host = host[static_cast<size_t>(r)].data();
    copy_in.bytes = bytes;
    copy_in.tag.stream = StreamKind::COMP_1;
    backend.enqueue(r, StreamKind::COMP_1, copy_in);
    if (apart && !batch) {
      Launch clear = copy_in;
      clear.host = const_cast<float*>(zeros.data());
      clear.offset = out_at;
      backend.enqueue(r, StreamKind::COMP_1, clear);
    }
    Launch l;
    l.kind = LaunchKind::COLLECTIVE;
    l.args = &a;
    l.tag.stream = StreamKind::COMP_1;
    l.tag.label = c.name;
    backend.prepare_launch(r, StreamKind::COMP_1, l);
    backend.enqueue(r, StreamKind::COMP_1, l);
    Launch copy_out = copy_in;
    copy_out.kind = LaunchKind::COPY_D2H;
    copy_out.offset = out_at;
    copy_out.bytes = apart ? out_bytes : bytes;
    copy_out.host = out[static_cast<size_t>(r)].data();
    backend.enqueue(r, StreamKind::COMP_1, copy_out);
  }
  for (int r = 0; r < c.world; ++r) backend.synchronize(r);
}

// ---- the backends -----------------------------------------------------------

// A CPU backend that runs build `kernels` of our own kernels (kernel_builds.h;
// nullptr: the widest that runs here), and its native BF16 kernels where asked.
std::unique_ptr<Backend> make_cpu_backend(int world, const cpu::OwnKernels* kernels = nullptr,
                                          bool native_bf16 = false) {
  cpu::CpuBackendOptions o;
  o.world = world;
  o.check_step_schedule = false;  // one launch, no schedule
  o.kernels = kernels;
  o.native_bf16 = native_bf16;
  return cpu::make_cpu_backend(o);
}

// "cpu" (its widest build of our own kernels), "cpu-native" (the kernels
// written for the CPU's bfloat16 instructions, cpu_kernels.h, where they
// take the launch) or "cuda".
std::unique_ptr<Backend> make_backend(const std::string& which, int world, std::string& why_not) {
  if (which == "cpu") return make_cpu_backend(world);
  if (which == "cpu-native") return make_cpu_backend(world, nullptr, true);
  const DeviceScan scan = scan_devices();
  if (scan.cuda.empty()) {
    why_not = "no CUDA device here: " + scan.cuda_status;
    return nullptr;
  }
  if (static_cast<int>(scan.cuda.size()) < world) {
    why_not = "a collective over " + std::to_string(world) + " ranks needs as many CUDA devices";
    return nullptr;
  }
  cuda::CudaBackendOptions o;
  o.devices.clear();
  for (int d = 0; d < world; ++d) o.devices.push_back(d);
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
  int64_t n, h, w, ci, co, kh, kw, sh, sw, ph, pw;
  int64_t g = 1;  // groups: output o sees its group's input channels only
  bool bias = true;
  int64_t ho() const { return (h + 2 * ph - kh) / sh + 1; }
  int64_t wo() const { return (w + 2 * pw - kw) / sw + 1; }
  int64_t cig() const { return ci / g; }
  Shape x() const { return {n, h, w, ci}; }
  Shape wt() const { return {co, kh, kw, cig()}; }
  Shape y() const { return {n, ho(), wo(), co}; }
  // f(x index, w index, y index) for every multiply.
  template <class F>
  void taps(F f) const {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oy = 0; oy < ho(); ++oy)
        for (int64_t ox = 0; ox < wo(); ++ox)
          for (int64_t o = 0; o < co; ++o)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t iy = oy * sh - ph + i, ix = ox * sw - pw + j;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const int64_t first = o / (co / g) * cig();
                for (int64_t c = 0; c < cig(); ++c)
                  f(((b * h + iy) * w + ix) * ci + first + c, ((o * kh + i) * kw + j) * cig() + c,
                    ((b * ho() + oy) * wo() + ox) * co + o);
              }
  }
  LayerNode layer() const {
    LayerNode l;
    l.id = "conv";
    l.type = LayerType::Conv2d;
    l.params.out_channels = co;
    l.params.kernel_h = kh;
    l.params.kernel_w = kw;
    l.params.stride_h = sh;
    l.params.stride_w = sw;
    l.params.pad_h = ph;
    l.params.pad_w = pw;
    l.params.groups = g;
    l.params.bias = bias;
    return l;
  }
  Values fwd(const std::vector<float>& x, const std::vector<float>& wt,
             const std::vector<float>* b) const {
    Values out(static_cast<size_t>(y().elements()), 0.0);
    taps([&](int64_t xi, int64_t wi, int64_t yi) {
      out[static_cast<size_t>(yi)] += double(x[xi]) * wt[wi];
    });
    if (b)
      for (size_t i = 0; i < out.size(); ++i) out[i] += (*b)[i % static_cast<size_t>(co)];
    return out;
  }
};

// Strides 1 and 2, padding 0-3, square and non-square kernels and windows,
// 1..32 channels, batch 1 and 5, spatial sizes where the last window does not
// reach the edge, grouped and depthwise (with and without a channel multiplier).
//                           n   h   w  ci  co kh kw sh sw ph pw  g  bias
const ConvGeom kConvs[] = {{5, 9, 9, 3, 16, 3, 3, 1, 1, 1, 1, 1, true},
                           {1, 10, 10, 16, 32, 3, 3, 2, 2, 1, 1, 1, false},
                           {5, 7, 7, 32, 16, 1, 1, 1, 1, 0, 0, 1, true},
                           {5, 8, 8, 16, 32, 1, 1, 2, 2, 0, 0, 1, false},
                           {5, 12, 12, 1, 6, 5, 5, 1, 1, 2, 2, 1, true},   // LeNet's first
                           {5, 10, 10, 6, 16, 5, 5, 1, 1, 0, 0, 1, true},  // and second
                           {1, 15, 15, 3, 16, 7, 7, 2, 2, 3, 3, 1, false},
                           {5, 6, 7, 6, 3, 3, 1, 1, 1, 1, 0, 1, true},
                           {1, 7, 6, 3, 6, 1, 3, 2, 1, 0, 1, 1, true},
                           {5, 6, 6, 1, 1, 3, 3, 2, 2, 0, 0, 1, false},  // floor division
                           {1, 5, 5, 32, 1, 3, 3, 1, 1, 2, 2, 1, true},
                           {1, 9, 9, 6, 32, 5, 5, 2, 2, 2, 2, 1, false},
                           {2, 8, 8, 8, 16, 3, 3, 1, 1, 1, 1, 2, true},
                           {2, 7, 7, 6, 9, 1, 1, 1, 1, 0, 0, 3, false},
                           {2, 10, 10, 12, 12, 3, 3, 2, 2, 1, 1, 12, true},
                           {1, 9, 9, 4, 8, 5, 5, 1, 1, 2, 2, 4, false},
                           // an image's layer with whole channel blocks out (BLOCKED mode)
                           {3, 12, 12, 1, 16, 3, 3, 1, 1, 1, 1, 1, true}};

std::string conv_name(const char* op, const ConvGeom& g) {
  std::string s = std::string(op) + " " + g.x().str() + " k" + std::to_string(g.kh) + "x" +
                  std::to_string(g.kw) + " s" + std::to_string(g.sh) + "," + std::to_string(g.sw) +
                  " p" + std::to_string(g.ph) + "," + std::to_string(g.pw) + " ->" +
                  std::to_string(g.co);
  if (g.g > 1) s += " g" + std::to_string(g.g);
  return s + (g.bias ? "" : " no bias");
}

std::vector<OpCase> conv_fwd_cases() {
  std::vector<OpCase> v;
  for (const ConvGeom& g : kConvs) {
    OpCase c;
    c.name = conv_name("CONV_FWD", g);
    c.op = ComputeOp::CONV_FWD;
    c.in = {g.x(), g.wt()};
    if (g.bias) c.in.push_back({1, 1, 1, g.co});
    c.out = {g.y()};
    c.in_roles = g.bias ? "FWW" : "FW";
    c.out_roles = "F";
    c.layer = g.layer();
    c.tolerance = 1e-4;
    c.tensor_cores = true;
    c.reference = [g](const Tensors& in, const Tensors&) {
      return std::vector<Values>{g.fwd(in[0], in[1], g.bias ? &in[2] : nullptr)};
    };
    v.push_back(c);
  }
  return v;
}

// in [x, w, dy] out [dw, (db), dx] (first: in [x, dy] out [dw, (db)])
std::vector<OpCase> conv_bwd_cases(bool first) {
  std::vector<OpCase> v;
  for (const ConvGeom& g : kConvs) {
    OpCase c;
    c.name = conv_name(first ? "CONV_BWD_FIRST" : "CONV_BWD", g);
    c.op = first ? ComputeOp::CONV_BWD_FIRST : ComputeOp::CONV_BWD;
    c.in = first ? std::vector<Shape>{g.x(), g.y()} : std::vector<Shape>{g.x(), g.wt(), g.y()};
    c.out = {g.wt()};
    if (g.bias) c.out.push_back({1, 1, 1, g.co});
    if (!first) c.out.push_back(g.x());
    c.in_roles = first ? "IG" : "FWG";
    c.out_roles = std::string(g.bias ? "DD" : "D") + (first ? "" : "G");
    c.layer = g.layer();
    c.tolerance = 1e-4;
    c.tensor_cores = true;
    const size_t dx_out = g.bias ? 2 : 1;
    if (!first) c.accumulate = static_cast<uint8_t>(1u << dx_out);  // onto a slot already written
    c.reference = [g, first, dx_out](const Tensors& in, const Tensors& before) {
      const std::vector<float>& x = in[0];
      const std::vector<float>& dy = first ? in[1] : in[2];
      Values dw(static_cast<size_t>(g.wt().elements()), 0.0), db(static_cast<size_t>(g.co), 0.0);
      g.taps([&](int64_t xi, int64_t wi, int64_t yi) {
        dw[static_cast<size_t>(wi)] += double(dy[yi]) * x[xi];
      });
      for (size_t i = 0; i < dy.size(); ++i) db[i % static_cast<size_t>(g.co)] += dy[i];
      std::vector<Values> out{dw};
      if (g.bias) out.push_back(db);
      if (!first) {
        Values dx(x.size(), 0.0);
        g.taps([&](int64_t xi, int64_t wi, int64_t yi) {
          dx[static_cast<size_t>(xi)] += double(dy[yi]) * in[1][static_cast<size_t>(wi)];
        });
        out.push_back(onto(dx, before[dx_out], true));
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
      c.grad_out = dx_out;
    }
    v.push_back(c);
  }
  return v;
}

struct LinearGeom {
  Shape x;  // flattened or not: the layer reads x.per_sample() features
  int64_t o;
  bool bias;
  int64_t n() const { return x.n; }
  int64_t k() const { return x.per_sample(); }
};
const LinearGeom kLinears[] = {{{5, 4, 4, 3}, 10, true},
                               {{1, 1, 1, 400}, 120, true},
                               {{5, 2, 3, 16}, 1, false},
                               {{128, 1, 1, 400}, 120, true},  // LeNet's fc1
                               {{5, 1, 1, 6}, 32, false}};

std::string linear_name(const char* op, const LinearGeom& g) {
  return std::string(op) + " " + g.x.str() + "->" + std::to_string(g.o) +
         (g.bias ? "" : " no bias");
}

LayerNode linear_layer(const LinearGeom& g) {
  LayerNode l;
  l.id = "fc";
  l.type = LayerType::Linear;
  l.params.out_channels = g.o;
  l.params.bias = g.bias;
  return l;
}

Values linear_fwd(const LinearGeom& g, const std::vector<float>& x, const std::vector<float>& w,
                  const std::vector<float>* b) {
  Values y(static_cast<size_t>(g.n() * g.o), 0.0);
  for (int64_t r = 0; r < g.n(); ++r)
    for (int64_t j = 0; j < g.o; ++j) {
      double s = b ? (*b)[static_cast<size_t>(j)] : 0.0;
      for (int64_t i = 0; i < g.k(); ++i)
        s += double(x[static_cast<size_t>(r * g.k() + i)]) * w[static_cast<size_t>(j * g.k() + i)];
      y[static_cast<size_t>(r * g.o + j)] = s;
    }
  return y;
}

std::vector<OpCase> linear_fwd_cases() {
  std::vector<OpCase> v;
  for (const LinearGeom& g : kLinears) {
    OpCase c;
    c.name = linear_name("LINEAR_FWD", g);
    c.op = ComputeOp::LINEAR_FWD;
    c.in = {g.x, {g.o, 1, 1, g.k()}};
    if (g.bias) c.in.push_back({1, 1, 1, g.o});
    c.out = {{g.n(), 1, 1, g.o}};
    c.in_roles = g.bias ? "FWW" : "FW";
    c.out_roles = "F";
    c.layer = linear_layer(g);
    c.tolerance = 1e-5;
    c.tensor_cores = true;
    c.reference = [g](const Tensors& in, const Tensors&) {
      return std::vector<Values>{linear_fwd(g, in[0], in[1], g.bias ? &in[2] : nullptr)};
    };
    v.push_back(c);
  }
  return v;
}

// in [x, w, dy] out [dw, (db), dx] (first: in [x, dy] out [dw, (db)])
std::vector<OpCase> linear_bwd_cases(bool first) {
  std::vector<OpCase> v;
  for (const LinearGeom& g : kLinears) {
    OpCase c;
    c.name = linear_name(first ? "LINEAR_BWD_FIRST" : "LINEAR_BWD", g);
    c.op = first ? ComputeOp::LINEAR_BWD_FIRST : ComputeOp::LINEAR_BWD;
    const Shape w{g.o, 1, 1, g.k()}, y{g.n(), 1, 1, g.o}, b{1, 1, 1, g.o};
    c.in = first ? std::vector<Shape>{g.x, y} : std::vector<Shape>{g.x, w, y};
    c.out = {w};
    if (g.bias) c.out.push_back(b);
    if (!first) c.out.push_back(g.x);
    c.in_roles = first ? "FG" : "FWG";
    c.out_roles = std::string(g.bias ? "DD" : "D") + (first ? "" : "G");
    c.layer = linear_layer(g);
    c.tolerance = 1e-5;
    c.tensor_cores = true;
    const size_t dx_out = g.bias ? 2 : 1;
    c.reference = [g, first](const Tensors& in, const Tensors&) {
      const std::vector<float>& xs = in[0];
      const std::vector<float>& dy = first ? in[1] : in[2];
      Values dw(static_cast<size_t>(g.o * g.k()), 0.0), db(static_cast<size_t>(g.o), 0.0),
          dx(static_cast<size_t>(g.n() * g.k()), 0.0);
      for (int64_t r = 0; r < g.n(); ++r)
        for (int64_t j = 0; j < g.o; ++j) {
          const double d = dy[static_cast<size_t>(r * g.o + j)];
          db[static_cast<size_t>(j)] += d;
          for (int64_t i = 0; i < g.k(); ++i) {
            dw[static_cast<size_t>(j * g.k() + i)] += d * xs[static_cast<size_t>(r * g.k() + i)];
            if (!first)
              dx[static_cast<size_t>(r * g.k() + i)] +=
                  d * in[1][static_cast<size_t>(j * g.k() + i)];
          }
        }
      std::vector<Values> out{dw};
      if (g.bias) out.push_back(db);
      if (!first) out.push_back(dx);
      return out;
    };
    if (!first) {
      c.forward = [g](const Tensors& f) { return linear_fwd(g, f[0], f[1], nullptr); };
      c.forward_inputs = {0, 1};
      c.grad_of = 0;
      c.dy = 2;
      c.grad_out = dx_out;
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
  return x > 0 || std::isnan(x) ? x : 0.0;  // ReLU: a NaN passes, for the NaN check
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
const Shape kOddFeature{3, 7, 5, 11};  // no vector width divides it

// Zeros of both signs, a NaN (every activation passes it on), saturating and
// tiny values, spread over the tensor.
void plant_edge_values(Tensors& in) {
  const float edges[] = {0.0f, -0.0f, NAN, 30.0f, -30.0f, 1e-30f, -1e-30f, 6.0f};
  std::vector<float>& x = in[0];
  for (size_t i = 0; i < std::size(edges); ++i) x[(i * 97 + 3) % x.size()] = edges[i];
}

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
      c.in_roles = c.out_roles = "F";
      c.tolerance = 2e-6;
      c.reference = [e](const Tensors& in, const Tensors&) {
        return std::vector<Values>{apply(e, in[0])};
      };
      OpCase edge = c;
      edge.name += ", edge values, odd shape";
      edge.in = edge.out = {kOddFeature};
      edge.prepare = plant_edge_values;
      v.push_back(edge);
    } else {
      // The backward reads y or x, as the compiler wires it (ReLU either: y here).
      const bool reads_y =
          e.f == Activation::NUM_ACTIVATIONS || activation_backward_reads_output(e.f);
      c.name = std::string(compute_op_name(e.bwd)) + " " + type;
      c.op = e.bwd;
      c.in = {kFeature, kFeature};  // [saved, dy]; the case turns x into y where y is read
      c.out = {kFeature};
      c.in_roles = "FG";
      c.out_roles = "G";
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

const Pool kPools[] = {{2, 2, 0}, {3, 2, 1}, {3, 1, 1}};
// Three channels (no vector width divides them in FP32; FP16's padding
// lanes make 8) and eight (whole vectors in every storage type), so both the
// scalar and the 16-byte kernels of a backend run; and 24, three channel
// blocks of 8 in the BLOCKED mode.
const Shape kPoolInputs[] = {{2, 6, 5, 3}, {2, 5, 4, 8}, {2, 5, 6, 24}};

std::string channels_suffix(const Shape& s) {
  return " C" + std::to_string(s.c);
}

std::vector<OpCase> pool_cases(ComputeOp op) {
  std::vector<OpCase> v;
  const bool max = op == ComputeOp::MAXPOOL_FWD || op == ComputeOp::MAXPOOL_BWD;
  const bool bwd = op == ComputeOp::MAXPOOL_BWD || op == ComputeOp::AVGPOOL_BWD;
  for (const Shape& kPoolIn : kPoolInputs)
    for (const Pool& pl : kPools) {
      OpCase c;
      c.name = std::string(compute_op_name(op)) + " k" + std::to_string(pl.k) + "s" +
               std::to_string(pl.s) + "p" + std::to_string(pl.p) + channels_suffix(kPoolIn);
      // torch's max: strictly greater keeps the first maximum, and a NaN wins and stays.
      c.op = op;
      c.layer = pl.layer(max ? LayerType::MaxPool2d : LayerType::AvgPool2d);
      const Shape y = pl.out(kPoolIn);
      auto forward = [pl, max, kPoolIn](const std::vector<float>& x) {
        Values out(static_cast<size_t>(pl.out(kPoolIn).elements()));
        pl.windows(kPoolIn, [&](int64_t o, const std::vector<int64_t>& in, int64_t divisor) {
          double r = max ? -INFINITY : 0.0;
          for (int64_t i : in) {
            const double xi = x[static_cast<size_t>(i)];
            if (!max)
              r += xi;
            else if (xi > r || std::isnan(xi))
              r = std::isnan(r) ? r : xi;
          }
          out[static_cast<size_t>(o)] = max ? r : r / static_cast<double>(divisor);
        });
        return out;
      };
      if (!bwd) {
        c.in = {kPoolIn};
        c.out = {y};
        c.in_roles = c.out_roles = "F";
        c.reference = [forward](const Tensors& in, const Tensors&) {
          return std::vector<Values>{forward(in[0])};
        };
      } else {
        // max: in [x, y, dy]; average: in [dy]. dx is added onto (overlapping windows).
        c.in = max ? std::vector<Shape>{kPoolIn, y, y} : std::vector<Shape>{y};
        c.in_roles = max ? "FFG" : "G";
        c.out_roles = "G";
        if (max)
          c.prepare = [forward](Tensors& in) {
            const Values out = forward(in[0]);
            in[1].assign(out.begin(), out.end());
          };
        c.out = {kPoolIn};
        c.accumulate = 0b1;
        c.tolerance = 1e-5;
        c.reference = [pl, max, forward, kPoolIn](const Tensors& in, const Tensors& before) {
          const std::vector<float>& dy = max ? in[2] : in[0];
          const Values peak = max ? forward(in[0]) : Values{};
          Values dx(static_cast<size_t>(kPoolIn.elements()), 0.0);
          pl.windows(kPoolIn, [&](int64_t o, const std::vector<int64_t>& win, int64_t divisor) {
            if (max) {
              // The first element equal to the maximum; none for a NaN.
              for (int64_t i : win)
                if (double(in[0][static_cast<size_t>(i)]) == peak[static_cast<size_t>(o)]) {
                  dx[static_cast<size_t>(i)] += dy[static_cast<size_t>(o)];
                  break;
                }
            } else {
              for (int64_t i : win)
                dx[static_cast<size_t>(i)] += dy[static_cast<size_t>(o)] / double(divisor);
            }
          });
          return std::vector<Values>{onto(dx, before[0], true)};
        };
      }
      v.push_back(c);
      if (max) {
        // Whole numbers in [-7, -1]: windows with tied maxima. A NaN wins its windows.
        OpCase ties = c;
        ties.name += ", ties, all negative, and a NaN";
        ties.prepare = [forward, bwd](Tensors& in) {
          // All below zero: a padding of zeros instead of -inf would win.
          for (float& x : in[0]) x = std::round(3.0f * x) - 4.0f;
          in[0][5] = NAN;
          if (bwd) {
            const Values out = forward(in[0]);
            in[1].assign(out.begin(), out.end());
          }
        };
        v.push_back(ties);
      }
    }
  return v;
}

std::vector<OpCase> maxpool_fwd_cases() {
  return pool_cases(ComputeOp::MAXPOOL_FWD);
}
std::vector<OpCase> maxpool_bwd_cases() {
  return pool_cases(ComputeOp::MAXPOOL_BWD);
}

// Where MAXPOOL_BWD routes window `o`'s gradient: the position (row-major in
// the kernel) of its first element equal to the maximum; -1 when that is a
// NaN, which equals nothing.
Values max_positions(const Pool& pl, const Shape& xs, const std::vector<float>& x) {
  const Shape ys = pl.out(xs);
  Values where(static_cast<size_t>(ys.elements()), -1.0);
  pl.windows(xs, [&](int64_t o, const std::vector<int64_t>& win, int64_t) {
    double m = -INFINITY;
    for (int64_t i : win) {
      const double v = x[static_cast<size_t>(i)];
      if (v > m || std::isnan(v)) m = std::isnan(m) ? m : v;
    }
    const int64_t opix = o / ys.c, ox = opix % ys.w, oy = (opix / ys.w) % ys.h;
    for (int64_t i : win)
      if (double(x[static_cast<size_t>(i)]) == m) {
        const int64_t pix = i / xs.c, ix = pix % xs.w, iy = (pix / xs.w) % xs.h;
        where[static_cast<size_t>(o)] =
            static_cast<double>((iy - (oy * pl.s - pl.p)) * pl.k + (ix - (ox * pl.s - pl.p)));
        break;
      }
  });
  return where;
}

// MAXPOOL_FWD_WHERE: MAXPOOL_FWD's y and the positions; MAXPOOL_BWD_WHERE:
// the gradient routed to them (what MAXPOOL_BWD gives from x and y).
std::vector<OpCase> maxpool_where_cases(bool bwd) {
  std::vector<OpCase> v;
  for (const Shape& xs : kPoolInputs)
    for (const Pool& pl : kPools)
      for (bool ties : {false, true}) {
        const Shape ys = pl.out(xs);
        OpCase c;
        c.op = bwd ? ComputeOp::MAXPOOL_BWD_WHERE : ComputeOp::MAXPOOL_FWD_WHERE;
        c.name = std::string(compute_op_name(c.op)) + " k" + std::to_string(pl.k) + "s" +
                 std::to_string(pl.s) + "p" + std::to_string(pl.p) + channels_suffix(xs) +
                 (ties ? ", ties, all negative, and a NaN" : "");
        c.layer = pl.layer(LayerType::MaxPool2d);
        // Whole numbers in [-7, -1] tie; a NaN wins its windows and routes nowhere.
        auto shaped = [ties](std::vector<float> x) {
          if (!ties) return x;
          for (float& e : x) e = std::round(3.0f * e) - 4.0f;
          x[5] = NAN;
          return x;
        };
        if (!bwd) {
          c.in = {xs};
          c.out = {ys, ys};
          c.out_types = {DType::FP32, DType::INT8};
          c.in_roles = "F";
          c.out_roles = "FM";
          c.prepare = [shaped](Tensors& in) { in[0] = shaped(in[0]); };
          c.reference = [pl, xs](const Tensors& in, const Tensors&) {
            Values y(static_cast<size_t>(pl.out(xs).elements()));
            pl.windows(xs, [&](int64_t o, const std::vector<int64_t>& win, int64_t) {
              double m = -INFINITY;
              for (int64_t i : win) {
                const double e = in[0][static_cast<size_t>(i)];
                if (e > m || std::isnan(e)) m = std::isnan(m) ? m : e;
              }
              y[static_cast<size_t>(o)] = m;
            });
            return std::vector<Values>{y, max_positions(pl, xs, in[0])};
          };
        } else {
          // The positions of a random input's maxima (shaped as above).
          c.in = {ys, ys};
          c.in_types = {DType::INT8, DType::FP32};
          c.in_roles = "MG";
          c.out = {xs};
          c.out_roles = "G";
          c.accumulate = 0b1;
          c.prepare = [pl, xs, shaped](Tensors& in) {
            std::vector<float> x(static_cast<size_t>(xs.elements()));
            for (size_t i = 0; i < x.size(); ++i)
              x[i] = std::sin(1.7f * static_cast<float>(i) + 0.3f);
            const Values where = max_positions(pl, xs, shaped(x));
            in[0].assign(where.begin(), where.end());
          };
          c.reference = [pl, xs](const Tensors& in, const Tensors& before) {
            Values dx(static_cast<size_t>(xs.elements()), 0.0);
            const Shape out = pl.out(xs);
            pl.windows(xs, [&](int64_t o, const std::vector<int64_t>& win, int64_t) {
              const int64_t opix = o / out.c, ox = opix % out.w, oy = (opix / out.w) % out.h;
              for (int64_t i : win) {
                const int64_t pix = i / xs.c, ix = pix % xs.w, iy = (pix / xs.w) % xs.h;
                const int64_t pos = (iy - (oy * pl.s - pl.p)) * pl.k + (ix - (ox * pl.s - pl.p));
                if (in[0][static_cast<size_t>(o)] == static_cast<float>(pos))
                  dx[static_cast<size_t>(i)] += in[1][static_cast<size_t>(o)];
              }
            });
            return std::vector<Values>{onto(dx, before[0], true)};
          };
        }
        v.push_back(c);
      }
  return v;
}
std::vector<OpCase> avgpool_fwd_cases() {
  return pool_cases(ComputeOp::AVGPOOL_FWD);
}
std::vector<OpCase> avgpool_bwd_cases() {
  return pool_cases(ComputeOp::AVGPOOL_BWD);
}

std::vector<OpCase> gap_cases(bool bwd) {
  std::vector<OpCase> v;
  for (const Shape& x : kPoolInputs) {
    OpCase c;
    c.op = bwd ? ComputeOp::GAP_BWD : ComputeOp::GAP_FWD;
    c.name = std::string(compute_op_name(c.op)) + channels_suffix(x);
    c.layer.type = LayerType::GlobalAvgPool;
    const Shape y{x.n, 1, 1, x.c};
    const int64_t hw = x.h * x.w;
    c.in = {bwd ? y : x};
    c.out = {bwd ? x : y};
    c.in_roles = c.out_roles = bwd ? "G" : "F";
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
    v.push_back(c);
  }
  return v;
}

std::vector<OpCase> gap_fwd_cases() {
  return gap_cases(false);
}
std::vector<OpCase> gap_bwd_cases() {
  return gap_cases(true);
}

// ---- copies, adds, concatenation -------------------------------------------------

using Reference = std::function<std::vector<Values>(const Tensors&, const Tensors&)>;

// A case of a layer without settings; `roles` "in/out" (see sixteen_layout) give it 16-bit forms.
std::vector<OpCase> one_case(ComputeOp op, std::string name, LayerType type, std::vector<Shape> in,
                             std::vector<Shape> out, uint8_t accumulate, Reference reference,
                             const std::string& roles = "") {
  OpCase c;
  if (!roles.empty()) {
    c.in_roles = roles.substr(0, roles.find('/'));
    c.out_roles = roles.substr(roles.find('/') + 1);
  }
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
  return one_case(
      op, std::string(compute_op_name(op)) + (accumulate ? " accumulating" : ""),
      LayerType::Flatten, {from}, {to}, accumulate ? 0b1 : 0,
      [accumulate](const Tensors& in, const Tensors& before) {
        return std::vector<Values>{onto(as_double(in[0]), before[0], accumulate)};
      },
      accumulate ? "G/G" : "F/F");
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
  return one_case(
      ComputeOp::ADD_FWD, "ADD_FWD", LayerType::Add, {kFeature, kFeature}, {kFeature}, 0,
      [](const Tensors& in, const Tensors&) {
        Values y(in[0].size());
        for (size_t i = 0; i < y.size(); ++i) y[i] = double(in[0][i]) + in[1][i];
        return std::vector<Values>{y};
      },
      "FF/F");
}

std::vector<OpCase> add_bwd_cases() {
  return one_case(
      ComputeOp::ADD_BWD, "ADD_BWD dx1 accumulating", LayerType::Add, {kFeature},
      {kFeature, kFeature}, 0b10,
      [](const Tensors& in, const Tensors& before) {
        return std::vector<Values>{as_double(in[0]), onto(as_double(in[0]), before[1], true)};
      },
      "G/GG");
}

// The residual join fused: on a map whose 16-bit layout pads its channels
// and on one whose 16-bit layout is compact and whose channels are whole
// blocks (each kernel's own path).
const Shape kJoinMaps[] = {kFeature, {2, 3, 5, 16}};

std::vector<OpCase> add_relu_fwd_cases() {
  const Reference sum_relu = [](const Tensors& in, const Tensors&) {
    Values y(in[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(0.0, double(in[0][i]) + in[1][i]);
    return std::vector<Values>{y};
  };
  std::vector<OpCase> cases;
  for (const Shape& s : kJoinMaps)
    for (OpCase& c : one_case(ComputeOp::ADD_RELU_FWD, "ADD_RELU_FWD C=" + std::to_string(s.c),
                              LayerType::Add, {s, s}, {s}, 0, sum_relu, "FF/F"))
      cases.push_back(std::move(c));
  return cases;
}

// dx0 = dy where y > 0, else 0; dx1 the same, added onto its value when
// `accumulate`.
Reference masked_gradients(bool accumulate) {
  return [accumulate](const Tensors& in, const Tensors& before) {
    Values g(in[0].size());
    for (size_t i = 0; i < g.size(); ++i) g[i] = in[1][i] > 0.0f ? double(in[0][i]) : 0.0;
    return std::vector<Values>{g, onto(g, before[1], accumulate)};
  };
}

// y as the forward leaves it: zero where the sum was negative. Without an
// accumulating output dx0 may take dy's bytes (the in-place rows).
std::vector<OpCase> add_relu_bwd_cases() {
  std::vector<OpCase> cases;
  for (const Shape& s : kJoinMaps)
    for (const bool accumulate : {false, true}) {
      const std::string name =
          "ADD_RELU_BWD C=" + std::to_string(s.c) + (accumulate ? " dx1 accumulating" : "");
      for (OpCase& c : one_case(ComputeOp::ADD_RELU_BWD, name, LayerType::Add, {s, s}, {s, s},
                                accumulate ? 0b10 : 0, masked_gradients(accumulate), "GF/GG")) {
        c.prepare = [](Tensors& in) {
          for (float& v : in[1]) v = std::max(v, 0.0f);
        };
        cases.push_back(std::move(c));
      }
    }
  return cases;
}

// The channels of each part: two, four (one of a single channel, one wider
// than a vector of the padded FP16 layout), and two of whole 16-byte vectors
// in every storage type (a backend's vectorised kernels).
const std::vector<int64_t> kCatParts[] = {{5, 3}, {5, 3, 1, 9}, {8, 16}};

Shape cat_part(int64_t c) {
  return {2, 4, 3, c};
}

// The parts' shapes, and the whole's last.
std::vector<Shape> cat_shapes(const std::vector<int64_t>& parts) {
  std::vector<Shape> v;
  int64_t c = 0;
  for (int64_t w : parts) {
    v.push_back(cat_part(w));
    c += w;
  }
  v.push_back(cat_part(c));
  return v;
}

std::string cat_name(const char* op, const std::vector<int64_t>& parts) {
  std::string n = std::string(op) + " ";
  for (size_t q = 0; q < parts.size(); ++q) n += (q ? "+" : "") + std::to_string(parts[q]);
  return n;
}

// The whole tensor's channels split into the parts, one Values per part.
std::vector<Values> cat_split(const std::vector<float>& whole, const std::vector<int64_t>& parts) {
  int64_t c = 0;
  for (int64_t w : parts) c += w;
  std::vector<Values> out(parts.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    int64_t k = static_cast<int64_t>(i) % c;
    size_t q = 0;
    while (k >= parts[q]) k -= parts[q++];
    out[q].push_back(whole[i]);
  }
  return out;
}

std::vector<OpCase> concat_fwd_cases() {
  std::vector<OpCase> v;
  for (const std::vector<int64_t>& parts : kCatParts) {
    std::vector<Shape> in = cat_shapes(parts);
    const Shape whole = in.back();
    in.pop_back();
    std::vector<OpCase> one = one_case(
        ComputeOp::CONCAT_FWD, cat_name("CONCAT_FWD", parts), LayerType::Concat, in, {whole}, 0,
        [parts](const Tensors& x, const Tensors&) {
          Values y;
          for (int64_t r = 0; r < 2 * 4 * 3; ++r)
            for (size_t q = 0; q < parts.size(); ++q)
              for (int64_t k = 0; k < parts[q]; ++k)
                y.push_back(x[q][static_cast<size_t>(r * parts[q] + k)]);
          return std::vector<Values>{y};
        },
        std::string(parts.size(), 'F') + "/F");
    one[0].layer.params.inputs = static_cast<int64_t>(parts.size());
    v.push_back(one[0]);
  }
  return v;
}

// The last part accumulates (a slot another consumer wrote first).
std::vector<OpCase> concat_bwd_cases() {
  std::vector<OpCase> v;
  for (const std::vector<int64_t>& parts : kCatParts) {
    std::vector<Shape> out = cat_shapes(parts);
    const Shape whole = out.back();
    out.pop_back();
    const size_t last = parts.size() - 1;
    std::vector<OpCase> one = one_case(
        ComputeOp::CONCAT_BWD,
        cat_name("CONCAT_BWD", parts) + ", dx" + std::to_string(last) + " accumulating",
        LayerType::Concat, {whole}, out, static_cast<uint8_t>(1u << last),
        [parts, last](const Tensors& in, const Tensors& before) {
          std::vector<Values> d = cat_split(in[0], parts);
          d[last] = onto(d[last], before[last], true);
          return d;
        },
        "G/" + std::string(parts.size(), 'G'));
    one[0].layer.params.inputs = static_cast<int64_t>(parts.size());
    v.push_back(one[0]);
  }
  return v;
}

// ---- batch normalisation ----------------------------------------------------------

// A batch-norm layer's input and settings: a few channels with the defaults,
// and 300 channels (across the CPU's channel block of 256 and its 4-row
// unroll) with an eps and a momentum of their own.
struct Bn {
  Shape x;
  double eps, momentum;
  Shape channels() const { return {1, 1, 1, x.c}; }
  Shape saved() const { return {1, 1, 2, x.c}; }
  LayerNode layer() const {
    LayerNode l;
    l.id = "bn";
    l.type = LayerType::BatchNorm2d;
    l.params.eps = eps;
    l.params.momentum = momentum;
    return l;
  }
  std::string name(ComputeOp op) const {
    return std::string(compute_op_name(op)) + " C" + std::to_string(x.c);
  }
};

// The third: whole blocks of 8 channels, for the BLOCKED mode.
const Bn kBns[] = {
    {{3, 4, 5, 6}, 1e-5, 0.1}, {{3, 5, 7, 300}, 1e-3, 0.2}, {{5, 7, 6, 16}, 1e-5, 0.1}};

// Per channel: the batch mean and 1/sqrt(biased variance + eps), and the unbiased variance.
struct Moments {
  Values mean, inv_std, unbiased;
};

Moments moments(const std::vector<float>& x, const Bn& bn) {
  const Shape& s = bn.x;
  const int64_t m = s.n * s.h * s.w;
  const size_t C = static_cast<size_t>(s.c);
  Moments r{Values(C, 0.0), Values(C), Values(C)};
  for (size_t i = 0; i < x.size(); ++i) r.mean[i % C] += x[i];
  for (double& v : r.mean) v /= double(m);
  Values ss(C, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - r.mean[i % C];
    ss[i % C] += d * d;
  }
  for (size_t c = 0; c < C; ++c) {
    r.inv_std[c] = 1.0 / std::sqrt(ss[c] / double(m) + bn.eps);
    r.unbiased[c] = ss[c] / double(m - 1);
  }
  return r;
}

// y = gamma * (x - mean) * inv_std + beta, then the ReLU when `relu`.
Values bn_train_y(const Bn& bn, const std::vector<float>& x, const std::vector<float>& gamma,
                  const std::vector<float>* beta, bool relu) {
  const Moments mo = moments(x, bn);
  Values y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i % static_cast<size_t>(bn.x.c);
    double v = gamma[c] * (x[i] - mo.mean[c]) * mo.inv_std[c] + (beta ? (*beta)[c] : 0.0);
    if (relu) v = v > 0 ? v : 0.0;
    y[i] = v;
  }
  return y;
}

// in [x, gamma, beta, prev_mean, prev_var] out [y, saved, next_mean, next_var]
std::vector<OpCase> bn_fwd_train_cases(bool relu) {
  std::vector<OpCase> cases;
  for (const Bn& bn : kBns) {
    OpCase c;
    c.op = relu ? ComputeOp::BN_RELU_FWD_TRAIN : ComputeOp::BN_FWD_TRAIN;
    c.name = bn.name(c.op);
    c.layer = bn.layer();
    const Shape ch = bn.channels();
    c.in = {bn.x, ch, ch, ch, ch};
    c.out = {bn.x, bn.saved(), ch, ch};
    c.in_roles = "FPPSS";
    c.out_roles = "FSSS";
    c.tolerance = 2e-5;
    c.prepare = [](Tensors& in) {
      for (float& v : in[4]) v = std::fabs(v) + 0.5f;  // a variance
    };
    c.reference = [relu, bn](const Tensors& in, const Tensors&) {
      const Moments mo = moments(in[0], bn);
      Values saved = mo.mean, next_mean(mo.mean.size()), next_var(mo.mean.size());
      saved.insert(saved.end(), mo.inv_std.begin(), mo.inv_std.end());
      const double mom = bn.momentum;
      for (size_t k = 0; k < next_mean.size(); ++k) {
        next_mean[k] = (1 - mom) * in[3][k] + mom * mo.mean[k];
        next_var[k] = (1 - mom) * in[4][k] + mom * mo.unbiased[k];
      }
      return std::vector<Values>{bn_train_y(bn, in[0], in[1], &in[2], relu), saved, next_mean,
                                 next_var};
    };
    cases.push_back(c);
  }
  return cases;
}

// in [x, eq_scale, eq_bias] out [y]
std::vector<OpCase> bn_fwd_infer_cases(bool relu) {
  std::vector<OpCase> cases;
  for (const Bn& bn : kBns) {
    OpCase c;
    c.op = relu ? ComputeOp::BN_RELU_FWD_INFER : ComputeOp::BN_FWD_INFER;
    c.name = bn.name(c.op);
    c.layer = bn.layer();
    const Shape ch = bn.channels();
    c.in = {bn.x, ch, ch};
    c.out = {bn.x};
    c.in_roles = "FSS";
    c.out_roles = "F";
    c.reference = [relu, bn](const Tensors& in, const Tensors&) {
      Values y(in[0].size());
      for (size_t i = 0; i < y.size(); ++i) {
        const size_t k = i % static_cast<size_t>(bn.x.c);
        const double v = double(in[0][i]) * in[1][k] + in[2][k];
        y[i] = relu && v < 0 ? 0.0 : v;
      }
      return std::vector<Values>{y};
    };
    cases.push_back(c);
  }
  return cases;
}

// in [x, gamma, (beta,) saved, dy] out [dgamma, dbeta, dx]
std::vector<OpCase> bn_bwd_cases(bool relu) {
  std::vector<OpCase> cases;
  for (const Bn& bn : kBns) {
    OpCase c;
    c.op = relu ? ComputeOp::BN_RELU_BWD : ComputeOp::BN_BWD;
    c.name = bn.name(c.op) + ", dx accumulating";
    c.layer = bn.layer();
    const Shape ch = bn.channels();
    c.in = relu ? std::vector<Shape>{bn.x, ch, ch, bn.saved(), bn.x}
                : std::vector<Shape>{bn.x, ch, bn.saved(), bn.x};
    c.out = {ch, ch, bn.x};
    c.in_roles = relu ? "FPPSG" : "FPSG";
    c.out_roles = "QQG";
    c.accumulate = 0b100;
    c.tolerance = 2e-5;
    const size_t saved = relu ? 3 : 2, dy = relu ? 4 : 3;
    // The saved statistics are the forward's of this x.
    c.prepare = [saved, bn](Tensors& in) {
      const Moments mo = moments(in[0], bn);
      in[saved].assign(mo.mean.begin(), mo.mean.end());
      in[saved].insert(in[saved].end(), mo.inv_std.begin(), mo.inv_std.end());
    };
    // With the statistics the kernel is handed (those of x before a 16-bit
    // mode rounds it), as its contract says.
    c.reference = [relu, dy, bn, saved](const Tensors& in, const Tensors& before) {
      const size_t C = static_cast<size_t>(bn.x.c);
      Moments mo;
      mo.mean.assign(in[saved].begin(), in[saved].begin() + static_cast<long>(C));
      mo.inv_std.assign(in[saved].begin() + static_cast<long>(C), in[saved].end());
      const double m = double(bn.x.n * bn.x.h * bn.x.w);
      Values xhat(in[0].size()), g(in[0].size());
      for (size_t i = 0; i < xhat.size(); ++i) {
        const size_t k = i % C;
        xhat[i] = (in[0][i] - mo.mean[k]) * mo.inv_std[k];
        const double y = in[1][k] * xhat[i] + (relu ? in[2][k] : 0.0);
        g[i] = relu && y <= 0 ? 0.0 : in[dy][i];
      }
      Values dgamma(C, 0.0), dbeta(C, 0.0), dx(in[0].size());
      for (size_t i = 0; i < xhat.size(); ++i) {
        dgamma[i % C] += g[i] * xhat[i];
        dbeta[i % C] += g[i];
      }
      for (size_t i = 0; i < dx.size(); ++i) {
        const size_t k = i % C;
        dx[i] = in[1][k] * mo.inv_std[k] / m * (m * g[i] - dbeta[k] - xhat[i] * dgamma[k]);
      }
      return std::vector<Values>{dgamma, dbeta, onto(dx, before[2], true)};
    };
    c.forward = [relu, bn](const Tensors& f) {
      return bn_train_y(bn, f[0], f[1], relu ? &f[2] : nullptr, relu);
    };
    c.forward_inputs = relu ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{0, 1};
    c.grad_of = 0;
    c.dy = dy;
    c.grad_out = 2;
    cases.push_back(c);
  }
  return cases;
}

// ---- layer normalisation -----------------------------------------------------------

// A layer-norm layer's input: rows of a few channels (no vector width divides
// them in FP32), and of 200 with an eps of its own, some rows far from zero.
struct Ln {
  Shape x;
  double eps;
  double offset;  // added to every value: a mean far from zero
  Shape channels() const { return {1, 1, 1, x.c}; }
  Shape saved() const { return {x.n, x.h, x.w, 2}; }
  LayerNode layer() const {
    LayerNode l;
    l.id = "ln";
    l.type = LayerType::BatchNorm2d;  // the op reads only its eps
    l.params.eps = eps;
    return l;
  }
  std::string name(ComputeOp op) const {
    return std::string(compute_op_name(op)) + " C" + std::to_string(x.c);
  }
  // Each row's mean and 1/sqrt(biased variance + eps), interleaved.
  Values stats(const std::vector<float>& v) const {
    const size_t c = static_cast<size_t>(x.c), rows = v.size() / c;
    Values st(2 * rows);
    for (size_t r = 0; r < rows; ++r) {
      double mean = 0, ss = 0;
      for (size_t i = 0; i < c; ++i) mean += v[r * c + i];
      mean /= double(c);
      for (size_t i = 0; i < c; ++i) ss += (v[r * c + i] - mean) * (v[r * c + i] - mean);
      st[2 * r] = mean;
      st[2 * r + 1] = 1.0 / std::sqrt(ss / double(c) + eps);
    }
    return st;
  }
  Values y(const std::vector<float>& v, const std::vector<float>& gamma,
           const std::vector<float>* beta) const {
    const Values st = stats(v);
    const size_t c = static_cast<size_t>(x.c);
    Values out(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const size_t r = i / c, k = i % c;
      out[i] = (v[i] - st[2 * r]) * st[2 * r + 1] * gamma[k] + (beta ? (*beta)[k] : 0.0);
    }
    return out;
  }
  void shift(std::vector<float>& v) const {
    for (float& e : v) e += static_cast<float>(offset);
  }
};

const Ln kLns[] = {{{3, 4, 5, 6}, 1e-5, 0.0}, {{2, 3, 7, 200}, 1e-3, 3.0}};

// in [x, gamma, beta] out [y, saved]
std::vector<OpCase> layer_norm_fwd_cases() {
  std::vector<OpCase> cases;
  for (const Ln& ln : kLns) {
    OpCase c;
    c.op = ComputeOp::LAYER_NORM_FWD;
    c.name = ln.name(c.op);
    c.layer = ln.layer();
    const Shape ch = ln.channels();
    c.in = {ln.x, ch, ch};
    c.out = {ln.x, ln.saved()};
    c.in_roles = "FPP";
    c.out_roles = "FS";
    c.tolerance = 2e-5;
    c.prepare = [ln](Tensors& in) { ln.shift(in[0]); };
    c.reference = [ln](const Tensors& in, const Tensors&) {
      return std::vector<Values>{ln.y(in[0], in[1], &in[2]), ln.stats(in[0])};
    };
    cases.push_back(c);
  }
  return cases;
}

// in [x, gamma, saved, dy] out [dgamma, dbeta, dx]
std::vector<OpCase> layer_norm_bwd_cases() {
  std::vector<OpCase> cases;
  for (const Ln& ln : kLns) {
    OpCase c;
    c.op = ComputeOp::LAYER_NORM_BWD;
    c.name = ln.name(c.op) + ", dx accumulating";
    c.layer = ln.layer();
    const Shape ch = ln.channels();
    c.in = {ln.x, ch, ln.saved(), ln.x};
    c.out = {ch, ch, ln.x};
    c.in_roles = "FPSG";
    c.out_roles = "QQG";
    c.accumulate = 0b100;
    c.tolerance = 2e-5;
    // The saved statistics are the forward's of this x.
    c.prepare = [ln](Tensors& in) {
      ln.shift(in[0]);
      const Values st = ln.stats(in[0]);
      in[2].assign(st.begin(), st.end());
    };
    // With the statistics the kernel is handed, as its contract says.
    c.reference = [ln](const Tensors& in, const Tensors& before) {
      const size_t C = static_cast<size_t>(ln.x.c), rows = in[0].size() / C;
      Values dgamma(C, 0.0), dbeta(C, 0.0), dx(in[0].size());
      for (size_t r = 0; r < rows; ++r) {
        const double mean = in[2][2 * r], inv_std = in[2][2 * r + 1];
        double sg = 0, sgx = 0;
        for (size_t k = 0; k < C; ++k) {
          const size_t i = r * C + k;
          const double xhat = (in[0][i] - mean) * inv_std, g = double(in[3][i]) * in[1][k];
          sg += g;
          sgx += g * xhat;
          dgamma[k] += double(in[3][i]) * xhat;
          dbeta[k] += in[3][i];
        }
        for (size_t k = 0; k < C; ++k) {
          const size_t i = r * C + k;
          const double xhat = (in[0][i] - mean) * inv_std, g = double(in[3][i]) * in[1][k];
          dx[i] = inv_std * (g - sg / double(C) - xhat * sgx / double(C));
        }
      }
      return std::vector<Values>{dgamma, dbeta, onto(dx, before[2], true)};
    };
    c.forward = [ln](const Tensors& f) { return ln.y(f[0], f[1], nullptr); };
    c.forward_inputs = {0, 1};
    c.grad_of = 0;
    c.dy = 3;
    c.grad_out = 2;
    cases.push_back(c);
  }
  return cases;
}

// ---- attention -------------------------------------------------------------------

// Tokens of a feature map and the heads their C channels split into: a few
// tokens, two heads of 4; 12 tokens on a 3x4 map, three heads of 8; and 70
// tokens in a row, across the CPU's key blocks of 64. With dropout on the
// probabilities: its rate, the project seed and the launch's rank.
constexpr float kAttnStep = 7;  // S_SCALARS STEP: the dropout mask follows it

// A launch that draws a dropout mask: its layer, the project seed, its rank
// in a data-parallel world and the step in S_SCALARS.
void place_draw(OpCase& c, LayerNode layer, uint64_t seed, int rank, int ranks, float step) {
  c.layer = std::move(layer);
  c.seed = seed;
  c.rank = rank;
  c.ranks = ranks;
  c.scalars = {{ScalarSlot::STEP, step}};
}

struct Attn {
  Shape x;  // [N,H,W,C]: the tokens' features
  int64_t heads;
  double p = 0;
  uint64_t seed = 0;
  int rank = 0, ranks = 1;
  int64_t tokens() const { return x.h * x.w; }
  int64_t d() const { return x.c / heads; }
  Shape qkv() const { return {x.n, x.h, x.w, 3 * x.c}; }
  Shape lse() const { return {x.n, x.h, x.w, heads}; }
  LayerNode layer() const {
    LayerNode l;
    l.id = "attn";
    l.type = LayerType::Linear;  // the op reads only its heads and dropout
    l.params.heads = heads;
    l.params.attention_dropout = p;
    return l;
  }
  std::string name(ComputeOp op) const {
    std::string s = std::string(compute_op_name(op)) + " T" + std::to_string(tokens()) + " heads " +
                    std::to_string(heads) + "x" + std::to_string(d());
    if (p > 0) s += " dropout " + std::to_string(p).substr(0, 3);
    if (ranks > 1) s += " rank " + std::to_string(rank) + " of " + std::to_string(ranks);
    return s;
  }
  void place(OpCase& c) const { place_draw(c, layer(), seed, rank, ranks, kAttnStep); }
  // What query i's probability of key j is multiplied by: 1 without dropout,
  // else the mask's keep factor (core/attention_dropout.h; the node's layer is 0).
  double keep(int64_t n, int64_t h, int64_t i, int64_t j) const {
    if (p <= 0) return 1.0;
    const uint32_t key = attention_dropout_key(seed, static_cast<uint64_t>(kAttnStep), 0,
                                               static_cast<uint64_t>((rank * x.n + n) * heads + h));
    const uint32_t draw = attention_dropout_draw(key, static_cast<uint32_t>(i * tokens() + j));
    return draw >= attention_dropout_threshold(p) ? 1.0 / (1.0 - p) : 0.0;
  }
  size_t q_at(int64_t n, int64_t t, int64_t h) const {
    return static_cast<size_t>((n * tokens() + t) * 3 * x.c + h * d());
  }
  size_t o_at(int64_t n, int64_t t, int64_t h) const {
    return static_cast<size_t>((n * tokens() + t) * x.c + h * d());
  }
  size_t lse_at(int64_t n, int64_t t, int64_t h) const {
    return static_cast<size_t>((n * tokens() + t) * heads + h);
  }
  double score(const std::vector<float>& qkv, int64_t n, int64_t i, int64_t j, int64_t h) const {
    double s = 0;
    for (int64_t c = 0; c < d(); ++c)
      s += double(qkv[q_at(n, i, h) + static_cast<size_t>(c)]) *
           qkv[q_at(n, j, h) + static_cast<size_t>(x.c + c)];
    return s / std::sqrt(double(d()));
  }
  // o and lse in double.
  std::pair<Values, Values> forward(const std::vector<float>& qkv) const {
    Values o(static_cast<size_t>(x.elements()));
    Values lse_values(static_cast<size_t>(lse().elements()));
    for (int64_t n = 0; n < x.n; ++n)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < tokens(); ++i) {
          Values s(static_cast<size_t>(tokens()));
          double m = -INFINITY, sum = 0;
          for (int64_t j = 0; j < tokens(); ++j)
            m = std::max(m, s[static_cast<size_t>(j)] = score(qkv, n, i, j, h));
          for (double v : s) sum += std::exp(v - m);
          for (int64_t j = 0; j < tokens(); ++j) {
            const double kept = std::exp(s[static_cast<size_t>(j)] - m) / sum * keep(n, h, i, j);
            for (int64_t c = 0; c < d(); ++c)
              o[o_at(n, i, h) + static_cast<size_t>(c)] +=
                  kept * qkv[q_at(n, j, h) + static_cast<size_t>(2 * x.c + c)];
          }
          lse_values[lse_at(n, i, h)] = m + std::log(sum);
        }
    return {o, lse_values};
  }
};

const Attn kAttns[] = {{{2, 1, 5, 8}, 2},
                       {{2, 3, 4, 24}, 3},
                       {{1, 1, 70, 8}, 1},
                       {{2, 3, 4, 24}, 3, 0.3, 1234, 1, 2},
                       {{1, 1, 70, 8}, 1, 0.5, 99},
                       // heads of 48 channels: two depth steps and three
                       // column tiles on AMX (tile_attention.cpp)
                       {{1, 1, 40, 96}, 2}};

// in [qkv] out [o, lse]
std::vector<OpCase> attention_fwd_cases() {
  std::vector<OpCase> cases;
  for (const Attn& at : kAttns) {
    OpCase c;
    c.op = ComputeOp::ATTENTION_FWD;
    c.name = at.name(c.op);
    at.place(c);
    c.in = {at.qkv()};
    c.out = {at.x, at.lse()};
    c.in_roles = "F";
    c.out_roles = "FS";
    c.tolerance = 2e-5;
    c.tile_products = true;
    c.reference = [at](const Tensors& in, const Tensors&) {
      auto [o, lse] = at.forward(in[0]);
      return std::vector<Values>{o, lse};
    };
    cases.push_back(c);
  }
  return cases;
}

// in [qkv, o, lse, do] out [dqkv]; the last case adds onto dqkv.
std::vector<OpCase> attention_bwd_cases() {
  std::vector<OpCase> cases;
  for (const Attn& at : kAttns) {
    OpCase c;
    c.op = ComputeOp::ATTENTION_BWD;
    const bool accumulate = &at == &kAttns[2];
    c.name = at.name(c.op) + (accumulate ? ", accumulating" : "");
    at.place(c);
    c.in = {at.qkv(), at.x, at.lse(), at.x};
    c.out = {at.qkv()};
    c.in_roles = "FFSG";
    c.out_roles = "G";
    c.accumulate = accumulate ? 0b1 : 0;
    c.tolerance = 2e-5;
    c.tile_products = true;
    // o and lse are the forward's of this qkv.
    c.prepare = [at](Tensors& in) {
      auto [o, lse] = at.forward(in[0]);
      in[1].assign(o.begin(), o.end());
      in[2].assign(lse.begin(), lse.end());
    };
    // With the o and lse the kernel is handed, as its contract says.
    c.reference = [at, accumulate](const Tensors& in, const Tensors& before) {
      const std::vector<float>& qkv = in[0];
      Values d(qkv.size(), 0.0);
      const int64_t C = at.x.c, D = at.d();
      for (int64_t n = 0; n < at.x.n; ++n)
        for (int64_t h = 0; h < at.heads; ++h)
          for (int64_t i = 0; i < at.tokens(); ++i) {
            double delta = 0;
            for (int64_t k = 0; k < D; ++k)
              delta += double(in[3][at.o_at(n, i, h) + static_cast<size_t>(k)]) *
                       in[1][at.o_at(n, i, h) + static_cast<size_t>(k)];
            for (int64_t j = 0; j < at.tokens(); ++j) {
              const double p = std::exp(at.score(qkv, n, i, j, h) - in[2][at.lse_at(n, i, h)]);
              double dp = 0;
              for (int64_t k = 0; k < D; ++k)
                dp += double(in[3][at.o_at(n, i, h) + static_cast<size_t>(k)]) *
                      qkv[at.q_at(n, j, h) + static_cast<size_t>(2 * C + k)];
              const double f = at.keep(n, h, i, j);
              const double ds = p * (dp * f - delta) / std::sqrt(double(D));
              for (int64_t k = 0; k < D; ++k) {
                const size_t qi = at.q_at(n, i, h) + static_cast<size_t>(k);
                const size_t kj = at.q_at(n, j, h) + static_cast<size_t>(C + k);
                const size_t vj = at.q_at(n, j, h) + static_cast<size_t>(2 * C + k);
                d[qi] += ds * qkv[kj];
                d[kj] += ds * qkv[qi];
                d[vj] += p * f * in[3][at.o_at(n, i, h) + static_cast<size_t>(k)];
              }
            }
          }
      return std::vector<Values>{onto(d, before[0], accumulate)};
    };
    c.forward = [at](const Tensors& f) { return at.forward(f[0]).first; };
    c.forward_inputs = {0};
    c.grad_of = 0;
    c.dy = 3;
    c.grad_out = 0;
    cases.push_back(c);
  }
  return cases;
}

// ---- token ops ---------------------------------------------------------------------

// Token maps of 3x4 positions: 6 channels (padded in 16-bit storage) and 16.
const Shape kTokenMaps[] = {{2, 3, 4, 6}, {3, 3, 4, 16}};

std::string token_name(ComputeOp op, const Shape& x, bool accumulate) {
  return std::string(compute_op_name(op)) + " C" + std::to_string(x.c) +
         (accumulate ? ", accumulating" : "");
}

// The sum over the batch of each sample's values [skip, skip + per) of `every`.
Values batch_sum(const std::vector<float>& v, int64_t n, int64_t every, int64_t skip, int64_t per) {
  Values out(static_cast<size_t>(per), 0.0);
  for (int64_t s = 0; s < n; ++s)
    for (int64_t i = 0; i < per; ++i)
      out[static_cast<size_t>(i)] += v[static_cast<size_t>(s * every + skip + i)];
  return out;
}

// in [x, e] out [y]; in [dy] out [de, dx]
std::vector<OpCase> pos_embed_cases(bool backward) {
  std::vector<OpCase> v;
  for (const Shape& x : kTokenMaps) {
    const Shape e{1, x.h, x.w, x.c};
    const int64_t per = e.elements();
    const bool acc = backward && x.c == 16;
    const ComputeOp op = backward ? ComputeOp::POS_EMBED_BWD : ComputeOp::POS_EMBED_FWD;
    if (!backward) {
      v.push_back(one_case(
          op, token_name(op, x, false), LayerType::Add, {x, e}, {x}, 0,
          [per](const Tensors& in, const Tensors&) {
            Values y(in[0].size());
            for (size_t i = 0; i < y.size(); ++i)
              y[i] = double(in[0][i]) + in[1][i % static_cast<size_t>(per)];
            return std::vector<Values>{y};
          },
          "FW/F")[0]);
    } else {
      v.push_back(one_case(
          op, token_name(op, x, acc), LayerType::Add, {x}, {e, x}, acc ? 0b11 : 0,
          [x, per, acc](const Tensors& in, const Tensors& before) {
            return std::vector<Values>{onto(batch_sum(in[0], x.n, per, 0, per), before[0], acc),
                                       onto(as_double(in[0]), before[1], acc)};
          },
          "G/DG")[0]);
    }
  }
  return v;
}

// in [x, token] out [y]; in [dy] out [dtoken, dx]
std::vector<OpCase> class_token_cases(bool backward) {
  std::vector<OpCase> v;
  for (const Shape& x : kTokenMaps) {
    const Shape token{1, 1, 1, x.c}, y{x.n, 1, x.h * x.w + 1, x.c};
    const int64_t per = x.h * x.w * x.c;
    const bool acc = backward && x.c == 16;
    const ComputeOp op = backward ? ComputeOp::CLASS_TOKEN_BWD : ComputeOp::CLASS_TOKEN_FWD;
    if (!backward) {
      v.push_back(one_case(
          op, token_name(op, x, false), LayerType::Add, {x, token}, {y}, 0,
          [x, per](const Tensors& in, const Tensors&) {
            Values out;
            for (int64_t n = 0; n < x.n; ++n) {
              out.insert(out.end(), in[1].begin(), in[1].end());
              out.insert(out.end(), in[0].begin() + n * per, in[0].begin() + (n + 1) * per);
            }
            return std::vector<Values>{out};
          },
          "FW/F")[0]);
    } else {
      v.push_back(one_case(
          op, token_name(op, x, acc), LayerType::Add, {y}, {token, x}, acc ? 0b11 : 0,
          [x, per, acc](const Tensors& in, const Tensors& before) {
            Values dx;
            for (int64_t n = 0; n < x.n; ++n)
              dx.insert(dx.end(), in[0].begin() + n * (per + x.c) + x.c,
                        in[0].begin() + (n + 1) * (per + x.c));
            return std::vector<Values>{
                onto(batch_sum(in[0], x.n, per + x.c, 0, x.c), before[0], acc),
                onto(dx, before[1], acc)};
          },
          "G/DG")[0]);
    }
  }
  return v;
}

// in [x] out [y: the first token]; in [dy] out [dx]
std::vector<OpCase> token_pool_cases(bool backward) {
  std::vector<OpCase> v;
  for (const Shape& x : kTokenMaps) {
    const Shape y{x.n, 1, 1, x.c};
    const int64_t per = x.h * x.w * x.c;
    const bool acc = backward && x.c == 16;
    const ComputeOp op = backward ? ComputeOp::TOKEN_POOL_BWD : ComputeOp::TOKEN_POOL_FWD;
    if (!backward) {
      v.push_back(one_case(
          op, token_name(op, x, false), LayerType::GlobalAvgPool, {x}, {y}, 0,
          [x, per](const Tensors& in, const Tensors&) {
            Values out;
            for (int64_t n = 0; n < x.n; ++n)
              out.insert(out.end(), in[0].begin() + n * per, in[0].begin() + n * per + x.c);
            return std::vector<Values>{out};
          },
          "F/F")[0]);
    } else {
      v.push_back(one_case(
          op, token_name(op, x, acc), LayerType::GlobalAvgPool, {y}, {x}, acc ? 0b1 : 0,
          [x, per, acc](const Tensors& in, const Tensors& before) {
            Values dx(static_cast<size_t>(x.elements()), 0.0);
            for (int64_t n = 0; n < x.n; ++n)
              for (int64_t k = 0; k < x.c; ++k)
                dx[static_cast<size_t>(n * per + k)] = in[0][static_cast<size_t>(n * x.c + k)];
            return std::vector<Values>{onto(dx, before[0], acc)};
          },
          "G/G")[0]);
    }
  }
  return v;
}

// ---- the loss and the labels ----------------------------------------------------------

constexpr int64_t kRows = 9, kClasses = 7;

LayerNode loss_layer() {
  LayerNode l;
  l.id = "loss";
  l.type = LayerType::SoftmaxCrossEntropy;
  return l;
}

// A batch of logits: its rows and classes, whole-number logits in [-2, 2]
// (tied maxima and tied top-k), and the AMP loss scale its gradient carries.
struct LossBatch {
  int64_t rows = kRows, classes = kClasses;
  bool ties = false;
  float loss_scale = 0;     // 0: FP32, no scale
  bool bad_labels = false;  // rows 1 and 4 have labels out of range (K and -1)
  // Labels spread over 0..K-1 (as floats) in the second input.
  void prepare(Tensors& in) const {
    if (ties)
      for (float& z : in[0]) z = std::round(2.0f * z);
    for (size_t i = 0; i < in[1].size(); ++i)
      in[1][i] = static_cast<float>((i * 5 + 3) % static_cast<size_t>(classes));
    if (bad_labels) {
      in[1][1] = static_cast<float>(classes);
      in[1][4] = -1.0f;
    }
  }
  std::string name(std::string_view op) const {
    std::string n = std::string(op) + " " + std::to_string(rows) + "x" + std::to_string(classes);
    if (ties) n += ", ties";
    if (loss_scale > 0) n += ", AMP loss scale " + std::to_string(static_cast<int>(loss_scale));
    if (bad_labels) n += ", labels out of range";
    return n;
  }
};

struct LossRows {
  Values result;  // loss sum, top-1, top-5, rows
  Values grad;    // (softmax - one hot) / rows, times the loss scale
  Values confusion;
};

// Ties favour the label: it is within top-k unless k logits beat it strictly,
// and it is the predicted class when it is one of the maxima. A label out of
// range must stop the step, not read out of bounds: the loss is NaN (the NaN
// check trips), and the row adds no gradient, no hit and no count.
LossRows loss_rows(const LossBatch& b, const Tensors& in) {
  const int64_t K = b.classes;
  LossRows r;
  r.result = {0, 0, 0, double(b.rows)};
  r.grad.assign(static_cast<size_t>(b.rows * K), 0.0);
  r.confusion.assign(static_cast<size_t>(K * K), 0.0);
  const double scale = b.loss_scale > 0 ? b.loss_scale : 1.0;
  for (int64_t i = 0; i < b.rows; ++i) {
    const float* z = in[0].data() + i * K;
    const int64_t label = static_cast<int64_t>(in[1][static_cast<size_t>(i)]);
    if (label < 0 || label >= K) {
      r.result[0] = NAN;
      continue;
    }
    double most = z[0], sum = 0;
    int64_t argmax = 0, greater = 0;
    for (int64_t k = 0; k < K; ++k) {
      if (z[k] > most) {
        most = z[k];
        argmax = k;
      }
      if (z[k] > z[label]) ++greater;
    }
    if (z[label] == most) argmax = label;
    for (int64_t k = 0; k < K; ++k) sum += std::exp(z[k] - most);
    r.result[0] += -(z[label] - most - std::log(sum));
    r.result[1] += greater < 1 ? 1 : 0;
    r.result[2] += greater < 5 ? 1 : 0;
    for (int64_t k = 0; k < K; ++k)
      r.grad[static_cast<size_t>(i * K + k)] =
          (std::exp(z[k] - most) / sum - (k == label ? 1.0 : 0.0)) / double(b.rows) * scale;
    r.confusion[static_cast<size_t>(label * K + argmax)] += 1;
  }
  return r;
}

// Both ops read [logits, labels]. The training one writes [result, dlogits],
// the evaluation one [result, confusion] (the counts add up over batches).
OpCase loss_case(ComputeOp op, const LossBatch& b) {
  const bool train = op == ComputeOp::SOFTMAX_CE_FWD_BWD;
  OpCase c;
  c.op = op;
  c.name = b.name(compute_op_name(op));
  c.layer = loss_layer();
  c.in = {{b.rows, 1, 1, b.classes}, {b.rows, 1, 1, 1}};
  c.in_types = {DType::FP32, DType::INT32};
  c.out = {{1, 1, 1, 4},
           train ? Shape{b.rows, 1, 1, b.classes} : Shape{1, 1, b.classes, b.classes}};
  c.in_roles = "FL";
  c.out_roles = train ? "SG" : "SS";
  c.accumulate = train ? 0 : 0b10;
  c.prepare = [b](Tensors& in) { b.prepare(in); };
  if (b.loss_scale > 0) {
    c.fp16_only = true;
    c.scalars = {{ScalarSlot::LOSS_SCALE, b.loss_scale}};
  }
  c.reference = [b, train](const Tensors& in, const Tensors& before) {
    const LossRows r = loss_rows(b, in);
    return std::vector<Values>{r.result, train ? r.grad : onto(r.confusion, before[1], true)};
  };
  return c;
}

std::vector<OpCase> softmax_ce_fwd_bwd_cases() {
  const ComputeOp op = ComputeOp::SOFTMAX_CE_FWD_BWD;
  // Three classes: every label is within the top five.
  return {loss_case(op, {}),
          loss_case(op, {37, 10, true}),
          loss_case(op, {19, 1000}),
          loss_case(op, {kRows, 3}),
          loss_case(op, {64, 7, true, 8.0f}),
          loss_case(op, {kRows, kClasses, false, 0, true})};
}

std::vector<OpCase> softmax_ce_fwd_cases() {
  const ComputeOp op = ComputeOp::SOFTMAX_CE_FWD;
  return {loss_case(op, {}), loss_case(op, {37, 10, true}),
          loss_case(op, {kRows, kClasses, false, 0, true})};
}

std::vector<OpCase> copy_labels_cases() {
  std::vector<OpCase> v = one_case(
      ComputeOp::COPY_LABELS, "COPY_LABELS", LayerType::Input, {{kRows, 1, 1, 1}},
      {{kRows, 1, 1, 1}}, 0,
      [](const Tensors& in, const Tensors&) { return std::vector<Values>{as_double(in[0])}; });
  v[0].in_types = v[0].out_types = {DType::INT32};
  v[0].prepare = [](Tensors& in) {
    for (size_t i = 0; i < in[0].size(); ++i) in[0][i] = static_cast<float>(i * 7 % 10);
  };
  return v;
}

// ---- dropout ------------------------------------------------------------------------

constexpr float kDropStep = 5;  // S_SCALARS STEP: the mask follows it

// A dropout launch: its rate, the features' channels (16: one flat row; 5:
// the mask's channels padded for the GPU under FP16), the project seed and
// the launch's rank in a data-parallel world.
struct Drop {
  double p = 0.3;
  int64_t c = 5;
  uint64_t seed = 0;
  int rank = 0, ranks = 1;
  Shape shape() const { return {2, 5, 3, c}; }
  LayerNode layer() const {
    LayerNode l;
    l.id = "drop";
    l.type = LayerType::Dropout;
    l.params.p = p;
    return l;
  }
  double scale() const { return p >= 1.0 ? 0.0 : 1.0 / (1.0 - p); }
  // The mask as the engine defines it (a pure function of seed, step, layer
  // and element of the global batch: backends/cpu/kernels/dropout.h); the
  // node's layer is 0 here.
  Values mask(size_t n) const {
    Values m(n);
    for (size_t i = 0; i < n; ++i)
      m[i] = cpu::dropout_keeps(seed, static_cast<uint64_t>(kDropStep), 0,
                                static_cast<uint64_t>(rank) * n + i, p)
                 ? 1.0
                 : 0.0;
    return m;
  }
  std::string name(const char* op) const {
    std::string n =
        std::string(op) + " p" + std::to_string(p).substr(0, 3) + " C" + std::to_string(c);
    if (seed) n += " seed " + std::to_string(seed);
    if (ranks > 1) n += " rank " + std::to_string(rank) + " of " + std::to_string(ranks);
    return n;
  }
  void place(OpCase& k) const { place_draw(k, layer(), seed, rank, ranks, kDropStep); }
};

const Drop kDrops[] = {{}, {0.3, 16}, {0.5, 5, 1234, 1, 2}, {1.0, 16}};

// in [x] out [y, mask]
std::vector<OpCase> dropout_fwd_cases() {
  std::vector<OpCase> v;
  for (const Drop& d : kDrops) {
    OpCase c;
    c.op = ComputeOp::DROPOUT_FWD;
    c.name = d.name("DROPOUT_FWD");
    d.place(c);
    c.in = {d.shape()};
    c.out = {d.shape(), d.shape()};
    c.out_types = {DType::FP32, DType::INT8};
    c.in_roles = "F";
    c.out_roles = "FM";
    c.reference = [d](const Tensors& in, const Tensors&) {
      const Values mask = d.mask(in[0].size());
      Values y(in[0].size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = mask[i] * in[0][i] * d.scale();
      return std::vector<Values>{y, mask};
    };
    v.push_back(c);
  }
  return v;
}

// in [mask, dy] out [dx]
std::vector<OpCase> dropout_bwd_cases() {
  std::vector<OpCase> v;
  for (const Drop& d : kDrops) {
    OpCase c;
    c.op = ComputeOp::DROPOUT_BWD;
    c.name = d.name("DROPOUT_BWD") + ", accumulating";
    d.place(c);
    c.in = {d.shape(), d.shape()};
    c.in_types = {DType::INT8, DType::FP32};
    c.out = {d.shape()};
    c.in_roles = "MG";
    c.out_roles = "G";
    c.accumulate = 0b1;
    c.prepare = [d](Tensors& in) {
      const Values mask = d.mask(in[0].size());
      in[0].assign(mask.begin(), mask.end());
    };
    c.reference = [d](const Tensors& in, const Tensors& before) {
      Values dx(in[1].size());
      for (size_t i = 0; i < dx.size(); ++i) dx[i] = in[0][i] * in[1][i] * d.scale();
      return std::vector<Values>{onto(dx, before[0], true)};
    };
    v.push_back(c);
  }
  return v;
}

// ---- the scalar updates (S_SCALARS in, S_SCALARS out) ---------------------------------

using Slots = std::vector<std::pair<ScalarSlot, float>>;

OpCase scalar_case(ComputeOp op, std::string name, Slots before, Slots after) {
  OpCase c;
  c.op = op;
  c.name = std::move(name);
  c.scalars = std::move(before);
  c.scalars_out = true;
  c.reference = [after](const Tensors&, const Tensors& b) {
    Values s = as_double(b.back());
    for (auto [slot, value] : after) s[static_cast<size_t>(slot)] = value;
    return std::vector<Values>{s};
  };
  return c;
}

std::vector<OpCase> loss_scale_cases() {
  using S = ScalarSlot;
  const float grow = static_cast<float>(kLossScaleGrowthInterval);
  return {
      scalar_case(ComputeOp::LOSS_SCALE_UPDATE, "LOSS_SCALE_UPDATE overflow halves",
                  {{S::LOSS_SCALE, 1024}, {S::CLEAN_STEPS, 7}, {S::OVERFLOW, 1}},
                  {{S::LOSS_SCALE, 512}, {S::CLEAN_STEPS, 0}, {S::INV_LOSS_SCALE, 1 / 512.0f}}),
      scalar_case(ComputeOp::LOSS_SCALE_UPDATE, "LOSS_SCALE_UPDATE never below 1",
                  {{S::LOSS_SCALE, 1}, {S::OVERFLOW, 1}},
                  {{S::LOSS_SCALE, 1}, {S::CLEAN_STEPS, 0}, {S::INV_LOSS_SCALE, 1}}),
      scalar_case(ComputeOp::LOSS_SCALE_UPDATE, "LOSS_SCALE_UPDATE clean step counts",
                  {{S::LOSS_SCALE, 256}, {S::CLEAN_STEPS, 7}},
                  {{S::CLEAN_STEPS, 8}, {S::INV_LOSS_SCALE, 1 / 256.0f}}),
      scalar_case(ComputeOp::LOSS_SCALE_UPDATE, "LOSS_SCALE_UPDATE grows after the interval",
                  {{S::LOSS_SCALE, 256}, {S::CLEAN_STEPS, grow - 1}},
                  {{S::LOSS_SCALE, 512}, {S::CLEAN_STEPS, 0}, {S::INV_LOSS_SCALE, 1 / 512.0f}})};
}

std::vector<OpCase> adam_correction_cases() {
  using S = ScalarSlot;
  const OptimizerSpec o;  // the run's (the defaults here): beta1 0.9, beta2 0.999
  const auto corr = [](double beta, double t) { return static_cast<float>(1 - std::pow(beta, t)); };
  return {
      scalar_case(ComputeOp::ADAM_BIAS_CORRECTION, "ADAM_BIAS_CORRECTION t=3", {{S::UPDATES, 3}},
                  {{S::ADAM_CORR1, corr(o.beta1, 3)}, {S::ADAM_CORR2, corr(o.beta2, 3)}}),
      scalar_case(ComputeOp::ADAM_BIAS_CORRECTION, "ADAM_BIAS_CORRECTION before any update",
                  {{S::UPDATES, 0}},
                  {{S::ADAM_CORR1, corr(o.beta1, 1)}, {S::ADAM_CORR2, corr(o.beta2, 1)}})};
}

std::vector<OpCase> count_update_cases() {
  using S = ScalarSlot;
  return {
      scalar_case(ComputeOp::COUNT_UPDATE, "COUNT_UPDATE", {{S::UPDATES, 41}}, {{S::UPDATES, 42}}),
      scalar_case(ComputeOp::COUNT_UPDATE, "COUNT_UPDATE skips an overflowed step",
                  {{S::UPDATES, 41}, {S::OVERFLOW, 1}}, {{S::UPDATES, 41}})};
}

// ---- range ops over spans ---------------------------------------------------------

constexpr int64_t kSpan = 1000;

OpCase range_case(RangeOp op, std::string name, std::vector<int64_t> in, std::vector<int64_t> out,
                  Reference reference) {
  OpCase c;
  c.range = op;
  c.name = std::move(name);
  c.in_spans = std::move(in);
  c.out_spans = std::move(out);
  c.reference = std::move(reference);
  return c;
}

std::vector<OpCase> clear_cases() {
  return {
      range_case(RangeOp::CLEAR, "CLEAR", {}, {kSpan, 37}, [](const Tensors&, const Tensors& b) {
        return std::vector<Values>{Values(b[0].size(), 0.0), Values(b[1].size(), 0.0)};
      })};
}

std::vector<OpCase> copy_span_cases() {
  return {range_case(
      RangeOp::COPY, "COPY", {kSpan}, {kSpan},
      [](const Tensors& in, const Tensors&) { return std::vector<Values>{as_double(in[0])}; })};
}

std::vector<OpCase> accumulate_cases() {
  return {range_case(RangeOp::ACCUMULATE, "ACCUMULATE", {kSpan}, {kSpan},
                     [](const Tensors& in, const Tensors& b) {
                       return std::vector<Values>{onto(as_double(in[0]), b[0], true)};
                     })};
}

// AMP's unscaling: by INV_LOSS_SCALE, unless the step overflowed (then nothing).
// ---- A template: the cases of a new op, written out --------------------
//
// SCALE's cases, annotated as the pattern for a new op (ggml's
// test-backend-ops keeps such an example too). To give an op its cases:
//  1. Write a function returning its cases, as below: each names the op
//     (`op` for a ComputeOp, `range` for a RangeOp: range_case sets it),
//     gives its tensors (`in`/`out` shapes for a compute op; span lengths in
//     elements for a range op), the layer settings it reads (`layer`), the
//     scalars it reads (S_SCALARS slots), and a `reference`: the expected
//     outputs from the inputs and the outputs' starting values, in double,
//     written for obviousness.
//  2. Put the function in the op's row of kComputeOps or kRangeOps (replacing
//     an `elsewhere` note).
//  3. For a 16-bit form, give `in_roles`/`out_roles` (what each tensor is in
//     an AMP or BF16 plan); for a backward, `forward` and its indices, so the
//     result is also checked against central differences.
// Every backend then runs every case in every mode the case allows (FP32,
// FP16, BF16, forked parts, in place, overwriting); no backend code changes
// here. TR_BACKEND_OPS=perf times them (opPerformance).
std::vector<OpCase> scale_cases() {
  std::vector<OpCase> v;
  // One case per behaviour worth pinning: the plain scaling, and a step
  // whose gradients overflowed, which SCALE must leave untouched.
  for (const bool overflow : {false, true}) {
    OpCase c = range_case(RangeOp::SCALE, overflow ? "SCALE after an overflow" : "SCALE",
                          /*in spans*/ {kSpan}, /*out spans*/ {kSpan},
                          // in: the inputs (random, seeded per case); b: the outputs before
                          // the launch (random too, so an output the op forgets shows).
                          [overflow](const Tensors& in, const Tensors& b) {
                            Values y(in[0].size());
                            for (size_t i = 0; i < y.size(); ++i)
                              y[i] = overflow ? b[0][i] : in[0][i] * 0.125;
                            return std::vector<Values>{y};
                          });
    // What the op reads besides its tensors: the S_SCALARS block.
    c.scalars = {{ScalarSlot::INV_LOSS_SCALE, 0.125f},
                 {ScalarSlot::OVERFLOW, overflow ? 1.0f : 0.0f}};
    v.push_back(c);
  }
  return v;
}

// OVERFLOW set when a value of any span is inf or NaN, left as it was otherwise
// (the runtime clears it per step, not the check).
std::vector<OpCase> nan_check_cases() {
  std::vector<OpCase> v;
  OpCase kept = range_case(
      RangeOp::NAN_CHECK, "NAN_CHECK clean keeps a set flag", {kSpan}, {},
      [](const Tensors&, const Tensors& b) { return std::vector<Values>{as_double(b.back())}; });
  kept.scalars_out = true;
  kept.scalars = {{ScalarSlot::OVERFLOW, 1.0f}};
  v.push_back(kept);
  for (const float bad :
       {0.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    const bool clean = bad == 0.0f;
    OpCase c = range_case(RangeOp::NAN_CHECK,
                          clean             ? "NAN_CHECK clean"
                          : std::isnan(bad) ? "NAN_CHECK NaN"
                                            : "NAN_CHECK inf",
                          {kSpan, 77}, {}, [clean](const Tensors&, const Tensors& b) {
                            Values after = as_double(b.back());
                            after[static_cast<size_t>(ScalarSlot::OVERFLOW)] = clean ? 0.0 : 1.0;
                            return std::vector<Values>{after};
                          });
    c.scalars_out = true;
    if (!clean) c.prepare = [bad](Tensors& in) { in[1][40] = bad; };
    v.push_back(c);
  }
  return v;
}

// The four casts: the values are the inputs rounded once to the 16-bit type
// (to nearest even; bfloat16 by core/bf16_convert.h's rule, subnormals to a
// signed zero), one way into its bits, the other out of them; the CUDA twins
// must give the same bits (tolerance 0), edges included.
std::vector<OpCase> cast_cases(RangeOp op) {
  const bool fp16 = op == RangeOp::CAST_FP32_TO_FP16 || op == RangeOp::CAST_FP16_TO_FP32;
  const bool narrows = op == RangeOp::CAST_FP32_TO_FP16 || op == RangeOp::CAST_FP32_TO_BF16;
  OpCase c = range_case(op, std::string(range_op_name(op)), {kSpan}, {kSpan},
                        [fp16](const Tensors& in, const Tensors&) {
                          Values y(in[0].size());
                          for (size_t i = 0; i < y.size(); ++i)
                            y[i] = fp16 ? fp16_to_fp32(fp32_to_fp16(in[0][i]))
                                        : bf16_bits_to_float(float_to_bf16_bits(in[0][i]));
                          return std::vector<Values>{y};
                        });
  (narrows ? c.out_span_types : c.in_span_types) = {fp16 ? DType::FP16 : DType::BF16};
  c.tolerance = 0;
  OpCase edges = c;
  edges.name += ", specials and ties";
  // FP16: zeros, the largest half and the overflow edge (65520 ties to
  // infinity), infinities, NaN, the smallest subnormal and ties to even
  // around it and 1. BF16: zeros, FP32's largest (rounds to infinity),
  // infinities, NaN, subnormals, the smallest normal, ties at 1 and 2.
  const std::vector<float> v = fp16 ? std::vector<float>{0.0f,
                                                         -0.0f,
                                                         65504.0f,
                                                         65519.0f,
                                                         65520.0f,
                                                         -1e6f,
                                                         INFINITY,
                                                         -INFINITY,
                                                         NAN,
                                                         std::ldexp(1.0f, -24),
                                                         std::ldexp(1.0f, -25),
                                                         std::ldexp(1.5f, -25),
                                                         std::ldexp(3.0f, -25),
                                                         std::ldexp(1023.0f, -24),
                                                         1.0f + std::ldexp(1.0f, -11),
                                                         1.0f + std::ldexp(3.0f, -11)}
                                    : std::vector<float>{0.0f,
                                                         -0.0f,
                                                         3.4028235e38f,
                                                         -3.39e38f,
                                                         INFINITY,
                                                         -INFINITY,
                                                         NAN,
                                                         std::ldexp(1.0f, -140),
                                                         -std::ldexp(1.0f, -130),
                                                         std::ldexp(1.0f, -126),
                                                         1.0f + std::ldexp(1.0f, -8),
                                                         1.0f + std::ldexp(3.0f, -8),
                                                         2.0f + std::ldexp(1.0f, -7)};
  edges.prepare = [v](Tensors& in) {
    for (size_t i = 0; i < v.size(); ++i) in[0][i * 13] = v[i];
  };
  return {c, edges};
}

// e = d e + (1 - d) w, d the run's EMA decay (0.999 by default).
std::vector<OpCase> ema_cases() {
  std::vector<OpCase> v;
  for (const double d : {TrainingConstants{}.ema_decay, 0.9}) {
    OpCase c = range_case(RangeOp::EMA_UPDATE, "EMA_UPDATE decay " + std::to_string(d).substr(0, 5),
                          {kSpan}, {kSpan}, [d](const Tensors& in, const Tensors& b) {
                            Values e(in[0].size());
                            for (size_t i = 0; i < e.size(); ++i)
                              e[i] = d * b[0][i] + (1 - d) * in[0][i];
                            return std::vector<Values>{e};
                          });
    c.training.ema_decay = d;
    v.push_back(c);
  }
  return v;
}

// in [B_PREV_MEAN..B_PREV_VAR, W_BN_BIAS..W_BN_WEIGHT] out [B_EQ_SCALE..B_EQ_BIAS], two
// layers with their own eps: scale = gamma / sqrt(var + eps), bias = beta - mean * scale.
std::vector<OpCase> bn_eq_cases() {
  constexpr int64_t a = 4, b = 6;  // the two layers' channels
  OpCase c =
      range_case(RangeOp::BN_EQ_PARAMS, "BN_EQ_PARAMS two layers", {2 * (a + b), 2 * (a + b)},
                 {2 * (a + b)}, [](const Tensors& in, const Tensors&) {
                   Values out(static_cast<size_t>(2 * (a + b)));
                   for (int64_t l = 0; l < 2; ++l) {
                     const int64_t n = l == 0 ? a : b, first = l == 0 ? 0 : a;
                     const double eps = l == 0 ? 1e-5 : 1e-3;
                     for (int64_t k = first; k < first + n; ++k) {
                       const double mean = in[0][static_cast<size_t>(k)];
                       const double var = in[0][static_cast<size_t>(a + b + k)];
                       const double beta = in[1][static_cast<size_t>(k)];
                       const double gamma = in[1][static_cast<size_t>(a + b + k)];
                       const double sc = gamma / std::sqrt(var + eps);
                       out[static_cast<size_t>(k)] = sc;
                       out[static_cast<size_t>(a + b + k)] = beta - mean * sc;
                     }
                   }
                   return std::vector<Values>{out};
                 });
  auto layers = [](Region first, Region second) {
    return std::vector<SpanTensor>{{first, 3, a}, {first, 7, b}, {second, 3, a}, {second, 7, b}};
  };
  c.in_span_tensors = {layers(Region::B_PREV_MEAN, Region::B_PREV_VAR),
                       layers(Region::W_BN_BIAS, Region::W_BN_WEIGHT)};
  c.out_span_tensors = {layers(Region::B_EQ_SCALE, Region::B_EQ_BIAS)};
  c.owner_eps = {{3, 1e-5}, {7, 1e-3}};
  c.prepare = [](Tensors& in) {  // variances are not negative
    for (size_t k = static_cast<size_t>(a + b); k < in[0].size(); ++k)
      in[0][k] = std::fabs(in[0][k]);
  };
  c.tolerance = 1e-6;
  return {c};
}

// LARS: two weight tensors and a bias in W (G laid out alike); the norms,
// (|w|, |g|) per weight tensor, in N. The bias has no norms and no trust ratio.
constexpr int64_t kFcW = 30, kFcB = 5, kConvW = 12, kLars = kFcW + kFcB + kConvW;

std::vector<SpanTensor> lars_weights(Region r) {
  return {{r, 2, kFcW, "fc.weight"}, {r, 2, kFcB, "fc.bias"}, {r, 4, kConvW, "conv.weight"}};
}

std::vector<SpanTensor> lars_norm_tensors() {
  return {{Region::N_FC, 2, 2, "fc.norms"}, {Region::N_DEEP_CONV, 4, 2, "conv.norms"}};
}

// (|w|, |g|) of the weight tensors at [0, kFcW) and [kFcW + kFcB, kLars).
Values lars_norm_values(const std::vector<float>& w, const std::vector<float>& g) {
  auto norm = [](const std::vector<float>& v, int64_t lo, int64_t hi) {
    double s = 0;
    for (int64_t i = lo; i < hi; ++i)
      s += double(v[static_cast<size_t>(i)]) * v[static_cast<size_t>(i)];
    return std::sqrt(s);
  };
  return {norm(w, 0, kFcW), norm(g, 0, kFcW), norm(w, kFcW + kFcB, kLars),
          norm(g, kFcW + kFcB, kLars)};
}

// in_spans [W, G] out_spans [N]; data-sharded (ZeRO-2), the squared sums
// added onto what the norms held.
std::vector<OpCase> lars_norms_cases() {
  OpCase c = range_case(RangeOp::LARS_NORMS, "LARS_NORMS", {kLars, kLars}, {4},
                        [](const Tensors& in, const Tensors&) {
                          return std::vector<Values>{lars_norm_values(in[0], in[1])};
                        });
  c.in_span_tensors = {lars_weights(Region::W_FC_WEIGHT), lars_weights(Region::G_FC_WEIGHT)};
  c.out_span_tensors = {lars_norm_tensors()};
  c.tolerance = 1e-6;
  OpCase s = c;
  s.name = "LARS_NORMS of a rank's share (squared sums, added)";
  s.data_sharded = true;
  s.reference = [](const Tensors& in, const Tensors& b) {
    Values n = lars_norm_values(in[0], in[1]);
    for (size_t i = 0; i < n.size(); ++i) n[i] = n[i] * n[i] + b[0][i];
    return std::vector<Values>{n};
  };
  return {c, s};
}

// In place: each float its square root.
std::vector<OpCase> sqrt_cases() {
  OpCase c = range_case(RangeOp::SQRT, "SQRT", {}, {kSpan}, [](const Tensors&, const Tensors& b) {
    Values r(b[0].size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = std::sqrt(double(b[0][i]));
    return std::vector<Values>{r};
  });
  c.prepare_before = [](Tensors& before) {
    for (float& x : before[0]) x = std::fabs(x);
  };
  c.tolerance = 1e-7;
  return {c};
}

// in_spans [W, G, M, N] out_spans [W, M]: SGD with momentum, each weight
// tensor's step scaled by its trust ratio eta |w| / (|g| + wd |w|); ratio 1
// where a norm is zero (a weight tensor still all zeros), and no step at all
// after an overflow.
std::vector<OpCase> lars_update_cases() {
  std::vector<OpCase> v;
  struct Variant {
    const char* name;
    bool zero_norm, overflow;
  };
  for (const Variant& var : {Variant{"", false, false}, Variant{" zero weight norm", true, false},
                             Variant{" after an overflow", false, true}}) {
    const char* kind = var.name;
    const bool zero_norm = var.zero_norm, overflow = var.overflow;
    OpCase c = range_case(
        RangeOp::LARS_UPDATE, std::string("LARS_UPDATE") + kind, {kLars, kLars, kLars, 4},
        {kLars, kLars}, [overflow](const Tensors& in, const Tensors& b) {
          const OptimizerSpec o;
          const double lr = 0.1;
          Values w = as_double(b[0]), m = as_double(b[1]);
          if (overflow) return std::vector<Values>{w, m};
          const std::vector<float>& n = in[3];
          for (int64_t i = 0; i < kLars; ++i) {
            const size_t k = static_cast<size_t>(i);
            double rate = 1.0;  // the bias
            if (i < kFcW || i >= kFcW + kFcB) {
              const double wn = i < kFcW ? n[0] : n[2], gn = i < kFcW ? n[1] : n[3];
              if (wn > 0 && gn > 0) rate = o.trust_coefficient * wn / (gn + o.weight_decay * wn);
            }
            m[k] = o.momentum * m[k] + rate * (in[1][k] + o.weight_decay * w[k]);
            w[k] -= lr * m[k];
          }
          return std::vector<Values>{w, m};
        });
    c.in_span_tensors = {lars_weights(Region::W_FC_WEIGHT), lars_weights(Region::G_FC_WEIGHT),
                         lars_weights(Region::M_FC_WEIGHT), lars_norm_tensors()};
    c.out_span_tensors = {lars_weights(Region::W_FC_WEIGHT), lars_weights(Region::M_FC_WEIGHT)};
    c.scalars = {{ScalarSlot::LR, 0.1f},
                 {ScalarSlot::UPDATES, 3.0f},
                 {ScalarSlot::OVERFLOW, overflow ? 1.0f : 0.0f}};
    c.prepare = [zero_norm](Tensors& in) {  // norms are positive, or the conv weight's zero
      for (float& x : in[3]) x = std::fabs(x) + 0.5f;
      if (zero_norm) in[3][2] = 0.0f;
    };
    c.tolerance = 1e-6;
    v.push_back(c);
  }
  return v;
}

// Over two ranks, in place: each rank's span becomes the sum (or mean) of both.
std::vector<OpCase> allreduce_cases(RangeOp op) {
  OpCase c = range_case(op, std::string(range_op_name(op)) + " over 2 ranks", {kSpan, kSpan},
                        {kSpan, kSpan}, [op](const Tensors& in, const Tensors&) {
                          Values r(in[0].size());
                          for (size_t i = 0; i < r.size(); ++i)
                            r[i] = op == RangeOp::ALLREDUCE_MAX
                                       ? std::max(double(in[0][i]), double(in[1][i]))
                                       : (double(in[0][i]) + in[1][i]) *
                                             (op == RangeOp::ALLREDUCE_MEAN ? 0.5 : 1.0);
                          return std::vector<Values>{r, r};
                        });
  c.world = 2;
  return {c};
}

// Each rank's share of the span to every rank: shares of ceil(1000 / 2) =
// 500 floats rounded up to whole 16-float lines, 512, so rank 1 holds the
// last 488.
std::vector<OpCase> allgather_cases() {
  OpCase c = range_case(RangeOp::ALLGATHER, "ALLGATHER over 2 ranks", {kSpan, kSpan},
                        {kSpan, kSpan}, [](const Tensors& in, const Tensors&) {
                          const size_t share = 512;
                          Values r(in[0].size());
                          for (size_t i = 0; i < r.size(); ++i) r[i] = in[i < share ? 0 : 1][i];
                          return std::vector<Values>{r, r};
                        });
  c.world = 2;
  return {c};
}

// The mean of both ranks' spans, each rank's share of it (512 and 488
// floats, as the all-gather's) at the start of its out span, the rest of
// which stays as it was (zero).
std::vector<OpCase> reduce_scatter_cases() {
  OpCase c = range_case(RangeOp::REDUCE_SCATTER, "REDUCE_SCATTER over 2 ranks", {kSpan, kSpan},
                        {kSpan, kSpan}, [](const Tensors& in, const Tensors&) {
                          const size_t share = 512, n = in[0].size();
                          std::vector<Values> out(2, Values(n, 0.0));
                          for (size_t i = 0; i < n; ++i)
                            out[i < share ? 0 : 1][i < share ? i : i - share] =
                                (double(in[0][i]) + in[1][i]) * 0.5;
                          return out;
                        });
  c.world = 2;
  return {c};
}

// Sequence parallel over a tensor group of 2: the group's batch of a
// feature, rank 0's samples then rank 1's, on both ranks; and each rank's
// half of the sum of both ranks' features of the group's batch.
std::vector<OpCase> allgather_batch_cases() {
  OpCase c = range_case(RangeOp::ALLGATHER_BATCH, "ALLGATHER_BATCH over 2 ranks", {kSpan, kSpan},
                        {2 * kSpan, 2 * kSpan}, [](const Tensors& in, const Tensors&) {
                          Values r = as_double(in[0]);
                          r.insert(r.end(), in[1].begin(), in[1].end());
                          return std::vector<Values>{r, r};
                        });
  c.world = 2;
  return {c};
}

std::vector<OpCase> reduce_scatter_batch_cases() {
  OpCase c =
      range_case(RangeOp::REDUCE_SCATTER_BATCH, "REDUCE_SCATTER_BATCH over 2 ranks", {kSpan, kSpan},
                 {kSpan / 2, kSpan / 2}, [](const Tensors& in, const Tensors&) {
                   const size_t half = in[0].size() / 2;
                   std::vector<Values> out(2, Values(half));
                   for (size_t r = 0; r < 2; ++r)
                     for (size_t i = 0; i < half; ++i)
                       out[r][i] = double(in[0][r * half + i]) + in[1][r * half + i];
                   return out;
                 });
  c.world = 2;
  return {c};
}

// The optimizer updates, with the run's settings (OptimizerSpec's defaults
// here: momentum 0.9, weight decay 5e-4, Adam's betas 0.9 and 0.999, eps 1e-8).
// The weights and moments are updated in their own bytes: the out spans.

// SGD as torch.optim.SGD: the decayed gradient d = g + wd w; with momentum
// the buffer m = momentum m + d (d itself on the first step) and the step m,
// or d + momentum m with Nesterov; without momentum (no M span) the step d.
// No step at all after an overflow.
struct Sgd {
  const char* name;
  double momentum = 0.9, weight_decay = 5e-4;
  bool nesterov = false, first = false, overflow = false;
};

const Sgd kSgds[] = {{"SGD_UPDATE"},
                     {"SGD_UPDATE first step", 0.9, 5e-4, false, true},
                     {"SGD_UPDATE Nesterov", 0.9, 0.01, true},
                     {"SGD_UPDATE Nesterov first step", 0.9, 0.01, true, true},
                     {"SGD_UPDATE without momentum", 0.0, 0.5},
                     {"SGD_UPDATE after an overflow", 0.9, 5e-4, false, false, true}};

// in_spans [W, G, (M)] out_spans [W, (M)]
std::vector<OpCase> sgd_cases() {
  std::vector<OpCase> v;
  for (const Sgd& o : kSgds) {
    const bool has_m = o.momentum > 0;
    std::vector<int64_t> in{kSpan, kSpan, kSpan}, out{kSpan, kSpan};
    if (!has_m) {
      in.pop_back();
      out.pop_back();
    }
    OpCase c = range_case(RangeOp::SGD_UPDATE, o.name, in, out,
                          [o, has_m](const Tensors& g, const Tensors& b) {
                            const double lr = 0.1;
                            Values w = as_double(b[0]), m = has_m ? as_double(b[1]) : Values{};
                            for (size_t i = 0; !o.overflow && i < w.size(); ++i) {
                              const double d = g[1][i] + o.weight_decay * w[i];
                              if (!has_m) {
                                w[i] -= lr * d;
                                continue;
                              }
                              m[i] = (o.first ? 0.0 : o.momentum * m[i]) + d;
                              w[i] -= lr * (o.nesterov ? d + o.momentum * m[i] : m[i]);
                            }
                            if (!has_m) return std::vector<Values>{w};
                            return std::vector<Values>{w, m};
                          });
    c.training.optimizer.momentum = o.momentum;
    c.training.optimizer.weight_decay = o.weight_decay;
    c.training.optimizer.nesterov = o.nesterov;
    c.scalars = {{ScalarSlot::LR, 0.1f},
                 {ScalarSlot::UPDATES, o.first ? 1.0f : 7.0f},
                 {ScalarSlot::OVERFLOW, o.overflow ? 1.0f : 0.0f}};
    c.tolerance = 1e-6;
    v.push_back(c);
  }
  return v;
}

// in_spans [W, G, M, V] out_spans [W, M, V]
std::vector<OpCase> adam_cases() {
  std::vector<OpCase> cases;
  for (const bool overflow : {false, true}) {
    OpCase c =
        range_case(RangeOp::ADAM_UPDATE, overflow ? "ADAM_UPDATE after an overflow" : "ADAM_UPDATE",
                   {kSpan, kSpan, kSpan, kSpan}, {kSpan, kSpan, kSpan},
                   [overflow](const Tensors& in, const Tensors& b) {
                     const OptimizerSpec o;
                     const double lr = 0.01, c1 = 0.2, c2 = 0.05;
                     Values w = as_double(b[0]), m = as_double(b[1]), v = as_double(b[2]);
                     for (size_t i = 0; !overflow && i < w.size(); ++i) {
                       const double g = in[1][i] + o.weight_decay * w[i];
                       m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
                       v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
                       w[i] -= lr / c1 * m[i] / (std::sqrt(v[i]) / std::sqrt(c2) + o.adam_eps);
                     }
                     return std::vector<Values>{w, m, v};
                   });
    c.scalars = {{ScalarSlot::LR, 0.01f},
                 {ScalarSlot::ADAM_CORR1, 0.2f},
                 {ScalarSlot::ADAM_CORR2, 0.05f},
                 {ScalarSlot::OVERFLOW, overflow ? 1.0f : 0.0f}};
    c.tolerance = 2e-6;
    // A second moment is not negative: the out span's V starts as one.
    c.prepare_before = [](Tensors& before) {
      for (float& x : before[2]) x = std::fabs(x);
    };
    cases.push_back(c);
  }
  return cases;
}

// ---- the table, in enum order -------------------------------------------------

constexpr OpEntry elsewhere(const char* tests) {
  return {nullptr, tests};
}

constexpr OpEntry kComputeOps[] = {
    elsewhere("the backend's own copy: engine.input_overlap, engine.training"),  // H2D_INPUT
    {&copy_labels_cases},
    {&conv_fwd_cases},
    {[] { return conv_bwd_cases(false); }},
    {[] { return conv_bwd_cases(true); }},
    {&linear_fwd_cases},
    {[] { return linear_bwd_cases(false); }},
    {[] { return linear_bwd_cases(true); }},
    {[] { return bn_fwd_train_cases(false); }},
    {[] { return bn_fwd_infer_cases(false); }},
    {[] { return bn_bwd_cases(false); }},
    {[] { return bn_fwd_train_cases(true); }},
    {[] { return bn_fwd_infer_cases(true); }},
    {[] { return bn_bwd_cases(true); }},
    {&layer_norm_fwd_cases},
    {&layer_norm_bwd_cases},
    {&attention_fwd_cases},
    {&attention_bwd_cases},
    {[] { return pos_embed_cases(false); }},
    {[] { return pos_embed_cases(true); }},
    {[] { return class_token_cases(false); }},
    {[] { return class_token_cases(true); }},
    {[] { return token_pool_cases(false); }},
    {[] { return token_pool_cases(true); }},
    {&activation_fwd_cases},  // RELU_FWD (with the family)
    {&activation_bwd_cases},  // RELU_BWD
    {&activation_fwd_cases},  // ACTIVATION_FWD
    {&activation_bwd_cases},  // ACTIVATION_BWD
    {&maxpool_fwd_cases},
    {&maxpool_bwd_cases},
    {[] { return maxpool_where_cases(false); }},
    {[] { return maxpool_where_cases(true); }},
    {&avgpool_fwd_cases},
    {&avgpool_bwd_cases},
    {&gap_fwd_cases},
    {&gap_bwd_cases},
    {&dropout_fwd_cases},
    {&dropout_bwd_cases},
    {&identity_cases},
    {&flatten_fwd_cases},
    {&flatten_bwd_cases},
    {&add_fwd_cases},
    {&add_bwd_cases},
    {&add_relu_fwd_cases},
    {&add_relu_bwd_cases},
    {&concat_fwd_cases},
    {&concat_bwd_cases},
    {&softmax_ce_fwd_bwd_cases},
    {&softmax_ce_fwd_cases},
    {&loss_scale_cases},
    {&adam_correction_cases},
    {&count_update_cases},
};
static_assert(std::size(kComputeOps) == static_cast<size_t>(ComputeOp::NUM_COMPUTE_OPS),
              "every ComputeOp needs its entry in kComputeOps, in enum order");

// Range ops work on spans of regions.
constexpr OpEntry kRangeOps[] = {
    {&clear_cases},
    {[] { return cast_cases(RangeOp::CAST_FP32_TO_FP16); }},
    {[] { return cast_cases(RangeOp::CAST_FP16_TO_FP32); }},
    {[] { return cast_cases(RangeOp::CAST_FP32_TO_BF16); }},
    {[] { return cast_cases(RangeOp::CAST_BF16_TO_FP32); }},
    {&scale_cases},
    {&nan_check_cases},
    {[] { return allreduce_cases(RangeOp::ALLREDUCE_MEAN); }},
    {[] { return allreduce_cases(RangeOp::ALLREDUCE_SUM); }},
    {&allgather_cases},
    {[] { return allreduce_cases(RangeOp::ALLREDUCE_MAX); }},
    {&reduce_scatter_cases},
    {&allgather_batch_cases},
    {&reduce_scatter_batch_cases},
    {&copy_span_cases},
    {&accumulate_cases},
    {&bn_eq_cases},
    {&sgd_cases},
    {&adam_cases},
    {&lars_norms_cases},
    {&lars_update_cases},
    {&ema_cases},
    {&sqrt_cases},
};
static_assert(std::size(kRangeOps) == static_cast<size_t>(RangeOp::NUM_RANGE_OPS),
              "every RangeOp needs its entry in kRangeOps, in enum order");

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

std::vector<OpCase> cases_of(RangeOp op) {
  const OpEntry& e = kRangeOps[static_cast<size_t>(op)];
  return e.cases ? e.cases() : std::vector<OpCase>{};
}

// The ops in one list: compute ops, then range ops.
constexpr int kOps =
    static_cast<int>(ComputeOp::NUM_COMPUTE_OPS) + static_cast<int>(RangeOp::NUM_RANGE_OPS);
bool is_range(int op) {
  return op >= static_cast<int>(ComputeOp::NUM_COMPUTE_OPS);
}
std::vector<OpCase> cases_of(int op) {
  return is_range(op)
             ? cases_of(static_cast<RangeOp>(op - static_cast<int>(ComputeOp::NUM_COMPUTE_OPS)))
             : cases_of(static_cast<ComputeOp>(op));
}
const OpEntry& entry_of(int op) {
  return is_range(op)
             ? kRangeOps[static_cast<size_t>(op) - static_cast<size_t>(ComputeOp::NUM_COMPUTE_OPS)]
             : kComputeOps[static_cast<size_t>(op)];
}
std::string op_name(int op) {
  return std::string(is_range(op) ? range_op_name(static_cast<RangeOp>(
                                        op - static_cast<int>(ComputeOp::NUM_COMPUTE_OPS)))
                                  : compute_op_name(static_cast<ComputeOp>(op)));
}

// The largest difference relative to the largest finite expected value. A
// NaN or an infinity must be matched exactly: one where none is expected (or
// none where one is) is an infinite error.
double worst_error(const std::vector<float>& got, const Values& want) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(g) || std::isnan(w)) {
      if (std::isnan(g) != std::isnan(w)) return INFINITY;
      continue;
    }
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
    if (g == w) continue;  // equal infinities too
    if (std::isinf(g) || std::isinf(w)) return INFINITY;
    diff = std::max(diff, std::fabs(g - w));
  }
  return diff / scale;
}

// A case's inputs and its outputs' starting values, random from a seed of
// the case's own; in a 16-bit mode as the device holds them (rounded once).
struct CaseValues {
  Tensors in, before;
};
CaseValues case_values(const OpCase& c, int op, int index, DType half) {
  std::mt19937 rng(1234 + static_cast<unsigned>(op) * 31 + static_cast<unsigned>(index));
  // Tensors, then spans (and the scalar block when the op writes it).
  std::vector<Shape> in_shapes = c.in, out_shapes = c.out;
  for (int64_t n : c.in_spans) in_shapes.push_back({1, 1, 1, n});
  for (int64_t n : c.out_spans) out_shapes.push_back({1, 1, 1, n});
  Tensors in = random_tensors(in_shapes, rng);
  if (c.prepare) c.prepare(in);
  Tensors before = random_tensors(out_shapes, rng);
  if (c.prepare_before) c.prepare_before(before);
  if (c.scalars_out) {
    before.emplace_back(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
    for (auto [slot, value] : c.scalars) before.back()[static_cast<size_t>(slot)] = value;
  }
  // 16-bit: the reference sees the values the device holds (rounded once).
  if (half != DType::FP32) {
    auto round_half = [half](std::vector<float>& v) {
      for (float& x : v)
        x = half == DType::FP16 ? fp16_to_fp32(fp32_to_fp16(x))
                                : bf16_bits_to_float(float_to_bf16_bits(x));
    };
    for (size_t i = 0; i < c.in.size(); ++i)
      if (sixteen_layout(c.in_roles[i], half).dtype == half) round_half(in[i]);
    for (size_t i = 0; i < c.out.size(); ++i)
      if (sixteen_layout(c.out_roles[i], half).dtype == half) round_half(before[i]);
  }
  return {std::move(in), std::move(before)};
}

}  // namespace

class TestBackendOps : public QObject {
  Q_OBJECT

 private slots:
  void everyOpHasAnEntryAndMostHaveCases() {
    int compute = 0, range = 0;
    for (int op = 0; op < kOps; ++op) {
      QVERIFY2(entry_of(op).cases || entry_of(op).elsewhere, op_name(op).c_str());
      if (!cases_of(op).empty()) ++(is_range(op) ? range : compute);
    }
    qInfo("cases for %d of %d compute ops and %d of %d range ops", compute,
          static_cast<int>(ComputeOp::NUM_COMPUTE_OPS), range,
          static_cast<int>(RangeOp::NUM_RANGE_OPS));
    QVERIFY(compute >= 37 && range >= 15);
  }

  void opMatchesItsReference_data() {
    QTest::addColumn<QString>("backend");
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("op");
    QTest::addColumn<int>("index");
    // TR_BACKEND_OPS_BACKENDS=cuda (the device check) leaves out the CPU's
    // cases, which every CI run covers.
    const QByteArray only = qgetenv("TR_BACKEND_OPS_BACKENDS");
    for (const char* b : {"cpu", "cpu-native", "cuda"}) {
      if (!only.isEmpty() && !only.split(',').contains(b)) continue;
      const bool native = QByteArray(b) == "cpu-native";
      for (int op = 0; op < kOps; ++op) {
        const std::vector<OpCase> cs = cases_of(op);
        // The native kernels take BF16 launches of a few ops, on CPUs with
        // the instructions (else these rows are "cpu"'s); the rest is "cpu"'s.
        if (native) {
          if (is_range(op) || !cpu::has_native_kernel(static_cast<ComputeOp>(op))) continue;
          for (size_t i = 0; i < cs.size(); ++i)
            QTest::newRow(qPrintable(QStringLiteral("%1/%2/%3")
                                         .arg(b)
                                         .arg(mode_name(Mode::BF16))
                                         .arg(cs[i].name.c_str())))
                << QString(b) << static_cast<int>(Mode::BF16) << op << static_cast<int>(i);
          continue;
        }
        if (cs.empty()) {
          QTest::newRow(qPrintable(QStringLiteral("%1/%2").arg(b).arg(op_name(op).c_str())))
              << QString(b) << static_cast<int>(Mode::FP32) << op << -1;
          continue;
        }
        for (size_t i = 0; i < cs.size(); ++i)
          for (const Mode m : modes_of(cs[i])) {
            // Channel blocks are the CPU's layout; CUDA plans never hold them.
            if (m == Mode::BLOCKED && QByteArray(b) != "cpu") continue;
            QTest::newRow(qPrintable(
                QStringLiteral("%1/%2/%3").arg(b).arg(mode_name(m)).arg(cs[i].name.c_str())))
                << QString(b) << static_cast<int>(m) << op << static_cast<int>(i);
          }
      }
    }
  }

  void opMatchesItsReference() {
    QFETCH(QString, backend);
    QFETCH(int, mode);
    const bool fp16 = static_cast<Mode>(mode) == Mode::FP16;
    const DType half = half_of(static_cast<Mode>(mode));
    QFETCH(int, op);
    QFETCH(int, index);
    if (index < 0)
      QSKIP(qPrintable(
          QStringLiteral("no case here yet; covered by %1").arg(entry_of(op).elsewhere)));
    std::string why_not;
    OpCase c = cases_of(op)[static_cast<size_t>(index)];
    // Overwriting: the reference adds onto zeros where the case would accumulate.
    const uint8_t accumulated = c.accumulate;
    if (static_cast<Mode>(mode) == Mode::OVERWRITE) c.accumulate = 0;
    if (backend == "cpu-native" && !cpu::native_kernel_runs_here(static_cast<ComputeOp>(op)))
      QSKIP(
          "this CPU lacks the instructions of the op's native kernel (AVX-512 BF16, and AMX "
          "for attention)");
    std::unique_ptr<Backend> b = make_backend(backend.toStdString(), c.world, why_not);
    if (!b) QSKIP(why_not.c_str());
    const CaseValues v = case_values(c, op, index, half);
    const Tensors &in = v.in, &before = v.before;
    Tensors out = before;
    if (c.world > 1) {
      // Each rank's span in, each rank's out: the spans are the inputs, in place.
      run_collective(*b, c, in, out);
      const std::vector<Values> want = c.reference(in, before);
      for (size_t r = 0; r < out.size(); ++r)
        QVERIFY2(worst_error(out[r], want[r]) <= 1e-6,
                 qPrintable(QStringLiteral("rank %1").arg(r)));
      return;
    }
    const Tensors handed = c.backend_view ? c.backend_view(in) : in;
    QVERIFY2(run_case(*b, c, handed, out, static_cast<Mode>(mode)),
             "an FP16 output's padding lane is not zero");
    Tensors start = before;
    if (c.accumulate != accumulated)
      for (size_t i = 0; i < c.out.size(); ++i)
        if (accumulated >> i & 1u) std::fill(start[i].begin(), start[i].end(), 0.0f);
    const std::vector<Values> want = c.reference(in, start);
    // FP16 outputs are rounded once, from FP32 arithmetic: at most half an FP16
    // ulp (2^-11 of the largest value) besides what FP32 allows.
    // (bfloat16 keeps 8 significant bits: 2^-8.)
    double tolerance = fp16                  ? c.tolerance + 0x1p-11
                       : half == DType::BF16 ? c.tolerance + 0x1p-8
                                             : c.tolerance;
    if (backend == "cuda" && c.tensor_cores) tolerance = std::max(tolerance, 5e-3);
    if (backend == "cpu-native" && c.tile_products) tolerance = std::max(tolerance, 1e-2);
    QCOMPARE(want.size(), out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const double err = worst_error(out[i], want[i]);
      QVERIFY2(
          err <= tolerance,
          qPrintable(
              QStringLiteral("output %1: relative error %2 > %3").arg(i).arg(err).arg(tolerance)));
    }
    // Our kernels on channel blocks give the plain layout's bits (batch norm
    // walks each channel's rows in the same order). A convolution is oneDNN's
    // other kernel for the layout: within the reference's tolerance, its bits
    // its own (mostly the same for 3x3 maps of whole blocks, not where a side
    // is plain or for a 1x1's weight gradient; bench_conv_layouts counts them).
    const bool onednn = c.op == ComputeOp::CONV_FWD || c.op == ComputeOp::CONV_BWD ||
                        c.op == ComputeOp::CONV_BWD_FIRST;
    if (static_cast<Mode>(mode) == Mode::BLOCKED && !onednn) {
      Tensors plain = before;
      QVERIFY(run_case(*b, c, handed, plain, Mode::FP32));
      for (size_t i = 0; i < out.size(); ++i) {
        size_t differ = 0;
        for (size_t k = 0; k < out[i].size(); ++k)
          differ += std::bit_cast<uint32_t>(out[i][k]) != std::bit_cast<uint32_t>(plain[i][k]);
        QVERIFY2(differ == 0, qPrintable(QStringLiteral("output %1: %2 of %3 values differ from "
                                                        "the plain layout's bits")
                                             .arg(i)
                                             .arg(differ)
                                             .arg(out[i].size())));
      }
    }
    // Forked parts run at once on different streams: each writes its own
    // output, the bits the parts wrote together, and nothing of the others'.
    if (static_cast<Mode>(mode) == Mode::PARTS) {
      const std::vector<ForkPart> parts = fork_parts(c.op, c.out.size() == 3);
      for (size_t k = 0; k < parts.size(); ++k) {
        const size_t own = parts[k].part == BwdPart::DW   ? 0
                           : parts[k].part == BwdPart::DB ? 1
                                                          : c.out.size() - 1;
        Tensors alone = before;
        QVERIFY(run_case(*b, c, handed, alone, Mode::PARTS, static_cast<int>(k)));
        for (size_t i = 0; i < c.out.size(); ++i)
          QVERIFY2(alone[i] == (i == own ? out[i] : before[i]),
                   qPrintable(QStringLiteral("part %1 alone, output %2")
                                  .arg(bwd_part_name(parts[k].part).data())
                                  .arg(i)));
      }
    }
    // The backward against central differences of the plain forward.
    // (In FP32 only, and not on TF32 tensor cores: both round more than the check allows.)
    if (c.forward && static_cast<Mode>(mode) == Mode::FP32 &&
        !(backend == "cuda" && c.tensor_cores)) {
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

  // Perf mode (TR_BACKEND_OPS=perf; otherwise skipped): each case's launch
  // timed on each backend, in each storage type, the best of five rounds of
  // about 10 ms after a warm-up, printed as microseconds a launch and the bytes its
  // tensors hold moved per second. It checks nothing: speed goals are
  // bench/'s, against a peer measured in the same run.
  void opPerformance_data() {
    QTest::addColumn<QString>("backend");
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("op");
    QTest::addColumn<int>("index");
    if (qgetenv("TR_BACKEND_OPS") != "perf") {
      QTest::newRow("off") << QString() << 0 << -1 << -1;
      return;
    }
    for (const char* b : {"cpu", "cpu-native", "cuda"})
      for (int op = 0; op < kOps; ++op) {
        const std::vector<OpCase> cs = cases_of(op);
        const bool native = QByteArray(b) == "cpu-native";
        if (native && (is_range(op) || !cpu::has_native_kernel(static_cast<ComputeOp>(op))))
          continue;
        for (size_t i = 0; i < cs.size(); ++i)
          for (const Mode m : modes_of(cs[i]))
            if (native ? m == Mode::BF16 : m == Mode::FP32 || m == Mode::FP16 || m == Mode::BF16)
              QTest::newRow(qPrintable(
                  QStringLiteral("%1/%2/%3").arg(b).arg(mode_name(m)).arg(cs[i].name.c_str())))
                  << QString(b) << static_cast<int>(m) << op << static_cast<int>(i);
      }
  }

  void opPerformance() {
    QFETCH(QString, backend);
    QFETCH(int, mode);
    QFETCH(int, op);
    QFETCH(int, index);
    if (op < 0) QSKIP("perf mode: TR_BACKEND_OPS=perf build/tests/test_backend_ops opPerformance");
    const OpCase c = cases_of(op)[static_cast<size_t>(index)];
    if (c.world > 1) QSKIP("a collective: bench_collectives times them");
    std::string why_not;
    std::unique_ptr<Backend> b = make_backend(backend.toStdString(), c.world, why_not);
    if (!b) QSKIP(why_not.c_str());
    const CaseValues v = case_values(c, op, index, half_of(static_cast<Mode>(mode)));
    const Tensors handed = c.backend_view ? c.backend_view(v.in) : v.in;
    Tensors out = v.before;
    Timing once;
    run_case(*b, c, handed, out, static_cast<Mode>(mode), -1, &once);  // warm-up
    out = v.before;
    run_case(*b, c, handed, out, static_cast<Mode>(mode), -1, &once);  // the measure of one
    // Five rounds of about 10 ms each; the fastest round counts, as a
    // shared machine's other work only ever slows one down.
    Timing t;
    t.repeats = std::clamp(static_cast<int>(0.01 / std::max(once.seconds, 1e-6)), 3, 10000);
    double each = std::numeric_limits<double>::infinity();
    for (int round = 0; round < 5; ++round) {
      out = v.before;
      run_case(*b, c, handed, out, static_cast<Mode>(mode), -1, &t);
      each = std::min(each, t.seconds / t.repeats);
    }
    // The bytes its tensors and spans hold, in the storage type of the mode.
    const double element = static_cast<Mode>(mode) == Mode::FP32 ? 4 : 2;
    double bytes = 0;
    for (const Shape& s : c.in) bytes += static_cast<double>(s.elements()) * element;
    for (const Shape& s : c.out) bytes += static_cast<double>(s.elements()) * element;
    for (const int64_t n : c.in_spans) bytes += static_cast<double>(n) * 4;
    for (const int64_t n : c.out_spans) bytes += static_cast<double>(n) * 4;
    qInfo("%-6s %-5s %-44s %10.2f us %8.2f GB/s  (best of 5 x %d)", qPrintable(backend),
          mode_name(static_cast<Mode>(mode)), c.name.c_str(), each * 1e6, bytes / each / 1e9,
          t.repeats);
  }

  // Every build of our own CPU kernels gives the portable build's bits on
  // every case in every mode (kernel_builds.h): no contraction, no reordered
  // sums. A NaN is a NaN: its sign and payload may differ where the vector
  // code takes the operands of a product the other way round.
  void everyBuildGivesThePortableBits_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("op");
    QTest::addColumn<int>("index");
    for (int op = 0; op < kOps; ++op) {
      const std::vector<OpCase> cs = cases_of(op);
      for (size_t i = 0; i < cs.size(); ++i) {
        if (cs[i].world > 1) continue;  // collectives are the backend's own
        for (const Mode m : modes_of(cs[i]))
          QTest::newRow(
              qPrintable(QStringLiteral("%1/%2").arg(mode_name(m)).arg(cs[i].name.c_str())))
              << static_cast<int>(m) << op << static_cast<int>(i);
      }
    }
  }

  void everyBuildGivesThePortableBits() {
    QFETCH(int, mode);
    QFETCH(int, op);
    QFETCH(int, index);
    const std::vector<const cpu::OwnKernels*> builds = cpu::runnable_own_kernels();
    if (builds.size() < 2)
      QSKIP(("no build but the portable one here: " + cpu::narrower_kernels_note()).c_str());
    OpCase c = cases_of(op)[static_cast<size_t>(index)];
    if (static_cast<Mode>(mode) == Mode::OVERWRITE) c.accumulate = 0;
    const CaseValues v = case_values(c, op, index, half_of(static_cast<Mode>(mode)));
    const Tensors handed = c.backend_view ? c.backend_view(v.in) : v.in;
    std::vector<Tensors> outs(builds.size());
    for (size_t k = 0; k < builds.size(); ++k) {
      std::unique_ptr<Backend> b = make_cpu_backend(1, builds[k]);
      outs[k] = v.before;
      QVERIFY(run_case(*b, c, handed, outs[k], static_cast<Mode>(mode)));
    }
    for (size_t k = 1; k < builds.size(); ++k) {
      QCOMPARE(outs[0].size(), outs[k].size());
      for (size_t i = 0; i < outs[0].size(); ++i) {
        QCOMPARE(outs[0][i].size(), outs[k][i].size());
        for (size_t j = 0; j < outs[0][i].size(); ++j) {
          const float p = outs[0][i][j], a = outs[k][i][j];
          QVERIFY2(std::bit_cast<uint32_t>(p) == std::bit_cast<uint32_t>(a) ||
                       (std::isnan(p) && std::isnan(a)),
                   qPrintable(QStringLiteral("output %1 [%2]: %3 (x86-64) and %4 (%5)")
                                  .arg(i)
                                  .arg(j)
                                  .arg(double(p), 0, 'g', 9)
                                  .arg(double(a), 0, 'g', 9)
                                  .arg(builds[k]->isa)));
        }
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestBackendOps)
#include "test_backend_ops.moc"
