// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance --screenshots DIR` as a user runs it: without a display it
// still renders a PNG of each view and exits 0; a bad folder or a bad
// project file makes it exit 1 with a message that names it.
#include <QDir>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

namespace {

struct Run {
  int code = -1;
  QString err;
};

Run run(const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove(QStringLiteral("QT_QPA_PLATFORM"));  // the program must pick offscreen itself
  env.remove(QStringLiteral("DISPLAY"));
  env.remove(QStringLiteral("WAYLAND_DISPLAY"));
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(TR_WORKBENCH), args);
  // Generous: the project's screenshots include a short validated training run,
  // which on a loaded 2-core CI machine took over a minute.
  if (!p.waitForFinished(300000)) return {};
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
          QString::fromLocal8Bit(p.readAllStandardError())};
}

}  // namespace

class TestScreenshots : public QObject {
  Q_OBJECT

 private slots:
  void writesEveryViewWithoutADisplay() {
    QTemporaryDir dir;
    const QString out = dir.filePath("shots");
    const Run r = run({QStringLiteral("--screenshots"), out});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* name : {"designer.png", "memory.png"}) {
      const QImage image(QDir(out).filePath(QLatin1String(name)));
      QVERIFY2(!image.isNull(), name);
      QVERIFY(image.width() >= 800 && image.height() >= 600);
    }
  }

  void opensTheProjectGiven() {
    QTemporaryDir dir;
    const Run r = run({QStringLiteral(TR_PROJECTS_DIR "/resnet8-fashion.json"),
                       QStringLiteral("--screenshots"), dir.path()});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(QFile::exists(dir.filePath("memory.png")));
  }

  void badFolderIsAClearError() {
    QTemporaryDir dir;
    const QString file = dir.filePath("a-file");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const Run r = run({QStringLiteral("--screenshots"), file});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("a-file") && r.err.contains("not a folder"), qPrintable(r.err));
  }

  void badProjectIsAClearError() {
    QTemporaryDir dir;
    const Run r = run({dir.filePath("missing.json"), QStringLiteral("--screenshots"), dir.path()});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("missing.json"), qPrintable(r.err));
  }
};

QTEST_MAIN(TestScreenshots)
#include "test_screenshots.moc"
