// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan_export.h"

#include <QCoreApplication>
#include <QSaveFile>
#include <nlohmann/json.hpp>

#include <renaissance/plan_report.h>

namespace tr::gui {

namespace {

// RFC 4180: quote a field that holds a comma, a quote or a line break.
QByteArray csv_field(const std::string& s) {
  QByteArray f = QByteArray::fromStdString(s);
  if (f.contains(',') || f.contains('"') || f.contains('\n')) {
    f.replace("\"", "\"\"");
    f = '"' + f + '"';
  }
  return f;
}

}  // namespace

QByteArray plan_json(const CompiledPlan& cp, const QString& fits) {
  nlohmann::json j = plan_report_json(cp);
  j["fits"] = fits.toStdString();
  return QByteArray::fromStdString(j.dump(2) + "\n");
}

QByteArray plan_csv(const CompiledPlan& cp) {
  QByteArray out = "variant,id,name,layer,region,shape,dtype,padded_c,offset,slot_bytes\n";
  for (size_t v = 0; v < cp.plans().size(); ++v) {
    const std::string& variant = cp.variants()[v].name;
    for (const DTensor& t : cp.plans()[v].dtensors()) {
      const std::string layer =
          t.owner >= 0 ? cp.project().model.nodes[static_cast<size_t>(t.owner)].id : std::string();
      const std::string shape = std::to_string(t.shape.n) + "x" + std::to_string(t.shape.h) + "x" +
                                std::to_string(t.shape.w) + "x" + std::to_string(t.shape.c);
      out += csv_field(variant) + ',' + QByteArray::number(t.id) + ',' + csv_field(t.name) + ',' +
             csv_field(layer) + ',' + csv_field(std::string(region_name(t.region))) + ',' +
             QByteArray::fromStdString(shape) + ',' +
             QByteArray::fromStdString(std::string(dtype_name(t.dtype))) + ',' +
             QByteArray::number(static_cast<qlonglong>(t.padded_c())) + ',' +
             QByteArray::number(static_cast<qulonglong>(t.offset)) + ',' +
             QByteArray::number(static_cast<qulonglong>(t.slot_bytes)) + '\n';
    }
  }
  return out;
}

bool write_export(const QString& path, const QByteArray& data, QString* error) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) {
    if (error)
      *error = QCoreApplication::translate("PlanExport", "Cannot write %1: %2")
                   .arg(path, f.errorString());
    return false;
  }
  f.write(data);
  if (!f.commit()) {
    if (error)
      *error = QCoreApplication::translate("PlanExport", "Cannot write %1: %2")
                   .arg(path, f.errorString());
    return false;
  }
  return true;
}

}  // namespace tr::gui
