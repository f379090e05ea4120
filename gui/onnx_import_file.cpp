// SPDX-License-Identifier: GPL-3.0-or-later
#include "onnx_import_file.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/onnx_import.h>
#include <renaissance/project_io.h>

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct OnnxImportText {
  Q_DECLARE_TR_FUNCTIONS(tr::gui::MainWindow)
};

}  // namespace

QString import_project_path(const QString& onnx) {
  const QFileInfo model(onnx);
  const QDir dir = model.dir();
  const auto free = [&](const QString& stem) {
    return !QFileInfo::exists(dir.filePath(stem + QStringLiteral(".json"))) &&
           !QFileInfo::exists(dir.filePath(stem + QStringLiteral(".ckpt")));
  };
  QString stem = model.completeBaseName();
  if (!free(stem)) {
    const QString imported = stem + QStringLiteral("-imported");
    stem = imported;
    for (int n = 2; !free(stem); ++n) stem = imported + QStringLiteral("-%1").arg(n);
  }
  return dir.filePath(stem + QStringLiteral(".json"));
}

bool import_onnx_file(const QString& onnx, const QString& project, ImportedModel* out,
                      QString* message) {
  const QFileInfo file(project);
  const QString checkpoint = file.dir().filePath(file.completeBaseName() + QStringLiteral(".ckpt"));
  try {
    OnnxImportOptions options;
    options.name = file.completeBaseName().toStdString();
    OnnxImportResult r = import_onnx(onnx.toStdString(), options);
    // Training the imported project fine-tunes from the model's weights.
    r.project.training.init_from =
        path_from_project_file(project.toStdString(), checkpoint.toStdString());
    // The weights first (a project without them would look imported), and
    // taken back if the project cannot be written.
    write_checkpoint(r.checkpoint, checkpoint.toStdString());
    try {
      save_project(r.project, project.toStdString());
    } catch (...) {
      QFile::remove(checkpoint);
      throw;
    }
    int64_t layers = 0;
    for (const LayerNode& n : r.project.model.nodes)
      layers += n.type != LayerType::Input && n.type != LayerType::SoftmaxCrossEntropy;
    out->project = project;
    out->checkpoint = checkpoint;
    out->summary = OnnxImportText::tr(
                       "Imported %1: %2 ONNX nodes became %3 layers with %4 weights; the weights "
                       "are in %5")
                       .arg(QFileInfo(onnx).fileName())
                       .arg(r.onnx_nodes)
                       .arg(layers)
                       .arg(r.parameters)
                       .arg(checkpoint);
    out->notes.clear();
    for (const std::string& n : r.notes) out->notes << QString::fromStdString(n);
    return true;
  } catch (const ProjectError& e) {
    *message = OnnxImportText::tr("The model cannot become a project: %1")
                   .arg(QString::fromStdString(e.what()));
  } catch (const UsageError& e) {
    *message = QString::fromStdString(e.what());
  }
  return false;
}

}  // namespace tr::gui
