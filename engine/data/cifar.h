// SPDX-License-Identifier: GPL-3.0-or-later
// CifarSource: CIFAR-10 or CIFAR-100 from their binary files, decoded into
// memory (180 MB of pixels) and served through the DataSource interface.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/project.h>
#include "data/data_source.h"

namespace tr {

class CifarSource final : public DataSource {
 public:
  // CIFAR-10: dir/data_batch_1.bin .. data_batch_5.bin (training) and
  // dir/test_batch.bin, records of one label byte and 3072 pixel bytes.
  // CIFAR-100: dir/train.bin and dir/test.bin, records of a coarse and a
  // fine label byte (the fine one is the class) and the pixels. Pixels are
  // planar there (1024 red, 1024 green, 1024 blue, rows top down). Serves
  // the first train_size / val_size samples (0: all; more is an error).
  // `missing_hint` ends the message when a file is absent.
  CifarSource(DatasetKind kind, const std::string& dir, int64_t train_size = 0,
              int64_t val_size = 0, const std::string& missing_hint = "");

  Shape sample_shape() const override { return {1, kSide, kSide, 3}; }
  int64_t classes() const override { return classes_; }
  int64_t size(Split split) const override;
  void read(Split split, int64_t index, uint8_t* out_hwc) const override;
  int32_t label(Split split, int64_t index) const override;
  std::string describe() const override;

  static constexpr int64_t kSide = 32;
  static constexpr int64_t kPixels = kSide * kSide * 3;
  // The files of a split, in the order their records are numbered.
  static std::vector<std::string> files(DatasetKind kind, const std::string& dir, Split split);
  // Bytes of one record: the label bytes and the pixels.
  static int64_t record_bytes(DatasetKind kind);
  // The records in `path` from its size alone; throws UsageError naming the
  // file when it is missing or not a whole number of records.
  static int64_t count_records(DatasetKind kind, const std::string& path,
                               const std::string& missing_hint = "");

 private:
  struct SplitData {
    std::vector<uint8_t> pixels;  // HWC per sample
    std::vector<int32_t> labels;
    int64_t served = 0;
  };
  void load(Split split, const std::string& missing_hint);
  const SplitData& data(Split split) const { return split == Split::Train ? train_ : val_; }
  void check_index(Split split, int64_t index) const;

  DatasetKind kind_;
  std::string dir_;
  int64_t classes_ = 0;
  SplitData train_, val_;
};

}  // namespace tr
