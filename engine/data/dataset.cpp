// SPDX-License-Identifier: GPL-3.0-or-later
// Dataset selection and the checks that tie a DatasetSpec to its files.
#include "data/dataset.h"

#include <cstdlib>

#include <renaissance/dataset_kinds.h>
#include <renaissance/error.h>
#include "data/cifar.h"
#include "data/fashion_mnist.h"
#include "data/image_folder.h"
#include "data/synthetic.h"

namespace tr {

DatasetLocation resolve_dataset_dir(const DatasetSpec& spec, const std::string& override_path) {
  const DatasetKindInfo& info = dataset_kind_info(spec.kind);
  if (!override_path.empty()) return {override_path, "the command line"};
  if (!spec.path.empty()) return {spec.path, "\"dataset." + std::string(info.folder_key) + "\""};
  const char* env = std::getenv(info.env_var);
  if (env && *env) return {env, std::string("$") + info.env_var};
  return {default_dataset_dir(info), "the default location"};
}

std::string dataset_files_hint(const DatasetKindInfo& info, const DatasetLocation& where) {
  return std::string(info.obtain) + "; set \"dataset." + info.folder_key + "\" (or $" +
         info.env_var + ") to the folder that holds them, or put them in " +
         default_dataset_dir(info) + "; this folder came from " + where.origin;
}

namespace {

// The shape and classes the kind's files fix, against the spec's.
void check_spec_shape(const DatasetSpec& spec, const DatasetKindInfo& info, const Shape& s,
                      const std::string& file) {
  if (spec.classes != info.classes)
    throw UsageError("\"dataset.classes\" is " + std::to_string(spec.classes) + "; " + info.title +
                     " has " + std::to_string(info.classes) + " classes");
  if (spec.height != s.h || spec.width != s.w || spec.channels != s.c)
    throw UsageError(file + " holds " + std::to_string(s.h) + "x" + std::to_string(s.w) + "x" +
                     std::to_string(s.c) + " images but \"dataset\" says " +
                     std::to_string(spec.height) + "x" + std::to_string(spec.width) + "x" +
                     std::to_string(spec.channels) + "; expected height, width, channels = " +
                     std::to_string(s.h) + ", " + std::to_string(s.w) + ", " + std::to_string(s.c));
}

std::unique_ptr<DataSource> load_cifar(const DatasetSpec& spec, const std::string& override_path) {
  const DatasetLocation where = resolve_dataset_dir(spec, override_path);
  const DatasetKindInfo& info = dataset_kind_info(spec.kind);
  const Shape s{1, CifarSource::kSide, CifarSource::kSide, 3};
  check_spec_shape(spec, info, s, CifarSource::files(spec.kind, where.dir, Split::Train).front());
  return std::make_unique<CifarSource>(spec.kind, where.dir, spec.train_size, spec.val_size,
                                       dataset_files_hint(info, where));
}

std::unique_ptr<DataSource> load_fashion_mnist(const DatasetSpec& spec,
                                               const std::string& override_path) {
  const DatasetLocation where = resolve_dataset_dir(spec, override_path);
  const DatasetKindInfo& info = dataset_kind_info(spec.kind);
  if (spec.classes != info.classes)
    throw UsageError("\"dataset.classes\" is " + std::to_string(spec.classes) + "; " + info.title +
                     " has " + std::to_string(info.classes) + " classes");
  auto source = std::make_unique<FashionMnistSource>(where.dir, spec.train_size, spec.val_size,
                                                     dataset_files_hint(info, where));
  check_spec_shape(spec, info, source->sample_shape(),
                   FashionMnistSource::file_path(where.dir, Split::Train, true));
  return source;
}

std::unique_ptr<DataSource> load_image_folder(const DatasetSpec& spec,
                                              const std::string& override_path) {
  if (!override_path.empty()) throw UsageError(image_folder_data_override_problem());
  ImageFolderOptions o;
  o.train_dir = spec.path;
  o.val_dir = spec.val_path;
  o.height = spec.height;
  o.width = spec.width;
  o.channels = spec.channels;
  o.skip_bad_images = spec.skip_bad_images;
  if (o.channels != 1 && o.channels != 3)
    throw UsageError("\"dataset.channels\" is " + std::to_string(o.channels) +
                     "; images are fitted to 1 (grey) or 3 (RGB) channels");
  check_image_classes(scan_image_folders(o.train_dir, o.val_dir), spec);
  return std::make_unique<ImageFolderSource>(o);
}

}  // namespace

std::string image_folder_data_override_problem() {
  return "image folders are named by \"dataset.train_dir\" and \"dataset.val_dir\" in the "
         "project; --data names the folder of Fashion-MNIST or CIFAR";
}

void check_image_classes(const ImageFolderScan& scan, const DatasetSpec& spec) {
  const auto n = static_cast<int64_t>(scan.classes.size());
  if (n == spec.classes) return;
  std::string names;
  for (size_t i = 0; i < scan.classes.size() && i < 8; ++i)
    names += (i ? ", " : "") + scan.classes[i];
  if (scan.classes.size() > 8) names += ", ...";
  throw UsageError("the training folder " + spec.path + " has " + std::to_string(n) +
                   " class folder" + (n == 1 ? "" : "s") + " (" + names +
                   ") but \"dataset.classes\" is " + std::to_string(spec.classes) + ": set it to " +
                   std::to_string(n) + ", and the last Linear layer's out_features with it");
}

std::unique_ptr<DataSource> load_dataset(const DatasetSpec& spec, const std::string& override_path,
                                         uint64_t synthetic_seed) {
  switch (spec.kind) {
    case DatasetKind::FashionMnist:
      return load_fashion_mnist(spec, override_path);
    case DatasetKind::Cifar10:
    case DatasetKind::Cifar100:
      return load_cifar(spec, override_path);
    case DatasetKind::ImageFolder:
      return load_image_folder(spec, override_path);
    case DatasetKind::Synthetic:
      return std::make_unique<SyntheticSource>(spec.height, spec.width, spec.channels, spec.classes,
                                               spec.train_size, spec.val_size, synthetic_seed);
  }
  throw UsageError("\"dataset.kind\": unknown kind");
}

}  // namespace tr
