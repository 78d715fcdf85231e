// deepcanvas [project.dcproj]: the desktop app.
//   --version              build options, without needing a display
//   --screenshot FILE.png  open, render the window to FILE and quit (smoke
//                          tests, e.g. the package test, run it offscreen)
#include "gui/main_window.h"
#include "gui/theme.h"

#include <deepcanvas/device.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/parallel.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QIcon>
#include <QStyle>
#include <QStyleFactory>
#include <QTimer>
#include <QUrl>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  dc::restart_with_openmp_defaults(argv);
  // Before QApplication, which needs a display.
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--version") || !std::strcmp(argv[i], "-v")) {
      std::printf(
          "deepcanvas %s (OpenCV: %s, GEMM: %s, convolutions: %s, OpenMP waits: %s, CUDA: %s)\n",
          DC_VERSION, DC_OPENCV ? "on" : "off", dc::gemm_backend_name(), dc::cpu_conv_path(),
          dc::openmp_wait_setting().c_str(), dc::cuda_status().c_str());
      return 0;
    }

  // Without a display Qt's platform plugin aborts with a core dump; say what
  // is missing and what works instead. An explicit QT_QPA_PLATFORM
  // (offscreen, vnc, ...) is the user's choice and is left to Qt.
  const char* qpa = std::getenv("QT_QPA_PLATFORM");
  const char* x11 = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  if ((!qpa || !*qpa) && (!x11 || !*x11) && (!wayland || !*wayland)) {
    std::fprintf(stderr,
                 "deepcanvas: no display to open a window on (DISPLAY and WAYLAND_DISPLAY are "
                 "unset).\nStart it from a desktop session, or train and predict without one "
                 "with deepcanvas-cli (deepcanvas-cli --help).\n");
    return 1;
  }

  QApplication app(argc, argv);
  QApplication::setOrganizationName("DeepCanvas");
  QApplication::setApplicationName("DeepCanvas");
  QApplication::setApplicationVersion(DC_VERSION);
  QApplication::setWindowIcon(QIcon(":/icons/deepcanvas.png"));
  // Fusion looks the same everywhere and follows the palette the platform
  // theme provides (light or dark); the platform's own style is kept where
  // it is a full desktop style.
  if (QApplication::style()->name().compare("windows", Qt::CaseInsensitive) == 0)
    QApplication::setStyle(QStyleFactory::create("Fusion"));
  dc::gui::applyTheme(dc::gui::savedTheme());  // View → Theme

  QCommandLineParser cli;
  cli.setApplicationDescription("Build, train and test neural networks visually.");
  cli.addHelpOption();
  QCommandLineOption shot("screenshot", "Render the window to FILE and quit.", "FILE");
  cli.addOption(shot);
  cli.addPositionalArgument(
      "project", "A .dcproj project to open, or an .onnx model to import (as if dropped).",
      "[project.dcproj|model.onnx]");
  cli.process(app);

  dc::gui::MainWindow w;
  const QString shot_file = cli.value(shot);
  if (!shot_file.isEmpty())
    w.setErrorHandler([](const QString& e) { std::fprintf(stderr, "%s\n", qPrintable(e)); });
  w.show();
  const QStringList args = cli.positionalArguments();
  QTimer::singleShot(0, &w, [&w, &app, args, shot_file] {
    // An empty argument (a launcher's unfilled %f) opens nothing, as none.
    const QString given = args.isEmpty() ? QString() : args.first();
    const QFileInfo f(given);
    bool ok = given.isEmpty() || (f.suffix().compare("onnx", Qt::CaseInsensitive) == 0
                                     ? w.openDropped({QUrl::fromLocalFile(f.absoluteFilePath())})
                                     : w.openFile(f.absoluteFilePath()));
    if (shot_file.isEmpty()) {
      w.offerRecovery();
      return;
    }
    ok = ok && w.grab().save(shot_file);
    app.exit(ok ? 0 : 1);
  });
  return app.exec();
}
