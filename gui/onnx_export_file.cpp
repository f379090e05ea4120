// SPDX-License-Identifier: GPL-3.0-or-later
#include "onnx_export_file.h"

#include <QCoreApplication>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/onnx_export.h>
#include <renaissance/predict.h>

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct OnnxExportText {
  Q_DECLARE_TR_FUNCTIONS(tr::gui::MainWindow)
};

}  // namespace

bool export_onnx_file(const Project& project, const QString& checkpoint, const QString& out,
                      QString* message) {
  try {
    const Checkpoint c = read_checkpoint(checkpoint.toStdString());
    if (c.project_name != project.name) {
      *message = OnnxExportText::tr("%1 is a checkpoint of '%2', not of the open project '%3'")
                     .arg(checkpoint, QString::fromStdString(c.project_name),
                          QString::fromStdString(project.name));
      return false;
    }
    OnnxExportOptions options;
    options.class_names = folder_class_names(project.dataset);
    const OnnxExportSummary s = export_onnx(project, c, out.toStdString(), options);
    *message = OnnxExportText::tr(
                   "Exported %1: %2 ONNX nodes, %3 parameters (%4 weights of step %5), output '%6'")
                   .arg(out)
                   .arg(s.nodes)
                   .arg(s.parameters)
                   .arg(s.used_ema ? OnnxExportText::tr("EMA") : OnnxExportText::tr("trained"))
                   .arg(c.position.step)
                   .arg(QString::fromStdString(s.output));
    return true;
  } catch (const ProjectError& e) {
    *message = OnnxExportText::tr("The design cannot be exported: %1")
                   .arg(QString::fromStdString(e.what()));
  } catch (const UsageError& e) {
    *message = QString::fromStdString(e.what());
  }
  return false;
}

}  // namespace tr::gui
