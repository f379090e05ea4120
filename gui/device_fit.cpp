// SPDX-License-Identifier: GPL-3.0-or-later
#include "device_fit.h"

#include <algorithm>

#include <renaissance/plan_report.h>

namespace tr::gui {

namespace {

QString bytes(uint64_t b) {
  return QString::fromStdString(human_bytes(b));
}

}  // namespace

DeviceFit check_device_fit(const CompiledPlan& cp, const DeviceScan& scan) {
  const DeviceSet& devs = cp.project().training.devices;
  const QString name = QString::fromStdString(devs.str());
  const uint64_t need = cp.bytes_per_device();
  DeviceFit fit;
  if (devs.kind == DeviceKind::CPU) {
    const uint64_t all = need * static_cast<uint64_t>(cp.world_size());
    fit.checked = true;
    fit.fits = all <= scan.host_available_bytes;
    fit.text =
        QStringLiteral("%1 %2: %3 for %4, %5 of host memory available")
            .arg(fit.fits ? QStringLiteral("Fits") : QStringLiteral("Does NOT fit"), name,
                 bytes(all),
                 cp.world_size() == 1 ? QStringLiteral("1 rank arena")
                                      : QStringLiteral("%1 rank arenas").arg(cp.world_size()),
                 bytes(scan.host_available_bytes));
    return fit;
  }
  if (scan.cuda.empty()) {
    fit.text = QStringLiteral("Cannot check %1 here: %2")
                   .arg(name, QString::fromStdString(scan.cuda_status));
    return fit;
  }
  fit.checked = true;
  for (int id : devs.ids) {
    const auto it = std::find_if(scan.cuda.begin(), scan.cuda.end(),
                                 [&](const CudaDeviceInfo& d) { return d.index == id; });
    if (it == scan.cuda.end()) {
      fit.text = QStringLiteral("Does NOT fit %1: cuda:%2 is not present").arg(name).arg(id);
      return fit;
    }
    if (need > it->memory_bytes) {
      fit.text = QStringLiteral("Does NOT fit %1: %2 per device, cuda:%3 has %4")
                     .arg(name, bytes(need))
                     .arg(id)
                     .arg(bytes(it->memory_bytes));
      return fit;
    }
  }
  fit.fits = true;
  fit.text = QStringLiteral("Fits %1: %2 per device").arg(name, bytes(need));
  return fit;
}

}  // namespace tr::gui
