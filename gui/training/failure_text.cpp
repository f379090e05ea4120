// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/failure_text.h"

#include <QCoreApplication>

#include <renaissance/error.h>
#include <renaissance/store_location.h>

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct FailureText {
  Q_DECLARE_TR_FUNCTIONS(tr::gui::TrainingView)
};

}  // namespace

QString failure_text(TrainingStage stage, const std::exception& error) {
  const QString what = QString::fromStdString(error.what());
  switch (stage) {
    case TrainingStage::Setup:
      if (dynamic_cast<const ProjectError*>(&error))
        return FailureText::tr(
                   "The project does not compile:\n%1\nFix it in the Design view and train again.")
            .arg(what);
      return FailureText::tr("Training could not be set up: %1").arg(what);
    case TrainingStage::Checkpoint:
      return FailureText::tr(
                 "Cannot resume: %1\nChoose a checkpoint written by a training run of this "
                 "project.")
          .arg(what);
    case TrainingStage::Store:
      return FailureText::tr(
                 "Cannot record the run in the run store: %1\nEvery run is recorded there; "
                 "set %2 to the path of another store file, or move the damaged file away, "
                 "and train again.")
          .arg(what, QString::fromLatin1(store::kStoreEnvVar));
    case TrainingStage::Training:
      break;
  }
  return FailureText::tr("Training failed: %1").arg(what);
}

}  // namespace tr::gui
