// SPDX-License-Identifier: GPL-3.0-or-later
// renaissance: the workbench. `renaissance [PROJECT]` opens PROJECT (default:
// the last session's project and view, else projects/lenet-fashion.json);
// `--screenshots DIR` renders every view of PROJECT (or the default project)
// to a PNG in DIR offscreen and exits.
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QSettings>
#include <cstdio>
#include <initializer_list>

#include "main_window.h"
#include "template_catalog.h"
#include "theme.h"

namespace {

void print_error(const QString& text) {
  std::fprintf(stderr, "renaissance: %s\n", text.toLocal8Bit().constData());
}

// True when an argument is one of `names` (or `--name=value`).
bool has_argument(int argc, char** argv, std::initializer_list<const char*> names) {
  for (int i = 1; i < argc; ++i)
    for (const char* name : names) {
      const QByteArray arg(argv[i]);
      if (arg == name || arg.startsWith(QByteArray(name) + '=')) return true;
    }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Screenshots and --help need no display: pick the offscreen platform
  // before Qt starts, unless the caller chose one. A window does need one,
  // and Qt would only abort without it, so say so plainly.
  const bool no_display = qEnvironmentVariableIsEmpty("DISPLAY") &&
                          qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
                          qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
  if (no_display) {
    if (has_argument(argc, argv, {"--screenshots", "--help", "-h", "--version", "-v"})) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
    } else {
      print_error(QStringLiteral(
          "no display ($DISPLAY and $WAYLAND_DISPLAY are unset), so no window can open; run it "
          "in a desktop session, under `xvfb-run -a`, or with --screenshots DIR"));
      return 2;
    }
  } else if (has_argument(argc, argv, {"--screenshots"}) &&
             qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Renaissance"));
  QApplication::setApplicationName(QStringLiteral("Workbench"));
  QApplication::setApplicationVersion(QStringLiteral(TR_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Renaissance Workbench: design, compile and inspect convolutional networks."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("project"),
                               QStringLiteral("Project file to open (default: %1)")
                                   .arg(tr::gui::MainWindow::defaultProjectPath()),
                               QStringLiteral("[project.json]"));
  const QCommandLineOption screenshots(
      QStringLiteral("screenshots"),
      QStringLiteral("Write a PNG of each view into DIR (created if missing) and exit."),
      QStringLiteral("DIR"));
  parser.addOption(screenshots);
  const QCommandLineOption size(
      QStringLiteral("size"),
      QStringLiteral("Open the window at WIDTHxHEIGHT pixels (e.g. 1280x800) instead of the "
                     "remembered size."),
      QStringLiteral("WxH"));
  parser.addOption(size);
  const QCommandLineOption theme(
      QStringLiteral("theme"),
      QStringLiteral("system (follow the desktop), light or dark for this session; without it, "
                     "the one chosen in View > Theme."),
      QStringLiteral("THEME"));
  parser.addOption(theme);
  parser.process(app);
  {
    const QString key = parser.isSet(theme)
                            ? parser.value(theme)
                            : QSettings().value(QStringLiteral("view/theme")).toString();
    const std::optional<tr::gui::Theme> chosen =
        key.isEmpty() ? std::optional(tr::gui::Theme::System) : tr::gui::theme_from_key(key);
    if (!chosen && parser.isSet(theme)) {
      print_error(QStringLiteral("--theme %1: expected system, light or dark").arg(key));
      return 2;
    }
    tr::gui::apply_theme(chosen.value_or(tr::gui::Theme::System));
  }
  QSize window_size;
  if (parser.isSet(size)) {
    const QStringList wh = parser.value(size).split(QLatin1Char('x'));
    bool ok_w = false, ok_h = false;
    const int w = wh.size() == 2 ? wh[0].toInt(&ok_w) : 0;
    const int h = wh.size() == 2 ? wh[1].toInt(&ok_h) : 0;
    if (!ok_w || !ok_h || w < 640 || h < 480 || w > 16384 || h > 16384) {
      print_error(QStringLiteral("--size %1: expected WIDTHxHEIGHT, each from 640x480 to "
                                 "16384x16384 pixels, e.g. 1280x800")
                      .arg(parser.value(size)));
      return 2;
    }
    window_size = QSize(w, h);
  }
  if (parser.positionalArguments().size() > 1) {
    print_error(QStringLiteral("give at most one project file, not %1 (see --help)")
                    .arg(parser.positionalArguments().size()));
    return 2;
  }
  const bool shooting = parser.isSet(screenshots);

  tr::gui::MainWindow window;
  if (window_size.isValid()) window.resize(window_size);
  QString path = parser.positionalArguments().value(0);
  QString error;
  if (path.isEmpty() && !shooting) {
    // Where the user left off: the last session's project and view.
    if (!window.restoreSession(&error)) print_error(error);
    window.show();
    if (!error.isEmpty())
      QMessageBox::warning(&window, QObject::tr("Cannot open the project"), error);
    return app.exec();
  }
  if (path.isEmpty()) path = tr::gui::MainWindow::defaultProjectPath();
  if (path.isEmpty()) {
    window.newFromTemplate(tr::gui::project_templates().front().key, &error);
  } else if (!window.openProject(path, &error)) {
    print_error(error);
    if (shooting) return 1;
    // The window opens on an empty project; the message says what to fix.
    window.show();
    QMessageBox::warning(&window, QObject::tr("Cannot open the project"), error);
    return app.exec();
  }

  if (shooting) {
    if (!window.writeScreenshots(parser.value(screenshots), &error)) {
      print_error(error);
      return 1;
    }
    return 0;
  }
  window.show();
  return app.exec();
}
