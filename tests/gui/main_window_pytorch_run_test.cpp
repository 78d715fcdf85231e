// File > Run with PyTorch… (issue 13): the sample project exported and its
// train.py started with Debian's python3-torch for a few steps; the
// Training tab gains the run while it writes, Stop ends it, and an
// interpreter that is missing or lacks torch gives a message that says
// how to install it. Needs /usr/bin/python3 with torch (install-deps.sh).
#include "gui/main_window.h"
#include "gui/pytorch_run.h"
#include "gui/pytorch_run_dialog.h"
#include "gui/training_panel.h"
#include "gui_test_util.h"
#include "widgets/live_plot.h"

#include <gtest/gtest.h>

#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QTest>

namespace dc::test {
namespace {

// Why the tests that train cannot run here ("" when they can).
QString torchMissing() {
  QProcess p;
  p.start("/usr/bin/python3", {"-c", "import torch, numpy"});
  if (!p.waitForFinished(120000) || p.exitCode() != 0)
    return "/usr/bin/python3 cannot import torch (apt install python3-torch): " +
           QString::fromUtf8(p.readAll());
  return {};
}

class MainWindowPyTorchRun : public SampleWindowTest {
 protected:
  gui::PyTorchRunOptions options(const QString& dir) const {
    gui::PyTorchRunOptions o;
    o.python = "/usr/bin/python3";
    o.export_dir = dir + "/export";
    o.out_dir = dir + "/runs/1";
    o.epochs = 1;
    o.batch = 32;
    return o;
  }
  // The Runs table's row of the run followed from the PyTorch process.
  int pytorchRow() const {
    QTableWidget* runs = w->trainingPanel()->runHistory();
    for (int r = 0; r < runs->rowCount(); ++r)
      if (runs->item(r, 1) && runs->item(r, 1)->text().startsWith("imported")) return r;
    return -1;
  }
};

TEST_F(MainWindowPyTorchRun, ShortRunIsFollowedLiveToItsEnd) {
  if (const QString why = torchMissing(); !why.isEmpty()) GTEST_SKIP() << why.toStdString();
  const QString dir = tempDir();
  gui::PyTorchRunOptions o = options(dir);
  o.max_steps = 12;
  ASSERT_TRUE(w->runWithPyTorch(&o)) << errors.join('\n').toStdString();
  ASSERT_NE(w->pytorchRun(), nullptr);
  QSignalSpy done(w->pytorchRun(), &gui::PyTorchRun::finished);
  EXPECT_TRUE(QFile::exists(dir + "/export/train.py"));
  EXPECT_TRUE(w->findChild<QDockWidget*>("pytorchConsoleDock")->isVisibleTo(w.get()));
  EXPECT_EQ(w->mode(), gui::MainWindow::Mode::Training);
  ASSERT_TRUE(done.wait(300000)) << w->pytorchConsole()->text().toStdString();
  ASSERT_TRUE(done.first().at(0).toBool()) << w->pytorchConsole()->text().toStdString();
  EXPECT_TRUE(errors.isEmpty()) << errors.join('\n').toStdString();
  const QString console = w->pytorchConsole()->text();
  EXPECT_TRUE(console.contains("train.py")) << console.toStdString();
  EXPECT_TRUE(console.contains("--max-steps 12")) << console.toStdString();
  EXPECT_TRUE(console.contains("end after 12 steps")) << console.toStdString();
  EXPECT_TRUE(w->pytorchConsole()->status().contains("finished"));
  // The run reached the Training tab: its 12 steps in the loss plot, its
  // end line read (so not merely ended by the process), its test accuracy.
  gui::TrainingPanel* panel = w->trainingPanel();
  EXPECT_FALSE(panel->followingRun());
  const int row = pytorchRow();
  ASSERT_GE(row, 0);
  EXPECT_TRUE(panel->runHistory()->item(row, 1)->text().contains("PyTorch"))
      << panel->runHistory()->item(row, 1)->text().toStdString();
  EXPECT_TRUE(panel->runHistory()->item(row, 5)->text().contains("finished (imported)"))
      << panel->runHistory()->item(row, 5)->text().toStdString();
  ASSERT_GE(panel->lossPlot()->seriesCount(), 1);
  EXPECT_EQ(panel->lossPlot()->pointCount(0), 12);
  EXPECT_TRUE(QFile::exists(o.out_dir + "/last.safetensors"));
}

// N > 1: torchrun (gloo) from the app; the followed run ends with rank 0's
// end line, which compares the replicas.
TEST_F(MainWindowPyTorchRun, TwoProcessesRunUnderTorchrun) {
  if (const QString why = torchMissing(); !why.isEmpty()) GTEST_SKIP() << why.toStdString();
  const QString dir = tempDir();
  gui::PyTorchRunOptions o = options(dir);
  o.processes = 2;
  o.max_steps = 6;
  ASSERT_TRUE(w->runWithPyTorch(&o)) << errors.join('\n').toStdString();
  QSignalSpy done(w->pytorchRun(), &gui::PyTorchRun::finished);
  ASSERT_TRUE(done.wait(300000)) << w->pytorchConsole()->text().toStdString();
  const QString console = w->pytorchConsole()->text();
  ASSERT_TRUE(done.first().at(0).toBool()) << console.toStdString();
  EXPECT_TRUE(console.contains("--nproc_per_node=2")) << console.toStdString();
  EXPECT_TRUE(console.contains("start: 2 process(es)")) << console.toStdString();
  EXPECT_TRUE(console.contains("replicas identical: True")) << console.toStdString();
  const int row = pytorchRow();
  ASSERT_GE(row, 0);
  EXPECT_TRUE(w->trainingPanel()->runHistory()->item(row, 1)->text().contains("2 process(es)"));
  EXPECT_EQ(w->trainingPanel()->lossPlot()->pointCount(0), 6);
}

TEST_F(MainWindowPyTorchRun, PlotsGainTheRunWhileItWritesAndStopEndsIt) {
  if (const QString why = torchMissing(); !why.isEmpty()) GTEST_SKIP() << why.toStdString();
  const QString dir = tempDir();
  gui::PyTorchRunOptions o = options(dir);
  o.epochs = 200;  // far longer than the test waits
  ASSERT_TRUE(w->runWithPyTorch(&o)) << errors.join('\n').toStdString();
  gui::TrainingPanel* panel = w->trainingPanel();
  QSignalSpy done(w->pytorchRun(), &gui::PyTorchRun::finished);
  // Steps appear while train.py is running: followed, not read at the end.
  bool grew = false;
  for (int i = 0; i < 1200 && !grew && done.isEmpty(); ++i) {
    QTest::qWait(100);
    grew = panel->lossPlot()->seriesCount() > 0 && panel->lossPlot()->pointCount(0) >= 3;
  }
  ASSERT_TRUE(grew) << w->pytorchConsole()->text().toStdString();
  EXPECT_TRUE(panel->followingRun());
  EXPECT_TRUE(w->pytorchRun()->running());
  EXPECT_TRUE(w->pytorchConsole()->stopButton()->isEnabled());
  w->pytorchConsole()->stopButton()->click();
  ASSERT_TRUE(done.wait(30000)) << w->pytorchConsole()->text().toStdString();
  EXPECT_FALSE(done.first().at(0).toBool());
  EXPECT_EQ(done.first().at(1).toString(), "stopped");
  EXPECT_FALSE(w->pytorchRun()->running());
  EXPECT_FALSE(panel->followingRun());
  const int row = pytorchRow();
  ASSERT_GE(row, 0);
  EXPECT_TRUE(panel->runHistory()->item(row, 5)->text().contains("stopped"))
      << panel->runHistory()->item(row, 5)->text().toStdString();
  EXPECT_FALSE(w->pytorchConsole()->stopButton()->isEnabled());
}

TEST_F(MainWindowPyTorchRun, MissingPythonOrTorchSaysHowToInstall) {
  const QString dir = tempDir();
  gui::PyTorchRunOptions o = options(dir);
  o.python = dir + "/no-such-python3";
  ASSERT_TRUE(w->runWithPyTorch(&o));
  QSignalSpy failed(w->pytorchRun(), &gui::PyTorchRun::failed);
  ASSERT_TRUE(failed.wait(30000));
  ASSERT_EQ(errors.size(), 1);
  EXPECT_TRUE(errors[0].contains("cannot start the Python interpreter")) << errors[0].toStdString();
  EXPECT_TRUE(errors[0].contains("no-such-python3")) << errors[0].toStdString();
  EXPECT_FALSE(w->pytorchRun()->running());
  EXPECT_EQ(pytorchRow(), -1);  // nothing started, nothing followed

  // A real Python that cannot import torch: site-packages turned off (-S).
  const QString py = dir + "/python-without-torch";
  {
    QFile f(py);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("#!/bin/sh\nexec /usr/bin/python3 -I -S \"$@\"\n");
  }
  QFile::setPermissions(py, QFile::permissions(py) | QFileDevice::ExeOwner);
  o.python = py;
  ASSERT_TRUE(w->runWithPyTorch(&o));
  ASSERT_TRUE(failed.wait(30000));
  ASSERT_EQ(errors.size(), 2);
  EXPECT_TRUE(errors[1].contains("cannot import PyTorch")) << errors[1].toStdString();
  EXPECT_TRUE(errors[1].contains("No module named")) << errors[1].toStdString();
  EXPECT_TRUE(errors[1].contains("python3-torch")) << errors[1].toStdString();
  EXPECT_TRUE(errors[1].contains("requirements.txt")) << errors[1].toStdString();
  EXPECT_TRUE(w->pytorchConsole()->status().startsWith("Not started"));
  EXPECT_EQ(pytorchRow(), -1);
}

// The dialog: epochs and batch from the project, a new run folder beside
// the export, and the interpreter, processes, device, step limit and
// starting weights remembered for the next time.
// A blank export folder or Python is refused in the dialog (a blank folder
// was the app's working folder); a relative folder is the project's.
TEST_F(MainWindowPyTorchRun, DialogRefusesBlanksAndResolvesAgainstTheProject) {
  const QString dir = tempDir();
  gui::PyTorchRunDialog d(dir + "/net-pytorch", 1, 32);
  d.setProjectDir(dir);
  auto* folder = d.findChild<QLineEdit*>("pytorchExportDir");
  auto* python = d.findChild<QLineEdit*>("pytorchPython");
  folder->setText("sub/exp");
  EXPECT_EQ(d.options().export_dir, dir + "/sub/exp");
  EXPECT_EQ(d.problem(), QString());
  folder->setText("  ");
  EXPECT_TRUE(d.options().export_dir.isEmpty());
  EXPECT_TRUE(d.problem().contains("folder")) << d.problem().toStdString();
  d.show();
  QPushButton* ok = nullptr;
  for (QPushButton* b : d.findChildren<QPushButton*>())
    if (b->text() == "Export and Run") ok = b;
  ASSERT_NE(ok, nullptr);
  ok->click();
  EXPECT_TRUE(d.isVisible());  // not accepted
  EXPECT_NE(d.result(), int(QDialog::Accepted));
  EXPECT_TRUE(d.problemLabel()->isVisibleTo(&d));
  EXPECT_TRUE(d.problemLabel()->text().contains("folder"));
  folder->setText(dir + "/exp");
  python->clear();
  EXPECT_TRUE(d.problem().contains("Python")) << d.problem().toStdString();
  d.close();
}

// Without weights in the Inference tab, "the Inference tab's weights" was
// offered and fresh weights went into the export silently: the choice says
// none are there, cannot be picked, and fresh weights are chosen.
TEST_F(MainWindowPyTorchRun, DialogSaysWhenTheInferenceTabHasNoWeights) {
  const QString dir = tempDir();
  gui::PyTorchRunDialog d(dir + "/net-pytorch", 1, 32);
  auto* from = d.findChild<QComboBox*>("pytorchStartFrom");
  ASSERT_NE(from, nullptr);
  from->setCurrentIndex(0);
  d.setInferenceWeights(false);
  EXPECT_TRUE(d.options().fresh_weights);
  EXPECT_TRUE(from->itemText(0).contains("none")) << from->itemText(0).toStdString();
  auto* model = qobject_cast<QStandardItemModel*>(from->model());
  ASSERT_NE(model, nullptr);
  EXPECT_FALSE(model->item(0)->isEnabled());
  d.setInferenceWeights(true);
  EXPECT_TRUE(model->item(0)->isEnabled());
  from->setCurrentIndex(0);
  EXPECT_FALSE(d.options().fresh_weights);
}

TEST_F(MainWindowPyTorchRun, DialogPrefillsFromTheProjectAndRemembers) {
  const QString dir = tempDir();
  {
    gui::PyTorchRunDialog d(dir + "/net-pytorch", 7, 48);
    EXPECT_EQ(d.findChild<QSpinBox*>("pytorchEpochs")->value(), 7);
    EXPECT_EQ(d.findChild<QSpinBox*>("pytorchBatch")->value(), 48);
    d.findChild<QLineEdit*>("pytorchExportDir")->setText(dir + "/exp");
    d.findChild<QLineEdit*>("pytorchPython")->setText(dir + "/venv/bin/python");
    d.findChild<QSpinBox*>("pytorchProcesses")->setValue(2);
    d.findChild<QComboBox*>("pytorchStartFrom")->setCurrentIndex(1);
    const gui::PyTorchRunOptions o = d.options();
    EXPECT_EQ(o.export_dir, dir + "/exp");
    EXPECT_TRUE(o.out_dir.startsWith(dir + "/exp-runs/")) << o.out_dir.toStdString();
    EXPECT_EQ(o.processes, 2);
    EXPECT_EQ(o.epochs, 7);
    EXPECT_EQ(o.batch, 48);
    EXPECT_TRUE(o.fresh_weights);
    d.remember();
  }
  gui::PyTorchRunDialog again(dir + "/other-pytorch", 3, 16);
  const gui::PyTorchRunOptions o = again.options();
  EXPECT_EQ(o.export_dir, dir + "/exp");
  EXPECT_EQ(o.python, dir + "/venv/bin/python");
  EXPECT_EQ(o.processes, 2);
  EXPECT_TRUE(o.fresh_weights);
  EXPECT_EQ(o.epochs, 3);  // the project's, not remembered
  // 2 processes run under torchrun with the flags torch 1.13 needs.
  gui::PyTorchRun run;
  QString why;
  gui::PyTorchRunOptions two = o;
  two.python = dir + "/missing-python";
  ASSERT_TRUE(run.start(two, &why));
  const QString cmd = run.commandLine().join(' ');
  EXPECT_TRUE(
      cmd.contains("-m torch.distributed.run --nnodes=1 --rdzv_backend=c10d "
                   "--rdzv_endpoint=localhost:0 --rdzv_id=deepcanvas-"))
      << cmd.toStdString();
  EXPECT_TRUE(cmd.contains("--nproc_per_node=2 --redirects 2 --tee 1")) << cmd.toStdString();
  EXPECT_FALSE(run.start(two, &why));  // one at a time
  EXPECT_TRUE(why.contains("still going")) << why.toStdString();
  QSignalSpy failed(&run, &gui::PyTorchRun::failed);
  ASSERT_TRUE(failed.wait(30000));
}

}  // namespace
}  // namespace dc::test
