// SPDX-License-Identifier: GPL-3.0-or-later
// CPU convolution and linear kernels on oneDNN: cached convolution primitives, sgemm for linear.
//
// Measured on the target machine (2 cores, AVX-512, batch 128; see
// bench/bench_dense_kernels.cpp): oneDNN's jit/brgemm convolutions reach
// 300-450 GFLOP/s on the deeper model layers (about 100-240 on the 1-channel
// first layers), while asking for our OHWI weight layout directly lands on
// its reference kernel (>1000x slower), so weights take one small reorder per
// call. For linear layers oneDNN's sgemm is 2-5x faster than OpenBLAS at
// these sizes (e.g. [128,400]x[400,120]: 0.048 against 0.156 ms forward) and
// up to 5x faster than its own matmul primitive on the tiny ones. Only the
// tiny forwards ([128,84]x[84,10], [128,64]x[64,10]) are faster in OpenBLAS,
// by about 4 microseconds, which does not pay for running OpenBLAS's own
// thread pool next to oneDNN's OpenMP team on two cores.
#include "backends/cpu/kernels/dense.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "backends/cpu/kernels/bf16_arrays.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/native_bf16.h"
#include "backends/cpu/kernels/onednn_info.h"
#include "backends/cpu/kernels/parallel.h"
#include "core/bf16_convert.h"
#include "runtime/conv_geometry.h"

namespace tr::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;

[[noreturn]] void fail(const char* kernel, const KernelArgs& a, const std::string& what) {
  throw std::invalid_argument(kernel + a.where() + ": " + what);
}

// `t` is present, compact and of type `want` (FP32, or BF16 on the native
// bfloat16 paths).
void check_operand(const char* kernel, const KernelArgs& a, const TensorArg& t, const char* name,
                   DType want) {
  if (!t.data || !t.desc) fail(kernel, a, std::string(name) + " is missing");
  // 16-bit operands were staged as FP32 before this check (half_staging.h).
  if (t.desc->dtype != want)
    fail(kernel, a,
         std::string(name) + " is " + std::string(dtype_name(t.desc->dtype)) +
             "; this path takes " + std::string(dtype_name(want)));
  if (!t.desc->is_compact()) fail(kernel, a, std::string(name) + " has a padded channel dimension");
}

void check_f32(const char* kernel, const KernelArgs& a, const TensorArg& t, const char* name) {
  check_operand(kernel, a, t, name, DType::FP32);
}

// Every input, and every output except an absent dx (the last one; a layer fed
// by the input node gets no dx slot), must be compact and of type `want`.
void check_inputs_outputs(const char* kernel, const KernelArgs& a, bool has_dx,
                          DType want = DType::FP32) {
  for (const TensorArg& t : a.in) check_operand(kernel, a, t, "an input", want);
  for (size_t i = 0; i + 1 < a.out.size(); ++i)
    check_operand(kernel, a, a.out[i], "an output", want);
  if (has_dx) check_operand(kernel, a, a.out.back(), "dx", want);
}

void check_counts(const char* kernel, const KernelArgs& a, size_t ins_min, size_t ins_max,
                  size_t outs_min, size_t outs_max) {
  if (a.in.size() < ins_min || a.in.size() > ins_max || a.out.size() < outs_min ||
      a.out.size() > outs_max)
    fail(kernel, a,
         "got " + std::to_string(a.in.size()) + " inputs and " + std::to_string(a.out.size()) +
             " outputs");
  if (!a.layer_params)
    fail(kernel, a, "needs the layer's parameters (KernelArgs::layer_params is null)");
}

// ---------------------------------------------------------------------------
// Per-thread state. oneDNN streams are not meant to be shared between threads,
// and the runtime calls kernels from several stream threads at once; the
// scratch buffers are per thread for the same reason, which also lets every
// primitive use a user-provided scratchpad (so one primitive may run on two
// threads at the same time).

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

enum ScratchSlot { SCRATCH_WEIGHTS, SCRATCH_PAD, SCRATCH_DX, SCRATCH_DY, SCRATCH_COUNT };

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { release(); }

  // At least `bytes` of 64-byte aligned memory; grows, never shrinks, so the
  // steady state does not allocate.
  void* get(size_t bytes) {
    if (bytes > capacity_) {
      release();
      const size_t rounded = (bytes + 4095) & ~size_t{4095};
      data_ = ::operator new (rounded, std::align_val_t{64});
      capacity_ = rounded;
    }
    return data_;
  }

 private:
  void release() {
    if (data_) ::operator delete (data_, std::align_val_t{64});
    data_ = nullptr;
    capacity_ = 0;
  }
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

void* scratch(ScratchSlot slot, size_t bytes) {
  thread_local std::array<ScratchBuffer, SCRATCH_COUNT> buffers;
  return buffers[slot].get(std::max<size_t>(bytes, 64));
}

// db[c] = sum over rows of m[r, c], m FP32 or bfloat16 bits (widened as
// read: the sums of the widened values). Rows are summed as flat runs of
// whole rows at least 64 floats long so the inner loop vectorises even for
// 6 channels; float partials are folded into doubles every 64 runs so the
// error stays near float epsilon for any batch. The columns are spread over
// the threads, each column summed in the same order on any thread count.
template <class T>
void sum_rows(const T* m, int64_t rows, int64_t c, float* out) {
  const auto wide = [](T v) {
    if constexpr (std::is_same_v<T, uint16_t>)
      return bf16_bits_to_float(v);
    else
      return v;
  };
  const int64_t rows_per_run = std::max<int64_t>(1, (64 + c - 1) / c);
  const int64_t run = rows_per_run * c;
  constexpr int64_t kRunsPerFold = 64;
  const int64_t full_runs = rows / rows_per_run;
  detail::parallel_ranges(
      c, rows * c,
      [&](int64_t c0, int64_t c1) {
        std::vector<float> acc(static_cast<size_t>(run));
        std::vector<double> total(static_cast<size_t>(c1 - c0), 0.0);
        for (int64_t r0 = 0; r0 < full_runs; r0 += kRunsPerFold) {
          std::fill(acc.begin(), acc.end(), 0.0f);
          const int64_t r1 = std::min(full_runs, r0 + kRunsPerFold);
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t q = 0; q < rows_per_run; ++q) {
              const T* src = m + r * run + q * c;
              float* a = acc.data() + q * c;
              for (int64_t j = c0; j < c1; ++j) a[j] += wide(src[j]);
            }
          for (int64_t q = 0; q < rows_per_run; ++q)
            for (int64_t j = c0; j < c1; ++j)
              total[static_cast<size_t>(j - c0)] += acc[static_cast<size_t>(q * c + j)];
        }
        for (int64_t r = full_runs * rows_per_run; r < rows; ++r)
          for (int64_t j = c0; j < c1; ++j)
            total[static_cast<size_t>(j - c0)] += wide(m[r * c + j]);
        for (int64_t j = c0; j < c1; ++j)
          out[j] = static_cast<float>(total[static_cast<size_t>(j - c0)]);
      },
      16);
}

// ---------------------------------------------------------------------------
// Convolution geometry and the primitive cache.

using ConvGeom = ConvGeometry;

// A 1x1 convolution of stride 1: a matrix product over the pixels.
bool is_pointwise(const ConvGeom& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 &&
         g.groups == 1;
}

int block_of(const TensorArg& t) {
  return t.desc ? t.desc->channel_block : 0;
}

// `blocked`: x's or y's channels lie in blocks (DTensor::channel_block).
ConvGeom conv_geom(const char* kernel, const KernelArgs& a, const Shape& x, const Shape& w,
                   const Shape& y, bool blocked) {
  ConvGeom g{};
  std::string error;
  if (!conv_geometry(*a.layer_params, x, w, y, g, error)) fail(kernel, a, error);
  // A pointwise convolution (a per-token Linear) sees its N x H x W pixels
  // as one row of one image: oneDNN's weight-gradient kernels run that
  // faster than 128 images of 1 x 50 tokens (bf16 on AMX: 18.6 -> 13.7 ms a
  // step on vit-tiny-fashion), and the arithmetic is the same. Blocked
  // channels are not rows of pixels, so they keep their images.
  if (is_pointwise(g) && !blocked) {
    g.w = g.wo = g.n * g.h * g.w;
    g.n = g.h = g.ho = 1;
  }
  return g;
}

enum class ConvKind : int64_t { FWD, FWD_BIAS, BWD_DATA, BWD_WEIGHTS, BWD_WEIGHTS_BIAS };

// The storage a primitive reads and writes: FP32 throughout, or bfloat16
// features, weights and weight gradients (FP32 accumulation) with the bias
// in either; a backward-data one may write its dX in FP32 (to be added onto
// a gradient that already holds a value). The features of either side (x and
// dx, y and dy) are NHWC or in channel blocks of `x_block` / `y_block`.
struct ConvTypes {
  bool bf16 = false;
  bool bias_bf16 = false;
  bool dx_f32 = false;
  int x_block = 0, y_block = 0;
};

using ConvKey = std::array<int64_t, 20>;

ConvKey conv_key(const ConvGeom& g, ConvKind kind, ConvTypes t) {
  return {g.n,    g.h,         g.w,      g.ci,      g.co,
          g.kh,   g.kw,        g.sh,     g.sw,      g.ph,
          g.pw,   g.ho,        g.wo,     g.groups,  static_cast<int64_t>(kind),
          t.bf16, t.bias_bf16, t.dx_f32, t.x_block, t.y_block};
}

// oneDNN's tag for features in NHWC or in channel blocks of `block`.
Tag feature_tag(int block) {
  switch (block) {
    case 0:
      return Tag::nhwc;
    case 8:
      return Tag::nChw8c;
    case 16:
      return Tag::nChw16c;
  }
  throw std::invalid_argument("convolution: channel blocks of " + std::to_string(block) +
                              " (oneDNN's direct convolutions take 8 or 16)");
}

struct KeyHash {
  template <size_t N>
  size_t operator()(const std::array<int64_t, N>& k) const noexcept {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// One convolution primitive plus what it takes to feed it our tensors.
struct ConvPrim {
  dnnl::primitive prim;
  memory::desc src, dst, bias;           // (diff_)src, (diff_)dst, (diff_)bias: plain NHWC / x
  memory::desc weights;                  // the layout oneDNN chose for (diff_)weights
  memory::desc user_weights;             // ours: OHWI
  std::optional<dnnl::reorder> reorder;  // user->chosen (fwd, bwd data), chosen->user (bwd weights)
  memory::desc scratchpad;
  size_t scratchpad_bytes = 0;
  std::string impl;
};

memory::dims dims(std::initializer_list<int64_t> v) {
  return memory::dims(v.begin(), v.end());
}

ConvPrim make_conv(const ConvGeom& g, ConvKind kind, ConvTypes t) {
  dnnl::engine& eng = cpu_engine();
  const DT dt = t.bf16 ? DT::bf16 : DT::f32;
  // A 1-channel map lies as NCHW too, the layout oneDNN's kernels for
  // blocked outputs read their first layer's images in.
  const Tag x_tag =
      t.x_block == 0 && t.y_block != 0 && g.ci == 1 ? Tag::nchw : feature_tag(t.x_block);
  const memory::desc src(dims({g.n, g.ci, g.h, g.w}), dt, x_tag);
  const memory::desc dst(dims({g.n, g.co, g.ho, g.wo}), dt, feature_tag(t.y_block));
  // Grouped: [G, Co/G, Ci/G, kh, kw], and our OHWI weights are gohwi (the
  // output channels of one group are adjacent).
  const bool grouped = g.groups > 1;
  const memory::dims w_dims = grouped
                                  ? dims({g.groups, g.co / g.groups, g.ci / g.groups, g.kh, g.kw})
                                  : dims({g.co, g.ci, g.kh, g.kw});
  const memory::desc any_w(w_dims, dt, Tag::any);
  const memory::desc user_w(w_dims, dt, grouped ? Tag::gohwi : Tag::ohwi);
  const bool with_bias = kind == ConvKind::FWD_BIAS || kind == ConvKind::BWD_WEIGHTS_BIAS;
  const memory::desc bias =
      with_bias ? memory::desc(dims({g.co}), t.bias_bf16 ? DT::bf16 : DT::f32, Tag::x)
                : memory::desc();
  const memory::dims strides = dims({g.sh, g.sw});
  // Symmetric padding like the frameworks: oneDNN checks the output size with
  // the same floor division as shape inference, so no right-padding fix-up.
  const memory::dims pad = dims({g.ph, g.pw});
  const auto alg = dnnl::algorithm::convolution_direct;

  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

  ConvPrim p;
  p.src = src;
  p.dst = dst;
  p.bias = bias;
  p.user_weights = user_w;
  const dnnl::convolution_forward::desc fwd(dnnl::prop_kind::forward_training, alg, src, any_w,
                                            bias, dst, strides, pad, pad);
  // Backward primitives need the forward one as a hint to agree on layouts.
  auto hint = [&] { return dnnl::convolution_forward::primitive_desc(fwd, eng); };
  switch (kind) {
    case ConvKind::FWD:
    case ConvKind::FWD_BIAS: {
      const dnnl::convolution_forward::primitive_desc pd(fwd, attr, eng);
      p.prim = dnnl::convolution_forward(pd);
      p.weights = pd.weights_desc();
      p.scratchpad = pd.scratchpad_desc();
      p.impl = pd.impl_info_str();
      break;
    }
    case ConvKind::BWD_DATA: {
      const memory::desc diff_src =
          t.dx_f32 ? memory::desc(dims({g.n, g.ci, g.h, g.w}), DT::f32, x_tag) : src;
      p.src = diff_src;
      const dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(alg, diff_src, any_w, dst, strides, pad, pad), attr,
          eng, hint());
      p.prim = dnnl::convolution_backward_data(pd);
      p.weights = pd.weights_desc();
      p.scratchpad = pd.scratchpad_desc();
      p.impl = pd.impl_info_str();
      break;
    }
    case ConvKind::BWD_WEIGHTS:
    case ConvKind::BWD_WEIGHTS_BIAS: {
      const dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(alg, src, any_w, bias, dst, strides, pad, pad),
          attr, eng, hint());
      p.prim = dnnl::convolution_backward_weights(pd);
      p.weights = pd.diff_weights_desc();
      p.scratchpad = pd.scratchpad_desc();
      p.impl = pd.impl_info_str();
      break;
    }
  }
  p.scratchpad_bytes = p.scratchpad.get_size();
  if (p.weights != user_w) {
    const bool to_user = kind == ConvKind::BWD_WEIGHTS || kind == ConvKind::BWD_WEIGHTS_BIAS;
    p.reorder = to_user ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, p.weights, eng, user_w))
                        : dnnl::reorder(dnnl::reorder::primitive_desc(eng, user_w, eng, p.weights));
  }
  return p;
}

// Primitives are created once per (shape, parameters, kind) and shared by every
// engine in the process: they depend on nothing else (like oneDNN's own
// primitive cache, which does not cover the primitive-descriptor search this
// one also saves). Entries are immutable once inserted.
template <class Key, class Prim>
class PrimitiveCache {
 public:
  // Primitives must not outlive their engine: creating the engine first
  // makes it a longer-lived static than the cache.
  PrimitiveCache() { cpu_engine(); }

  template <class Make>
  const Prim& get(const Key& key, Make make) {
    {
      std::shared_lock lock(mutex_);
      if (auto it = map_.find(key); it != map_.end()) return *it->second;
    }
    // Created outside the lock (the implementation search can take
    // milliseconds); a thread that loses the race drops its copy.
    auto made = std::make_unique<Prim>(make());
    std::unique_lock lock(mutex_);
    return *map_.try_emplace(key, std::move(made)).first->second;
  }
  size_t size() {
    std::shared_lock lock(mutex_);
    return map_.size();
  }

 private:
  std::shared_mutex mutex_;
  std::unordered_map<Key, std::unique_ptr<Prim>, KeyHash> map_;
};

PrimitiveCache<ConvKey, ConvPrim>& conv_cache() {
  static PrimitiveCache<ConvKey, ConvPrim> cache;
  return cache;
}

const ConvPrim& conv_prim(const char* kernel, const KernelArgs& a, const ConvGeom& g, ConvKind kind,
                          ConvTypes t = {}) {
  try {
    return conv_cache().get(conv_key(g, kind, t), [&] { return make_conv(g, kind, t); });
  } catch (const dnnl::error& e) {
    fail(kernel, a, std::string("oneDNN could not create the convolution: ") + e.what());
  }
}

memory wrap(const memory::desc& d, const void* data) {
  // oneDNN takes non-const handles even for tensors it only reads.
  return memory(d, cpu_engine(), const_cast<void*>(data));
}

void execute(const ConvPrim& p, std::unordered_map<int, memory>& args) {
  dnnl::stream& s = thread_stream();
  if (p.scratchpad_bytes)
    args.emplace(DNNL_ARG_SCRATCHPAD, wrap(p.scratchpad, scratch(SCRATCH_PAD, p.scratchpad_bytes)));
  p.prim.execute(s, args);
  s.wait();
}

void run_conv_fwd(const ConvPrim& p, const void* x, const void* w, const void* b, void* y) {
  dnnl::stream& s = thread_stream();
  memory w_m = wrap(p.user_weights, w);
  if (p.reorder) {
    memory packed = wrap(p.weights, scratch(SCRATCH_WEIGHTS, p.weights.get_size()));
    p.reorder->execute(s, w_m, packed);
    w_m = packed;
  }
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, wrap(p.src, x)}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_DST, wrap(p.dst, y)}};
  if (b) args.emplace(DNNL_ARG_BIAS, wrap(p.bias, b));
  execute(p, args);
}

void run_conv_bwd_data(const ConvPrim& p, const void* w, const void* dy, void* dx) {
  dnnl::stream& s = thread_stream();
  memory w_m = wrap(p.user_weights, w);
  if (p.reorder) {
    memory packed = wrap(p.weights, scratch(SCRATCH_WEIGHTS, p.weights.get_size()));
    p.reorder->execute(s, w_m, packed);
    w_m = packed;
  }
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, wrap(p.dst, dy)},
                                       {DNNL_ARG_WEIGHTS, w_m},
                                       {DNNL_ARG_DIFF_SRC, wrap(p.src, dx)}};
  execute(p, args);
}

void run_conv_bwd_weights(const ConvPrim& p, const void* x, const void* dy, void* dw, void* db) {
  memory dw_user = wrap(p.user_weights, dw);
  memory dw_m =
      p.reorder ? wrap(p.weights, scratch(SCRATCH_WEIGHTS, p.weights.get_size())) : dw_user;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(p.src, x)},
                                       {DNNL_ARG_DIFF_DST, wrap(p.dst, dy)},
                                       {DNNL_ARG_DIFF_WEIGHTS, dw_m}};
  if (db) args.emplace(DNNL_ARG_DIFF_BIAS, wrap(p.bias, db));
  execute(p, args);
  if (p.reorder) {
    dnnl::stream& s = thread_stream();
    p.reorder->execute(s, dw_m, dw_user);
    s.wait();
  }
}

// ---------------------------------------------------------------------------
// Pointwise convolutions (a per-token Linear) on bfloat16 as oneDNN matrix
// products over the pixels, [rows, ci] x [ci, co]: on vit-tiny-fashion's
// token layers (AMX, 2 cores) its matmul takes 10-20% less time than its 1x1
// convolution for the three products together, reads our [co, ci] weights
// as they lie (no reorder) and adds onto a gradient with a sum post-op.

enum class MatKind : int64_t { FWD, BWD_DATA, BWD_DATA_ADD, BWD_WEIGHTS };

// rows, ci, co, kind, bias: 0 none, 1 FP32, 2 bfloat16
using MatKey = std::array<int64_t, 5>;

struct MatPrim {
  dnnl::matmul prim;
  memory::desc a, b, bias, c, scratchpad;
  size_t scratchpad_bytes = 0;
};

MatPrim make_mat(const MatKey& k) {
  const int64_t rows = k[0], ci = k[1], co = k[2];
  const auto kind = static_cast<MatKind>(k[3]);
  MatPrim p;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  switch (kind) {
    case MatKind::FWD:  // y = x w^T (+ b)
      p.a = memory::desc(dims({rows, ci}), DT::bf16, Tag::ab);
      p.b = memory::desc(dims({ci, co}), DT::bf16, dims({1, ci}));
      p.c = memory::desc(dims({rows, co}), DT::bf16, Tag::ab);
      if (k[4]) p.bias = memory::desc(dims({1, co}), k[4] == 2 ? DT::bf16 : DT::f32, Tag::ab);
      break;
    case MatKind::BWD_DATA:  // dx (+)= dy w
    case MatKind::BWD_DATA_ADD: {
      p.a = memory::desc(dims({rows, co}), DT::bf16, Tag::ab);
      p.b = memory::desc(dims({co, ci}), DT::bf16, Tag::ab);
      p.c = memory::desc(dims({rows, ci}), DT::bf16, Tag::ab);
      if (kind == MatKind::BWD_DATA_ADD) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
      }
      break;
    }
    case MatKind::BWD_WEIGHTS:  // dw = dy^T x
      p.a = memory::desc(dims({co, rows}), DT::bf16, dims({1, co}));
      p.b = memory::desc(dims({rows, ci}), DT::bf16, Tag::ab);
      p.c = memory::desc(dims({co, ci}), DT::bf16, Tag::ab);
      break;
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.bias, p.c), attr,
                                        cpu_engine());
  p.prim = dnnl::matmul(pd);
  p.scratchpad = pd.scratchpad_desc();
  p.scratchpad_bytes = p.scratchpad.get_size();
  return p;
}

// c = a b (+ bias, or + c with the sum post-op).
void run_mat(const char* kernel, const KernelArgs& a, const MatKey& key, const void* in_a,
             const void* in_b, const void* bias, void* out) {
  static PrimitiveCache<MatKey, MatPrim> cache;
  const MatPrim* p = nullptr;
  try {
    p = &cache.get(key, [&] { return make_mat(key); });
  } catch (const dnnl::error& e) {
    fail(kernel, a, std::string("oneDNN could not create the matrix product: ") + e.what());
  }
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(p->a, in_a)},
                                       {DNNL_ARG_WEIGHTS, wrap(p->b, in_b)},
                                       {DNNL_ARG_DST, wrap(p->c, out)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, wrap(p->bias, bias));
  if (p->scratchpad_bytes)
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 wrap(p->scratchpad, scratch(SCRATCH_PAD, p->scratchpad_bytes)));
  dnnl::stream& s = thread_stream();
  p->prim.execute(s, args);
  s.wait();
}

MatKey mat_key(const ConvGeom& g, MatKind kind, int64_t bias = 0) {
  return {g.n * g.ho * g.wo, g.ci, g.co, static_cast<int64_t>(kind), bias};
}

// Whether dW and dB, when one call runs both, come from one oneDNN primitive.
// Measured at batch 128: on LeNet's conv1 (1->6, 5x5) the fused primitive
// takes 0.88 ms against 0.29 ms for dW alone plus 0.06 ms for our row sum; on
// its conv2 (6->16) fusing saves at most the sum's 0.02 ms. So they stay
// separate, which also makes a single call and the forked parts identical.
constexpr bool kFuseBiasGrad = false;

// The bias gradient of an FP32 dy in channel blocks of b: each channel's sum
// over the samples' pixels, a sample's in float and the samples' in double.
void blocked_bias_grad(const ConvGeom& g, int b, const float* dy, float* db) {
  const int64_t blocks = g.co / b, pixels = g.ho * g.wo;
  detail::parallel_ranges(blocks, g.n * pixels * g.co, [&](int64_t b0, int64_t b1) {
    for (int64_t cb = b0; cb < b1; ++cb) {
      double total[16] = {};
      for (int64_t n = 0; n < g.n; ++n) {
        const float* seg = dy + (n * blocks + cb) * pixels * b;
        float acc[16] = {};
        for (int64_t p = 0; p < pixels; ++p)
          for (int l = 0; l < b; ++l) acc[l] += seg[p * b + l];
        for (int l = 0; l < b; ++l) total[l] += acc[l];
      }
      for (int l = 0; l < b; ++l) db[cb * b + l] = static_cast<float>(total[l]);
    }
  });
}

// The bias gradient: the FP32 row sums of dy (widened first when bfloat16,
// the sums rounded once).
void conv_bias_grad(const ConvGeom& g, const ConvTypes& t, const void* dy, void* db) {
  const int64_t rows = g.n * g.ho * g.wo;
  const bool bf16 = t.bf16;
  if (t.y_block)
    return blocked_bias_grad(g, t.y_block, static_cast<const float*>(dy), static_cast<float*>(db));
  if (!bf16) {
    sum_rows(static_cast<const float*>(dy), rows, g.co, static_cast<float*>(db));
    return;
  }
  std::vector<float> sums(static_cast<size_t>(g.co));
  // The portable sums are this file's baseline x86-64 code; AVX-512 BF16
  // widens and adds 16 values an instruction (a third of the time on
  // vit-tiny-fashion's token layers).
  if (native_bf16_usable())
    native_column_sums(static_cast<const uint16_t*>(dy), rows, g.co, sums.data());
  else
    sum_rows(static_cast<const uint16_t*>(dy), rows, g.co, sums.data());
  narrow_to_bf16(sums.data(), static_cast<uint16_t*>(db), g.co);
}

// dy of a 1-channel first layer (x an image) in channel blocks, reordered
// into NHWC scratch: oneDNN has only its reference kernel for the weight
// gradient of an NCHW image against blocked dy (hundreds of times slower),
// and this one copy of dy lets its NHWC kernel run (the plain layout's bits).
const float* image_layer_dy_nhwc(const ConvGeom& g, int y_block, const void* dy) {
  using ReorderKey = std::array<int64_t, 5>;
  static PrimitiveCache<ReorderKey, dnnl::reorder> cache;
  const ReorderKey key{g.n, g.co, g.ho, g.wo, y_block};
  const memory::desc from(dims({g.n, g.co, g.ho, g.wo}), DT::f32, feature_tag(y_block));
  const memory::desc to(dims({g.n, g.co, g.ho, g.wo}), DT::f32, Tag::nhwc);
  const dnnl::reorder& r = cache.get(key, [&] {
    return dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to));
  });
  void* out = scratch(SCRATCH_DY, to.get_size());
  memory src = wrap(from, dy), dst = wrap(to, out);
  dnnl::stream& s = thread_stream();
  r.execute(s, src, dst);
  s.wait();
  return static_cast<const float*>(out);
}

// The weight (and bias) gradient shared by conv_bwd and conv_bwd_first, on
// FP32 or bfloat16 storage (`bf16`: the H series, rounded once from
// oneDNN's FP32 accumulation).
void conv_weight_grads(const char* kernel, const KernelArgs& a, const ConvGeom& g,
                       const ConvTypes& t, const void* x, const void* dy, void* dw, void* db) {
  const bool run_dw = a.runs(BwdPart::DW);
  const bool run_db = db && a.runs(BwdPart::DB);
  const bool bf16 = t.bf16;
  if (run_dw && run_db && kFuseBiasGrad) {
    ConvTypes with_bias = t;
    with_bias.bias_bf16 = bf16;
    run_conv_bwd_weights(conv_prim(kernel, a, g, ConvKind::BWD_WEIGHTS_BIAS, with_bias), x, dy, dw,
                         db);
    return;
  }
  if ((run_dw || run_db) && !bf16 && t.x_block == 0 && t.y_block != 0 && g.ci == 1) {
    ConvTypes plain = t;
    plain.y_block = 0;
    return conv_weight_grads(kernel, a, g, plain, x, image_layer_dy_nhwc(g, t.y_block, dy), dw, db);
  }
  if (run_dw && bf16 && is_pointwise(g))
    run_mat(kernel, a, mat_key(g, MatKind::BWD_WEIGHTS), dy, x, nullptr, dw);
  else if (run_dw)
    run_conv_bwd_weights(conv_prim(kernel, a, g, ConvKind::BWD_WEIGHTS, t), x, dy, dw, nullptr);
  if (run_db) conv_bias_grad(g, t, dy, db);
}

// ---------------------------------------------------------------------------
// Linear layers: y[N,O] = x[N,K] w[O,K]^T + b, all row-major.

struct LinearGeom {
  int64_t n, k, o;
};

LinearGeom linear_geom(const char* kernel, const KernelArgs& a, const Shape& x, const Shape& w,
                       const Shape& y) {
  const LinearGeom g{x.n, x.per_sample(), w.n};
  if (!w.is_flat() || w.c != g.k)
    fail(kernel, a,
         "weights " + w.str() + " should be [out,1,1," + std::to_string(g.k) + "] for input " +
             x.str());
  if (!y.is_flat() || y.n != g.n || y.c != g.o)
    fail(kernel, a,
         "output " + y.str() + " should be [" + std::to_string(g.n) + ",1,1," +
             std::to_string(g.o) + "]");
  return g;
}

// Row-major C[m,n] = alpha op(A) op(B) + beta C through oneDNN's sgemm.
void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success)
    throw std::runtime_error("oneDNN sgemm failed with status " + std::to_string(st));
}

void linear_weight_grads(const KernelArgs& a, const LinearGeom& g, const float* x, const float* dy,
                         float* dw, float* db) {
  // dw[O,K] = dy[N,O]^T x[N,K]
  if (a.runs(BwdPart::DW)) sgemm('T', 'N', g.o, g.k, g.n, dy, g.o, x, g.k, 0.0f, dw, g.k);
  if (db && a.runs(BwdPart::DB)) sum_rows(dy, g.n, g.o, db);
}

// The operands of a forked backward op, checked: in [x, w, dy], out [dw, (db), dx].
struct BwdOperands {
  const TensorArg& x;
  const TensorArg& w;
  const TensorArg& dy;
  bool bias;
  size_t dx_index;
  bool has_dx;
};

BwdOperands bwd_operands(const char* k, const KernelArgs& a, DType want = DType::FP32) {
  check_counts(k, a, 3, 3, 2, 3);
  const size_t dx_index = a.out.size() - 1;
  const BwdOperands o{a.in[0],           a.in[1],  a.in[2],
                      a.out.size() == 3, dx_index, detail::has_out(a, dx_index)};
  check_inputs_outputs(k, a, o.has_dx, want);
  if (a.out[0].shape() != o.w.shape()) fail(k, a, "dw should have the weights' shape");
  if (o.has_dx && a.out[dx_index].shape() != o.x.shape())
    fail(k, a, "dx should have the input's shape");
  return o;
}

// Convolutions on bfloat16 storage that oneDNN runs natively: features,
// weights and gradients compact bfloat16 (a forward's bias may be FP32), on a
// CPU with AVX-512 BF16. A padded row would need its lanes zeroed and slows
// oneDNN's kernels, so padded features, and everything else on 16-bit
// storage, are staged.
bool native_bf16_conv_fwd(const KernelArgs& a) {
  using detail::compact_operands;
  return bf16_arrays_use_avx512() &&
         (compact_operands(a, 2, 1, {0, 1}, {0}) || compact_operands(a, 3, 1, {0, 1, 2}, {0}) ||
          compact_operands(a, 3, 1, {0, 1}, {0}));
}

// in [x, w, dy] out [dw, (db), dx], or for the first layer in [x, dy] out
// [dw, (db)]; an absent dx passes.
bool native_bf16_conv_bwd(const KernelArgs& a, bool first) {
  using detail::compact_operands;
  if (!bf16_arrays_use_avx512()) return false;
  if (first)
    return compact_operands(a, 2, 1, {0, 1}, {0}) || compact_operands(a, 2, 2, {0, 1}, {0, 1});
  return compact_operands(a, 3, 2, {0, 1, 2}, {0, 1}) ||
         compact_operands(a, 3, 3, {0, 1, 2}, {0, 1, 2});
}

}  // namespace

// ---------------------------------------------------------------------------

int conv_channel_block() {
  static const int block = [] {
    try {
      const memory::desc any(dims({32, 32, 14, 14}), DT::f32, Tag::any);
      const memory::desc w(dims({32, 32, 3, 3}), DT::f32, Tag::any);
      const dnnl::convolution_forward::primitive_desc pd(
          {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any, w, any,
           dims({1, 1}), dims({1, 1}), dims({1, 1})},
          cpu_engine());
      const auto& b = pd.src_desc().data.format_desc.blocking;
      return b.inner_nblks == 1 && b.inner_idxs[0] == 1 ? static_cast<int>(b.inner_blks[0]) : 0;
    } catch (const dnnl::error&) {
      return 0;
    }
  }();
  return block;
}

void conv_fwd(const KernelArgs& a) {
  const bool bf16 = native_bf16_conv_fwd(a);
  if (!bf16 && detail::run_16bit_staged(a, conv_fwd)) return;
  constexpr const char* k = "conv_fwd";
  check_counts(k, a, 2, 3, 1, 1);
  if (!bf16) {
    for (const TensorArg& t : a.in) check_f32(k, a, t, "an input");
    check_f32(k, a, a.out[0], "y");
  }
  const int x_block = block_of(a.in[0]), y_block = block_of(a.out[0]);
  const ConvGeom g =
      conv_geom(k, a, a.in[0].shape(), a.in[1].shape(), a.out[0].shape(), x_block || y_block);
  const bool bias = a.in.size() == 3;
  if (bias && a.in[2].shape().elements() != g.co)
    fail(k, a, "bias should have out_channels values");
  const ConvTypes t{bf16, bias && a.in[2].desc->dtype == DType::BF16, false, x_block, y_block};
  if (bf16 && is_pointwise(g)) {
    run_mat(k, a, mat_key(g, MatKind::FWD, bias ? (t.bias_bf16 ? 2 : 1) : 0), a.in[0].data,
            a.in[1].data, bias ? a.in[2].data : nullptr, a.out[0].data);
    return;
  }
  run_conv_fwd(conv_prim(k, a, g, bias ? ConvKind::FWD_BIAS : ConvKind::FWD, t), a.in[0].data,
               a.in[1].data, bias ? a.in[2].data : nullptr, a.out[0].data);
}

void conv_bwd(const KernelArgs& a) {
  const bool bf16 = native_bf16_conv_bwd(a, false);
  if (!bf16 && detail::run_16bit_staged(a, conv_bwd)) return;
  constexpr const char* k = "conv_bwd";
  const BwdOperands o = bwd_operands(k, a, bf16 ? DType::BF16 : DType::FP32);
  const TensorArg& x = o.x;
  const TensorArg& w = o.w;
  const TensorArg& dy = o.dy;
  const bool bias = o.bias;
  const size_t dx_index = o.dx_index;
  const bool has_dx = o.has_dx;
  const int x_block = block_of(x), y_block = block_of(dy);
  if (has_dx && block_of(a.out[dx_index]) != x_block)
    fail(k, a, "dx should lie as x does (channel blocks of " + std::to_string(x_block) + ")");
  const ConvGeom g = conv_geom(k, a, x.shape(), w.shape(), dy.shape(), x_block || y_block);
  if (bias && a.out[1].shape().elements() != g.co) fail(k, a, "db should have out_channels values");
  const ConvTypes t{bf16, false, false, x_block, y_block};

  // dW before dX: dX may overwrite X in place (ENGINE.md §4).
  conv_weight_grads(k, a, g, t, x.data, dy.data, a.out[0].data, bias ? a.out[1].data : nullptr);
  if (has_dx && a.runs(BwdPart::DX)) {
    void* dx = a.out[dx_index].data;
    if (bf16 && is_pointwise(g)) {
      const MatKind kind = a.accumulate(dx_index) ? MatKind::BWD_DATA_ADD : MatKind::BWD_DATA;
      run_mat(k, a, mat_key(g, kind), dy.data, w.data, nullptr, dx);
    } else if (a.accumulate(dx_index)) {
      // oneDNN's backward-data convolution has no sum post-op: the new
      // gradient comes out in FP32 and is added (for bfloat16, the sum is
      // rounded once).
      const int64_t n = x.shape().elements();
      float* tmp = static_cast<float*>(scratch(SCRATCH_DX, static_cast<size_t>(n) * 4));
      run_conv_bwd_data(
          conv_prim(k, a, g, ConvKind::BWD_DATA, {bf16, false, bf16, x_block, y_block}), w.data,
          dy.data, tmp);
      // Split across the team: on a residual block's input this pass costs
      // a third of the convolution itself when it runs on one core.
      if (bf16) {
        auto* d = static_cast<uint16_t*>(dx);
        detail::parallel_floats(n, [d, tmp](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i)
            d[i] = float_to_bf16_bits(bf16_bits_to_float(d[i]) + tmp[i]);
        });
      } else {
        auto* d = static_cast<float*>(dx);
        detail::parallel_floats(n, [d, tmp](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) d[i] += tmp[i];
        });
      }
    } else {
      run_conv_bwd_data(conv_prim(k, a, g, ConvKind::BWD_DATA, t), w.data, dy.data, dx);
    }
  }
}

void conv_bwd_first(const KernelArgs& a) {
  const bool bf16 = native_bf16_conv_bwd(a, true);
  if (!bf16 && detail::run_16bit_staged(a, conv_bwd_first)) return;
  constexpr const char* k = "conv_bwd_first";
  check_counts(k, a, 2, 2, 1, 2);
  if (!bf16) {
    for (const TensorArg& t : a.in) check_f32(k, a, t, "an input");
    for (const TensorArg& t : a.out) check_f32(k, a, t, "an output");
  }
  const bool bias = a.out.size() == 2;
  const int x_block = block_of(a.in[0]), y_block = block_of(a.in[1]);
  const ConvGeom g =
      conv_geom(k, a, a.in[0].shape(), a.out[0].shape(), a.in[1].shape(), x_block || y_block);
  if (bias && a.out[1].shape().elements() != g.co) fail(k, a, "db should have out_channels values");
  conv_weight_grads(k, a, g, {bf16, false, false, x_block, y_block}, a.in[0].data, a.in[1].data,
                    a.out[0].data, bias ? a.out[1].data : nullptr);
}

void linear_fwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, linear_fwd)) return;
  constexpr const char* k = "linear_fwd";
  check_counts(k, a, 2, 3, 1, 1);
  for (const TensorArg& t : a.in) check_f32(k, a, t, "an input");
  check_f32(k, a, a.out[0], "y");
  const LinearGeom g = linear_geom(k, a, a.in[0].shape(), a.in[1].shape(), a.out[0].shape());
  float* y = a.out[0].f32();
  float beta = 0.0f;
  if (a.in.size() == 3) {
    if (a.in[2].shape().elements() != g.o) fail(k, a, "bias should have out_features values");
    // Seeding y with the bias lets the gemm add it on the way (beta = 1).
    const float* b = a.in[2].f32();
    for (int64_t r = 0; r < g.n; ++r) std::memcpy(y + r * g.o, b, static_cast<size_t>(g.o) * 4);
    beta = 1.0f;
  }
  sgemm('N', 'T', g.n, g.o, g.k, a.in[0].f32(), g.k, a.in[1].f32(), g.k, beta, y, g.o);
}

void linear_bwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, linear_bwd)) return;
  constexpr const char* k = "linear_bwd";
  const BwdOperands o = bwd_operands(k, a);
  const TensorArg& x = o.x;
  const TensorArg& w = o.w;
  const TensorArg& dy = o.dy;
  const bool bias = o.bias;
  const size_t dx_index = o.dx_index;
  const bool has_dx = o.has_dx;
  const LinearGeom g = linear_geom(k, a, x.shape(), w.shape(), dy.shape());
  if (bias && a.out[1].shape().elements() != g.o) fail(k, a, "db should have out_features values");

  linear_weight_grads(a, g, x.f32(), dy.f32(), a.out[0].f32(), bias ? a.out[1].f32() : nullptr);
  // dx[N,K] = dy[N,O] w[O,K]
  if (has_dx && a.runs(BwdPart::DX))
    sgemm('N', 'N', g.n, g.k, g.o, dy.f32(), g.o, w.f32(), g.k,
          a.accumulate(dx_index) ? 1.0f : 0.0f, a.out[dx_index].f32(), g.k);
}

void linear_bwd_first(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, linear_bwd_first)) return;
  constexpr const char* k = "linear_bwd_first";
  check_counts(k, a, 2, 2, 1, 2);
  for (const TensorArg& t : a.in) check_f32(k, a, t, "an input");
  for (const TensorArg& t : a.out) check_f32(k, a, t, "an output");
  const bool bias = a.out.size() == 2;
  const LinearGeom g = linear_geom(k, a, a.in[0].shape(), a.out[0].shape(), a.in[1].shape());
  if (bias && a.out[1].shape().elements() != g.o) fail(k, a, "db should have out_features values");
  linear_weight_grads(a, g, a.in[0].f32(), a.in[1].f32(), a.out[0].f32(),
                      bias ? a.out[1].f32() : nullptr);
}

// ---------------------------------------------------------------------------

namespace dense_info {

ConvImpls conv_impls(const KernelArgs& a) {
  constexpr const char* k = "conv_impls";
  check_counts(k, a, 2, 3, 1, 1);
  const int x_block = block_of(a.in[0]), y_block = block_of(a.out[0]);
  const ConvGeom g =
      conv_geom(k, a, a.in[0].shape(), a.in[1].shape(), a.out[0].shape(), x_block || y_block);
  const bool bias = a.in.size() == 3;
  const ConvTypes t{false, false, false, x_block, y_block};
  return {conv_prim(k, a, g, bias ? ConvKind::FWD_BIAS : ConvKind::FWD, t).impl,
          conv_prim(k, a, g, ConvKind::BWD_DATA, t).impl,
          conv_prim(k, a, g,
                    kFuseBiasGrad && bias ? ConvKind::BWD_WEIGHTS_BIAS : ConvKind::BWD_WEIGHTS, t)
              .impl};
}

bool is_reference_impl(const std::string& impl) {
  return impl.rfind("ref", 0) == 0;
}

size_t cached_conv_primitives() {
  return conv_cache().size();
}

}  // namespace dense_info

}  // namespace tr::cpu
