// docs/images/deploy_dialog.png: File → Export for Deployment… after a
// measurement, over the main window at 1280x720, offscreen:
//   QT_QPA_PLATFORM=offscreen build/bin/deploy_dialog_screenshot OUT.png [--steps=S]
// The sample project (bundled subset) is trained briefly from the Training
// tab first, in a scratch folder. Not a test: it only draws.
#include "gui/deploy_dialog.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui/training_panel.h"
#include "gui/training_session.h"

#include <QApplication>
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
  const QStringList args = QApplication::arguments();
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: deploy_dialog_screenshot OUT.png [--steps=S]\n");
    return 2;
  }
  int steps = 300;
  for (const QString& a : args)
    if (a.startsWith("--steps=")) steps = a.mid(8).toInt();
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
  dc::gui::TrainingPanel* t = w.trainingPanel();
  t->setEpochs(1);
  t->setStepsPerEpochLimit(steps);
  t->setCheckpointDir(dir.filePath("checkpoints"));
  QSignalSpy trained(t->session(), &dc::gui::TrainingSession::finished);
  t->startTraining();
  if (!t->problemText().isEmpty() || !trained.wait(1800000)) {
    std::fprintf(stderr, "training: %s\n", qPrintable(t->problemText()));
    return 1;
  }
  QTest::qWait(300);

  dc::gui::DeployDialog* d = w.openDeployDialog();
  dc::gui::DeployDialog::Options o;
  o.calibrate = 256;
  d->setOptions(o);
  QSignalSpy measured(d, &dc::gui::DeployDialog::measured);
  if (!d->measure() || !measured.wait(1800000) || !measured.first().at(0).toBool()) {
    std::fprintf(stderr, "measure: %s\n", qPrintable(d->statusText()));
    return 1;
  }
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
  return screen.save(args[1]) ? 0 : 1;
}
