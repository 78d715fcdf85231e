// File > Export > PyTorch Project, File > Run with PyTorch… and File > Open
// Run...: the way out to PyTorch's distributed training and the way back in.
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
#include "gui/pytorch_run.h"
#include "gui/pytorch_run_dialog.h"
#include "gui/training_panel.h"
#include "widgets/dialog_dirs.h"

#include <QDockWidget>
#include <QMenu>
#include <algorithm>

#ifndef DC_VERSION
#define DC_VERSION ""
#endif

namespace dc::gui {

bool MainWindow::exportPyTorch(QString dir) {
  bool force = false;
  if (dir.isEmpty()) {
    const QString start = widgets::dialogStart("exports", file_);
    const QString base = file_.isEmpty() ? QStringLiteral("model") : QFileInfo(file_).baseName();
    dir = QFileDialog::getSaveFileName(this, tr("Export PyTorch Project (a new folder)"),
                                       start + "/" + base + "-pytorch");
    if (dir.isEmpty()) return false;
    widgets::rememberDialogChoice("exports", dir);
    const QDir d(dir);
    if (d.exists() && !d.isEmpty()) {
      if (QMessageBox::question(this, tr("Replace folder?"),
                                tr("%1 is not empty. Replace everything in it with the export?")
                                    .arg(QDir::toNativeSeparators(dir))) != QMessageBox::Yes)
        return false;
      force = true;
    }
  }
  return writePyTorchExport(dir, force);
}

bool MainWindow::writePyTorchExport(const QString& dir, bool force, bool fresh) {
  const Project p = project();
  try {
    Plan plan(p.graph, 1);
    QString which;
    if (fresh) {
      plan.init_params(p.training.seed);
      which = tr("the seed's initial weights");
    } else {
      which = loadExportWeights(plan);
    }
    PyTorchExportOptions o;
    o.force = force;
    if (!fresh && ctx_->weightsInUse().valid()) o.weights_source = which.toStdString();
    o.version = DC_VERSION;
    export_pytorch(dir.toStdString(), p, plan, o);
    statusBar()->showMessage(
        tr("Exported the PyTorch project to %1 with %2; its README.md has the commands")
            .arg(QDir::toNativeSeparators(dir), which),
        10000);
    return true;
  } catch (const std::exception& e) {
    // The engine says the folder is not empty without naming a way to
    // replace it; here that is the export dialog's confirmation.
    const QDir target(dir);
    const bool occupied =
        !force && target.exists() && !target.isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot);
    reportError(tr("Could not export the PyTorch project: %1").arg(QString::fromUtf8(e.what())) +
                (occupied ? QLatin1Char(' ') +
                                tr("Choose File → Export → PyTorch Project… again and confirm "
                                   "Replace, or pick an empty folder.")
                          : QString()));
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

void MainWindow::createPyTorchConsole() {
  if (pytorch_run_) return;
  pytorch_run_ = new PyTorchRun(this);
  pytorch_console_ = new PyTorchConsole(pytorch_run_, this);
  auto* d = new QDockWidget(tr("PyTorch Console"), this);
  d->setObjectName("pytorchConsoleDock");
  d->setWidget(pytorch_console_);
  d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable |
                 QDockWidget::DockWidgetFloatable);
  d->setProperty("everyTab", true);  // stays while the Training tab follows the run
  addDockWidget(Qt::BottomDockWidgetArea, d);
  // A fifth of the window: 200 px of a 1280x720 screen's window left the
  // Training tab's plots too flat to read while the run is followed.
  resizeDocks({d}, {std::clamp(height() / 5, 120, 200)}, Qt::Vertical);
  if (view_menu_) view_menu_->addAction(d->toggleViewAction());
  connect(pytorch_run_, &PyTorchRun::launched, this, [this](const QString& out) {
    const QString why = training_panel_->followRun(out);
    // train.py goes on; only the plots miss it (the console says why).
    if (!why.isEmpty()) pytorch_run_->note(tr("not followed in the Training tab: %1").arg(why));
  });
  connect(pytorch_run_, &PyTorchRun::failed, this,
          [this](const QString& why) { reportError(tr("Run with PyTorch: %1").arg(why)); });
  connect(pytorch_run_, &PyTorchRun::finished, this, [this](bool, const QString& result) {
    training_panel_->endFollowedRun(pytorch_run_->options().out_dir, tr("PyTorch: %1").arg(result));
    statusBar()->showMessage(
        tr("PyTorch run %1; its folder: %2")
            .arg(result, QDir::toNativeSeparators(pytorch_run_->options().out_dir)),
        10000);
  });
}

bool MainWindow::runWithPyTorch(const PyTorchRunOptions* preset) {
  createPyTorchConsole();
  if (pytorch_run_->running()) {
    reportError(tr("A PyTorch run is still going; stop it in the PyTorch Console first."));
    return false;
  }
  if (trainingActive()) {
    reportError(tr("A run is training here; start the PyTorch run when it has ended."));
    return false;
  }
  if (benchmarkMeasuring()) {
    reportError(
        tr("The machine benchmark (Help → Benchmark This Machine) is measuring; start "
           "the PyTorch run when it has finished, in a few seconds."));
    return false;
  }
  const Project p = project();
  PyTorchRunOptions o;
  bool force = true;
  if (preset) {
    o = *preset;
  } else {
    const QString base = file_.isEmpty() ? QStringLiteral("model") : QFileInfo(file_).baseName();
    const QString start = (file_.isEmpty() ? QDir::homePath() : QFileInfo(file_).absolutePath()) +
                          "/" + base + "-pytorch";
    PyTorchRunDialog dialog(start, p.training.epochs, p.training.batch, this);
    if (!file_.isEmpty()) dialog.setProjectDir(QFileInfo(file_).absolutePath());
    dialog.setInferenceWeights(ctx_->weightsInUse().valid());
    if (dialog.exec() != QDialog::Accepted) return false;
    o = dialog.options();
    const QDir d(o.export_dir);
    force = false;
    if (d.exists() && !d.isEmpty()) {
      if (QMessageBox::question(this, tr("Replace the export?"),
                                tr("%1 is not empty. Replace everything in it with this "
                                   "project's export? (Runs are kept: they are in %2.)")
                                    .arg(QDir::toNativeSeparators(o.export_dir),
                                         QDir::toNativeSeparators(o.export_dir + "-runs"))) !=
          QMessageBox::Yes)
        return false;
      force = true;
    }
  }
  // A blank folder would be the app's working folder (QDir("")): refuse it.
  if (o.export_dir.trimmed().isEmpty() || o.python.trimmed().isEmpty()) {
    reportError(tr("Run with PyTorch needs an export folder and a Python interpreter."));
    return false;
  }
  if (o.data.isEmpty()) {
    try {
      o.data = QFileInfo(QString::fromStdString(resolve_dataset_dir(p))).absoluteFilePath();
    } catch (const std::exception&) {
      // The export's default path stands; train.py says what is missing.
    }
  }
  if (!writePyTorchExport(o.export_dir, force, o.fresh_weights)) return false;
  QDockWidget* dock = findChild<QDockWidget*>("pytorchConsoleDock");
  dock->show();
  dock->raise();
  showMode(Mode::Training);
  QString why;
  if (!pytorch_run_->start(o, &why)) {
    reportError(why);
    return false;
  }
  return true;
}

}  // namespace dc::gui
