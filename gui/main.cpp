// deepcanvas [project.dcproj]: the desktop app.
#include "gui/main_window.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QIcon>
#include <QStyle>
#include <QStyleFactory>
#include <QTimer>

int main(int argc, char** argv) {
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

  QCommandLineParser cli;
  cli.setApplicationDescription("Build, train and test neural networks visually.");
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument("project", "A .dcproj project to open.", "[project.dcproj]");
  cli.process(app);

  dc::gui::MainWindow w;
  w.show();
  const QStringList args = cli.positionalArguments();
  QTimer::singleShot(0, &w, [&w, args] {
    if (!args.isEmpty()) w.openFile(QFileInfo(args.first()).absoluteFilePath());
    w.offerRecovery();
  });
  return app.exec();
}
