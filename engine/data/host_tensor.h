// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor: the owning host-side container (compact NHWC) that carries data
// between host and device: datasets, preprocessed batches, staging, checkpoints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include <renaissance/dtype.h>
#include <renaissance/shape.h>

namespace tr {

class Tensor {
 public:
  // 64 bytes: a cache line and the widest host vector load, so kernels and
  // memcpy never start mid-line.
  static constexpr size_t kAlignment = 64;

  Tensor() = default;
  // Zero-filled.
  Tensor(Shape shape, DType dtype);
  // Contents indeterminate: for buffers that are overwritten at once (file
  // reads, batch staging). Untouched pages cost no memory, so a bogus size
  // from a file header only fails when the data really isn't there.
  static Tensor uninitialized(Shape shape, DType dtype);
  // Zero-filled, starting on a page and filling whole pages
  // (allocated_bytes()): a staging buffer that a device backend page-locks
  // shares no page with another, so pinning one never half-pins the next.
  static Tensor whole_pages(Shape shape, DType dtype);

  // A moved-from Tensor is empty (shape [0,0,0,0]), never a dangling view.
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  // Copies are expensive and almost always a mistake; clone() says it aloud.
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  Tensor clone() const;

  const Shape& shape() const noexcept { return shape_; }
  DType dtype() const noexcept { return dtype_; }
  int64_t elements() const noexcept { return shape_.elements(); }
  size_t bytes() const noexcept { return bytes_; }
  // The allocation's size: bytes() rounded up to its alignment (whole pages
  // for whole_pages()).
  size_t allocated_bytes() const noexcept { return allocated_; }
  bool empty() const noexcept { return bytes_ == 0; }

  // Typed access. FP32: float; FP16 and BF16: uint16_t (binary16 bits, see
  // half.h, or bfloat16 bits, core/bf16_convert.h);
  // INT32: int32_t; INT8: int8_t or uint8_t (the engine has no separate U8
  // type; dataset pixels are 0..255 and are read through uint8_t).
  // std::byte is always allowed. Any other pairing throws std::logic_error.
  template <class T>
  T* data() {
    check<T>();
    return reinterpret_cast<T*>(storage_.get());
  }
  template <class T>
  const T* data() const {
    check<T>();
    return reinterpret_cast<const T*>(storage_.get());
  }

 private:
  struct AlignedDelete {
    // Constructors, not a member initialiser: unique_ptr asks whether this
    // is default-constructible while Tensor is still incomplete.
    AlignedDelete() noexcept : alignment(kAlignment) {}
    explicit AlignedDelete(size_t a) noexcept : alignment(a) {}
    void operator()(std::byte* p) const noexcept;
    size_t alignment;
  };

  template <class T>
  void check() const {
    if constexpr (std::is_same_v<T, std::byte>) {
      return;
    } else if constexpr (std::is_same_v<T, float>) {
      if (dtype_ != DType::FP32) mismatch("float");
    } else if constexpr (std::is_same_v<T, uint16_t>) {
      if (!is_16bit_float(dtype_)) mismatch("uint16_t (fp16 or bf16 bits)");
    } else if constexpr (std::is_same_v<T, int32_t>) {
      if (dtype_ != DType::INT32) mismatch("int32_t");
    } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
      if (dtype_ != DType::INT8) mismatch("int8_t/uint8_t");
    } else {
      static_assert(sizeof(T) == 0, "Tensor::data<T>: T has no engine DType");
    }
  }
  [[noreturn]] void mismatch(const char* requested) const;

  Tensor(Shape shape, DType dtype, bool zero, size_t alignment = kAlignment);

  Shape shape_{0, 0, 0, 0};
  DType dtype_ = DType::FP32;
  size_t bytes_ = 0;
  size_t allocated_ = 0;
  std::unique_ptr<std::byte[], AlignedDelete> storage_;
};

}  // namespace tr
