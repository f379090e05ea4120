// SPDX-License-Identifier: GPL-3.0-or-later
// The memory view's exports: the plan as JSON (the same document as
// `renaissance-cli plan --json`, plus whether it fits the devices) and as
// CSV (one row per DTensor per variant), written atomically.
#pragma once

#include <QByteArray>
#include <QString>

#include <renaissance/compiled_plan.h>

namespace tr::gui {

QByteArray plan_json(const CompiledPlan& cp, const QString& fits);
// Header: variant,id,name,layer,region,shape,dtype,padded_c,offset,slot_bytes
QByteArray plan_csv(const CompiledPlan& cp);
// Writes the whole file or nothing; false with `error` saying what and where.
bool write_export(const QString& path, const QByteArray& data, QString* error);

}  // namespace tr::gui
