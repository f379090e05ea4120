// SPDX-License-Identifier: GPL-3.0-or-later
// Linear-layer launchers (see linear_launchers.h). cuBLAS is column-major and
// our matrices are row-major, so every GEMM is written for the transposes:
// a row-major [r, c] matrix is a column-major [c, r] one with ld = c.
#include "backends/cuda/linear_launchers.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <stdexcept>
#include <string>

#include "backends/cuda/cublas_handles.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/linear_kernels.h"

namespace tr::cuda {

namespace {

std::atomic<Fp32Gemm> g_fp32_gemm{Fp32Gemm::TF32};

[[noreturn]] void fail(const char* op, const KernelArgs& a, const std::string& what) {
  std::string where = std::string("CUDA ") + op;
  if (a.layer) where += " of layer " + a.layer->label();
  throw std::invalid_argument(where + ": " + what);
}

bool has_out(const KernelArgs& a, size_t i) {
  return i < a.out.size() && a.out[i].data != nullptr;
}

// As the CPU twin: compact FP32 operands. FP16 would be misread as FP32, so
// an AMP plan fails loudly (logic_error, like the other CUDA launchers).
void check_f32(const char* op, const KernelArgs& a, const TensorArg& t, const char* name) {
  if (!t.data || !t.desc) fail(op, a, std::string(name) + " is missing");
  if (t.desc->dtype == DType::FP16)
    throw std::logic_error(std::string("CUDA backend: no FP16 kernel for ") + op);
  if (t.desc->dtype != DType::FP32)
    fail(op, a, std::string(name) + " is " + std::string(dtype_name(t.desc->dtype)));
  if (!t.desc->is_compact()) fail(op, a, std::string(name) + " has a padded channel dimension");
}

void check_counts(const char* op, const KernelArgs& a, size_t ins_min, size_t ins_max,
                  size_t outs_min, size_t outs_max) {
  if (a.in.size() < ins_min || a.in.size() > ins_max || a.out.size() < outs_min ||
      a.out.size() > outs_max)
    fail(op, a,
         "got " + std::to_string(a.in.size()) + " inputs and " + std::to_string(a.out.size()) +
             " outputs");
}

// y[n, o] = x[n, k] w[o, k]^T; x may be any NHWC tensor, read as [N, H*W*C].
struct Geom {
  int64_t n, k, o;
};

Geom geom(const char* op, const KernelArgs& a, const Shape& x, const Shape& w, const Shape& y) {
  const Geom g{x.n, x.per_sample(), w.n};
  if (!w.is_flat() || w.c != g.k)
    fail(op, a, "weights " + w.str() + " should be [out,1,1," + std::to_string(g.k) + "]");
  if (!y.is_flat() || y.n != g.n || y.c != g.o)
    fail(op, a,
         "output " + y.str() + " should be [" + std::to_string(g.n) + ",1,1," +
             std::to_string(g.o) + "]");
  for (int64_t d : {g.n, g.k, g.o})
    if (d > INT_MAX) fail(op, a, "a dimension exceeds cuBLAS's int range");
  return g;
}

void launched(cudaError_t err, const char* what) {
  check_cuda(err, what, current_device());
}

// The stream's handle; an empty workspace when the caller gave none (cuBLAS
// then picks algorithms that need none).
cublasHandle_t handle(const KernelArgs& a, cudaStream_t stream) {
  static const StreamWorkspace none{};
  return cublas_handle(stream, a.workspace ? *a.workspace : none);
}

// Column-major C[m, n] = op(A) op(B) + beta C.
void gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
          int64_t k, const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  const float alpha = 1.0f;
  const cublasComputeType_t compute =
      fp32_gemm() == Fp32Gemm::STRICT ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
  // ld >= 1 even for an empty k, which cuBLAS would reject.
  auto ld = [](int64_t v) { return static_cast<int>(std::max<int64_t>(1, v)); };
  check_cublas(cublasGemmEx(h, ta, tb, static_cast<int>(m), static_cast<int>(n),
                            static_cast<int>(k), &alpha, A, CUDA_R_32F, ld(lda), B, CUDA_R_32F,
                            ld(ldb), &beta, C, CUDA_R_32F, ld(ldc), compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx", current_device());
}

// dw and db as the CPU twin writes them: overwritten, whatever the
// accumulate mask says (a weight gradient belongs to one layer, so the
// compiler never asks to accumulate one).
void weight_grads(const KernelArgs& a, const Geom& g, const float* x, const float* dy, float* dw,
                  float* db, cudaStream_t stream) {
  // dw[o, k] = dy[n, o]^T x[n, k]; column-major dw^T[k, o] = x^T[k, n] dy[n, o].
  if (a.runs(BwdPart::DW))
    gemm(handle(a, stream), CUBLAS_OP_N, CUBLAS_OP_T, g.k, g.o, g.n, x, g.k, dy, g.o, 0.0f, dw,
         g.k);
  if (db && a.runs(BwdPart::DB))
    launched(launch_column_sums(dy, g.n, g.o, db, stream), "linear bias gradient");
}

bool is_linear(ComputeOp op) {
  return op == ComputeOp::LINEAR_FWD || op == ComputeOp::LINEAR_BWD ||
         op == ComputeOp::LINEAR_BWD_FIRST;
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
  for (const TensorArg& t : a.in) check_f32(op, a, t, "an input");
  check_f32(op, a, a.out[0], "y");
  const Geom g = geom(op, a, a.in[0].shape(), a.in[1].shape(), a.out[0].shape());
  const bool bias = a.in.size() == 3;
  if (bias && a.in[2].shape().elements() != g.o)
    fail(op, a, "bias should have out_features values");
  const cublasHandle_t h = handle(a, stream);
  float* y = a.out[0].f32();
  // Seeded with the bias, which the GEMM adds to (beta = 1), as on the CPU.
  if (bias) launched(launch_bias_rows(y, a.in[2].f32(), g.n, g.o, stream), "linear bias");
  // Column-major y^T[o, n] = w[o, k] x^T[k, n].
  gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, g.o, g.n, g.k, a.in[1].f32(), g.k, a.in[0].f32(), g.k,
       bias ? 1.0f : 0.0f, y, g.o);
}

void bwd(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "LINEAR_BWD";
  check_counts(op, a, 3, 3, 2, 3);
  // out [dw, (db), dx]: dx is the last slot and absent after the input node.
  const size_t dx_index = a.out.size() - 1;
  const bool bias = a.out.size() == 3;
  const bool has_dx = has_out(a, dx_index);
  for (const TensorArg& t : a.in) check_f32(op, a, t, "an input");
  for (size_t i = 0; i < dx_index; ++i) check_f32(op, a, a.out[i], "an output");
  if (has_dx) check_f32(op, a, a.out[dx_index], "dx");
  const TensorArg& x = a.in[0];
  const TensorArg& w = a.in[1];
  const TensorArg& dy = a.in[2];
  const Geom g = geom(op, a, x.shape(), w.shape(), dy.shape());
  if (a.out[0].shape() != w.shape()) fail(op, a, "dw should have the weights' shape");
  if (has_dx && a.out[dx_index].shape() != x.shape())
    fail(op, a, "dx should have the input's shape");
  if (bias && a.out[1].shape().elements() != g.o) fail(op, a, "db should have out_features values");

  // dW before dX on one stream: dX may overwrite X in place (ENGINE.md §4).
  weight_grads(a, g, x.f32(), dy.f32(), a.out[0].f32(), bias ? a.out[1].f32() : nullptr, stream);
  if (!has_dx || !a.runs(BwdPart::DX)) return;
  // dx[n, k] = dy[n, o] w[o, k]; column-major dx^T[k, n] = w^T[k, o] dy^T[o, n].
  gemm(handle(a, stream), CUBLAS_OP_N, CUBLAS_OP_N, g.k, g.n, g.o, w.f32(), g.k, dy.f32(), g.o,
       a.accumulate(dx_index) ? 1.0f : 0.0f, a.out[dx_index].f32(), g.k);
}

void bwd_first(const KernelArgs& a, cudaStream_t stream) {
  constexpr const char* op = "LINEAR_BWD_FIRST";
  check_counts(op, a, 2, 2, 1, 2);
  for (const TensorArg& t : a.in) check_f32(op, a, t, "an input");
  for (const TensorArg& t : a.out) check_f32(op, a, t, "an output");
  const bool bias = a.out.size() == 2;
  const Geom g = geom(op, a, a.in[0].shape(), a.out[0].shape(), a.in[1].shape());
  if (bias && a.out[1].shape().elements() != g.o) fail(op, a, "db should have out_features values");
  weight_grads(a, g, a.in[0].f32(), a.in[1].f32(), a.out[0].f32(), bias ? a.out[1].f32() : nullptr,
               stream);
}

uint64_t workspace_bytes(const KernelArgs& a) {
  if (!a.node || a.node->kind != NodeKind::COMPUTE || !is_linear(a.node->op)) return 0;
  if (a.node->op != ComputeOp::LINEAR_FWD && a.part == static_cast<int>(BwdPart::DB)) return 0;
  return cublas_workspace_bytes();
}

}  // namespace linear

}  // namespace tr::cuda
