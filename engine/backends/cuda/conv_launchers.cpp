// SPDX-License-Identifier: GPL-3.0-or-later
// Convolution launchers through cuDNN's convolution API (see conv_launchers.h).
//
// One ConvPlan per (device, geometry, dtype, math mode, direction, choice)
// holds the descriptors and the chosen algorithm for the process: the
// runtime prepares every launch before capturing it (prepare_launch, which
// sizes the stream workspace), which is where a plan is made, so a captured
// graph never depends on a choice made later.
//
// The choice is measured, as PyTorch's cudnn.benchmark does: cuDNN's
// Find*AlgorithmEx times every candidate on the launch's own inputs in the
// arena (a scratch output and workspace, freed at once), on the launch's
// stream before it captures. Only a plan first needed inside a capture (none
// is, as every launch is prepared) would fall back to cuDNN's heuristic
// ranking. ConvAlgorithms::DETERMINISTIC keeps to deterministic algorithms,
// so a seed's run repeats bit for bit; the default takes the fastest.
#include "backends/cuda/conv_launchers.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/linear_kernels.h"
#include "backends/cuda/linear_launchers.h"
#include "backends/cuda/operand_checks.h"
#include "backends/cuda/stream_handles.h"
#include "runtime/conv_geometry.h"

namespace tr::cuda::conv {

namespace {

std::atomic<ConvAlgorithms> g_conv_algorithms{ConvAlgorithms::FASTEST};

// A generous cap: the stream workspace is shared by every kernel on the
// stream and sized to the largest need, so one greedy algorithm sets it.
constexpr uint64_t kWorkspaceCap = uint64_t{512} << 20;

// ---------------------------------------------------------------------------
// Geometry: x [N,H,W,Ci], w [Co,kh,kw,Ci], y [N,Ho,Wo,Co], as the CPU twin.

using Geom = ConvGeometry;

Geom geom(const char* op, const KernelArgs& a, const Shape& x, const Shape& w, const Shape& y) {
  if (!a.layer_params)
    fail_operand(op, a, "no layer parameters to read the stride and padding from");
  Geom g{};
  std::string error;
  if (!conv_geometry(*a.layer_params, x, w, y, g, error)) fail_operand(op, a, error);
  return g;
}

// ---------------------------------------------------------------------------
// Plans: descriptors plus the chosen algorithm, one per direction.

enum class Direction : int64_t { FWD, BWD_DATA, BWD_FILTER };

const char* direction_name(Direction d) {
  switch (d) {
    case Direction::FWD:
      return "forward";
    case Direction::BWD_DATA:
      return "backward data";
    case Direction::BWD_FILTER:
      return "backward filter";
  }
  return "?";
}

// Channel strides of x and y: an FP16 feature may pad C (DTensor::padded_c),
// which cuDNN reads as an NHWC tensor with a wider pixel stride.
struct Layout {
  Geom g;
  cudnnDataType_t dtype;
  int64_t x_cstride, y_cstride;  // elements between pixels
  bool strict;                   // FP32 without TF32 (Fp32Gemm::STRICT)
  int device;
  Direction dir;
  ConvAlgorithms algorithms;
  // Not 0: x's real channel count, padded to g.ci = x_cstride (see pack_of).
  int64_t packed_ci;
};

// What a measured search runs on: the launch's two inputs in the arena (x
// and w forward, w and dy for dx, x and dy for dw) and its output's size (a
// scratch buffer takes the output). No inputs: the heuristic chooses.
struct SearchOperands {
  const void* in0 = nullptr;
  const void* in1 = nullptr;
  uint64_t out_bytes = 0;
  // Not 0: in1 is a filter the plan sees padded (packed_ci); the search
  // reads a zeroed scratch filter of these bytes instead.
  uint64_t in1_scratch_bytes = 0;
};

using PlanKey = std::array<int64_t, 22>;

PlanKey key_of(const Layout& l) {
  const Geom& g = l.g;
  return {g.n,
          g.h,
          g.w,
          g.ci,
          g.co,
          g.kh,
          g.kw,
          g.sh,
          g.sw,
          g.ph,
          g.pw,
          g.ho,
          g.wo,
          g.groups,
          l.dtype,
          l.x_cstride,
          l.y_cstride,
          l.strict,
          l.device,
          static_cast<int64_t>(l.dir),
          static_cast<int64_t>(l.algorithms),
          l.packed_ci};
}

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const noexcept {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

int as_int(int64_t v, const char* what) {
  if (v > INT_MAX || v < 0)
    throw std::invalid_argument(std::string("CUDA convolution: ") + what +
                                " exceeds cuDNN's int range");
  return static_cast<int>(v);
}

class ConvPlan {
 public:
  explicit ConvPlan(const Layout& l) : dir_(l.dir) {
    const int dev = l.device;
    check_cudnn(cudnnCreateTensorDescriptor(&x_), "cudnnCreateTensorDescriptor", dev);
    check_cudnn(cudnnCreateTensorDescriptor(&y_), "cudnnCreateTensorDescriptor", dev);
    check_cudnn(cudnnCreateTensorDescriptor(&bias_), "cudnnCreateTensorDescriptor", dev);
    check_cudnn(cudnnCreateFilterDescriptor(&w_), "cudnnCreateFilterDescriptor", dev);
    check_cudnn(cudnnCreateConvolutionDescriptor(&conv_), "cudnnCreateConvolutionDescriptor", dev);
    const Geom& g = l.g;
    set_nhwc(x_, l.dtype, g.n, g.ci, g.h, g.w, l.x_cstride, dev);
    set_nhwc(y_, l.dtype, g.n, g.co, g.ho, g.wo, l.y_cstride, dev);
    set_nhwc(bias_, l.dtype, 1, g.co, 1, 1, g.co, dev);
    // NHWC filters are [K, R, S, C/groups]: our OHWI weights as they lie.
    check_cudnn(cudnnSetFilter4dDescriptor(w_, l.dtype, CUDNN_TENSOR_NHWC, as_int(g.co, "Co"),
                                           as_int(g.ci / g.groups, "Ci/groups"), as_int(g.kh, "kh"),
                                           as_int(g.kw, "kw")),
                "cudnnSetFilter4dDescriptor", dev);
    // FP32 accumulation for FP16 data too (mixed precision, not true half).
    check_cudnn(cudnnSetConvolution2dDescriptor(conv_, as_int(g.ph, "pad"), as_int(g.pw, "pad"),
                                                as_int(g.sh, "stride"), as_int(g.sw, "stride"), 1,
                                                1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "cudnnSetConvolution2dDescriptor", dev);
    check_cudnn(cudnnSetConvolutionGroupCount(conv_, as_int(g.groups, "groups")),
                "cudnnSetConvolutionGroupCount", dev);
    // The math the candidates are ranked under: FP32 at DEFAULT (TF32 tensor
    // cores where the GPU has them, as PyTorch; never converted to FP16),
    // strict FP32 at FMA, FP16 and BF16 at tensor-op math.
    math_ = l.strict                      ? CUDNN_FMA_MATH
            : l.dtype == CUDNN_DATA_FLOAT ? CUDNN_DEFAULT_MATH
                                          : CUDNN_TENSOR_OP_MATH;
    check_cudnn(cudnnSetConvolutionMathType(conv_, math_), "cudnnSetConvolutionMathType", dev);
  }
  ~ConvPlan() {
    (void)cudnnDestroyTensorDescriptor(x_);
    (void)cudnnDestroyTensorDescriptor(y_);
    (void)cudnnDestroyTensorDescriptor(bias_);
    (void)cudnnDestroyFilterDescriptor(w_);
    (void)cudnnDestroyConvolutionDescriptor(conv_);
  }
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;

  // Chooses this direction's algorithm (see the top): measured on
  // `operands` when given and `stream` is not capturing, else by cuDNN's
  // heuristic ranking. Then the workspace it needs with the math type set.
  void choose(cudnnHandle_t h, const Layout& l, const SearchOperands& given, cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    bool measure = given.in0 && given.in1 &&
                   cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
                   status == cudaStreamCaptureStatusNone;
    SearchOperands operands = given;
    void* scratch_in1 = nullptr;
    if (measure && given.in1_scratch_bytes) {
      measure = cudaMalloc(&scratch_in1, given.in1_scratch_bytes) == cudaSuccess &&
                cudaMemsetAsync(scratch_in1, 0, given.in1_scratch_bytes, stream) == cudaSuccess;
      operands.in1 = scratch_in1;
    }
    switch (dir_) {
      case Direction::FWD:
        choose_from<cudnnConvolutionFwdAlgoPerf_t>(
            h, l, measure, operands, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
            [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* r) {
              return cudnnGetConvolutionForwardAlgorithm_v7(h, x_, w_, conv_, y_, n, got, r);
            },
            [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* r, void* out, void* ws,
                size_t ws_bytes) {
              return cudnnFindConvolutionForwardAlgorithmEx(
                  h, x_, operands.in0, w_, operands.in1, conv_, y_, out, n, got, r, ws, ws_bytes);
            },
            [&](size_t* bytes) {
              return cudnnGetConvolutionForwardWorkspaceSize(
                  h, x_, w_, conv_, y_, static_cast<cudnnConvolutionFwdAlgo_t>(algo_), bytes);
            });
        break;
      case Direction::BWD_DATA:
        choose_from<cudnnConvolutionBwdDataAlgoPerf_t>(
            h, l, measure, operands, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
            [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* r) {
              return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_, y_, conv_, x_, n, got, r);
            },
            [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* r, void* out, void* ws,
                size_t ws_bytes) {
              return cudnnFindConvolutionBackwardDataAlgorithmEx(
                  h, w_, operands.in0, y_, operands.in1, conv_, x_, out, n, got, r, ws, ws_bytes);
            },
            [&](size_t* bytes) {
              return cudnnGetConvolutionBackwardDataWorkspaceSize(
                  h, w_, y_, conv_, x_, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo_), bytes);
            });
        break;
      case Direction::BWD_FILTER:
        choose_from<cudnnConvolutionBwdFilterAlgoPerf_t>(
            h, l, measure, operands, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
            [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* r) {
              return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_, y_, conv_, w_, n, got, r);
            },
            [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* r, void* out, void* ws,
                size_t ws_bytes) {
              return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                  h, x_, operands.in0, y_, operands.in1, conv_, w_, out, n, got, r, ws, ws_bytes);
            },
            [&](size_t* bytes) {
              return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                  h, x_, y_, conv_, w_, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo_), bytes);
            });
        break;
    }
    (void)cudaGetLastError();
    if (scratch_in1) (void)cudaFree(scratch_in1);
  }

  bool measured() const { return measured_; }

  uint64_t workspace() const { return workspace_; }

  void forward(cudnnHandle_t h, const void* x, const void* w, void* y, float beta,
               const StreamWorkspace& ws) const {
    const float alpha = 1.0f;
    check_cudnn(cudnnConvolutionForward(h, &alpha, x_, x, w_, w, conv_,
                                        static_cast<cudnnConvolutionFwdAlgo_t>(algo_), ws.data,
                                        workspace_, &beta, y_, y),
                "cudnnConvolutionForward", current_device());
  }
  void add_bias(cudnnHandle_t h, const void* b, void* y) const {
    const float one = 1.0f;
    check_cudnn(cudnnAddTensor(h, &one, bias_, b, &one, y_, y), "cudnnAddTensor (bias)",
                current_device());
  }
  void backward_data(cudnnHandle_t h, const void* w, const void* dy, void* dx, float beta,
                     const StreamWorkspace& ws) const {
    const float alpha = 1.0f;
    check_cudnn(cudnnConvolutionBackwardData(h, &alpha, w_, w, y_, dy, conv_,
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(algo_),
                                             ws.data, workspace_, &beta, x_, dx),
                "cudnnConvolutionBackwardData", current_device());
  }
  void backward_filter(cudnnHandle_t h, const void* x, const void* dy, void* dw,
                       const StreamWorkspace& ws) const {
    const float alpha = 1.0f, beta = 0.0f;
    check_cudnn(cudnnConvolutionBackwardFilter(h, &alpha, x_, x, y_, dy, conv_,
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo_),
                                               ws.data, workspace_, &beta, w_, dw),
                "cudnnConvolutionBackwardFilter", current_device());
  }

 private:
  static void set_nhwc(cudnnTensorDescriptor_t d, cudnnDataType_t t, int64_t n, int64_t c,
                       int64_t h, int64_t w, int64_t pixel_stride, int dev) {
    if (pixel_stride == c) {
      check_cudnn(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NHWC, t, as_int(n, "N"),
                                             as_int(c, "C"), as_int(h, "H"), as_int(w, "W")),
                  "cudnnSetTensor4dDescriptor", dev);
      return;
    }
    check_cudnn(cudnnSetTensor4dDescriptorEx(
                    d, t, as_int(n, "N"), as_int(c, "C"), as_int(h, "H"), as_int(w, "W"),
                    as_int(h * w * pixel_stride, "an image's size"), 1,
                    as_int(w * pixel_stride, "a row's size"), as_int(pixel_stride, "C")),
                "cudnnSetTensor4dDescriptorEx", dev);
  }

  // The heuristic's ranking, then (when measuring) cuDNN's timings of
  // every candidate on the launch's own inputs, with a scratch output and a
  // scratch workspace as large as the largest candidate within the cap, both
  // freed at once. Nothing here runs inside a capture (the caller checked).
  template <typename Perf, typename Heuristic, typename Find, typename WorkspaceSize>
  void choose_from(cudnnHandle_t, const Layout& l, bool measure, const SearchOperands& operands,
                   int count, Heuristic heuristic, Find find, WorkspaceSize workspace_size) {
    const int dev = l.device;
    std::vector<Perf> ranked(static_cast<size_t>(count));
    int got = 0;
    check_cudnn(heuristic(count, &got, ranked.data()), "the cuDNN heuristic query", dev);
    ranked.resize(static_cast<size_t>(got));
    if (measure) {
      uint64_t ws_bytes = 0;
      for (const Perf& p : ranked)
        if (p.status == CUDNN_STATUS_SUCCESS && p.memory <= kWorkspaceCap)
          ws_bytes = std::max<uint64_t>(ws_bytes, p.memory);
      void* out = nullptr;
      void* ws = nullptr;
      // Out of memory for the search is no error: the heuristic still chooses.
      if (cudaMalloc(&out, std::max<uint64_t>(operands.out_bytes, 1)) == cudaSuccess &&
          (ws_bytes == 0 || cudaMalloc(&ws, ws_bytes) == cudaSuccess)) {
        std::vector<Perf> timed(static_cast<size_t>(count));
        int found = 0;
        const cudnnStatus_t st = find(count, &found, timed.data(), out, ws, ws_bytes);
        if (st == CUDNN_STATUS_SUCCESS && found > 0) {
          timed.resize(static_cast<size_t>(found));
          ranked = std::move(timed);  // fastest first
          measured_ = true;
        }
      }
      (void)cudaGetLastError();
      if (ws) (void)cudaFree(ws);
      if (out) (void)cudaFree(out);
    }
    pick(ranked, l, dev);
    // The workspace of the algorithm as it runs: with the math type now set.
    size_t bytes = 0;
    if (workspace_size(&bytes) == CUDNN_STATUS_SUCCESS) workspace_ = bytes;
  }

  // FP32 never runs as FP16 (ALLOW_CONVERSION). Strict FP32 takes FMA
  // kernels first, then those ranked at DEFAULT math (run with FMA math).
  // ConvAlgorithms::DETERMINISTIC takes deterministic ones only; otherwise
  // a measured ranking is taken as it is (fastest first), and a heuristic one
  // prefers a deterministic algorithm.
  template <typename Perf>
  void pick(const std::vector<Perf>& ranked, const Layout& l, int dev) {
    const bool fp32 = l.dtype == CUDNN_DATA_FLOAT;
    const bool deterministic_only = l.algorithms == ConvAlgorithms::DETERMINISTIC;
    const bool prefer_deterministic = deterministic_only || !measured_;
    auto fits = [&](const Perf& p, bool other_math, bool any_determinism) {
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kWorkspaceCap) return false;
      if (fp32 && p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;
      if (l.strict && p.mathType != CUDNN_FMA_MATH &&
          !(other_math && p.mathType == CUDNN_DEFAULT_MATH))
        return false;
      return any_determinism || p.determinism == CUDNN_DETERMINISTIC;
    };
    const Perf* chosen = nullptr;
    for (const bool other_math : {false, true})
      for (const bool any_determinism : {!prefer_deterministic, !deterministic_only})
        for (const Perf& p : ranked)
          if (!chosen && fits(p, other_math, any_determinism)) chosen = &p;
    if (!chosen)
      throw std::runtime_error(std::string("cuDNN offers no ") + direction_name(dir_) +
                               (deterministic_only ? " deterministic" : "") +
                               " convolution algorithm for this layer within " +
                               std::to_string(kWorkspaceCap >> 20) + " MiB of workspace " +
                               device_text(dev));
    algo_ = static_cast<int>(chosen->algo);
    workspace_ = chosen->memory;
    // cuDNN asks for the ranked result's math type on the descriptor it runs
    // with; strict FP32 runs a DEFAULT-math candidate as FMA.
    math_ = l.strict ? CUDNN_FMA_MATH : chosen->mathType;
    check_cudnn(cudnnSetConvolutionMathType(conv_, math_), "cudnnSetConvolutionMathType", dev);
  }

  Direction dir_;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnMathType_t math_ = CUDNN_DEFAULT_MATH;
  int algo_ = 0;
  uint64_t workspace_ = 0;
  bool measured_ = false;  // chosen by cuDNN's timings, not its heuristic
};

// Plans live for the process: a geometry's choice is fixed once made, and
// the descriptors are only read by launches (from any rank thread).
struct PlanCache {
  std::mutex mutex;
  std::unordered_map<PlanKey, std::unique_ptr<ConvPlan>, PlanKeyHash> plans;
};

// Never destroyed: a static's destructor would destroy cuDNN descriptors at
// exit, possibly after cuDNN's own statics are gone (a passing program
// exiting with a crash).
PlanCache& plan_cache() {
  static PlanCache* const c = new PlanCache;
  return *c;
}

// The plan of `l`, made (and its algorithm chosen, measured on `operands`
// where given) at first sight.
const ConvPlan& plan_for(const Layout& l, cudaStream_t stream,
                         const SearchOperands& operands = {}) {
  PlanCache& c = plan_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  std::unique_ptr<ConvPlan>& slot = c.plans[key_of(l)];
  if (!slot) {
    auto made = std::make_unique<ConvPlan>(l);
    made->choose(cudnn_handle(stream), l, operands, stream);
    slot = std::move(made);
  }
  return *slot;
}

// x, w and y (or dx, dw, dy) share one dtype: cuDNN's mixed precision is
// FP16 data with FP32 accumulation, not FP16 mixed with FP32 data.
Layout layout_of(const char* op, const KernelArgs& a, const Geom& g, const TensorArg& x,
                 const TensorArg& w, const TensorArg& y, Direction dir) {
  const Elem e = common_elem(op, a, {{&x, "x"}, {&w, "w"}, {&y, "y"}});
  require_compact(op, a, {&w, "w"});
  Layout l{g,
           e == Elem::F16    ? CUDNN_DATA_HALF
           : e == Elem::BF16 ? CUDNN_DATA_BFLOAT16
                             : CUDNN_DATA_FLOAT,
           x.desc->padded_c(),
           y.desc->padded_c(),
           e == Elem::F32 && fp32_gemm() == Fp32Gemm::STRICT,
           current_device(),
           dir,
           conv_algorithms(),
           0};
  // Forward and dW of a layer reading an input buffer see its zero padding
  // lanes as channels (see "Packed channels"); dX would write into them.
  const bool input_buffer =
      x.desc->region == Region::I_A_DATA || x.desc->region == Region::I_B_DATA;
  if (dir != Direction::BWD_DATA && input_buffer && l.x_cstride > g.ci && g.groups == 1) {
    l.packed_ci = g.ci;
    l.g.ci = l.x_cstride;
  }
  return l;
}

// ---------------------------------------------------------------------------
// Packed channels. The first convolution's input holds C = 3 in pixels of 4
// (16-bit input buffers' rows are padded to 4, and the transfer writes the
// padding lanes as zero: the pipeline's staging rows are laid out so, see
// BatchSpec::padded_channels); described as a strided
// NHWC tensor, cuDNN has no tensor-core NHWC kernel for it. Forward and the
// weight gradient instead see x as packed C = 4 and the filter as
// [Co, kh, kw, 4] with a zero fourth input channel: the same sums, as the
// padding lanes are zero (the layout MLPerf's ResNet-50 uses). The padded
// filter, or its gradient, lies at the start of the stream workspace; the
// weights are copied in, and dW sliced back out, by 2D copies.

uint64_t elem_bytes(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT ? 4 : 2;
}

// Bytes of the padded filter at the workspace's start (0 when not packed).
uint64_t packed_filter_bytes(const Layout& l) {
  if (!l.packed_ci) return 0;
  const uint64_t bytes =
      static_cast<uint64_t>(l.g.co * l.g.kh * l.g.kw * l.g.ci) * elem_bytes(l.dtype);
  return (bytes + 255) / 256 * 256;
}

// The workspace cuDNN gets: what follows the padded filter.
StreamWorkspace after_packed_filter(const StreamWorkspace& ws, const Layout& l) {
  const uint64_t skip = packed_filter_bytes(l);
  if (!skip) return ws;
  return {static_cast<uint8_t*>(ws.data) + skip, ws.bytes - skip};
}

// [Co, kh, kw, ci] weights into the zeroed [Co, kh, kw, c_pad] filter.
void pack_filter(const Layout& l, const void* w, void* packed, cudaStream_t stream) {
  const uint64_t es = elem_bytes(l.dtype);
  const auto rows = static_cast<size_t>(l.g.co * l.g.kh * l.g.kw);
  check_cuda(cudaMemsetAsync(packed, 0, packed_filter_bytes(l), stream), "packing a filter",
             l.device);
  check_cuda(cudaMemcpy2DAsync(
                 packed, static_cast<size_t>(l.g.ci) * es, w, static_cast<size_t>(l.packed_ci) * es,
                 static_cast<size_t>(l.packed_ci) * es, rows, cudaMemcpyDeviceToDevice, stream),
             "packing a filter", l.device);
}

// The padded filter's gradient back to [Co, kh, kw, ci].
void unpack_filter_grad(const Layout& l, const void* packed, void* dw, cudaStream_t stream) {
  const uint64_t es = elem_bytes(l.dtype);
  const auto rows = static_cast<size_t>(l.g.co * l.g.kh * l.g.kw);
  check_cuda(
      cudaMemcpy2DAsync(dw, static_cast<size_t>(l.packed_ci) * es, packed,
                        static_cast<size_t>(l.g.ci) * es, static_cast<size_t>(l.packed_ci) * es,
                        rows, cudaMemcpyDeviceToDevice, stream),
      "slicing a filter gradient", l.device);
}

// What a search runs on: the launch's inputs and its output's size; a packed
// layout's forward reads a padded filter (a zeroed scratch one), its dW
// writes one (a scratch output of that size).
SearchOperands search_operands(const Layout& l, const TensorArg& in0, const TensorArg& in1,
                               const TensorArg& out) {
  SearchOperands o{in0.data, in1.data, out.desc ? out.desc->device_bytes() : 0, 0};
  if (l.packed_ci && l.dir == Direction::FWD) o.in1_scratch_bytes = packed_filter_bytes(l);
  if (l.packed_ci && l.dir == Direction::BWD_FILTER) o.out_bytes = packed_filter_bytes(l);
  return o;
}

// The stream workspace a launch of `l` needs: its algorithm's, after the
// padded filter of a packed layout.
uint64_t workspace_need(const ConvPlan& p, const Layout& l) {
  return p.workspace() + packed_filter_bytes(l);
}

// Prepares `l`'s plan (measured on the launch's operands) and returns the
// workspace its launch needs.
uint64_t prepared_workspace(const Layout& l, cudaStream_t stream, const TensorArg& in0,
                            const TensorArg& in1, const TensorArg& out) {
  return workspace_need(plan_for(l, stream, search_operands(l, in0, in1, out)), l);
}

const ConvPlan& ready_plan(const char* op, const KernelArgs& a, const Layout& l,
                           cudaStream_t stream) {
  const ConvPlan& p = plan_for(l, stream);
  const uint64_t need = workspace_need(p, l);
  if (need > 0 && (!a.workspace || a.workspace->bytes < need))
    throw std::logic_error(std::string("CUDA ") + op + ": the stream workspace is smaller than " +
                           "the chosen algorithm's " + std::to_string(need) + " bytes");
  return p;
}

const StreamWorkspace& workspace_of(const KernelArgs& a) {
  static const StreamWorkspace none{};
  return a.workspace ? *a.workspace : none;
}

// The bias gradient: deterministic double-precision column sums over dy's
// rows of pixels, in slices side by side (a row per output pixel is far
// too many for one block per column tile), partials in the workspace.
void bias_grad(const char* op, const KernelArgs& a, const Geom& g, const TensorArg& dy,
               const TensorArg& db, cudaStream_t stream) {
  const Elem e = common_elem(op, a, {{&dy, "dy"}, {&db, "db"}});
  const int64_t rows = g.n * g.ho * g.wo;
  const StreamWorkspace& w = workspace_of(a);
  if (w.bytes < column_sum_workspace_bytes(rows, g.co))
    throw std::logic_error("convolution bias gradient: a workspace of " + std::to_string(w.bytes) +
                           " bytes, it needs " +
                           std::to_string(column_sum_workspace_bytes(rows, g.co)));
  check_cuda(launch_column_sums_sliced(e, dy.data, dy.desc->padded_c(), rows, g.co, db.data, w.data,
                                       stream),
             "convolution bias gradient", current_device());
}

// The weight (and bias) gradient shared by bwd and bwd_first.
void weight_grads(const char* op, const KernelArgs& a, const Geom& g, const TensorArg& x,
                  const TensorArg& dy, const TensorArg& dw, const TensorArg* db,
                  cudaStream_t stream) {
  const Layout l = layout_of(op, a, g, x, dw, dy, Direction::BWD_FILTER);
  if (db) require_compact(op, a, {db, "db"});
  if (a.runs(BwdPart::DW)) {
    const ConvPlan& p = ready_plan(op, a, l, stream);
    const StreamWorkspace& ws = workspace_of(a);
    // A packed filter's gradient goes to the workspace's start, then to dw.
    void* into = l.packed_ci ? ws.data : dw.data;
    p.backward_filter(cudnn_handle(stream), x.data, dy.data, into, after_packed_filter(ws, l));
    if (l.packed_ci) unpack_filter_grad(l, into, dw.data, stream);
  }
  if (db && a.runs(BwdPart::DB)) bias_grad(op, a, g, dy, *db, stream);
}

// cuDNN writes a padded NHWC tensor's values only; its padding lanes are
// written as zero, as every other kernel (and the CPU twin) leaves them.
void clear_padding(const char* op, const TensorArg& t, int64_t rows, cudaStream_t stream) {
  const Elem e = t.desc->dtype == DType::FP16   ? Elem::F16
                 : t.desc->dtype == DType::BF16 ? Elem::BF16
                                                : Elem::F32;
  check_cuda(zero_padding(t.data, e, rows, t.desc->shape.c, t.desc->padded_c(), stream), op,
             current_device());
}

bool is_conv(ComputeOp op) {
  return op == ComputeOp::CONV_FWD || op == ComputeOp::CONV_BWD || op == ComputeOp::CONV_BWD_FIRST;
}

}  // namespace

void set_conv_algorithms(ConvAlgorithms choice) noexcept {
  g_conv_algorithms.store(choice);
}

ConvAlgorithms conv_algorithms() noexcept {
  return g_conv_algorithms.load();
}

void fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "CONV_FWD";
  check_counts(op, a, 2, 3, 1, 1);
  for (const TensorArg& t : a.in) check_present(op, a, t, "an input");
  check_present(op, a, a.out[0], "y");
  const Geom g = geom(op, a, a.in[0].shape(), a.in[1].shape(), a.out[0].shape());
  const bool bias = a.in.size() == 3;
  if (bias && a.in[2].shape().elements() != g.co)
    fail_operand(op, a, "bias should have out_channels values");
  if (bias) {
    (void)common_elem(op, a, {{&a.in[2], "b"}, {&a.out[0], "y"}});
    require_compact(op, a, {&a.in[2], "b"});
  }
  const Layout l = layout_of(op, a, g, a.in[0], a.in[1], a.out[0], Direction::FWD);
  const ConvPlan& p = ready_plan(op, a, l, stream);
  const cudnnHandle_t h = cudnn_handle(stream);
  const StreamWorkspace& ws = workspace_of(a);
  const void* w = a.in[1].data;
  if (l.packed_ci) {  // the padded filter at the workspace's start
    pack_filter(l, w, ws.data, stream);
    w = ws.data;
  }
  p.forward(h, a.in[0].data, w, a.out[0].data, 0.0f, after_packed_filter(ws, l));
  if (bias) p.add_bias(h, a.in[2].data, a.out[0].data);
  clear_padding(op, a.out[0], g.n * g.ho * g.wo, stream);
}

void bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "CONV_BWD";
  check_counts(op, a, 3, 3, 2, 3);
  // out [dw, (db), dx]: dx is the last slot and absent after the input node.
  const size_t dx_index = a.out.size() - 1;
  const bool bias = a.out.size() == 3;
  const bool has_dx = has_out(a, dx_index);
  for (const TensorArg& t : a.in) check_present(op, a, t, "an input");
  for (size_t i = 0; i < dx_index; ++i) check_present(op, a, a.out[i], "an output");
  if (has_dx) check_present(op, a, a.out[dx_index], "dx");
  const TensorArg& x = a.in[0];
  const TensorArg& w = a.in[1];
  const TensorArg& dy = a.in[2];
  const Geom g = geom(op, a, x.shape(), w.shape(), dy.shape());
  if (a.out[0].shape() != w.shape()) fail_operand(op, a, "dw should have the weights' shape");
  if (has_dx && a.out[dx_index].shape() != x.shape())
    fail_operand(op, a, "dx should have the input's shape");
  if (bias && a.out[1].shape().elements() != g.co)
    fail_operand(op, a, "db should have out_channels values");

  // dW before dX on one stream: dX may overwrite X in place (ENGINE.md §4).
  weight_grads(op, a, g, x, dy, a.out[0], bias ? &a.out[1] : nullptr, stream);
  if (!has_dx || !a.runs(BwdPart::DX)) return;
  const TensorArg& dx = a.out[dx_index];
  const Layout l = layout_of(op, a, g, dx, w, dy, Direction::BWD_DATA);
  ready_plan(op, a, l, stream)
      .backward_data(cudnn_handle(stream), w.data, dy.data, dx.data,
                     a.accumulate(dx_index) ? 1.0f : 0.0f, workspace_of(a));
  // Accumulating keeps the padding lanes as they were (zero).
  if (!a.accumulate(dx_index)) clear_padding(op, dx, g.n * g.h * g.w, stream);
}

void bwd_first(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "CONV_BWD_FIRST";
  check_counts(op, a, 2, 2, 1, 2);
  for (const TensorArg& t : a.in) check_present(op, a, t, "an input");
  for (const TensorArg& t : a.out) check_present(op, a, t, "an output");
  const bool bias = a.out.size() == 2;
  const Geom g = geom(op, a, a.in[0].shape(), a.out[0].shape(), a.in[1].shape());
  if (bias && a.out[1].shape().elements() != g.co)
    fail_operand(op, a, "db should have out_channels values");
  weight_grads(op, a, g, a.in[0], a.in[1], a.out[0], bias ? &a.out[1] : nullptr, stream);
}

uint64_t workspace_bytes(const KernelArgs& a, cudaStream_t stream) {
  if (!a.node || a.node->kind != NodeKind::COMPUTE || !is_conv(a.node->op)) return 0;
  constexpr const char* op = "convolution";
  // Malformed operands are reported by the launch itself, with its checks.
  try {
    if (a.node->op == ComputeOp::CONV_FWD) {
      if (a.in.size() < 2 || a.out.empty()) return 0;
      for (const TensorArg* t : {&a.in[0], &a.in[1], &a.out[0]})
        if (!t->desc) return 0;
      const Geom g = geom(op, a, a.in[0].shape(), a.in[1].shape(), a.out[0].shape());
      return prepared_workspace(layout_of(op, a, g, a.in[0], a.in[1], a.out[0], Direction::FWD),
                                stream, a.in[0], a.in[1], a.out[0]);
    }
    const bool first = a.node->op == ComputeOp::CONV_BWD_FIRST;
    if (a.in.size() < (first ? 2u : 3u) || a.out.empty()) return 0;
    const TensorArg& x = a.in[0];
    const TensorArg& dy = first ? a.in[1] : a.in[2];
    const TensorArg& dw = a.out[0];
    for (const TensorArg* t : {&x, &dy, &dw})
      if (!t->desc) return 0;
    const Geom g = geom(op, a, x.shape(), dw.shape(), dy.shape());
    uint64_t need = 0;
    // The bias partials (the DB part, or the whole op): they and cuDNN's
    // calls take the workspace in turn, on one stream.
    const bool bias = a.out.size() == (first ? 2u : 3u);
    if (bias && a.runs(BwdPart::DB)) need = column_sum_workspace_bytes(g.n * g.ho * g.wo, g.co);
    if (a.part == static_cast<int>(BwdPart::DB)) return need;
    if (a.runs(BwdPart::DW))
      need =
          std::max(need, prepared_workspace(layout_of(op, a, g, x, dw, dy, Direction::BWD_FILTER),
                                            stream, x, dy, dw));
    const size_t dx_index = a.out.size() - 1;
    if (!first && a.runs(BwdPart::DX) && has_out(a, dx_index) && a.out[dx_index].desc)
      need = std::max(need, prepared_workspace(layout_of(op, a, g, a.out[dx_index], a.in[1], dy,
                                                         Direction::BWD_DATA),
                                               stream, a.in[1], dy, a.out[dx_index]));
    return need;
  } catch (const std::invalid_argument&) {
    return 0;
  }
}

}  // namespace tr::cuda::conv
