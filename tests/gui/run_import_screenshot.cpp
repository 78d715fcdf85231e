// Shows an imported PyTorch run over a local one, for docs/images/:
//   xvfb-run -s '-screen 0 1280x720x24' sh -c 'build/bin/run_import_screenshot RUN_DIR
//     --hold=5 | (read ready; import -window root OUT.png)'
// (it prints READY once the run is open).
// trains the sample project for STEPS steps (--steps=N, default 60) in the
// app, then opens RUN_DIR (a train.py --out folder) with File > Open Run...
// and stays up for --hold seconds so a screenshot of the display can be
// taken; with --save=PNG it also grabs the window itself.
// With --pytorch=N it instead starts File > Run with PyTorch… (export in
// RUN_DIR/export, output in RUN_DIR/run, 1 process on the CPU) and, once the
// Training tab has followed N of its steps, saves the window (--save, at
// 1280x720 under Xvfb: docs/images/run-with-pytorch.png came from
//   Xvfb :93 -screen 0 1280x720x24 &  DISPLAY=:93 run_import_screenshot DIR
//     --steps=120 --pytorch=150 --save=OUT.png
// ) while it still runs, then
// stops it.
// Not a test: it only draws.
#include "gui/main_window.h"
#include "gui/pytorch_run.h"
#include "gui/training_panel.h"
#include "gui/training_session.h"
#include "widgets/live_plot.h"

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
                 "usage: run_import_screenshot RUN_DIR [--steps=N] [--hold=S] [--save=PNG]\n");
    return 2;
  }
  int steps = 60, hold = 0, pytorch = 0;
  QString save;
  for (const QString& a : args) {
    if (a.startsWith("--steps=")) steps = a.mid(8).toInt();
    if (a.startsWith("--hold=")) hold = a.mid(7).toInt();
    if (a.startsWith("--save=")) save = a.mid(7);
    if (a.startsWith("--pytorch=")) pytorch = a.mid(10).toInt();
  }
  dc::gui::MainWindow w;
  w.resize(1280, 720);
  w.showMaximized();
  if (!w.openFile(QStringLiteral(DC_SOURCE_DIR "/sample_data/sample_project.dcproj"))) return 1;
  w.showMode(dc::gui::MainWindow::Mode::Training);
  dc::gui::TrainingPanel* panel = w.trainingPanel();
  QTemporaryDir local;
  panel->setEpochs(1);
  panel->setStepsPerEpochLimit(steps);
  panel->setCheckpointDir(local.path());
  QSignalSpy done(panel->session(), &dc::gui::TrainingSession::finished);
  panel->startTraining();
  if (!done.wait(600000)) return 1;
  if (pytorch > 0) {
    w.setErrorHandler([](const QString& e) { std::fprintf(stderr, "%s\n", qPrintable(e)); });
    dc::gui::PyTorchRunOptions o;
    o.export_dir = args[1] + "/export";
    o.out_dir = args[1] + "/run";
    o.epochs = 1;
    o.batch = 32;
    o.fresh_weights = true;  // comparable with the local run, not a continuation of it
    if (!w.runWithPyTorch(&o)) return 1;
    dc::widgets::LivePlot* loss = panel->lossPlot();
    while (loss->seriesCount() == 0 || loss->pointCount(0) < pytorch) {
      QTest::qWait(200);
      if (!w.pytorchRun()->running()) return 1;
    }
    QTest::qWait(300);
    std::printf("READY\n");
    std::fflush(stdout);
    if (!save.isEmpty() && !w.grab().save(save)) return 1;
    QTest::qWait(hold * 1000);
    w.pytorchRun()->stop();
    QSignalSpy ended(w.pytorchRun(), &dc::gui::PyTorchRun::finished);
    ended.wait(20000);
    return 0;
  }
  if (!w.openRun(args[1])) return 1;
  QTest::qWait(500);
  std::printf("READY\n");  // the caller's cue to capture the display
  std::fflush(stdout);
  if (!save.isEmpty() && !w.grab().save(save)) return 1;
  QTest::qWait(hold * 1000);
  return 0;
}
