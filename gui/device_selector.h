// SPDX-License-Identifier: GPL-3.0-or-later
// DeviceSelector: the toolbar's choice of devices, built from what the
// machine offers (CPU ranks always; CUDA devices when the driver reports
// them). A project's own device set that this machine lacks stays listed,
// marked as absent, so opening a project never silently changes it.
#pragma once

#include <QComboBox>

#include <renaissance/devices.h>
#include <renaissance/project.h>

namespace tr::gui {

class DeviceSelector : public QComboBox {
  Q_OBJECT

 public:
  explicit DeviceSelector(const DeviceScan& scan, QWidget* parent = nullptr);

  // Shows `devices` as the current choice without emitting devicesChosen.
  void showDevices(const DeviceSet& devices);
  DeviceSet currentDevices() const;

 signals:
  void devicesChosen(const DeviceSet& devices);

 private:
  void addChoice(const QString& label, const DeviceSet& devices);
  int indexOf(const DeviceSet& devices) const;

  bool updating_ = false;
};

}  // namespace tr::gui
