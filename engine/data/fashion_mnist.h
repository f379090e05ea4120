// SPDX-License-Identifier: GPL-3.0-or-later
// FashionMnistSource: the four Fashion-MNIST IDX files decoded into memory
// (55 MB of pixels), served through the DataSource interface.
#pragma once

#include <cstdint>
#include <string>

#include "data/data_source.h"
#include "data/host_tensor.h"

namespace tr {

class FashionMnistSource final : public DataSource {
 public:
  static constexpr int64_t kClasses = 10;

  // Reads dir/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz (or the same
  // names without .gz when only those exist). Serves the first train_size /
  // val_size samples; 0 means all, more than the files hold is an error.
  // `missing_hint` ends the message when a file is absent.
  FashionMnistSource(const std::string& dir, int64_t train_size = 0, int64_t val_size = 0,
                     const std::string& missing_hint = "");

  Shape sample_shape() const override {
    return {1, train_images_.shape().h, train_images_.shape().w, 1};
  }
  int64_t classes() const override { return kClasses; }
  int64_t size(Split split) const override;
  void read(Split split, int64_t index, uint8_t* out_hwc) const override;
  int32_t label(Split split, int64_t index) const override;
  std::string describe() const override;

  // The decoded files: INT8 [N, 28, 28, 1] holding uint8 pixels, INT32 [N, 1, 1, 1].
  const Tensor& images(Split split) const;
  const Tensor& labels(Split split) const;
  const std::string& dir() const noexcept { return dir_; }

  // The file a split reads, as resolved (with or without .gz).
  static std::string file_path(const std::string& dir, Split split, bool images);

 private:
  void check_index(Split split, int64_t index) const;

  std::string dir_;
  Tensor train_images_, train_labels_, val_images_, val_labels_;
  int64_t train_size_ = 0, val_size_ = 0;
};

}  // namespace tr
