// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/dataset_kinds.h>

#include <cstdlib>
#include <stdexcept>

#include <renaissance/dataset_probe.h>

namespace tr {

namespace {

const DatasetKindInfo kKinds[] = {
    {DatasetKind::FashionMnist,
     "fashion-mnist",
     "Fashion-MNIST",
     true,
     "path",
     kFashionMnistEnvVar,
     kFashionMnistDefaultDir,
     "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and "
     "t10k-labels-idx1-ubyte.gz",
     "install the Debian package dataset-fashion-mnist",
     28,
     28,
     1,
     10,
     60000,
     10000,
     {0.286041},
     {0.353024}},
    {DatasetKind::Cifar10,
     "cifar-10",
     "CIFAR-10",
     true,
     "dir",
     "TR_CIFAR10_DIR",
     "~/.local/share/renaissance/datasets/cifar-10-batches-bin",
     "data_batch_1.bin to data_batch_5.bin and test_batch.bin",
     "download the binary version (cifar-10-binary.tar.gz) from https://www.cs.toronto.edu/"
     "~kriz/cifar.html; unpacked, its folder cifar-10-batches-bin holds them",
     32,
     32,
     3,
     10,
     50000,
     10000,
     {0.4914, 0.4822, 0.4465},
     {0.2470, 0.2435, 0.2616}},
    {DatasetKind::Cifar100,
     "cifar-100",
     "CIFAR-100",
     true,
     "dir",
     "TR_CIFAR100_DIR",
     "~/.local/share/renaissance/datasets/cifar-100-binary",
     "train.bin and test.bin",
     "download the binary version (cifar-100-binary.tar.gz) from https://www.cs.toronto.edu/"
     "~kriz/cifar.html; unpacked, its folder cifar-100-binary holds them",
     32,
     32,
     3,
     100,
     50000,
     10000,
     {0.5071, 0.4865, 0.4409},
     {0.2673, 0.2564, 0.2762}},
    {DatasetKind::Synthetic, "synthetic", "Synthetic", false},
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

std::string default_dataset_dir(const DatasetKindInfo& info) {
  const std::string dir = info.default_dir;
  if (dir.rfind("~/", 0) != 0) return dir;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "") + dir.substr(1);
}

}  // namespace tr
