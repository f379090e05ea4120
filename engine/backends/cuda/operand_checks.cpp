// SPDX-License-Identifier: GPL-3.0-or-later
// Operand checks of the CUDA compute launchers (see operand_checks.h).
#include "backends/cuda/operand_checks.h"

#include <stdexcept>

namespace tr::cuda {

void fail_operand(const char* op, const KernelArgs& a, const std::string& what) {
  throw std::invalid_argument(std::string("CUDA ") + op + a.where() + ": " + what);
}

void check_counts(const char* op, const KernelArgs& a, size_t ins_min, size_t ins_max,
                  size_t outs_min, size_t outs_max) {
  if (a.in.size() < ins_min || a.in.size() > ins_max || a.out.size() < outs_min ||
      a.out.size() > outs_max)
    fail_operand(op, a,
                 "got " + std::to_string(a.in.size()) + " inputs and " +
                     std::to_string(a.out.size()) + " outputs");
}

void check_present(const char* op, const KernelArgs& a, const TensorArg& t, const char* name) {
  if (!t.data || !t.desc) fail_operand(op, a, std::string(name) + " is missing");
}

cudaError_t zero_padding(void* m, Elem e, int64_t rows, int64_t cols, int64_t ld,
                         cudaStream_t stream) {
  if (ld == cols || rows == 0) return cudaSuccess;
  const size_t b = elem_bytes(e);
  return cudaMemset2DAsync(static_cast<uint8_t*>(m) + static_cast<size_t>(cols) * b,
                           static_cast<size_t>(ld) * b, 0, static_cast<size_t>(ld - cols) * b,
                           static_cast<size_t>(rows), stream);
}

const char* elem_name(Elem e) noexcept {
  return e == Elem::F16 ? "fp16" : e == Elem::BF16 ? "bf16" : "fp32";
}

Elem float_elem(const char* op, const KernelArgs& a, const TensorArg& t, const char* name) {
  if (!t.desc) fail_operand(op, a, std::string(name) + " has no descriptor");
  switch (t.desc->dtype) {
    case DType::FP32:
      if (!t.desc->is_compact())
        fail_operand(op, a, std::string(name) + " is fp32 with a padded channel dimension");
      return Elem::F32;
    case DType::FP16:
      return Elem::F16;
    case DType::BF16:
      return Elem::BF16;
    case DType::INT8:
    case DType::INT32:
      break;
  }
  fail_operand(op, a,
               std::string(name) + " is " + std::string(dtype_name(t.desc->dtype)) +
                   "; this kernel takes fp32, fp16 or bf16");
}

Elem common_elem(const char* op, const KernelArgs& a, std::initializer_list<Operand> operands) {
  return common_elem(op, a, std::vector<Operand>(operands));
}

Elem common_elem(const char* op, const KernelArgs& a, const std::vector<Operand>& operands) {
  const Operand* first = nullptr;
  Elem e = Elem::F32;
  for (const Operand& o : operands) {
    if (!o.t->data) continue;
    const Elem here = float_elem(op, a, *o.t, o.name);
    if (!first) {
      first = &o;
      e = here;
    } else if (here != e) {
      fail_operand(op, a,
                   std::string(first->name) + " is " + elem_name(e) + " but " + o.name + " is " +
                       elem_name(here) + "; the operands must share one float type");
    }
  }
  return e;
}

void require_stride(const char* op, const KernelArgs& a, int64_t stride,
                    std::initializer_list<Operand> operands) {
  for (const Operand& o : operands)
    if (o.t->data && o.t->desc->padded_c() != stride)
      fail_operand(op, a,
                   std::string(o.name) + " has rows of " + std::to_string(o.t->desc->padded_c()) +
                       " elements where the other operands have " + std::to_string(stride));
}

void require_compact(const char* op, const KernelArgs& a, const Operand& o) {
  if (o.t->data && !o.t->desc->is_compact())
    fail_operand(op, a, std::string(o.name) + " has a padded channel dimension");
}

FeatureView feature_view(const TensorArg& t) {
  const DTensor& d = *t.desc;
  if (d.is_compact()) {
    const int64_t n = d.shape.elements();
    return {t.data, n > 0 ? n : 1, n > 0 ? n : 1};
  }
  return {t.data, d.shape.c, d.padded_c()};
}

void require_f32(const char* op, const KernelArgs& a, const TensorArg& t, const char* name) {
  if (t.data && float_elem(op, a, t, name) != Elem::F32)
    fail_operand(op, a, std::string(name) + " should be fp32");
}

Elem feature_elem(const char* op, const KernelArgs& a, std::initializer_list<Operand> features,
                  std::initializer_list<Operand> params) {
  Elem e = common_elem(op, a, features);
  for (const Operand& p : params) {
    require_f32(op, a, *p.t, p.name);
    require_compact(op, a, p);
  }
  require_stride(op, a, features.begin()->t->desc->padded_c(), features);
  return e;
}

}  // namespace tr::cuda
