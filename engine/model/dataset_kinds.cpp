// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/dataset_kinds.h>

#include <cstdlib>
#include <stdexcept>

namespace tr {

namespace {

const char* const kFashionNames[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                     "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
const char* const kCifar10Names[] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                     "dog",      "frog",       "horse", "ship", "truck"};

const DatasetKindInfo kKinds[] = {
    {.kind = DatasetKind::FashionMnist,
     .name = "fashion-mnist",
     .title = "Fashion-MNIST",
     .files = true,
     .fixed_shape = true,
     .folder_key = "path",
     .env_var = kFashionMnistEnvVar,
     .default_dir = kFashionMnistDefaultDir,
     .holds = "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz "
              "and t10k-labels-idx1-ubyte.gz",
     .obtain = "install the Debian package dataset-fashion-mnist",
     .height = 28,
     .width = 28,
     .channels = 1,
     .classes = 10,
     .train_size = 60000,
     .val_size = 10000,
     .mean = {0.286041},
     .std = {0.353024},
     .class_names = kFashionNames},
    {.kind = DatasetKind::Cifar10,
     .name = "cifar-10",
     .title = "CIFAR-10",
     .files = true,
     .fixed_shape = true,
     .folder_key = "dir",
     .env_var = "TR_CIFAR10_DIR",
     .default_dir = "~/.local/share/renaissance/datasets/cifar-10-batches-bin",
     .holds = "data_batch_1.bin to data_batch_5.bin and test_batch.bin",
     .obtain = "download the binary version (cifar-10-binary.tar.gz) from "
               "https://www.cs.toronto.edu/~kriz/cifar.html; unpacked, its folder "
               "cifar-10-batches-bin holds them",
     .height = 32,
     .width = 32,
     .channels = 3,
     .classes = 10,
     .train_size = 50000,
     .val_size = 10000,
     .mean = {0.4914, 0.4822, 0.4465},
     .std = {0.2470, 0.2435, 0.2616},
     .class_names = kCifar10Names},
    {.kind = DatasetKind::Cifar100,
     .name = "cifar-100",
     .title = "CIFAR-100",
     .files = true,
     .fixed_shape = true,
     .folder_key = "dir",
     .env_var = "TR_CIFAR100_DIR",
     .default_dir = "~/.local/share/renaissance/datasets/cifar-100-binary",
     .holds = "train.bin and test.bin",
     .obtain = "download the binary version (cifar-100-binary.tar.gz) from "
               "https://www.cs.toronto.edu/~kriz/cifar.html; unpacked, its folder "
               "cifar-100-binary holds them",
     .height = 32,
     .width = 32,
     .channels = 3,
     .classes = 100,
     .train_size = 50000,
     .val_size = 10000,
     .mean = {0.5071, 0.4865, 0.4409},
     .std = {0.2673, 0.2564, 0.2762}},
    {.kind = DatasetKind::ImageFolder,
     .name = "image-folder",
     .title = "Image folders",
     .files = true,
     .counted = true,
     .folder_key = "train_dir",
     .holds = "one subfolder per class, named after it, of PNG or JPEG images",
     .obtain = "make one such folder for training and another for validation"},
    {.kind = DatasetKind::Synthetic, .name = "synthetic", .title = "Synthetic"},
};

}  // namespace

std::span<const DatasetKindInfo> dataset_kinds() {
  return kKinds;
}

const DatasetKindInfo& dataset_kind_info(DatasetKind kind) {
  for (const DatasetKindInfo& k : kKinds)
    if (k.kind == kind) return k;
  throw std::logic_error("dataset kind " + std::to_string(static_cast<int>(kind)) +
                         " has no entry in dataset_kinds.cpp");
}

std::vector<std::string> dataset_class_names(const DatasetSpec& spec) {
  if (static_cast<int64_t>(spec.class_names.size()) == spec.classes) return spec.class_names;
  const DatasetKindInfo& info = dataset_kind_info(spec.kind);
  std::vector<std::string> names;
  for (int64_t c = 0; c < spec.classes; ++c)
    names.push_back(info.class_names && spec.classes == info.classes
                        ? info.class_names[c]
                        : "class " + std::to_string(c));
  return names;
}

std::string default_dataset_dir(const DatasetKindInfo& info) {
  const std::string dir = info.default_dir;
  if (dir.rfind("~/", 0) != 0) return dir;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "") + dir.substr(1);
}

}  // namespace tr
