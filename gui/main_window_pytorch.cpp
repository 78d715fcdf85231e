// File > Export > PyTorch Project and File > Open Run...: the way out to
// PyTorch's distributed training and the way back in.
#include <deepcanvas/errors.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/pytorch_export.h>

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>

#include "gui/main_window.h"
#include "gui/training_panel.h"

#ifndef DC_VERSION
#define DC_VERSION ""
#endif

namespace dc::gui {

bool MainWindow::exportPyTorch(QString dir) {
  const Project p = project();
  bool force = false;
  if (dir.isEmpty()) {
    QSettings s;
    const QString start =
        s.value("exportDir", file_.isEmpty() ? QDir::homePath() : QFileInfo(file_).absolutePath())
            .toString();
    const QString base = file_.isEmpty() ? QStringLiteral("model") : QFileInfo(file_).baseName();
    dir = QFileDialog::getSaveFileName(this, tr("Export PyTorch Project (a new folder)"),
                                       start + "/" + base + "-pytorch");
    if (dir.isEmpty()) return false;
    s.setValue("exportDir", QFileInfo(dir).absolutePath());
    const QDir d(dir);
    if (d.exists() && !d.isEmpty()) {
      if (QMessageBox::question(this, tr("Replace folder?"),
                                tr("%1 is not empty. Replace everything in it with the export?")
                                    .arg(QDir::toNativeSeparators(dir))) != QMessageBox::Yes)
        return false;
      force = true;
    }
  }
  try {
    Plan plan(p.graph, 1);
    const QString which = loadExportWeights(plan);
    PyTorchExportOptions o;
    o.force = force;
    if (ctx_->weights().valid()) o.weights_source = which.toStdString();
    o.version = DC_VERSION;
    export_pytorch(dir.toStdString(), p, plan, o);
    statusBar()->showMessage(
        tr("Exported the PyTorch project to %1 with %2; its README.md has the commands")
            .arg(QDir::toNativeSeparators(dir), which),
        10000);
    return true;
  } catch (const std::exception& e) {
    reportError(tr("Could not export the PyTorch project: %1").arg(QString::fromUtf8(e.what())));
    return false;
  }
}

bool MainWindow::openRun(QString dir) {
  if (dir.isEmpty()) {
    QSettings s;
    dir = QFileDialog::getExistingDirectory(
        this, tr("Open Run (the --out folder of an exported train.py)"),
        s.value("runDir", QDir::homePath()).toString());
    if (dir.isEmpty()) return false;
    s.setValue("runDir", dir);
  }
  const QString why = training_panel_->openRun(dir);
  if (!why.isEmpty()) {
    reportError(tr("Could not open the run: %1").arg(why));
    return false;
  }
  showMode(Mode::Training);
  statusBar()->showMessage(tr("Opened the run in %1").arg(QDir::toNativeSeparators(dir)), 8000);
  return true;
}

}  // namespace dc::gui
