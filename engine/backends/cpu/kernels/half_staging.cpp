// SPDX-License-Identifier: GPL-3.0-or-later
// Staging 16-bit (FP16 or BF16) operands as FP32 in the stream workspace
// around an FP32 kernel.
#include "backends/cpu/kernels/half_staging.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/kernels/bf16_arrays.h"
#include "backends/cpu/kernels/half_arrays.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/kernels/row_chunks.h"
#include "core/align.h"

namespace tr::cpu::detail {

namespace {

// Compute ops have at most 5 inputs and 4 outputs (batch norm).
constexpr size_t kMaxOperands = 8;
constexpr uint64_t kStageAlignment = 64;

bool is_half(const TensorArg& t) {
  return t.data && t.desc && is_16bit_float(t.desc->dtype);
}

// The FP32 path's whole cost: a look at each operand's dtype.
bool any_half(const KernelArgs& a) {
  for (const TensorArg& t : a.in)
    if (is_half(t)) return true;
  for (const TensorArg& t : a.out)
    if (is_half(t)) return true;
  return false;
}

// Which operands a forked backward part touches; its contract is in [x, w,
// dy], out [dw, (db), dx] (see graph_resolver's footprints). Tensors a part
// does not touch are neither converted nor written back: another part may be
// writing them at the same time.
bool part_reads(const KernelArgs& a, size_t in) {
  switch (static_cast<BwdPart>(a.part)) {
    case BwdPart::DW:
      return in == 0 || in == 2;
    case BwdPart::DB:
      return in == 2;
    case BwdPart::DX:
      return in == 1 || in == 2;
  }
  return true;
}

bool part_writes(const KernelArgs& a, size_t out) {
  const bool bias = a.out.size() == 3;
  switch (static_cast<BwdPart>(a.part)) {
    case BwdPart::DW:
      return out == 0;
    case BwdPart::DB:
      return bias && out == 1;
    case BwdPart::DX:
      return out + 1 == a.out.size();
  }
  return true;
}

bool touches_in(const KernelArgs& a, size_t i) {
  return a.part < 0 || part_reads(a, i);
}
bool touches_out(const KernelArgs& a, size_t i) {
  return a.part < 0 || part_writes(a, i);
}

// One staged 16-bit tensor: its FP32 copy sits at `offset` in the workspace. An
// output that is also an input (or two outputs that are one tensor) shares
// one copy, so in-place and accumulating ops see their own writes.
struct Stage {
  const TensorArg* tensor = nullptr;
  uint64_t offset = 0;
  bool read = false;   // widen before the kernel
  bool write = false;  // narrow after it
};

struct Plan {
  std::array<Stage, 2 * kMaxOperands> stages;
  std::array<int, kMaxOperands> in_stage{}, out_stage{};  // -1: not staged
  size_t count = 0;
  uint64_t bytes = 0;
};

uint64_t stage_bytes(const DTensor& t) {
  return align_up(static_cast<uint64_t>(t.shape.elements()) * sizeof(float), kStageAlignment);
}

// Bad arguments from the backend or a test, never from a project: the
// backend binds a large enough workspace to every launch that needs one.
// The 16-bit type being staged ("fp16", "bf16"), for messages.
std::string staged_type(const KernelArgs& a) {
  for (const auto* side : {&a.in, &a.out})
    for (const TensorArg& t : *side)
      if (is_half(t)) return std::string(dtype_name(t.desc->dtype));
  return "16-bit";
}

[[noreturn]] void fail(const KernelArgs& a, const std::string& what) {
  std::string where = staged_type(a) + " staging";
  if (a.node && a.node->kind == NodeKind::COMPUTE)
    where += " of " + std::string(compute_op_name(a.node->op));
  if (a.layer_params && !a.layer_params->label.empty())
    where += " for layer " + a.layer_params->label;
  throw std::invalid_argument(where + ": " + what);
}

int stage_of(Plan& p, const TensorArg& t) {
  for (size_t s = 0; s < p.count; ++s)
    if (p.stages[s].tensor->data == t.data) return static_cast<int>(s);
  p.stages[p.count] = Stage{&t, p.bytes, false, false};
  p.bytes += stage_bytes(*t.desc);
  return static_cast<int>(p.count++);
}

Plan make_plan(const KernelArgs& a) {
  Plan p;
  p.in_stage.fill(-1);
  p.out_stage.fill(-1);
  if (a.in.size() > kMaxOperands || a.out.size() > kMaxOperands)
    fail(a, "more operands than a compute op has");
  for (size_t i = 0; i < a.in.size(); ++i) {
    if (!is_half(a.in[i]) || !touches_in(a, i)) continue;
    const int s = stage_of(p, a.in[i]);
    p.stages[static_cast<size_t>(s)].read = true;
    p.in_stage[i] = s;
  }
  for (size_t i = 0; i < a.out.size(); ++i) {
    if (!is_half(a.out[i]) || !touches_out(a, i)) continue;
    const int s = stage_of(p, a.out[i]);
    Stage& st = p.stages[static_cast<size_t>(s)];
    st.write = true;
    // Accumulating adds onto the slot's current value.
    if (a.accumulate(i)) st.read = true;
    p.out_stage[i] = s;
  }
  return p;
}

// Rows of the channel dimension, which is the one 16-bit slots pad.
int64_t rows_of(const DTensor& t) {
  return t.shape.n * t.shape.h * t.shape.w;
}

// Rows [lo, lo + rows) of a 16-bit tensor widened into `out`, compact.
void widen_rows_of(const TensorArg& t, int64_t lo, int64_t rows, float* out) {
  const DTensor& d = *t.desc;
  const auto* in = static_cast<const uint16_t*>(t.data) + lo * d.padded_c();
  if (d.dtype == DType::BF16)
    widen_bf16_rows(in, d.padded_c(), out, rows, d.shape.c);
  else
    widen_half_rows(in, d.padded_c(), out, rows, d.shape.c);
}

void narrow_rows_of(const float* in, const TensorArg& t, int64_t lo, int64_t rows) {
  const DTensor& d = *t.desc;
  auto* out = static_cast<uint16_t*>(t.data) + lo * d.padded_c();
  if (d.dtype == DType::BF16)
    narrow_to_bf16_rows(in, out, d.padded_c(), rows, d.shape.c);
  else
    narrow_to_half_rows(in, out, d.padded_c(), rows, d.shape.c);
}

void widen(const TensorArg& t, float* out) {
  widen_rows_of(t, 0, rows_of(*t.desc), out);
}

void narrow(const float* in, const TensorArg& t) {
  narrow_rows_of(in, t, 0, rows_of(*t.desc));
}

// The FP32 arguments handed to the kernel. Per thread and reused, so that
// after a thread's first staged launch nothing is allocated; a kernel never
// stages from inside another, so one set per thread suffices.
struct StagedArgs {
  KernelArgs args;
  std::array<DTensor, 2 * kMaxOperands> descs;
  size_t used = 0;

  // An FP32 compact twin of `t` whose data is `data`.
  TensorArg twin(const TensorArg& t, void* data) {
    DTensor& d = descs[used++];
    const DTensor& s = *t.desc;
    d.id = s.id;
    d.owner = s.owner;
    d.shape = s.shape;
    d.dtype = DType::FP32;
    d.region = Region::T_SCRATCH;  // FP32 outside F/I: alignment 1, compact
    d.offset = 0;
    d.slot_bytes = stage_bytes(s);
    return {data, &d};
  }
};

// How a launch is cut (chunks of about kChunkValues values; a sample larger
// than that is one chunk): into rows of channels (elementwise ops, every
// operand one shape) or into samples (ops that work on each sample alone,
// every operand one batch).
enum class ChunkUnit { ROW, SAMPLE };

// One operand as the chunks see it: a 16-bit tensor gets a buffer (shared by
// operands that are one tensor), an FP32 one is read where it lies.
struct ChunkOperand {
  const TensorArg* tensor = nullptr;
  int slot = -1;          // buffer index, -1 for FP32
  int64_t unit_rows = 1;  // rows of channels in one unit (a row, or a sample)
};

// What every chunk of one launch shares: its operands (inputs, then
// outputs) and which buffers are read before the kernel and written after.
struct ChunkPlan {
  ChunkUnit unit = ChunkUnit::ROW;
  std::array<ChunkOperand, kMaxOperands> ops;
  size_t count = 0;
  std::array<const void*, kMaxOperands> slot_data{};
  std::array<bool, kMaxOperands> slot_read{}, slot_write{};
  size_t slots = 0;
  int64_t units = 0;        // rows, or samples
  int64_t per_chunk = 1;    // units a chunk takes
  int64_t slot_values = 0;  // floats of one slot's buffer
};

// The per-thread state of chunks: the kernel's arguments, their descriptors
// and the FP32 buffers, reused from chunk to chunk.
struct ChunkArgs {
  KernelArgs args;
  std::array<DTensor, kMaxOperands> descs;
  std::vector<float> buffer;
};

void run_chunk(const KernelArgs& a, Fp32Kernel kernel, const ChunkPlan& p, int64_t first,
               int64_t units) {
  thread_local ChunkArgs st;
  st.buffer.resize(p.slots * static_cast<size_t>(p.slot_values));
  auto buffer = [&](int s) {
    return st.buffer.data() + static_cast<size_t>(s) * static_cast<size_t>(p.slot_values);
  };
  KernelArgs& f = st.args;
  f.in.clear();
  f.out.clear();
  f.node = a.node;
  f.layer_params = a.layer_params;
  f.training = a.training;
  f.scalars = a.scalars;
  f.seed = a.seed;
  f.rank = a.rank;
  f.world = a.world;
  f.part = a.part;
  f.rank_sum = a.rank_sum;
  const bool samples = p.unit == ChunkUnit::SAMPLE;
  f.first_sample = a.first_sample + (samples ? first : 0);
  f.rank_batch = samples && a.rank_batch == 0 ? p.units : a.rank_batch;
  // Each slot's tensor, widened once when any operand on it reads.
  std::array<const ChunkOperand*, kMaxOperands> slot_op{};
  for (size_t i = 0; i < p.count; ++i) {
    const ChunkOperand& o = p.ops[i];
    const bool is_in = i < a.in.size();
    if (!o.tensor->data) {
      (is_in ? f.in : f.out).push_back(*o.tensor);
      continue;
    }
    const Shape& s = o.tensor->desc->shape;
    DTensor& d = st.descs[i];
    d = *o.tensor->desc;
    d.shape = p.unit == ChunkUnit::ROW ? Shape{units, 1, 1, s.c} : Shape{units, s.h, s.w, s.c};
    d.dtype = DType::FP32;
    d.region = Region::T_SCRATCH;
    d.slot_bytes = static_cast<uint64_t>(d.shape.elements()) * 4;
    void* data = o.slot >= 0 ? static_cast<void*>(buffer(o.slot))
                             : static_cast<void*>(o.tensor->f32() + first * o.unit_rows * s.c);
    if (o.slot >= 0) slot_op[static_cast<size_t>(o.slot)] = &o;
    (is_in ? f.in : f.out).push_back({data, &d});
  }
  for (size_t s = 0; s < p.slots; ++s)
    if (p.slot_read[s]) {
      const ChunkOperand& o = *slot_op[s];
      widen_rows_of(*o.tensor, first * o.unit_rows, units * o.unit_rows,
                    buffer(static_cast<int>(s)));
    }
  kernel(f);
  for (size_t s = 0; s < p.slots; ++s)
    if (p.slot_write[s]) {
      const ChunkOperand& o = *slot_op[s];
      narrow_rows_of(buffer(static_cast<int>(s)), *o.tensor, first * o.unit_rows,
                     units * o.unit_rows);
    }
}

// Stages `a` a chunk at a time when its operands allow `unit`, else whole.
bool run_chunked(const KernelArgs& a, Fp32Kernel kernel, ChunkUnit unit) {
  if (!any_half(a)) return false;
  if (a.in.size() + a.out.size() > kMaxOperands) return run_16bit_staged(a, kernel);
  const Shape* shape = nullptr;
  ChunkPlan p;
  p.unit = unit;
  int64_t unit_values = 1;
  for (size_t i = 0; i < a.in.size() + a.out.size(); ++i) {
    const bool is_in = i < a.in.size();
    const TensorArg& t = is_in ? a.in[i] : a.out[i - a.in.size()];
    ChunkOperand o{&t, -1, 1};
    if (t.data) {
      if (!t.desc) return run_16bit_staged(a, kernel);
      const Shape& s = t.desc->shape;
      if (!shape) shape = &s;
      const bool fits = unit == ChunkUnit::ROW ? s == *shape : s.n == shape->n;
      if (!fits || (!is_half(t) && !t.desc->is_compact())) return run_16bit_staged(a, kernel);
      o.unit_rows = unit == ChunkUnit::ROW ? 1 : s.h * s.w;
      unit_values = std::max(unit_values, o.unit_rows * s.c);
      if (is_half(t)) {
        const auto end = p.slot_data.begin() + static_cast<std::ptrdiff_t>(p.slots);
        const auto at = std::find(p.slot_data.begin(), end, t.data);
        o.slot = static_cast<int>(at - p.slot_data.begin());
        if (at == end) p.slot_data[p.slots++] = t.data;
        const auto s_index = static_cast<size_t>(o.slot);
        if (is_in || a.accumulate(i - a.in.size())) p.slot_read[s_index] = true;
        if (!is_in) p.slot_write[s_index] = true;
      }
    }
    p.ops[p.count++] = o;
  }
  if (!shape) return run_16bit_staged(a, kernel);
  p.units = unit == ChunkUnit::ROW ? shape->n * shape->h * shape->w : shape->n;
  p.per_chunk = std::max<int64_t>(1, kChunkValues / unit_values);
  p.slot_values = p.per_chunk * unit_values;
  parallel_ranges(p.units, p.units * unit_values * 4, [&](int64_t lo, int64_t hi) {
    for (int64_t u = lo; u < hi; u += p.per_chunk)
      run_chunk(a, kernel, p, u, std::min(p.per_chunk, hi - u));
  });
  return true;
}

}  // namespace

bool run_16bit_elementwise(const KernelArgs& a, Fp32Kernel kernel) {
  return run_chunked(a, kernel, ChunkUnit::ROW);
}

bool run_16bit_per_sample(const KernelArgs& a, Fp32Kernel kernel) {
  return run_chunked(a, kernel, ChunkUnit::SAMPLE);
}

uint64_t staging_bytes_16bit(const KernelArgs& a) {
  return any_half(a) ? make_plan(a).bytes : 0;
}

bool run_16bit_staged(const KernelArgs& a, Fp32Kernel kernel) {
  if (!any_half(a)) return false;
  const Plan p = make_plan(a);
  if (p.bytes > 0 && (!a.workspace || !a.workspace->data))
    fail(a, staged_type(a) +
                " tensors are staged as fp32 in a stream workspace, and this launch has none");
  if (a.workspace->bytes < p.bytes)
    fail(a, "needs " + std::to_string(p.bytes) + " bytes of stream workspace, the stream has " +
                std::to_string(a.workspace->bytes));
  auto* base = static_cast<uint8_t*>(a.workspace->data);
  auto staged = [&](int s) {
    return reinterpret_cast<float*>(base + p.stages[static_cast<size_t>(s)].offset);
  };

  thread_local StagedArgs st;
  st.used = 0;
  KernelArgs& f = st.args;
  f.node = a.node;
  f.layer_params = a.layer_params;
  f.training = a.training;
  f.in_spans = a.in_spans;
  f.out_spans = a.out_spans;
  f.scalars = a.scalars;
  f.seed = a.seed;
  f.rank = a.rank;
  f.world = a.world;
  f.part = a.part;
  f.first_sample = a.first_sample;
  f.rank_batch = a.rank_batch;
  f.workspace = nullptr;  // nothing 16-bit is left to stage
  f.rank_sum = a.rank_sum;
  f.in.clear();
  f.out.clear();
  // A tensor this part does not touch keeps its own (unread) memory behind
  // an FP32 descriptor, so the kernel's operand checks see a consistent set.
  for (size_t i = 0; i < a.in.size(); ++i) {
    const TensorArg& t = a.in[i];
    if (!is_half(t))
      f.in.push_back(t);
    else
      f.in.push_back(st.twin(t, p.in_stage[i] >= 0 ? staged(p.in_stage[i]) : t.data));
  }
  for (size_t i = 0; i < a.out.size(); ++i) {
    const TensorArg& t = a.out[i];
    if (!is_half(t))
      f.out.push_back(t);
    else
      f.out.push_back(st.twin(t, p.out_stage[i] >= 0 ? staged(p.out_stage[i]) : t.data));
  }

  for (size_t s = 0; s < p.count; ++s)
    if (p.stages[s].read) widen(*p.stages[s].tensor, staged(static_cast<int>(s)));
  kernel(f);
  for (size_t s = 0; s < p.count; ++s)
    if (p.stages[s].write) narrow(staged(static_cast<int>(s)), *p.stages[s].tensor);
  return true;
}

}  // namespace tr::cpu::detail
