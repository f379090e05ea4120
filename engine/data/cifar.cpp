// SPDX-License-Identifier: GPL-3.0-or-later
// Loading and serving CIFAR-10 and CIFAR-100 from their binary files.
#include "data/cifar.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <renaissance/dataset_kinds.h>
#include <renaissance/error.h>

namespace tr {

namespace {

int64_t label_bytes(DatasetKind kind) {
  return kind == DatasetKind::Cifar100 ? 2 : 1;
}

int64_t served_size(int64_t requested, int64_t available, const std::string& what,
                    const char* field, const std::string& complete) {
  if (requested < 0 || requested > available)
    throw UsageError(what + " holds " + std::to_string(available) + " images but \"dataset." +
                     field + "\" asks for " + std::to_string(requested) + "; expected 1.." +
                     std::to_string(available) + " (or 0 for all)" + complete);
  return requested == 0 ? available : requested;
}

}  // namespace

std::vector<std::string> CifarSource::files(DatasetKind kind, const std::string& dir, Split split) {
  const std::filesystem::path base(dir);
  if (kind == DatasetKind::Cifar100)
    return {(base / (split == Split::Train ? "train.bin" : "test.bin")).string()};
  if (split == Split::Val) return {(base / "test_batch.bin").string()};
  std::vector<std::string> out;
  for (int i = 1; i <= 5; ++i)
    out.push_back((base / ("data_batch_" + std::to_string(i) + ".bin")).string());
  return out;
}

int64_t CifarSource::record_bytes(DatasetKind kind) {
  return label_bytes(kind) + kPixels;
}

int64_t CifarSource::count_records(DatasetKind kind, const std::string& path,
                                   const std::string& missing_hint) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw UsageError(path + ": no such file" + (missing_hint.empty() ? "" : "; " + missing_hint));
  if (!std::filesystem::is_regular_file(path, ec))
    throw UsageError(path + ": not a file; expected a " +
                     std::string(dataset_kind_info(kind).title) + " binary batch");
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (ec) throw UsageError(path + ": cannot be read (" + ec.message() + ")");
  const int64_t record = record_bytes(kind);
  if (bytes == 0 || bytes % record != 0)
    throw UsageError(path + " is " + std::to_string(bytes) + " bytes, not a whole number of " +
                     std::to_string(record) + "-byte " + dataset_kind_info(kind).title +
                     " records; expected the binary version's files (10000 records each for "
                     "CIFAR-10's batches), not the Python or MATLAB ones");
  return bytes / record;
}

CifarSource::CifarSource(DatasetKind kind, const std::string& dir, int64_t train_size,
                         int64_t val_size, const std::string& missing_hint)
    : kind_(kind), dir_(dir), classes_(dataset_kind_info(kind).classes) {
  if (kind != DatasetKind::Cifar10 && kind != DatasetKind::Cifar100)
    throw std::logic_error("CifarSource: not a CIFAR kind");
  load(Split::Train, missing_hint);
  load(Split::Val, missing_hint);
  const std::string title = dataset_kind_info(kind).title;
  const DatasetKindInfo& info = dataset_kind_info(kind);
  const std::string complete = "; the complete " + title + " has " +
                               std::to_string(info.train_size) + " training and " +
                               std::to_string(info.val_size) + " test images";
  train_.served = served_size(train_size, static_cast<int64_t>(train_.labels.size()),
                              "the " + title + " training set in " + dir, "train_size", complete);
  val_.served = served_size(val_size, static_cast<int64_t>(val_.labels.size()),
                            "the " + title + " test set in " + dir, "val_size", complete);
}

void CifarSource::load(Split split, const std::string& missing_hint) {
  SplitData& d = split == Split::Train ? train_ : val_;
  const std::vector<std::string> paths = files(kind_, dir_, split);
  int64_t total = 0;
  for (const std::string& p : paths) total += count_records(kind_, p, missing_hint);
  d.pixels.resize(static_cast<size_t>(total * kPixels));
  d.labels.resize(static_cast<size_t>(total));
  const int64_t record = record_bytes(kind_), labels = label_bytes(kind_);
  std::vector<uint8_t> rec(static_cast<size_t>(record));
  int64_t at = 0;
  for (const std::string& p : paths) {
    std::ifstream in(p, std::ios::binary);
    const int64_t n = count_records(kind_, p, missing_hint);
    for (int64_t r = 0; r < n; ++r, ++at) {
      if (!in.read(reinterpret_cast<char*>(rec.data()), record))
        throw UsageError(p + ": cannot be read at record " + std::to_string(r) +
                         " (the file changed or is unreadable)");
      // The class is the last label byte (CIFAR-100's fine label).
      const int32_t label = rec[static_cast<size_t>(labels - 1)];
      if (kind_ == DatasetKind::Cifar100 && rec[0] >= 20)
        throw UsageError(p + ": record " + std::to_string(r) + " has coarse label " +
                         std::to_string(rec[0]) + "; CIFAR-100's coarse labels are 0..19");
      if (label >= classes_)
        throw UsageError(p + ": record " + std::to_string(r) + " has label " +
                         std::to_string(label) + "; " + dataset_kind_info(kind_).title +
                         " labels are 0.." + std::to_string(classes_ - 1));
      d.labels[static_cast<size_t>(at)] = label;
      // Planar RGB to HWC.
      const uint8_t* planes = rec.data() + labels;
      uint8_t* hwc = d.pixels.data() + at * kPixels;
      for (int64_t i = 0; i < kSide * kSide; ++i)
        for (int64_t c = 0; c < 3; ++c) hwc[i * 3 + c] = planes[c * kSide * kSide + i];
    }
  }
}

int64_t CifarSource::size(Split split) const {
  return data(split).served;
}

void CifarSource::check_index(Split split, int64_t index) const {
  if (index < 0 || index >= size(split))
    throw std::out_of_range("CifarSource: " + std::string(split_name(split)) + " index " +
                            std::to_string(index) + " outside [0, " + std::to_string(size(split)) +
                            ")");
}

void CifarSource::read(Split split, int64_t index, uint8_t* out_hwc) const {
  check_index(split, index);
  const uint8_t* p = data(split).pixels.data() + index * kPixels;
  std::copy(p, p + kPixels, out_hwc);
}

int32_t CifarSource::label(Split split, int64_t index) const {
  check_index(split, index);
  return data(split).labels[static_cast<size_t>(index)];
}

std::string CifarSource::describe() const {
  return std::string(dataset_kind_info(kind_).title) + " from " + dir_ + " (" +
         std::to_string(train_.served) + " train, " + std::to_string(val_.served) +
         " val, 32x32x3)";
}

}  // namespace tr
