// SPDX-License-Identifier: GPL-3.0-or-later
// ImageFolderSource: a dataset of the user's own images, one subfolder per
// class (classes sorted by folder name), PNG or JPEG, fitted to the model's
// input (image_decode.h) once and kept decoded: in memory, and in a cache
// file beside the folder that later runs read instead while the folder's
// files are unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/data_source.h"

namespace tr {

struct ImageFolderOptions {
  std::string train_dir, val_dir;
  int64_t height = 0, width = 0, channels = 0;
  bool skip_bad_images = false;  // else the first unreadable image stops the load
  bool cache = true;             // read and write the decoded cache
  int threads = 0;               // decoding threads; 0: the machine's
};

// One image file of a split, as found by the scan.
struct ImageFile {
  std::string path;
  int32_t label = 0;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
};

// The classes and files of the folders, from the directory listing alone.
struct ImageFolderScan {
  std::vector<std::string> classes;  // training class folders, sorted
  std::vector<ImageFile> train, val;
};

// The PNG and JPEG files directly in `dir` (by name; hidden ones left out),
// sorted; empty when there are none.
std::vector<std::string> image_files_in(const std::string& dir);

// Throws UsageError naming the folder that is wrong: missing, without class
// folders, a class folder without images, a validation class the training
// set lacks. In two steps, so a caller can tell which folder is wrong.
ImageFolderScan scan_training_folder(const std::string& train_dir);
void scan_validation_folder(ImageFolderScan& scan, const std::string& train_dir,
                            const std::string& val_dir);
ImageFolderScan scan_image_folders(const std::string& train_dir, const std::string& val_dir);

class ImageFolderSource final : public DataSource {
 public:
  // Throws UsageError naming the folder or image that is wrong.
  explicit ImageFolderSource(const ImageFolderOptions& options);

  Shape sample_shape() const override {
    return {1, options_.height, options_.width, options_.channels};
  }
  int64_t classes() const override { return static_cast<int64_t>(scan_.classes.size()); }
  int64_t size(Split split) const override;
  void read(Split split, int64_t index, uint8_t* out_hwc) const override;
  int32_t label(Split split, int64_t index) const override;
  std::string describe() const override;

  const std::vector<std::string>& class_names() const { return scan_.classes; }
  // Images left out (skip_bad_images), "path: why" each.
  const std::vector<std::string>& skipped() const { return skipped_; }
  bool from_cache() const { return from_cache_; }
  // The cache file this source reads and writes.
  std::string cache_path() const;

 private:
  struct SplitData {
    std::vector<uint8_t> pixels;
    std::vector<int32_t> labels;
  };
  const SplitData& data(Split s) const { return s == Split::Train ? train_ : val_; }
  void decode_all();
  bool read_cache();
  void write_cache() const;
  uint64_t signature() const;

  ImageFolderOptions options_;
  ImageFolderScan scan_;
  SplitData train_, val_;
  std::vector<std::string> skipped_;
  bool from_cache_ = false;
};

}  // namespace tr
