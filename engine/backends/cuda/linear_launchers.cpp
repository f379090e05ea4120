// SPDX-License-Identifier: GPL-3.0-or-later
// Linear-layer launchers (see linear_launchers.h). cuBLAS is column-major and
// our matrices are row-major, so every GEMM is written for the transposes:
// a row-major [r, c] matrix is a column-major [c, r] one with ld = c (or
// the padded row length of an FP16 feature).
#include "backends/cuda/linear_launchers.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <stdexcept>
#include <string>

#include "backends/cuda/activation_kernels.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/linear_kernels.h"
#include "backends/cuda/operand_checks.h"
#include "backends/cuda/stream_handles.h"

namespace tr::cuda {

namespace {

std::atomic<Fp32Gemm> g_fp32_gemm{Fp32Gemm::TF32};

constexpr uint64_t kStageAlignment = 256;

uint64_t aligned(uint64_t bytes) {
  return (bytes + kStageAlignment - 1) / kStageAlignment * kStageAlignment;
}

// y[n, o] = x[n, k] w[o, k]^T; x may be any NHWC tensor, read as [N, H*W*C].
struct Geom {
  int64_t n, k, o;
};

Geom geom(const char* op, const KernelArgs& a, const Shape& x, const Shape& w, const Shape& y) {
  const Geom g{x.n, x.per_sample(), w.n};
  if (!w.is_flat() || w.c != g.k)
    fail_operand(op, a, "weights " + w.str() + " should be [out,1,1," + std::to_string(g.k) + "]");
  if (!y.is_flat() || y.n != g.n || y.c != g.o)
    fail_operand(op, a,
                 "output " + y.str() + " should be [" + std::to_string(g.n) + ",1,1," +
                     std::to_string(g.o) + "]");
  for (int64_t d : {g.n, g.k, g.o})
    if (d > INT_MAX) fail_operand(op, a, "a dimension exceeds cuBLAS's int range");
  return g;
}

// The leading dimension of `t` read as a row-major [N, H*W*C] matrix, or 0
// when its rows are not evenly spaced: FP16 features pad the channels, so a
// sample of several pixels is not one run of values.
int64_t matrix_ld(const TensorArg& t) {
  const DTensor& d = *t.desc;
  if (d.is_compact()) return d.shape.per_sample();
  return d.shape.h * d.shape.w == 1 ? d.padded_c() : 0;
}

// Workspace ahead of cuBLAS's: a compact copy of x when the GEMMs read an x
// whose rows are not evenly spaced, and an FP32 result for such a dx, added
// into it afterwards.
struct Staging {
  uint64_t x = 0, dx = 0;
  uint64_t total() const { return x + dx; }
};

bool is_linear(ComputeOp op) {
  return op == ComputeOp::LINEAR_FWD || op == ComputeOp::LINEAR_BWD ||
         op == ComputeOp::LINEAR_BWD_FIRST;
}

Staging staging_of(const KernelArgs& a) {
  Staging st;
  if (!a.node || a.in.empty() || !a.in[0].desc) return st;
  const ComputeOp op = a.node->op;
  const TensorArg& x = a.in[0];
  const uint64_t values = static_cast<uint64_t>(x.shape().elements());
  const bool reads_x = op == ComputeOp::LINEAR_FWD || a.runs(BwdPart::DW);
  if (reads_x && matrix_ld(x) == 0) st.x = aligned(values * 2);
  if (op == ComputeOp::LINEAR_BWD && a.runs(BwdPart::DX) && !a.out.empty()) {
    const TensorArg& dx = a.out.back();
    if (dx.data && dx.desc && matrix_ld(dx) == 0) st.dx = aligned(values * sizeof(float));
  }
  return st;
}

void launched(cudaError_t err, const char* what) {
  check_cuda(err, what, current_device());
}

uint8_t* staging_base(const char* op, const KernelArgs& a, const Staging& st) {
  if (st.total() == 0) return nullptr;
  if (!a.workspace || !a.workspace->data || a.workspace->bytes < st.total())
    throw std::logic_error(std::string("CUDA backend: ") + op +
                           " launched without the workspace for its fp16 staging");
  return static_cast<uint8_t*>(a.workspace->data);
}

// The stream's handle, its workspace what the staging leaves; an empty one
// when the caller gave none (cuBLAS then picks algorithms that need none).
cublasHandle_t handle(const KernelArgs& a, const Staging& st, cudaStream_t stream) {
  StreamWorkspace rest{};
  if (a.workspace && a.workspace->bytes > st.total()) {
    rest.data = static_cast<uint8_t*>(a.workspace->data) + st.total();
    rest.bytes = a.workspace->bytes - st.total();
  }
  return cublas_handle(stream, rest);
}

cudaDataType_t cuda_type(Elem e) {
  return e == Elem::F16 ? CUDA_R_16F : e == Elem::BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

// Column-major C[m, n] = op(A) op(B) + beta C, A and B of storage `e`, C of
// `c_type`. FP16 operands accumulate in FP32 (their products are exact
// there); FP32 ones follow fp32_gemm().
void gemm(cublasHandle_t h, Elem e, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
          int64_t n, int64_t k, const void* A, int64_t lda, const void* B, int64_t ldb, float beta,
          void* C, cudaDataType_t c_type, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const float alpha = 1.0f;
  const cublasComputeType_t compute = e != Elem::F32 || fp32_gemm() == Fp32Gemm::STRICT
                                          ? CUBLAS_COMPUTE_32F
                                          : CUBLAS_COMPUTE_32F_FAST_TF32;
  // ld >= 1 even for an empty k, which cuBLAS would reject.
  auto ld = [](int64_t v) { return static_cast<int>(std::max<int64_t>(1, v)); };
  check_cublas(cublasGemmEx(h, ta, tb, static_cast<int>(m), static_cast<int>(n),
                            static_cast<int>(k), &alpha, A, cuda_type(e), ld(lda), B, cuda_type(e),
                            ld(ldb), &beta, C, c_type, ld(ldc), compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx", current_device());
}

// x as the GEMMs read it: itself, or its compact copy in the staging.
const void* matrix_x(const TensorArg& x, Elem e, uint8_t* stage, int64_t& ld, cudaStream_t stream,
                     const char* op) {
  ld = matrix_ld(x);
  if (ld != 0) return x.data;
  const uint64_t n = static_cast<uint64_t>(x.shape().elements());
  const int64_t k = x.shape().per_sample();
  const FeatureView compact{stage, k > 0 ? k : 1, k > 0 ? k : 1};
  launched(launch_sum(e, n, feature_view(x), nullptr, compact, false, stream), op);
  ld = k;
  return stage;
}

// The padding lanes a GEMM writing the values leaves alone, written as zero.
void zero_padding(void* m, Elem e, int64_t rows, int64_t cols, int64_t ld, cudaStream_t stream,
                  const char* op) {
  launched(cuda::zero_padding(m, e, rows, cols, ld, stream), op);
}

// dw and db as the CPU twin writes them: overwritten, whatever the
// accumulate mask says (a weight gradient belongs to one layer, so the
// compiler never asks to accumulate one).
void weight_grads(const KernelArgs& a, const Geom& g, Elem e, const Staging& st, uint8_t* stage,
                  const TensorArg& x, const TensorArg& dy, void* dw, void* db, cudaStream_t stream,
                  const char* op) {
  const int64_t ld_dy = matrix_ld(dy);
  // dw[o, k] = dy[n, o]^T x[n, k]; column-major dw^T[k, o] = x^T[k, n] dy[n, o].
  if (a.runs(BwdPart::DW)) {
    int64_t ld_x = 0;
    const void* xm = matrix_x(x, e, stage, ld_x, stream, op);
    gemm(handle(a, st, stream), e, CUBLAS_OP_N, CUBLAS_OP_T, g.k, g.o, g.n, xm, ld_x, dy.data,
         ld_dy, 0.0f, dw, cuda_type(e), g.k);
  }
  if (db && a.runs(BwdPart::DB))
    launched(launch_column_sums(e, dy.data, ld_dy, g.n, g.o, db, stream), "linear bias gradient");
}

// One storage for every operand (FP16 under AMP), weights and biases and
// their gradients compact; dy and y flat (their padded rows evenly spaced).
Elem check_operands(const char* op, const KernelArgs& a, std::initializer_list<Operand> all,
                    std::initializer_list<Operand> params) {
  for (const Operand& o : all)
    if (o.t->data && !o.t->desc) fail_operand(op, a, std::string(o.name) + " has no descriptor");
  const Elem e = common_elem(op, a, all);
  for (const Operand& p : params) require_compact(op, a, p);
  return e;
}

}  // namespace

void set_fp32_gemm(Fp32Gemm mode) noexcept {
  g_fp32_gemm.store(mode);
}

Fp32Gemm fp32_gemm() noexcept {
  return g_fp32_gemm.load();
}

namespace linear {

void fwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "LINEAR_FWD";
  check_counts(op, a, 2, 3, 1, 1);
  const bool bias = a.in.size() == 3;
  const TensorArg none{};
  for (const TensorArg& t : a.in) check_present(op, a, t, "an input");
  check_present(op, a, a.out[0], "y");
  const Elem e = check_operands(
      op, a, {{&a.in[0], "x"}, {&a.in[1], "w"}, {bias ? &a.in[2] : &none, "b"}, {&a.out[0], "y"}},
      {{&a.in[1], "w"}, {bias ? &a.in[2] : &none, "b"}});
  const Geom g = geom(op, a, a.in[0].shape(), a.in[1].shape(), a.out[0].shape());
  if (bias && a.in[2].shape().elements() != g.o)
    fail_operand(op, a, "bias should have out_features values");
  const Staging st = staging_of(a);
  uint8_t* stage = staging_base(op, a, st);
  const cublasHandle_t h = handle(a, st, stream);
  void* y = a.out[0].data;
  const int64_t ld_y = matrix_ld(a.out[0]);
  // Seeded with the bias, which the GEMM adds to (beta = 1), as on the CPU;
  // the seed also zeroes padding lanes, which the GEMM leaves alone.
  if (bias || ld_y != g.o)
    launched(launch_bias_rows(e, y, ld_y, bias ? a.in[2].data : nullptr, g.n, g.o, stream),
             "linear bias");
  int64_t ld_x = 0;
  const void* x = matrix_x(a.in[0], e, stage, ld_x, stream, op);
  // Column-major y^T[o, n] = w[o, k] x^T[k, n].
  gemm(h, e, CUBLAS_OP_T, CUBLAS_OP_N, g.o, g.n, g.k, a.in[1].data, g.k, x, ld_x,
       bias ? 1.0f : 0.0f, y, cuda_type(e), ld_y);
}

void bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "LINEAR_BWD";
  check_counts(op, a, 3, 3, 2, 3);
  // out [dw, (db), dx]: dx is the last slot and absent after the input node.
  const size_t dx_index = a.out.size() - 1;
  const bool bias = a.out.size() == 3;
  const bool has_dx = has_out(a, dx_index);
  const TensorArg none{};
  for (const TensorArg& t : a.in) check_present(op, a, t, "an input");
  for (size_t i = 0; i < dx_index; ++i) check_present(op, a, a.out[i], "an output");
  const TensorArg& x = a.in[0];
  const TensorArg& w = a.in[1];
  const TensorArg& dy = a.in[2];
  const Elem e = check_operands(op, a,
                                {{&x, "x"},
                                 {&w, "w"},
                                 {&dy, "dy"},
                                 {&a.out[0], "dw"},
                                 {bias ? &a.out[1] : &none, "db"},
                                 {has_dx ? &a.out[dx_index] : &none, "dx"}},
                                {{&w, "w"}, {&a.out[0], "dw"}, {bias ? &a.out[1] : &none, "db"}});
  const Geom g = geom(op, a, x.shape(), w.shape(), dy.shape());
  if (a.out[0].shape() != w.shape()) fail_operand(op, a, "dw should have the weights' shape");
  if (has_dx && a.out[dx_index].shape() != x.shape())
    fail_operand(op, a, "dx should have the input's shape");
  if (bias && a.out[1].shape().elements() != g.o)
    fail_operand(op, a, "db should have out_features values");
  const Staging st = staging_of(a);
  uint8_t* stage = staging_base(op, a, st);

  // dW before dX on one stream: dX may overwrite X in place (ENGINE.md §4).
  weight_grads(a, g, e, st, stage, x, dy, a.out[0].data, bias ? a.out[1].data : nullptr, stream,
               op);
  if (!has_dx || !a.runs(BwdPart::DX)) return;
  const TensorArg& dx = a.out[dx_index];
  const bool accumulate = a.accumulate(dx_index);
  // dx[n, k] = dy[n, o] w[o, k]; column-major dx^T[k, n] = w^T[k, o] dy^T[o, n].
  const int64_t ld_dx = matrix_ld(dx);
  if (ld_dx != 0) {
    gemm(handle(a, st, stream), e, CUBLAS_OP_N, CUBLAS_OP_N, g.k, g.n, g.o, w.data, g.k, dy.data,
         matrix_ld(dy), accumulate ? 1.0f : 0.0f, dx.data, cuda_type(e), ld_dx);
    zero_padding(dx.data, e, g.n, g.k, ld_dx, stream, op);
    return;
  }
  // Padded rows that are not evenly spaced: the FP32 product in the
  // staging, then added into dx and rounded once.
  auto* product = reinterpret_cast<float*>(stage + st.x);
  gemm(handle(a, st, stream), e, CUBLAS_OP_N, CUBLAS_OP_N, g.k, g.n, g.o, w.data, g.k, dy.data,
       matrix_ld(dy), 0.0f, product, CUDA_R_32F, g.k);
  launched(launch_store_rows(product, static_cast<uint64_t>(g.n * g.k), e, feature_view(dx),
                             accumulate, stream),
           op);
}

void bwd_first(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "LINEAR_BWD_FIRST";
  check_counts(op, a, 2, 2, 1, 2);
  for (const TensorArg& t : a.in) check_present(op, a, t, "an input");
  for (const TensorArg& t : a.out) check_present(op, a, t, "an output");
  const bool bias = a.out.size() == 2;
  const TensorArg none{};
  const Elem e = check_operands(
      op, a,
      {{&a.in[0], "x"}, {&a.in[1], "dy"}, {&a.out[0], "dw"}, {bias ? &a.out[1] : &none, "db"}},
      {{&a.out[0], "dw"}, {bias ? &a.out[1] : &none, "db"}});
  const Geom g = geom(op, a, a.in[0].shape(), a.out[0].shape(), a.in[1].shape());
  if (bias && a.out[1].shape().elements() != g.o)
    fail_operand(op, a, "db should have out_features values");
  const Staging st = staging_of(a);
  uint8_t* stage = staging_base(op, a, st);
  weight_grads(a, g, e, st, stage, a.in[0], a.in[1], a.out[0].data, bias ? a.out[1].data : nullptr,
               stream, op);
}

uint64_t workspace_bytes(const KernelArgs& a) {
  if (!a.node || a.node->kind != NodeKind::COMPUTE || !is_linear(a.node->op)) return 0;
  if (a.node->op != ComputeOp::LINEAR_FWD && a.part == static_cast<int>(BwdPart::DB)) return 0;
  return staging_of(a).total() + cublas_workspace_bytes();
}

}  // namespace linear

}  // namespace tr::cuda
