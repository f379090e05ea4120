// SPDX-License-Identifier: GPL-3.0-or-later
// The header-only look at a dataset: the same files and the same messages
// as load_dataset, without decoding the payloads.
#include <renaissance/dataset_probe.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <renaissance/dataset_kinds.h>
#include <renaissance/error.h>
#include "data/cifar.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/idx_reader.h"
#include "data/image_folder.h"

namespace tr {

namespace {

// The samples a split serves: all of them for 0, else the requested prefix.
bool pick(int64_t requested, int64_t available, const std::string& path, const char* field,
          int64_t* out, DatasetProbe* p) {
  if (requested < 0 || requested > available) {
    p->field = std::string("dataset.") + field;
    p->problem = path + " holds " + std::to_string(available) + " images but \"dataset." + field +
                 "\" asks for " + std::to_string(requested) + "; expected 1.." +
                 std::to_string(available) + " (or 0 for all)";
    return false;
  }
  *out = requested == 0 ? available : requested;
  return true;
}

// Whether the kind's folder is there; false with the problem set when not.
bool folder_there(const DatasetKindInfo& info, const DatasetLocation& where, DatasetProbe& p) {
  p.dir = where.dir;
  p.origin = where.origin;
  p.field = std::string("dataset.") + info.folder_key;
  std::error_code ec;
  if (std::filesystem::is_directory(where.dir, ec)) return true;
  p.problem = "the " + std::string(info.title) + " folder " + where.dir + " (from " + where.origin +
              ") " +
              (std::filesystem::exists(where.dir, ec) ? "is not a folder" : "does not exist") +
              "; choose the folder that holds " + info.holds + ", or " + info.obtain;
  return false;
}

bool classes_match(const DatasetSpec& spec, const DatasetKindInfo& info, DatasetProbe& p) {
  if (spec.classes == info.classes) return true;
  p.field = "dataset.classes";
  p.problem = "\"dataset.classes\" is " + std::to_string(spec.classes) + "; " + info.title +
              " has " + std::to_string(info.classes) + " classes";
  return false;
}

DatasetProbe probe_cifar(const DatasetSpec& spec, const std::string& override_path) {
  const DatasetLocation where = resolve_dataset_dir(spec, override_path);
  const DatasetKindInfo& info = dataset_kind_info(spec.kind);
  DatasetProbe p;
  if (!folder_there(info, where, p) || !classes_match(spec, info, p)) return p;
  try {
    int64_t counts[2] = {0, 0};
    for (Split split : {Split::Train, Split::Val})
      for (const std::string& f : CifarSource::files(spec.kind, where.dir, split))
        counts[split == Split::Train ? 0 : 1] +=
            CifarSource::count_records(spec.kind, f, dataset_files_hint(info, where));
    const std::string train = "the " + std::string(info.title) + " training set in " + where.dir;
    const std::string val = "the " + std::string(info.title) + " test set in " + where.dir;
    if (!pick(spec.train_size, counts[0], train, "train_size", &p.train_size, &p) ||
        !pick(spec.val_size, counts[1], val, "val_size", &p.val_size, &p))
      return p;
  } catch (const UsageError& e) {
    p.problem = e.what();
    return p;
  }
  p.ok = true;
  p.field.clear();
  return p;
}

DatasetProbe probe_fashion_mnist(const DatasetSpec& spec, const std::string& override_path) {
  const DatasetLocation where = resolve_dataset_dir(spec, override_path);
  const DatasetKindInfo& info = dataset_kind_info(spec.kind);
  DatasetProbe p;
  if (!folder_there(info, where, p) || !classes_match(spec, info, p)) return p;
  const std::string hint =
      "choose the folder that holds it or install the Debian package "
      "dataset-fashion-mnist; this folder came from " +
      where.origin;
  IdxHeader train_images, val_images;
  try {
    for (Split split : {Split::Train, Split::Val}) {
      const std::string images = FashionMnistSource::file_path(where.dir, split, true);
      const std::string labels = FashionMnistSource::file_path(where.dir, split, false);
      const IdxHeader hi = read_idx_header(images, true, hint);
      const IdxHeader hl = read_idx_header(labels, false, hint);
      if (hi.count != hl.count) {
        p.problem = images + " holds " + std::to_string(hi.count) + " images but " + labels +
                    " holds " + std::to_string(hl.count) + " labels; expected one label per image";
        return p;
      }
      (split == Split::Train ? train_images : val_images) = hi;
    }
    const std::string train_path = FashionMnistSource::file_path(where.dir, Split::Train, true);
    if (spec.height != train_images.rows || spec.width != train_images.columns ||
        spec.channels != 1) {
      p.field = "dataset";
      p.problem = train_path + " holds " + std::to_string(train_images.rows) + "x" +
                  std::to_string(train_images.columns) + "x1 images but \"dataset\" says " +
                  std::to_string(spec.height) + "x" + std::to_string(spec.width) + "x" +
                  std::to_string(spec.channels);
      return p;
    }
    if (!pick(spec.train_size, train_images.count, train_path, "train_size", &p.train_size, &p) ||
        !pick(spec.val_size, val_images.count,
              FashionMnistSource::file_path(where.dir, Split::Val, true), "val_size", &p.val_size,
              &p))
      return p;
  } catch (const UsageError& e) {
    p.problem = e.what();
    return p;
  }
  p.ok = true;
  p.field.clear();
  return p;
}

DatasetProbe probe_image_folder(const DatasetSpec& spec, const std::string& override_path) {
  DatasetProbe p;
  p.dir = spec.path;
  p.origin = "\"dataset.train_dir\"";
  try {
    if (!override_path.empty()) throw UsageError(image_folder_data_override_problem());
    ImageFolderScan scan = scan_training_folder(spec.path);
    try {
      scan_validation_folder(scan, spec.path, spec.val_path);
    } catch (const UsageError& e) {
      p.field = "dataset.val_dir";
      p.problem = e.what();
      return p;
    }
    p.class_names = scan.classes;
    try {
      check_image_classes(scan, spec);
    } catch (const UsageError& e) {
      p.field = "dataset.classes";
      p.problem = e.what();
      return p;
    }
    p.train_size = static_cast<int64_t>(scan.train.size());
    p.val_size = static_cast<int64_t>(scan.val.size());
  } catch (const UsageError& e) {
    p.field = "dataset.train_dir";
    p.problem = e.what();
    return p;
  }
  p.ok = true;
  return p;
}

}  // namespace

void settle_dataset_sizes(Project& project, int64_t train_size, int64_t val_size) {
  if (!dataset_kind_info(project.dataset.kind).counted) return;
  project.dataset.train_size = train_size;
  project.dataset.val_size = val_size;
  const int64_t world = std::max(1, project.training.devices.world_size());
  for (VariantSpec& v : project.variants) {
    if (v.kind != VariantKind::Validation || val_size < world || val_size % world != 0) continue;
    int64_t batch = std::min(v.batch, val_size / world);
    while (batch > 1 && val_size % (batch * world) != 0) --batch;
    v.batch = batch;
  }
}

bool settle_dataset_sizes(Project& project, const DatasetProbe& probe) {
  if (!dataset_kind_info(project.dataset.kind).counted) return true;
  if (!probe.ok) return false;
  settle_dataset_sizes(project, probe.train_size, probe.val_size);
  return true;
}

DatasetProbe probe_dataset(const DatasetSpec& spec, const std::string& override_path) {
  if (spec.kind == DatasetKind::Synthetic) {
    DatasetProbe p;
    p.ok = true;
    p.train_size = spec.train_size;
    p.val_size = spec.val_size;
    return p;
  }
  if (spec.kind == DatasetKind::FashionMnist) return probe_fashion_mnist(spec, override_path);
  if (spec.kind == DatasetKind::ImageFolder) return probe_image_folder(spec, override_path);
  return probe_cifar(spec, override_path);
}

}  // namespace tr
