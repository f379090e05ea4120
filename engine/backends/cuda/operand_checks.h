// SPDX-License-Identifier: GPL-3.0-or-later
// Host-side operand checks shared by the CUDA compute launchers: which
// storage (FP32 or FP16) a float operand has, that an op's operands agree on
// it, and the FeatureView a kernel walks. Failures name the op, the layer and
// the operand (std::invalid_argument).
#pragma once

#include <cuda_runtime_api.h>

#include <initializer_list>
#include <string>

#include "backends/cuda/feature_view.h"
#include "runtime/kernel_args.h"

namespace tr::cuda {

[[noreturn]] void fail_operand(const char* op, const KernelArgs& a, const std::string& what);

// An output slot can be absent (no gradient towards the input node).
inline bool has_out(const KernelArgs& a, size_t i) {
  return i < a.out.size() && a.out[i].data != nullptr;
}

// Fails unless the op got ins_min..ins_max inputs and outs_min..outs_max outputs.
void check_counts(const char* op, const KernelArgs& a, size_t ins_min, size_t ins_max,
                  size_t outs_min, size_t outs_max);

// Fails when `t` has no data or no descriptor (named `name`).
void check_present(const char* op, const KernelArgs& a, const TensorArg& t, const char* name);

const char* elem_name(Elem e) noexcept;

// The storage of float operand `t` (named `name` in errors): FP32, which must
// be compact, or FP16; any other dtype fails.
Elem float_elem(const char* op, const KernelArgs& a, const TensorArg& t, const char* name);

// A named operand of an op: null data (an absent output) is skipped.
struct Operand {
  const TensorArg* t;
  const char* name;
};

// The one storage every present operand has; fails when they mix FP32 and
// FP16 (no AMP plan does) or one is neither.
Elem common_elem(const char* op, const KernelArgs& a, std::initializer_list<Operand> operands);
Elem common_elem(const char* op, const KernelArgs& a, const std::vector<Operand>& operands);

// Fails unless every present operand's rows are `stride` elements apart.
void require_stride(const char* op, const KernelArgs& a, int64_t stride,
                    std::initializer_list<Operand> operands);

// Fails unless the present operand is compact (per-channel parameters and
// their gradients are).
void require_compact(const char* op, const KernelArgs& a, const Operand& o);

// Fails unless the present operand `t` is FP32.
void require_f32(const char* op, const KernelArgs& a, const TensorArg& t, const char* name);

// Features and their gradients share one storage (FP16 under AMP, BF16);
// per-channel parameters (normalisation scales and shifts) and their
// gradients are compact FP32 at every precision, as on the CPU; the
// features' rows are all `stride` apart. Returns the storage.
Elem feature_elem(const char* op, const KernelArgs& a, std::initializer_list<Operand> features,
                  std::initializer_list<Operand> params);

// Writes zero into the padding lanes (values cols..ld-1 of each of `rows`
// rows `ld` apart) of a matrix a library call (cuBLAS, cuDNN) filled, as it
// leaves them alone; nothing when there is no padding.
cudaError_t zero_padding(void* m, Elem e, int64_t rows, int64_t cols, int64_t ld,
                         cudaStream_t stream);

// Rows of channels, padded_c apart; compact tensors (every FP32 one) are
// flat, so the kernels skip the row arithmetic.
FeatureView feature_view(const TensorArg& t);

}  // namespace tr::cuda
