// docs/images/training-diagnosis.png and docs/images/benchmark-dialog.png
// (issue 14), at 1280×720, offscreen:
//   QT_QPA_PLATFORM=offscreen build/bin/diagnosis_screenshots OUT_DIR
// Trains the sample project in the app until the Training tab shows its
// predicted-vs-measured figures and a verdict, then opens Help → Benchmark
// This Machine… (measuring first when this machine has no cached result).
// Not a test: it only draws. The figures are this machine's, as it was.
#include "gui/benchmark_dialog.h"
#include "gui/main_window.h"
#include "gui/training_diagnosis.h"
#include "gui/training_panel.h"
#include "gui/training_session.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QLabel>
#include <QPainter>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <cstdio>

int main(int argc, char** argv) {
  QStandardPaths::setTestModeEnabled(true);  // no settings from a real session
  QApplication app(argc, argv);
  QApplication::setOrganizationName("DeepCanvasScreenshots");
  if (argc < 2) {
    std::fprintf(stderr, "usage: diagnosis_screenshots OUT_DIR\n");
    return 2;
  }
  const QString out = QString::fromLocal8Bit(argv[1]);
  dc::gui::MainWindow w;
  w.resize(1280, 720);
  w.show();
  if (!w.openFile(QStringLiteral(DC_SOURCE_DIR "/sample_data/sample_project.dcproj"))) return 1;
  w.showMode(dc::gui::MainWindow::Mode::Training);
  dc::gui::TrainingPanel* panel = w.trainingPanel();
  panel->setSettingsVisible(false);  // room for the log and the diagnosis
  QTemporaryDir local;
  panel->setEpochs(1);
  panel->setStepsPerEpochLimit(0);
  panel->setCheckpointDir(local.path());
  panel->diagnosisView()->setRefreshMs(1000);
  QSignalSpy done(panel->session(), &dc::gui::TrainingSession::finished);
  panel->startTraining();
  QElapsedTimer t;
  t.start();
  // A verdict and a few seconds of curves.
  while (!panel->diagnosisView()->verdictLabel()->text().contains("Diagnosis</b>") &&
         done.isEmpty() && t.elapsed() < 300000)
    QTest::qWait(100);
  QTest::qWait(4000);
  if (!w.grab().save(out + "/training-diagnosis.png")) return 1;
  panel->session()->stopAndWait();

  dc::gui::BenchmarkDialog* d = w.openBenchmark();
  d->resize(960, 400);
  t.restart();
  while (d->measuring() && t.elapsed() < 120000) QTest::qWait(100);
  QTest::qWait(300);
  // The dialog over the window, as on a screen.
  QPixmap screen = w.grab();
  QPainter p(&screen);
  p.fillRect(screen.rect(), QColor(0, 0, 0, 70));  // the window behind, dimmed
  const QPixmap dlg = d->grab();
  const QRect at((screen.width() - dlg.width()) / 2, (screen.height() - dlg.height()) / 2,
                 dlg.width(), dlg.height());
  p.drawPixmap(at.topLeft(), dlg);
  p.setPen(QPen(QColor(90, 90, 90), 1));
  p.drawRect(at.adjusted(-1, -1, 0, 0));
  p.end();
  if (!screen.save(out + "/benchmark-dialog.png")) return 1;
  return 0;
}
