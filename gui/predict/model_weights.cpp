// SPDX-License-Identifier: GPL-3.0-or-later
#include "predict/model_weights.h"

#include <QCoreApplication>
#include <QFileInfo>

#include <renaissance/project_io.h>
#include <renaissance/run_store.h>

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct ModelWeightsText {
  Q_DECLARE_TR_FUNCTIONS(tr::gui::TryModelDialog)
};

QString status_text(store::RunStatus s) {
  const std::string_view name = store::run_status_name(s);
  return QString::fromUtf8(name.data(), static_cast<int>(name.size()));
}

}  // namespace

ModelWeights find_model_weights(const Project& project, const QString& store_path) {
  ModelWeights none;
  none.origin = ModelWeightsText::tr(
      "No weights yet: train the model (every run keeps the weights it ends with), or choose a "
      "checkpoint with Browse… and press Enter.");
  QString last_without;  // the newest run of the project that kept none, and why
  if (!store_path.isEmpty()) {
    try {
      const store::RunStore s(store_path.toStdString());
      const std::vector<store::RunSummary> runs = s.list_runs();
      for (auto r = runs.rbegin(); r != runs.rend(); ++r) {
        if (r->name != project.name) continue;
        const QString file = QString::fromStdString(r->final_weights);
        if (!file.isEmpty() && QFileInfo(file).isFile())
          return {file, ModelWeightsText::tr("the final weights of run #%1 (%2 at step %3)")
                            .arg(r->id)
                            .arg(status_text(r->status))
                            .arg(r->steps)};
        if (last_without.isEmpty())
          last_without =
              file.isEmpty()
                  ? ModelWeightsText::tr("run #%1 of %2 kept no weights (%3 at step %4)")
                        .arg(r->id)
                        .arg(QString::fromStdString(project.name), status_text(r->status))
                        .arg(r->steps)
                  : ModelWeightsText::tr("run #%1's final weights %2 are gone")
                        .arg(r->id)
                        .arg(file);
      }
    } catch (const std::exception& e) {
      last_without = ModelWeightsText::tr("the run store could not be read: %1")
                         .arg(QString::fromStdString(e.what()));
    }
  }
  if (!project.training.init_from.empty()) {
    const QString file =
        QString::fromStdString(resolve_project_path(project, project.training.init_from));
    if (QFileInfo(file).isFile())
      return {file, ModelWeightsText::tr("the project's starting weights (Start from weights)")};
  }
  if (!last_without.isEmpty()) none.origin += QStringLiteral(" (") + last_without + ')';
  return none;
}

}  // namespace tr::gui
