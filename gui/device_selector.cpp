// SPDX-License-Identifier: GPL-3.0-or-later
#include "device_selector.h"

#include <renaissance/plan_report.h>
#include <renaissance/project_io.h>

namespace tr::gui {

namespace {

// The toolbar offers the usual doublings; a project may name any count
// (cpu:3 says so in its own entry, added when shown).
constexpr int kMaxCpuRanks = 8;

DeviceSet cuda_set(int first, int count) {
  DeviceSet d;
  d.kind = DeviceKind::CUDA;
  d.ids.clear();
  for (int i = 0; i < count; ++i) d.ids.push_back(first + i);
  return d;
}

}  // namespace

DeviceSelector::DeviceSelector(const DeviceScan& scan, QWidget* parent) : QComboBox(parent) {
  setSizeAdjustPolicy(QComboBox::AdjustToContents);
  setToolTip(tr("Devices the project trains on (part of the project)"));
  for (int ranks = 1; ranks <= kMaxCpuRanks; ranks *= 2) {
    DeviceSet d;
    d.kind = DeviceKind::CPU;
    d.ids.clear();
    for (int i = 0; i < ranks; ++i) d.ids.push_back(i);
    addChoice(ranks == 1 ? tr("CPU, 1 rank") : tr("CPU, %1 ranks").arg(ranks), d);
    // Whether BF16 precision can train here, and which build of the kernels runs.
    QString tip = tr("bfloat16 on this CPU: %1\nkernels: %2 build")
                      .arg(QString::fromStdString(cpu_bf16_text(scan.cpu_bf16)),
                           QString::fromStdString(scan.cpu_kernels));
    if (!scan.cpu_kernels_note.empty())
      tip += tr(" (%1)").arg(QString::fromStdString(scan.cpu_kernels_note));
    setItemData(count() - 1, tip, Qt::ToolTipRole);
  }
  for (const CudaDeviceInfo& dev : scan.cuda) {
    addChoice(tr("cuda:%1  %2 (%3)")
                  .arg(dev.index)
                  .arg(QString::fromStdString(dev.name),
                       QString::fromStdString(human_bytes(dev.memory_bytes))),
              cuda_set(dev.index, 1));
    const std::string no_bf16 = cuda_precision_problem(Precision::BF16, dev);
    setItemData(count() - 1,
                no_bf16.empty() ? tr("compute capability %1.%2: bfloat16 tensor cores")
                                      .arg(dev.cc_major)
                                      .arg(dev.cc_minor)
                                : QString::fromStdString(no_bf16),
                Qt::ToolTipRole);
  }
  const int gpus = static_cast<int>(scan.cuda.size());
  for (int count = 2; count <= gpus; count *= 2)
    addChoice(tr("cuda:0-%1  (%2 GPUs)").arg(count - 1).arg(count), cuda_set(0, count));
  connect(this, &QComboBox::currentIndexChanged, this, [this](int) {
    if (!updating_) emit devicesChosen(currentDevices());
  });
}

void DeviceSelector::addChoice(const QString& label, const DeviceSet& devices) {
  addItem(label, QString::fromStdString(devices.str()));
}

int DeviceSelector::indexOf(const DeviceSet& devices) const {
  return findData(QString::fromStdString(devices.str()));
}

void DeviceSelector::showDevices(const DeviceSet& devices) {
  updating_ = true;
  int index = indexOf(devices);
  if (index < 0 && devices.kind == DeviceKind::CPU) {
    addChoice(tr("CPU, %1 ranks").arg(devices.world_size()), devices);
    index = count() - 1;
  } else if (index < 0) {
    addChoice(tr("%1 (not on this machine)").arg(QString::fromStdString(devices.str())), devices);
    index = count() - 1;
  }
  setCurrentIndex(index);
  updating_ = false;
}

DeviceSet DeviceSelector::currentDevices() const {
  DeviceSet d;
  std::string error;
  if (!parse_device_set(currentData().toString().toStdString(), d, error)) return DeviceSet{};
  return d;
}

}  // namespace tr::gui
