// SPDX-License-Identifier: GPL-3.0-or-later
// Dataset selection and the checks that tie a DatasetSpec to its files.
#include "data/dataset.h"

#include <cstdlib>

#include <renaissance/error.h>
#include "data/fashion_mnist.h"
#include "data/synthetic.h"

namespace tr {

DatasetLocation resolve_fashion_mnist_dir(const DatasetSpec& spec,
                                          const std::string& override_path) {
  if (!override_path.empty()) return {override_path, "the command line"};
  if (!spec.path.empty()) return {spec.path, "\"dataset.path\""};
  const char* env = std::getenv(kFashionMnistEnvVar);
  if (env && *env) return {env, std::string("$") + kFashionMnistEnvVar};
  return {kFashionMnistDefaultDir, "the default location"};
}

namespace {

std::unique_ptr<DataSource> load_fashion_mnist(const DatasetSpec& spec,
                                               const std::string& override_path) {
  const DatasetLocation where = resolve_fashion_mnist_dir(spec, override_path);
  if (spec.classes != FashionMnistSource::kClasses) {
    throw UsageError("\"dataset.classes\" is " + std::to_string(spec.classes) +
                     "; Fashion-MNIST has 10 classes");
  }
  const std::string hint =
      "install the Debian package dataset-fashion-mnist or set "
      "\"dataset.path\"; this folder came from " +
      where.origin;
  auto source =
      std::make_unique<FashionMnistSource>(where.dir, spec.train_size, spec.val_size, hint);
  const Shape s = source->sample_shape();
  if (spec.height != s.h || spec.width != s.w || spec.channels != s.c) {
    throw UsageError(FashionMnistSource::file_path(where.dir, Split::Train, true) + " holds " +
                     std::to_string(s.h) + "x" + std::to_string(s.w) + "x" + std::to_string(s.c) +
                     " images but \"dataset\" says " + std::to_string(spec.height) + "x" +
                     std::to_string(spec.width) + "x" + std::to_string(spec.channels) +
                     "; expected height, width, channels = " + std::to_string(s.h) + ", " +
                     std::to_string(s.w) + ", " + std::to_string(s.c));
  }
  return source;
}

}  // namespace

std::unique_ptr<DataSource> load_dataset(const DatasetSpec& spec, const std::string& override_path,
                                         uint64_t synthetic_seed) {
  switch (spec.kind) {
    case DatasetKind::FashionMnist:
      return load_fashion_mnist(spec, override_path);
    case DatasetKind::Synthetic:
      return std::make_unique<SyntheticSource>(spec.height, spec.width, spec.channels, spec.classes,
                                               spec.train_size, spec.val_size, synthetic_seed);
  }
  throw UsageError("\"dataset.kind\": unknown kind");
}

}  // namespace tr
