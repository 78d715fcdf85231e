// docs/images/experiments.png: the Experiments tab after a small real sweep
// of the sample project (bundled subset), grabbed offscreen at 1280x720:
//   QT_QPA_PLATFORM=offscreen build/bin/experiments_screenshot OUT.png [--trials=N]
//     [--epochs=E] [--steps=S]
// The sweep runs from the tab (Start) in a scratch copy of the project, so
// its state file does not land in sample_data/. Not a test: it only draws.
#include "gui/experiments_panel.h"
#include "gui/main_window.h"
#include "gui/project_context.h"

#include <QApplication>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <cstdio>

int main(int argc, char** argv) {
  QStandardPaths::setTestModeEnabled(true);  // no settings from a real session
  QApplication app(argc, argv);
  QApplication::setOrganizationName("DeepCanvasScreenshots");
  const QStringList args = QApplication::arguments();
  if (args.size() < 2) {
    std::fprintf(stderr,
                 "usage: experiments_screenshot OUT.png [--trials=N] [--epochs=E] [--steps=S]\n");
    return 2;
  }
  int trials = 8, epochs = 3, steps = 40;
  for (const QString& a : args) {
    if (a.startsWith("--trials=")) trials = a.mid(9).toInt();
    if (a.startsWith("--epochs=")) epochs = a.mid(9).toInt();
    if (a.startsWith("--steps=")) steps = a.mid(8).toInt();
  }
  dc::gui::MainWindow w;
  w.resize(1280, 720);
  w.show();
  QTemporaryDir dir;
  if (!w.openFile(QStringLiteral(DC_SOURCE_DIR "/sample_data/sample_project.dcproj")) ||
      !w.saveFile(dir.filePath("sample.dcproj")))
    return 1;
  dc::gui::DatasetSource s;
  s.kind = dc::gui::DatasetSource::Kind::Sample;
  w.context()->loadDataset(s);
  w.showMode(dc::gui::MainWindow::Mode::Experiments);
  dc::gui::ExperimentsPanel* p = w.experimentsPanel();
  p->setSpace({"lr=log:3e-4:1e-2", "batch=choice:32,64,128", "conv1.filters=int:16:64"});
  dc::SweepOptions o;
  o.trials = trials;
  o.epochs = epochs;
  p->setOptions(o);
  p->setStepsPerEpochLimit(steps);
  QSignalSpy done(p, &dc::gui::ExperimentsPanel::finished);
  if (!p->start() || !done.wait(1800000)) {
    std::fprintf(stderr, "%s\n", qPrintable(p->messageText()));
    return 1;
  }
  QTest::qWait(300);
  return w.grab().save(args[1]) ? 0 : 1;
}
