// SPDX-License-Identifier: GPL-3.0-or-later
// The training settings panel on a real document: values typed as a user
// types them, each change one undo step (quick edits of one field merged),
// fields that follow the optimizer, the loader's own message for a global
// batch the ranks cannot share, and settings that survive a save and load.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include <renaissance/error.h>
#include <renaissance/project_io.h>
#include "project_document.h"
#include "set_devices_command.h"
#include "settings/set_training_command.h"
#include "settings/training_settings_panel.h"
#include "training_readiness.h"

using namespace tr;
using namespace tr::gui;

namespace {

Project load(const char* name) {
  return load_project(std::string(TR_PROJECTS_DIR) + "/" + name + ".json");
}

// What the loader says about `field` when it reads `p` back; empty if nothing.
QString loader_message(const Project& p, const std::string& field) {
  try {
    parse_project(project_to_json(p), "t.json");
  } catch (const ProjectError& e) {
    for (const Diagnostic& d : e.diagnostics())
      if (d.field == field) return QString::fromStdString(d.message);
  }
  return {};
}

struct Panel {
  ProjectDocument doc;
  TrainingSettingsPanel panel{&doc};

  explicit Panel(const char* name = "lenet-fashion") {
    // Reset after construction, as opening a file does with the panel docked.
    doc.reset(load(name), QString());
    panel.resize(420, 900);
    panel.show();
  }
  template <typename T>
  T* editor(const char* key) const {
    auto* w = qobject_cast<T*>(panel.fieldEditor(QString::fromLatin1(key)));
    if (!w) qFatal("no editor %s of that type", key);
    return w;
  }
  bool shown(const char* key) const {
    return panel.fieldEditor(QString::fromLatin1(key))->isVisibleTo(&panel);
  }
  QString message(const char* key) const { return panel.fieldMessage(QString::fromLatin1(key)); }
  QUndoStack* stack() { return doc.undoStack(); }
  const TrainingSpec& training() const { return doc.project().training; }
  void useDevices(const char* text) {
    DeviceSet d;
    std::string error;
    QVERIFY(parse_device_set(text, d, error));
    stack()->push(new SetDevicesCommand(&doc, doc.project().training.devices, d));
  }
};

void type(QAbstractSpinBox* box, const QString& text, bool enter = true) {
  box->setFocus();
  box->selectAll();
  QTest::keyClicks(box, text);
  if (enter) QTest::keyClick(box, Qt::Key_Return);
}

void type(QLineEdit* edit, const QString& text) {
  edit->setFocus();
  edit->selectAll();
  if (text.isEmpty())
    QTest::keyClick(edit, Qt::Key_Delete);
  else
    QTest::keyClicks(edit, text);
  QTest::keyClick(edit, Qt::Key_Return);
}

}  // namespace

class TestTrainingSettings : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QLocale::setDefault(QLocale::c()); }

  void showsTheProject() {
    Panel p;
    QCOMPARE(p.editor<QLineEdit>("name")->text(), QStringLiteral("lenet-fashion"));
    QVERIFY(p.editor<QDoubleSpinBox>("training.optimizer.lr")->value() == 0.05);
    QCOMPARE(p.editor<QDoubleSpinBox>("training.optimizer.weight_decay")->cleanText(),
             QStringLiteral("0.0005"));
    QCOMPARE(p.editor<QSpinBox>("training.global_batch")->value(), 128);
    QCOMPARE(p.editor<QLineEdit>("training.seed")->text(), QStringLiteral("42"));
    QCOMPARE(p.editor<QLineEdit>("dataset.mean")->text(), QStringLiteral("0.286041"));
    QVERIFY(!p.editor<QCheckBox>("training.sync_batch_norm")->isChecked());
    // SGD with a cosine schedule: its own fields only.
    QVERIFY(p.shown("training.optimizer.momentum"));
    QVERIFY(p.shown("training.optimizer.nesterov"));
    QVERIFY(!p.shown("training.optimizer.beta1"));
    QVERIFY(!p.shown("training.optimizer.trust_coefficient"));
    QVERIFY(p.shown("training.schedule.min_lr"));
    QVERIFY(!p.shown("training.schedule.gamma"));
    QVERIFY(!p.shown("training.ema.decay"));  // EMA is off

    // Another project replaces every value.
    p.doc.reset(load("resnet20"), QString());
    QCOMPARE(p.editor<QLineEdit>("dataset.mean")->text(), QStringLiteral("0.4914, 0.4822, 0.4465"));
    QCOMPARE(p.editor<QSpinBox>("dataset.random_crop_padding")->value(), 4);
    QVERIFY(p.editor<QCheckBox>("dataset.random_flip")->isChecked());
  }

  void typingTheLearningRateEditsTheProject() {
    Panel p;
    QVERIFY(!p.doc.isModified());
    auto* lr = p.editor<QDoubleSpinBox>("training.optimizer.lr");
    type(lr, QStringLiteral("3e-4"));
    QVERIFY(p.training().optimizer.lr == 3e-4);
    QVERIFY(p.doc.isModified());
    QCOMPARE(p.stack()->count(), 1);
    QCOMPARE(p.stack()->undoText(), QStringLiteral("Set learning rate"));
    // Shown as typed, not rounded to a fixed number of decimals.
    QCOMPARE(lr->cleanText(), QStringLiteral("0.0003"));
    // The rest of the training settings are untouched.
    QCOMPARE(p.training().optimizer.momentum, 0.9);
    QCOMPARE(p.training().global_batch, int64_t{128});
  }

  void quickEditsOfOneFieldAreOneUndoStep() {
    Panel p;
    auto* lr = p.editor<QDoubleSpinBox>("training.optimizer.lr");
    lr->setFocus();
    QTest::keyClick(lr, Qt::Key_Up);
    QTest::keyClick(lr, Qt::Key_Up);
    QTest::keyClick(lr, Qt::Key_Up);
    // Steps of a tenth of the decade, without binary noise.
    QVERIFY(p.training().optimizer.lr == 0.053);
    QCOMPARE(lr->cleanText(), QStringLiteral("0.053"));
    QCOMPARE(p.stack()->count(), 1);

    p.stack()->undo();
    QVERIFY(p.training().optimizer.lr == 0.05);
    QVERIFY(lr->value() == 0.05);
    QVERIFY(!p.doc.isModified());
    p.stack()->redo();
    QVERIFY(p.training().optimizer.lr == 0.053);
    QVERIFY(lr->value() == 0.053);

    // Another field between two edits keeps them apart.
    type(p.editor<QSpinBox>("training.epochs"), QStringLiteral("7"));
    QTest::keyClick(lr, Qt::Key_Up);
    QCOMPARE(p.stack()->count(), 3);
    QCOMPARE(p.training().epochs, int64_t{7});

    // Stepping back to where a step started leaves no step behind.
    QTest::keyClick(lr, Qt::Key_Down);
    QCOMPARE(p.stack()->count(), 2);
    QVERIFY(p.training().optimizer.lr == 0.053);
  }

  void switchingToAdamShowsItsFieldsAndKeepsTheOthers() {
    Panel p;
    type(p.editor<QDoubleSpinBox>("training.optimizer.lr"), QStringLiteral("0.02"));
    auto* type_box = p.editor<QComboBox>("training.optimizer.type");
    type_box->setCurrentIndex(type_box->findData(static_cast<int>(OptimizerKind::Adam)));
    QCOMPARE(p.training().optimizer.kind, OptimizerKind::Adam);
    QVERIFY(p.training().optimizer.lr == 0.02);
    QVERIFY(p.shown("training.optimizer.beta1"));
    QVERIFY(p.shown("training.optimizer.beta2"));
    QVERIFY(p.shown("training.optimizer.eps"));
    QVERIFY(!p.shown("training.optimizer.momentum"));
    QVERIFY(!p.shown("training.optimizer.nesterov"));
    QCOMPARE(p.editor<QDoubleSpinBox>("training.optimizer.eps")->cleanText(),
             QStringLiteral("1e-8"));
    QVERIFY(p.editor<QDoubleSpinBox>("training.optimizer.beta2")->value() == 0.999);

    type(p.editor<QDoubleSpinBox>("training.optimizer.beta2"), QStringLiteral("0.98"));
    QVERIFY(p.training().optimizer.beta2 == 0.98);
    // SGD again: its momentum was kept all along.
    type_box->setCurrentIndex(type_box->findData(static_cast<int>(OptimizerKind::SGD)));
    QVERIFY(p.shown("training.optimizer.momentum"));
    QVERIFY(!p.shown("training.optimizer.beta1"));
    QVERIFY(p.training().optimizer.momentum == 0.9);
    QVERIFY(p.training().optimizer.beta2 == 0.98);

    // Undoing the switch back shows Adam's fields again.
    p.stack()->undo();
    QCOMPARE(type_box->currentData().toInt(), static_cast<int>(OptimizerKind::Adam));
    QVERIFY(p.shown("training.optimizer.beta1"));
  }

  void scheduleAndEmaFieldsFollowTheirSwitches() {
    Panel p;
    auto* schedule = p.editor<QComboBox>("training.schedule.type");
    schedule->setCurrentIndex(schedule->findData(static_cast<int>(ScheduleKind::Step)));
    QCOMPARE(p.training().schedule.kind, ScheduleKind::Step);
    QVERIFY(p.shown("training.schedule.gamma"));
    QVERIFY(p.shown("training.schedule.step_epochs"));
    QVERIFY(!p.shown("training.schedule.min_lr"));
    type(p.editor<QSpinBox>("training.schedule.step_epochs"), QStringLiteral("2"));
    QCOMPARE(p.training().schedule.step_epochs, int64_t{2});

    p.editor<QCheckBox>("training.ema.enabled")->click();
    QVERIFY(p.training().ema);
    QVERIFY(p.shown("training.ema.decay"));
    p.stack()->undo();
    QVERIFY(!p.training().ema);
    QVERIFY(!p.shown("training.ema.decay"));
  }

  void aBatchTheRanksCannotShareIsRefusedWithTheLoadersMessage() {
    Panel p;
    p.useDevices("cpu:2");
    const int steps = p.stack()->count();
    auto* batch = p.editor<QSpinBox>("training.global_batch");
    type(batch, QStringLiteral("127"));

    Project expected = p.doc.project();
    expected.training.global_batch = 127;
    const QString why = loader_message(expected, "training.global_batch");
    QVERIFY(why.contains(QStringLiteral("not divisible")));
    QCOMPARE(p.message("training.global_batch"), why);
    // The project is as it was; the typed value is still there to correct.
    QCOMPARE(p.training().global_batch, int64_t{128});
    QCOMPARE(p.stack()->count(), steps);
    QCOMPARE(batch->value(), 127);

    // An edit elsewhere neither applies nor wipes it.
    type(p.editor<QSpinBox>("training.epochs"), QStringLiteral("5"));
    QCOMPARE(batch->value(), 127);
    QCOMPARE(p.message("training.global_batch"), why);
    QCOMPARE(p.training().global_batch, int64_t{128});

    type(batch, QStringLiteral("126"));
    QCOMPARE(p.training().global_batch, int64_t{126});
    QVERIFY(p.message("training.global_batch").isEmpty());
  }

  void theNameCannotBeEmptied() {
    Panel p;
    auto* name = p.editor<QLineEdit>("name");
    type(name, QString());
    Project expected = p.doc.project();
    expected.name.clear();
    QCOMPARE(p.message("name"), loader_message(expected, "name"));
    QCOMPARE(p.doc.project().name, std::string("lenet-fashion"));
    QCOMPARE(p.stack()->count(), 0);
    QCOMPARE(name->text(), QString());

    type(name, QStringLiteral("lenet-wide"));
    QCOMPARE(p.doc.project().name, std::string("lenet-wide"));
    QVERIFY(p.message("name").isEmpty());
    p.stack()->undo();
    QCOMPARE(name->text(), QStringLiteral("lenet-fashion"));
  }

  void normalisationNeedsOneValuePerChannel() {
    Panel p;
    auto* mean = p.editor<QLineEdit>("dataset.mean");
    type(mean, QStringLiteral("0.5, 0.25"));
    Project expected = p.doc.project();
    expected.dataset.mean = {0.5, 0.25};
    QCOMPARE(p.message("dataset.mean"), loader_message(expected, "dataset.mean"));
    QCOMPARE(p.doc.project().dataset.mean, std::vector<double>{0.286041});

    auto* stddev = p.editor<QLineEdit>("dataset.std");
    type(stddev, QStringLiteral("0"));
    QVERIFY(p.message("dataset.std").contains(QStringLiteral("expected a number > 0, got 0")));
    type(stddev, QStringLiteral("0.3"));
    QCOMPARE(p.doc.project().dataset.std, std::vector<double>{0.3});
    QVERIFY(p.message("dataset.std").isEmpty());
  }

  // CIFAR-10 comes with its shape, classes and usual statistics; its folder
  // is the same field, which says where it is looked for and shows the
  // probe's problem when the files are not there. One undo step goes back.
  void choosingCifarTakesItsShapeAndNamesItsFolder() {
    Panel p;
    auto* kind = p.editor<QComboBox>("dataset.kind");
    kind->setCurrentIndex(kind->findText(QStringLiteral("CIFAR-10")));
    const DatasetSpec& d = p.doc.project().dataset;
    QCOMPARE(d.kind, DatasetKind::Cifar10);
    QCOMPARE(d.height, int64_t{32});
    QCOMPARE(d.channels, int64_t{3});
    QCOMPARE(d.classes, int64_t{10});
    QCOMPARE(d.train_size, int64_t{50000});
    QCOMPARE(p.editor<QLineEdit>("dataset.mean")->text(), QStringLiteral("0.4914, 0.4822, 0.4465"));
    QVERIFY(p.shown("dataset.path"));
    QVERIFY(!p.shown("dataset.height"));
    auto* folder = p.editor<QLineEdit>("dataset.path");
    QCOMPARE(folder->placeholderText(), QStringLiteral("the default location"));
    QVERIFY2(
        folder->toolTip().contains(QStringLiteral("Left empty: $TR_CIFAR10_DIR when it is set")),
        qPrintable(folder->toolTip()));
    const QString absent = QDir::tempPath() + QStringLiteral("/tr-no-cifar-here");
    type(folder, absent);
    QCOMPARE(p.doc.project().dataset.path, absent.toStdString());
    QVERIFY2(p.message("dataset.path").contains(QStringLiteral("CIFAR-10 folder ") + absent),
             qPrintable(p.message("dataset.path")));
    QVERIFY(p.message("dataset.path").contains(QStringLiteral("cifar-10-binary.tar.gz")));
    // Saved with its own folder key, and read back the same.
    const Project back = parse_project(project_to_json(p.doc.project()), "t.json");
    QCOMPARE(back.dataset.kind, DatasetKind::Cifar10);
    QCOMPARE(back.dataset.path, absent.toStdString());
    p.stack()->undo();
    p.stack()->undo();
    QCOMPARE(p.doc.project().dataset.kind, DatasetKind::FashionMnist);
    QCOMPARE(p.doc.project().dataset.channels, int64_t{1});
    QCOMPARE(p.editor<QLineEdit>("dataset.mean")->text(), QStringLiteral("0.286041"));
  }

  // Image folders keep the project's shape and show both folders, the
  // shape fields and the choice for unreadable images, not the sizes, which
  // the folders decide; a missing folder is told under its field.
  void imageFoldersShowTheirFolders() {
    Panel p;
    auto* kind = p.editor<QComboBox>("dataset.kind");
    kind->setCurrentIndex(kind->findText(QStringLiteral("Image folders")));
    const DatasetSpec& d = p.doc.project().dataset;
    QCOMPARE(d.kind, DatasetKind::ImageFolder);
    QCOMPARE(d.height, int64_t{28});
    QCOMPARE(d.channels, int64_t{1});
    for (const char* key : {"dataset.path", "dataset.val_dir", "dataset.on_bad_image",
                            "dataset.height", "dataset.classes"})
      QVERIFY2(p.shown(key), key);
    QVERIFY(!p.shown("dataset.train_size"));
    // A problem about the training folder (the file's "dataset.train_dir")
    // is the Folder field's, in the Problems panel and under the field; each
    // empty field's hint says what goes in it.
    QCOMPARE(p.panel.fieldLabel(QStringLiteral("dataset.train_dir")), QStringLiteral("Folder"));
    QCOMPARE(p.panel.fieldLabel(QStringLiteral("dataset.val_dir")),
             QStringLiteral("Validation folder"));
    QVERIFY2(p.message("dataset.path").startsWith(QStringLiteral("no training folder is set")),
             qPrintable(p.message("dataset.path")));
    QCOMPARE(p.editor<QLineEdit>("dataset.path")->placeholderText(),
             QStringLiteral("one subfolder per class"));
    QCOMPARE(p.editor<QLineEdit>("dataset.val_dir")->placeholderText(),
             QStringLiteral("one subfolder per class"));
    QCOMPARE(p.editor<QLineEdit>("dataset.class_names")->placeholderText(),
             QStringLiteral("none: the class folders' names"));
    const QString train = QDir::tempPath() + QStringLiteral("/tr-no-train-folder");
    type(p.editor<QLineEdit>("dataset.path"), train);
    QVERIFY2(p.message("dataset.path")
                 .contains(QStringLiteral("the training folder ") + train +
                           QStringLiteral(" does not exist")),
             qPrintable(p.message("dataset.path")));
    // The file's two words, stop and skip, as the form's two choices.
    auto* bad = p.editor<QComboBox>("dataset.on_bad_image");
    QCOMPARE(bad->count(), 2);
    bad->setCurrentIndex(bad->findText(QStringLiteral("Leave it out")));
    QVERIFY(p.doc.project().dataset.skip_bad_images);
    // Browse… for the validation folder starts beside the training folder.
    QCOMPARE(p.panel.browseStart(QStringLiteral("dataset.val_dir")), QDir::tempPath());
    type(p.editor<QLineEdit>("dataset.val_dir"), QStringLiteral("/somewhere/val"));
    QCOMPARE(p.panel.browseStart(QStringLiteral("dataset.val_dir")),
             QStringLiteral("/somewhere/val"));
    // A sample's weights are not kept beside it: from home.
    QCOMPARE(p.panel.browseStart(QStringLiteral("training.init_from")), QDir::homePath());
    QCOMPARE(p.doc.project().dataset.val_path, std::string("/somewhere/val"));
  }

  void settingsRoundTripThroughAFile() {
    Panel p;
    p.useDevices("cpu:2");
    auto* sync = p.editor<QCheckBox>("training.sync_batch_norm");
    sync->click();
    QVERIFY(p.training().sync_batch_norm);
    QCOMPARE(p.stack()->undoText(), QStringLiteral("Set synchronised BatchNorm"));
    // Above what a signed 64-bit integer holds: the loader takes any uint64.
    type(p.editor<QLineEdit>("training.seed"), QStringLiteral("12345678901234567890"));
    QCOMPARE(p.training().seed, uint64_t{12345678901234567890u});
    p.editor<QCheckBox>("dataset.random_flip")->click();

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("p.json")).toStdString();
    save_project(p.doc.project(), path);
    Project back = load_project(path);
    QVERIFY(back.training.sync_batch_norm);
    QCOMPARE(back.training.seed, uint64_t{12345678901234567890u});
    QVERIFY(back.dataset.random_flip);
    QCOMPARE(back.training.devices.str(), std::string("cpu:2"));

    // Opened again, the panel shows it; off again, the file says so.
    p.doc.reset(back, QString::fromStdString(path));
    QVERIFY(sync->isChecked());
    sync->click();
    save_project(p.doc.project(), path);
    QVERIFY(!load_project(path).training.sync_batch_norm);
  }

  // BF16 is one of the choices, saved as "bf16"; the readiness check blocks
  // it on a CPU without BF16 instructions and on a GPU before compute
  // capability 8.0, naming the precision field.
  void bf16IsChosenSavedAndCheckedAgainstTheDevices() {
    Panel p;
    auto* box = p.editor<QComboBox>("training.precision");
    box->setCurrentIndex(box->findData(static_cast<int>(Precision::BF16)));
    QCOMPARE(p.training().precision, Precision::BF16);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("p.json")).toStdString();
    save_project(p.doc.project(), path);
    const Project back = load_project(path);
    QCOMPARE(back.training.precision, Precision::BF16);

    DatasetProbe probe;
    probe.ok = true;
    probe.train_size = 60000;
    auto blocked_on_precision = [&](const Project& pr, const DeviceScan& scan) {
      for (const Diagnostic& d : check_training_readiness(pr, probe, nullptr, scan).blocking)
        if (d.field == "training.precision") return QString::fromStdString(d.message);
      return QString();
    };
    DeviceScan none;
    QVERIFY(blocked_on_precision(back, none).contains("AVX-512 BF16 or AMX"));
    DeviceScan avx;
    avx.cpu_bf16.avx512_bf16 = true;
    QVERIFY(blocked_on_precision(back, avx).isEmpty());
    Project on_gpu = back;
    on_gpu.training.devices.kind = DeviceKind::CUDA;
    on_gpu.training.devices.ids = {0};
    DeviceScan volta;
    volta.cuda.push_back({});
    volta.cuda[0].name = "Tesla V100";
    volta.cuda[0].cc_major = 7;
    const QString why = blocked_on_precision(on_gpu, volta);
    QVERIFY2(why.contains("cuda:0 (Tesla V100) has 7.0"), qPrintable(why));
    volta.cuda[0].cc_major = 9;
    QVERIFY(blocked_on_precision(on_gpu, volta).isEmpty());
    on_gpu.training.precision = Precision::AMP;
    volta.cuda[0].cc_major = 7;
    QVERIFY(blocked_on_precision(on_gpu, volta).isEmpty());
  }

  void followsAnUndoneDeviceChange() {
    Panel p;
    auto* devices = p.panel.findChild<QLabel*>(QStringLiteral("training.devices"));
    QVERIFY(devices);
    QVERIFY(devices->text().startsWith(QStringLiteral("cpu:1: 1 rank, 128 samples")));
    p.useDevices("cpu:2");
    QVERIFY(devices->text().startsWith(QStringLiteral("cpu:2: 2 ranks, 64 samples")));

    auto* batch = p.editor<QSpinBox>("training.global_batch");
    type(batch, QStringLiteral("127"));
    QVERIFY(!p.message("training.global_batch").isEmpty());
    p.stack()->undo();  // back to one rank
    QCOMPARE(p.training().devices.str(), std::string("cpu:1"));
    QVERIFY(devices->text().startsWith(QStringLiteral("cpu:1: 1 rank, 128 samples")));
    // One rank takes 127, but an undo must not apply it behind the user's back.
    QCOMPARE(p.training().global_batch, int64_t{128});
    QCOMPARE(batch->value(), 127);
    QVERIFY(p.message("training.global_batch").contains(QStringLiteral("press Enter")));
    QTest::keyClick(batch, Qt::Key_Return);
    QCOMPARE(p.training().global_batch, int64_t{127});
    QVERIFY(p.message("training.global_batch").isEmpty());

    // Ranks that cannot share the project's own batch: the loader's message.
    p.useDevices("cpu:8");
    QCOMPARE(p.message("training.global_batch"),
             loader_message(p.doc.project(), "training.global_batch"));
    QVERIFY(!p.message("training.global_batch").isEmpty());
    p.stack()->undo();
    QVERIFY(p.message("training.global_batch").isEmpty());
  }

  void undoingASettingKeepsTheDevices() {
    Panel p;
    type(p.editor<QSpinBox>("training.epochs"), QStringLiteral("9"));
    // Devices changed outside the history: a settings step never carries its own along.
    DeviceSet two;
    std::string error;
    QVERIFY(parse_device_set("cpu:2", two, error));
    p.doc.setDevices(two);
    p.stack()->undo();
    QCOMPARE(p.training().epochs, int64_t{3});
    QCOMPARE(p.training().devices.str(), std::string("cpu:2"));
  }

  void pendingTextIsCommittedOnRequest() {
    Panel p;
    auto* lr = p.editor<QDoubleSpinBox>("training.optimizer.lr");
    type(lr, QStringLiteral("0.2"), false);
    QVERIFY(p.training().optimizer.lr == 0.05);  // not committed while still being typed
    auto* description = p.editor<QLineEdit>("description");
    description->setText(QStringLiteral("LeNet, slower"));
    p.panel.commitPendingEdits();
    QVERIFY(p.training().optimizer.lr == 0.2);
    QCOMPARE(p.doc.project().description, std::string("LeNet, slower"));
    QCOMPARE(p.stack()->count(), 2);
  }

  void commandsMergeOnlyTheSameField() {
    ProjectDocument doc;
    doc.reset(load("lenet-fashion"), QString());
    ProjectSettings a = doc.settings(), b = a, c = a;
    b.training.epochs = 4;
    c.training.epochs = 5;
    doc.undoStack()->push(new SetTrainingCommand(&doc, a, b, QStringLiteral("training.epochs"),
                                                 QStringLiteral("epochs")));
    doc.undoStack()->push(new SetTrainingCommand(&doc, b, c, QStringLiteral("training.epochs"),
                                                 QStringLiteral("epochs")));
    QCOMPARE(doc.undoStack()->count(), 1);
    ProjectSettings d = c;
    d.training.seed = 7;
    doc.undoStack()->push(new SetTrainingCommand(&doc, c, d, QStringLiteral("training.seed"),
                                                 QStringLiteral("seed")));
    QCOMPARE(doc.undoStack()->count(), 2);
    doc.undoStack()->undo();
    doc.undoStack()->undo();
    QCOMPARE(doc.project().training.epochs, int64_t{3});
    QCOMPARE(doc.project().training.seed, uint64_t{42});
  }
};

QTEST_MAIN(TestTrainingSettings)
#include "test_training_settings.moc"
