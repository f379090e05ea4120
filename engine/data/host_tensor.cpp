// SPDX-License-Identifier: GPL-3.0-or-later
// Aligned allocation and checked typed access for the host Tensor.
#include "data/host_tensor.h"

#include <unistd.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace tr {

void Tensor::AlignedDelete::operator()(std::byte* p) const noexcept {
  ::operator delete (p, std::align_val_t{alignment});
}

Tensor::Tensor(Shape shape, DType dtype) : Tensor(shape, dtype, true) {}

Tensor Tensor::uninitialized(Shape shape, DType dtype) {
  return Tensor(shape, dtype, false);
}

Tensor Tensor::whole_pages(Shape shape, DType dtype) {
  const long page = sysconf(_SC_PAGESIZE);
  return Tensor(shape, dtype, true, page > 0 ? static_cast<size_t>(page) : 4096);
}

Tensor::Tensor(Shape shape, DType dtype, bool zero, size_t alignment)
    : shape_(shape), dtype_(dtype) {
  if (shape.n < 0 || shape.h < 0 || shape.w < 0 || shape.c < 0) {
    throw std::invalid_argument("Tensor: negative extent in shape " + shape.str());
  }
  bytes_ = static_cast<size_t>(shape.elements()) * dtype_size(dtype);
  if (bytes_ == 0) return;
  // Whole alignment units, so nothing else is ever allocated in the tail.
  allocated_ = (bytes_ + alignment - 1) / alignment * alignment;
  storage_ = std::unique_ptr<std::byte[], AlignedDelete>(
      static_cast<std::byte*>(::operator new (allocated_, std::align_val_t{alignment})),
      AlignedDelete{alignment});
  if (zero) std::memset(storage_.get(), 0, allocated_);
}

Tensor::Tensor(Tensor&& other) noexcept
    : shape_(std::exchange(other.shape_, Shape{0, 0, 0, 0})),
      dtype_(other.dtype_),
      bytes_(std::exchange(other.bytes_, 0)),
      allocated_(std::exchange(other.allocated_, 0)),
      storage_(std::move(other.storage_)) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    shape_ = std::exchange(other.shape_, Shape{0, 0, 0, 0});
    dtype_ = other.dtype_;
    bytes_ = std::exchange(other.bytes_, 0);
    allocated_ = std::exchange(other.allocated_, 0);
    storage_ = std::move(other.storage_);
  }
  return *this;
}

Tensor Tensor::clone() const {
  Tensor copy(shape_, dtype_, false);
  if (bytes_) std::memcpy(copy.storage_.get(), storage_.get(), bytes_);
  return copy;
}

void Tensor::mismatch(const char* requested) const {
  throw std::logic_error("Tensor::data<" + std::string(requested) + ">() on a " +
                         std::string(dtype_name(dtype_)) + " tensor " + shape_.str());
}

}  // namespace tr
