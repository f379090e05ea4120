// SPDX-License-Identifier: GPL-3.0-or-later
// Loading and serving Fashion-MNIST from its IDX files.
#include "data/fashion_mnist.h"

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <renaissance/error.h>
#include "data/idx_reader.h"

namespace tr {

namespace {

int64_t pick_size(int64_t requested, const Tensor& images, const std::string& path,
                  const char* field) {
  const int64_t available = images.shape().n;
  if (requested < 0 || requested > available) {
    throw UsageError(path + " holds " + std::to_string(available) + " images but \"dataset." +
                     field + "\" asks for " + std::to_string(requested) + "; expected 1.." +
                     std::to_string(available) + " (or 0 for all)");
  }
  return requested == 0 ? available : requested;
}

}  // namespace

std::string FashionMnistSource::file_path(const std::string& dir, Split split, bool images) {
  const std::string stem = std::string(split == Split::Train ? "train" : "t10k") +
                           (images ? "-images-idx3-ubyte" : "-labels-idx1-ubyte");
  const std::filesystem::path base(dir);
  const auto gz = base / (stem + ".gz");
  const auto plain = base / stem;
  std::error_code ec;
  // Prefer the packaged .gz; fall back to a file someone already gunzipped.
  if (!std::filesystem::exists(gz, ec) && std::filesystem::exists(plain, ec)) return plain.string();
  return gz.string();
}

FashionMnistSource::FashionMnistSource(const std::string& dir, int64_t train_size, int64_t val_size,
                                       const std::string& missing_hint)
    : dir_(dir) {
  const std::string ti = file_path(dir, Split::Train, true);
  const std::string tl = file_path(dir, Split::Train, false);
  const std::string vi = file_path(dir, Split::Val, true);
  const std::string vl = file_path(dir, Split::Val, false);
  train_images_ = read_idx_images(ti, missing_hint);
  train_labels_ = read_idx_labels(tl, kClasses, missing_hint);
  check_idx_pair(ti, train_images_, tl, train_labels_);
  val_images_ = read_idx_images(vi, missing_hint);
  val_labels_ = read_idx_labels(vl, kClasses, missing_hint);
  check_idx_pair(vi, val_images_, vl, val_labels_);
  const Shape t = train_images_.shape(), v = val_images_.shape();
  if (t.h != v.h || t.w != v.w) {
    throw UsageError(vi + " holds " + std::to_string(v.h) + "x" + std::to_string(v.w) +
                     " images but " + ti + " holds " + std::to_string(t.h) + "x" +
                     std::to_string(t.w) + "; expected both splits at one resolution");
  }
  train_size_ = pick_size(train_size, train_images_, ti, "train_size");
  val_size_ = pick_size(val_size, val_images_, vi, "val_size");
}

int64_t FashionMnistSource::size(Split split) const {
  return split == Split::Train ? train_size_ : val_size_;
}

const Tensor& FashionMnistSource::images(Split split) const {
  return split == Split::Train ? train_images_ : val_images_;
}

const Tensor& FashionMnistSource::labels(Split split) const {
  return split == Split::Train ? train_labels_ : val_labels_;
}

void FashionMnistSource::check_index(Split split, int64_t index) const {
  if (index < 0 || index >= size(split)) {
    throw std::out_of_range("FashionMnistSource: " + std::string(split_name(split)) + " index " +
                            std::to_string(index) + " outside [0, " + std::to_string(size(split)) +
                            ")");
  }
}

void FashionMnistSource::read(Split split, int64_t index, uint8_t* out_hwc) const {
  check_index(split, index);
  const Tensor& img = images(split);
  const auto per = static_cast<size_t>(img.shape().per_sample());
  std::memcpy(out_hwc, img.data<uint8_t>() + static_cast<size_t>(index) * per, per);
}

int32_t FashionMnistSource::label(Split split, int64_t index) const {
  check_index(split, index);
  return labels(split).data<int32_t>()[index];
}

std::string FashionMnistSource::describe() const {
  return "Fashion-MNIST from " + dir_ + " (" + std::to_string(train_size_) + " train, " +
         std::to_string(val_size_) + " val, " + std::to_string(train_images_.shape().h) + "x" +
         std::to_string(train_images_.shape().w) + ")";
}

}  // namespace tr
