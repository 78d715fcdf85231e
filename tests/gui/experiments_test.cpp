// The Experiments tab (issue 15): the space editor's messages, a tiny sweep
// run from the tab to completion, Apply best as one undoable step, a
// stopped sweep resumed (also by a new window, as after a killed app), and
// a diverging trial marked failed while the sweep goes on; the tab's sweeps
// write TensorBoard's HParams data as the CLI's do (issue 35) and check
// memory with the space's largest batch (issue 31).
#include "gui/experiments_panel.h"

#include "gui/inference_panel.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui/training_panel.h"
#include "gui/training_session.h"
#include "gui_test_util.h"
#include "qcustomplot.h"
#include "widgets/graph_editor.h"

#include <deepcanvas/io.h>
#include <deepcanvas/sweep.h>
#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QDir>
#include <QFileInfo>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTableView>
#include <QUndoStack>
#include <cmath>
#include <fstream>
#include <sstream>

namespace dc::test {
namespace {

class ExperimentsTab : public ::testing::Test {
 protected:
  void SetUp() override {
    ensureApp();
    dir = tempDir();
    w = open();
  }
  // The sample project saved in a scratch folder (the sweep's state goes
  // beside it), with the bundled data subset loaded.
  std::unique_ptr<gui::MainWindow> open() {
    auto m = std::make_unique<gui::MainWindow>();
    m->setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
    const QString file = dir + "/p.dcproj";
    const bool ok =
        QFileInfo::exists(file)
            ? m->openFile(file)
            : m->openFile(sourcePath("sample_data/sample_project.dcproj")) && m->saveFile(file);
    EXPECT_TRUE(ok);
    gui::DatasetSource s;
    s.kind = gui::DatasetSource::Kind::Sample;
    m->context()->loadDataset(s);
    panel(*m)->setStepsPerEpochLimit(8);  // a sweep of the tab, not of the network
    panel(*m)->setConfirmHandler([](const QString&) { return true; });
    return m;
  }
  static gui::ExperimentsPanel* panel(gui::MainWindow& m) { return m.experimentsPanel(); }
  gui::ExperimentsPanel* p() const { return w->experimentsPanel(); }
  const Graph& g() const { return w->editor()->graph(); }
  void setSweep(const QStringList& space, int trials, int epochs, bool asha = false) {
    p()->setSpace(space);
    SweepOptions o;
    o.trials = trials;
    o.epochs = epochs;
    o.asha = asha;
    o.seed = 3;
    p()->setOptions(o);
  }
  // Waits for the worker; a bound for a stuck sweep, not a timing check.
  static bool waitFinished(gui::ExperimentsPanel* panel) {
    QSignalSpy done(panel, &gui::ExperimentsPanel::finished);
    return done.wait(300000);
  }

  QString dir;
  std::unique_ptr<gui::MainWindow> w;
};

TEST_F(ExperimentsTab, IsTheFifthTabOnCtrl5) {
  w->action("actionMode4")->trigger();
  EXPECT_EQ(w->mode(), gui::MainWindow::Mode::Experiments);
  EXPECT_EQ(w->action("actionMode4")->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_5));
  // Completion offers settings and the network's layer attributes.
  const QStringList names = p()->completions();
  EXPECT_TRUE(names.contains("lr"));
  EXPECT_TRUE(names.contains("optimizer.lr"));
  EXPECT_TRUE(names.contains("conv1.filters"));
}

TEST_F(ExperimentsTab, SpaceEditorShowsTheEnginesMessages) {
  p()->setSpace({"lr=log:1e-3:1e-2", "conv1.filters=int:16:64"});
  EXPECT_EQ(p()->validate(), "");
  EXPECT_TRUE(p()->startButton()->isEnabled());

  p()->setSpace({"lr=log:1e-3:1e-2", "lr=float:0.01:0.001"});
  EXPECT_TRUE(p()->validate().startsWith("Row 2: lr=float:0.01:0.001: empty range"))
      << p()->validate().toStdString();
  EXPECT_FALSE(p()->startButton()->isEnabled());

  p()->setSpace({"lr=log:0:0.01"});
  EXPECT_TRUE(p()->validate().contains("a log range must be above 0"))
      << p()->validate().toStdString();

  p()->setSpace({"conv1.filtres=int:16:64"});
  EXPECT_TRUE(
      p()->validate().contains("unknown parameter 'conv1.filtres' (did you mean "
                               "'conv1.filters'?)"))
      << p()->validate().toStdString();

  p()->setSpace({"lr=log:1e-3:1e-2", "optimizer.lr=log:1e-4:1e-3"});
  EXPECT_TRUE(p()->validate().startsWith("Row 2: ")) << p()->validate().toStdString();
  EXPECT_TRUE(p()->validate().contains("already in the search space"));

  p()->setSpace({});
  EXPECT_FALSE(p()->validate().isEmpty());
  EXPECT_FALSE(p()->start());

  // The rows round-trip through the editor's cells.
  const QStringList specs = {"lr=log:0.001:0.01", "batch=choice:32,64", "conv1.filters=int:8:16"};
  p()->setSpace(specs);
  EXPECT_EQ(p()->specs(), specs);
}

TEST_F(ExperimentsTab, TinySweepFillsTheTableAndApplyBestIsOneUndoStep) {
  const TrainConfig before = w->trainingPanel()->config();
  const int64_t filters_before = g().node(idOf(g(), "conv1")).attrs.i("filters");
  // Before any trial the plots say what they will show.
  auto placeholders = [](QCustomPlot* plot) {
    int n = 0;
    for (int i = 0; i < plot->itemCount(); ++i) n += plot->item(i)->objectName() == "placeholder";
    return n;
  };
  EXPECT_EQ(placeholders(p()->parallelPlot()), 1);
  EXPECT_EQ(placeholders(p()->curvesPlot()), 1);
  setSweep({"lr=log:1e-3:1e-2", "conv1.filters=int:8:12"}, 3, 1);
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  EXPECT_TRUE(p()->running());
  EXPECT_FALSE(p()->startButton()->isEnabled());  // the GUI thread is free meanwhile
  ASSERT_TRUE(waitFinished(p()));
  EXPECT_FALSE(p()->running());

  const auto& trials = p()->trials()->trials();
  ASSERT_EQ(trials.size(), 3u);
  for (const Trial& t : trials) {
    EXPECT_EQ(t.status, Trial::Status::Completed);
    EXPECT_EQ(t.epochs.size(), 1u);
  }
  EXPECT_EQ(p()->trialsView()->model()->rowCount(), 3);
  // #, status, lr, conv1.filters, best val acc, epochs
  EXPECT_EQ(p()->trialsView()->model()->columnCount(), 6);
  EXPECT_EQ(p()->trials()->data(p()->trials()->index(0, 1), Qt::DisplayRole).toString(),
            "completed");
  EXPECT_TRUE(p()->messageText().startsWith("Sweep finished: 3 completed"))
      << p()->messageText().toStdString();
  EXPECT_TRUE(QFileInfo::exists(dir + "/p.sweep.json"));
  EXPECT_GE(p()->parallelPlot()->graphCount(), 3);
  EXPECT_EQ(p()->curvesPlot()->graphCount(), 3);
  EXPECT_EQ(placeholders(p()->parallelPlot()), 0);
  EXPECT_EQ(placeholders(p()->curvesPlot()), 0);

  // Sorting by the metric puts the best trial on top.
  SweepState s;
  s.trials = trials;
  const Trial& best = trials[size_t(s.best())];
  p()->trialsView()->sortByColumn(4, Qt::DescendingOrder);
  EXPECT_EQ(p()->trialsView()->model()->index(0, 0).data().toInt(), best.id);

  const QString applied = "Apply best trial " + QString::number(best.id);
  const int undo_count = w->editor()->undoStack()->count();
  ASSERT_TRUE(p()->applyBest()) << p()->messageText().toStdString();
  EXPECT_EQ(w->editor()->undoStack()->count(), undo_count + 1);
  EXPECT_EQ(w->editor()->undoStack()->undoText(), applied);
  const double lr = std::get<double>(search_value(p()->trials()->space().params[0], best.x[0]));
  const int64_t filters =
      std::get<int64_t>(search_value(p()->trials()->space().params[1], best.x[1]));
  // The settings form keeps 10 significant digits.
  EXPECT_NEAR(w->trainingPanel()->config().optimizer.lr, lr, lr * 1e-8);
  EXPECT_EQ(g().node(idOf(g(), "conv1")).attrs.i("filters"), filters);
  EXPECT_TRUE(w->isModified());

  w->editor()->undoStack()->undo();  // Ctrl+Z
  EXPECT_DOUBLE_EQ(w->trainingPanel()->config().optimizer.lr, before.optimizer.lr);
  EXPECT_EQ(g().node(idOf(g(), "conv1")).attrs.i("filters"), filters_before);
  w->editor()->undoStack()->redo();
  EXPECT_NEAR(w->trainingPanel()->config().optimizer.lr, lr, lr * 1e-8);
}

TEST_F(ExperimentsTab, TheBestTrialsWeightsAreOfferedInTheInferenceTab) {
  auto sweep = [&] {
    p()->setSpace({"lr=log:1e-3:1e-2"});
    SweepOptions o;
    o.trials = 2;
    o.epochs = 1;
    o.asha = false;
    o.seed = 3;
    o.baseline = false;  // the best is then never "the project as it is"
    p()->setOptions(o);
    EXPECT_TRUE(p()->start()) << p()->messageText().toStdString();
    EXPECT_TRUE(waitFinished(p()));
  };
  sweep();
  const QString weights = dir + "/p.sweep.best.safetensors";
  EXPECT_EQ(p()->weightsPath(), weights);
  ASSERT_TRUE(QFileInfo::exists(weights));
  SweepState s;
  s.trials = p()->trials()->trials();
  const int best = s.best();
  ASSERT_GE(best, 0);
  auto offered = [&] {
    QStringList labels;
    for (const gui::RunCheckpoint& c : w->context()->runCheckpoints())
      if (c.path == weights) labels << c.label;
    return labels;
  };
  ASSERT_EQ(offered().size(), 1);
  const QString label = offered()[0];
  EXPECT_TRUE(label.startsWith(QString("Sweep: best trial %1 (").arg(best))) << label.toStdString();
  EXPECT_TRUE(label.endsWith("validation, 1 epochs)")) << label.toStdString();
  // The Inference tab predicts with them when chosen.
  gui::InferencePanel* inf = w->inferencePanel();
  EXPECT_TRUE(inf->weightChoices().contains(label));
  ASSERT_TRUE(inf->chooseWeights(label));
  EXPECT_TRUE(inf->weightsSource().startsWith(label)) << inf->weightsSource().toStdString();
  // Apply best says where its weights are.
  ASSERT_TRUE(p()->applyBest()) << p()->messageText().toStdString();
  EXPECT_TRUE(p()->messageText().contains(
      QString("Its trained weights are in the Inference tab's weights list (Sweep: best trial %1)")
          .arg(best)))
      << p()->messageText().toStdString();
  // Another sweep rewrites the file: its entry replaces the first.
  sweep();
  EXPECT_EQ(offered().size(), 1);
  // A new window on the project offers them again.
  w.reset();
  w = open();
  EXPECT_EQ(offered().size(), 1);
  // A damaged file is neither offered nor claimed by Apply best.
  w.reset();
  write_file_atomic(weights.toStdString(), "not a checkpoint");
  w = open();
  EXPECT_EQ(offered().size(), 0);
  ASSERT_TRUE(p()->applyBest()) << p()->messageText().toStdString();
  EXPECT_TRUE(p()->messageText().startsWith("Applied trial")) << p()->messageText().toStdString();
  EXPECT_FALSE(p()->messageText().contains("Its trained weights"))
      << p()->messageText().toStdString();
}

// An unsaved project has no state file beside it: its sweep keeps the
// best weights in the sweep's run folder, and offers them all the same.
TEST_F(ExperimentsTab, AnUnsavedProjectsSweepKeepsItsBestWeightsInItsRunFolder) {
  ASSERT_TRUE(w->newFromTemplate(sourcePath("sample_data/sample_project.dcproj")));
  ASSERT_TRUE(w->currentFile().isEmpty());
  gui::DatasetSource src;
  src.kind = gui::DatasetSource::Kind::Sample;
  w->context()->loadDataset(src);
  auto* box = p()->findChild<QCheckBox*>("sweepTensorBoard");
  ASSERT_NE(box, nullptr);
  box->setChecked(false);         // no HParams folder: the weights get one of their own
  p()->setStepsPerEpochLimit(8);  // a new project's sweep starts without it
  setSweep({"lr=log:1e-3:1e-2"}, 1, 1);
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  EXPECT_TRUE(p()->statePath().isEmpty());
  const QString weights = p()->weightsPath();
  EXPECT_TRUE(weights.contains("/DeepCanvas/runs/")) << weights.toStdString();
  EXPECT_TRUE(weights.endsWith("sweep/best.safetensors")) << weights.toStdString();
  EXPECT_TRUE(QFileInfo::exists(weights));
  int offered = 0;
  for (const gui::RunCheckpoint& c : w->context()->runCheckpoints()) offered += c.path == weights;
  EXPECT_EQ(offered, 1);
}

TEST_F(ExperimentsTab, TrialZeroIsTheProjectsOwnValuesWhenTheyAreInTheSpace) {
  // The sample project: lr 0.003, conv1 32 filters.
  setSweep({"lr=log:1e-3:1e-2", "conv1.filters=int:8:40"}, 2, 1);
  auto* box = p()->findChild<QCheckBox*>("sweepBaseline");
  ASSERT_NE(box, nullptr);
  EXPECT_TRUE(box->isChecked());
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  const auto& trials = p()->trials()->trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_TRUE(trials[0].baseline);
  EXPECT_NEAR(trials[0].x[0], 0.003, 1e-12);
  EXPECT_EQ(trials[0].x[1], 32);
  EXPECT_EQ(p()->trials()->data(p()->trials()->index(0, 0), Qt::DisplayRole).toString(),
            "0 (project)");
  EXPECT_FALSE(trials[1].baseline);

  // Outside the space: no baseline, and the tab says why while it runs.
  setSweep({"lr=log:1e-3:1e-2", "conv1.filters=int:8:12"}, 1, 1);
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  EXPECT_TRUE(
      p()->messageText().contains("No baseline trial: the project's conv1.filters = 32 "
                                  "is outside int:8:12"))
      << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  EXPECT_FALSE(p()->trials()->trials()[0].baseline);

  // Unticked: no baseline even when the values are in the space.
  setSweep({"lr=log:1e-3:1e-2", "conv1.filters=int:8:40"}, 1, 1);
  box->setChecked(false);
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  EXPECT_FALSE(p()->trials()->trials()[0].baseline);
}

TEST_F(ExperimentsTab, TheStatusBarRepeatsTheSweepsMessageOnlyFromAnotherTab) {
  setSweep({"lr=log:1e-3:1e-2"}, 1, 1);
  w->showMode(gui::MainWindow::Mode::Experiments);
  w->statusBar()->clearMessage();
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  EXPECT_TRUE(p()->messageText().startsWith("Sweep finished")) << p()->messageText().toStdString();
  EXPECT_EQ(w->statusBar()->currentMessage(), "");  // the tab shows it already
  w->showMode(gui::MainWindow::Mode::Model);
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  EXPECT_TRUE(w->statusBar()->currentMessage().startsWith("Sweep finished"))
      << w->statusBar()->currentMessage().toStdString();
}

TEST_F(ExperimentsTab, StoppedSweepResumesWithTheSameTrialsAlsoInANewWindow) {
  setSweep({"lr=log:1e-3:1e-2", "batch=choice:32,64"}, 3, 1);
  // Stop once the first trial has finished.
  QObject::connect(p(), &gui::ExperimentsPanel::trialUpdated, p(), [this](int id) {
    if (id == 0 && p()->trials()->trials()[0].status == Trial::Status::Completed) p()->stop();
  });
  ASSERT_TRUE(p()->start());
  ASSERT_TRUE(waitFinished(p()));
  const std::vector<Trial> first = p()->trials()->trials();
  ASSERT_GE(first.size(), 1u);
  ASSERT_LT(std::count_if(first.begin(), first.end(),
                          [](const Trial& t) { return t.status == Trial::Status::Completed; }),
            3);
  EXPECT_TRUE(p()->resumeButton()->isEnabled());
  EXPECT_TRUE(p()->messageText().startsWith("Sweep stopped; Resume continues it"));

  // As after a killed app: a new window on the same project finds the sweep.
  w.reset();
  w = open();
  EXPECT_EQ(p()->specs(), (QStringList{"lr=log:0.001:0.01", "batch=choice:32,64"}));
  EXPECT_EQ(p()->options().trials, 3);
  ASSERT_EQ(p()->trials()->trials().size(), first.size());
  EXPECT_TRUE(p()->resumeButton()->isEnabled());
  ASSERT_TRUE(p()->resume()) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  const std::vector<Trial>& all = p()->trials()->trials();
  ASSERT_EQ(all.size(), 3u);
  for (const Trial& t : all) EXPECT_EQ(t.status, Trial::Status::Completed);
  // The trial finished before the stop is kept as it was, not run again.
  EXPECT_EQ(all[0].x, first[0].x);
  ASSERT_EQ(all[0].epochs.size(), 1u);
  EXPECT_EQ(all[0].epochs[0].val_accuracy, first[0].epochs[0].val_accuracy);
  // A trial that was running at the stop is run again with its point.
  if (first.size() > 1) {
    EXPECT_EQ(all[1].x, first[1].x);
  }
  EXPECT_FALSE(p()->resumeButton()->isEnabled());
}

TEST_F(ExperimentsTab, DivergingTrialsFailWithAMessageAndTheSweepGoesOn) {
  // SGD at lr 1e30 overflows to NaN in the first epoch.
  setSweep({"lr=choice:1e30", "optimizer.type=choice:sgd"}, 2, 1);
  ASSERT_TRUE(p()->start());
  ASSERT_TRUE(waitFinished(p()));
  const auto& trials = p()->trials()->trials();
  ASSERT_EQ(trials.size(), 2u);  // the second trial ran after the first failed
  for (const Trial& t : trials) EXPECT_EQ(t.status, Trial::Status::Failed);
  EXPECT_TRUE(p()->messageText().contains("Trial 0 failed: the loss became NaN"))
      << p()->messageText().toStdString();
  EXPECT_FALSE(p()->applyBestButton()->isEnabled());
  EXPECT_FALSE(p()->applyBest());
  EXPECT_TRUE(p()->messageText().contains("No trial has completed"));
}

TEST_F(ExperimentsTab, SweepRunsWithoutATestSplit) {
  // A dataset read with test fraction 0 has no test set (the context holds
  // none); the sweep's trials validate on a split of the training set.
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::Sample;
  gui::LoadedDataset d = gui::ProjectContext::readDataset(w->context()->project(), s);
  d.data.test = Dataset{};
  w->context()->applyDataset(s, std::move(d));
  ASSERT_EQ(w->context()->testSet(), nullptr);
  setSweep({"lr=log:1e-3:1e-2"}, 1, 1);
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  const auto& trials = p()->trials()->trials();
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].status, Trial::Status::Completed) << trials[0].error;
  EXPECT_TRUE(p()->messageText().startsWith("Sweep finished: 1 completed"))
      << p()->messageText().toStdString();
}

// The bytes of every events.out.tfevents.* file in `dir` (not below it).
std::string eventBytes(const QString& dir) {
  std::string all;
  for (const QFileInfo& f : QDir(dir).entryInfoList({"events.out.tfevents.*"}, QDir::Files)) {
    std::ifstream in(f.filePath().toStdString(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    all += ss.str();
  }
  return all;
}

// A sweep of 2 tiny trials started in the tab: the HParams plugin's
// experiment in its log folder, and each trial a session with its start
// (the parameter's value) and end, as deepcanvas-cli sweep writes them;
// TensorBoard's own reader agrees when the verify venv has it. The box
// off: no log at all.
TEST_F(ExperimentsTab, ASweepWritesTensorBoardsHParamsDataUnlessTurnedOff) {
  auto* box = p()->findChild<QCheckBox*>("sweepTensorBoard");
  ASSERT_NE(box, nullptr);
  box->setChecked(true);
  setSweep({"lr=log:1e-3:1e-2"}, 2, 1);
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  const QString log = p()->logDir();
  ASSERT_FALSE(log.isEmpty());
  EXPECT_TRUE(p()->messageText().contains(log)) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  ASSERT_EQ(p()->trials()->trials().size(), 2u);
  EXPECT_TRUE(p()->messageText().contains(log)) << p()->messageText().toStdString();
  const std::string experiment = eventBytes(log);
  EXPECT_NE(experiment.find("hparams"), std::string::npos);
  EXPECT_NE(experiment.find("_hparams_/experiment"), std::string::npos);
  EXPECT_NE(experiment.find("epoch/val_accuracy"), std::string::npos);  // a metric
  for (const char* trial : {"trial-000", "trial-001"}) {
    const std::string session = eventBytes(QDir(log).filePath(trial));
    EXPECT_NE(session.find("_hparams_/session_start_info"), std::string::npos) << trial;
    EXPECT_NE(session.find("_hparams_/session_end_info"), std::string::npos) << trial;
    EXPECT_NE(session.find("lr"), std::string::npos) << trial;
    EXPECT_NE(session.find("epoch/val_accuracy"), std::string::npos) << trial;
  }
  const QByteArray venv = qEnvironmentVariableIsSet("DC_VERIFY_VENV")
                              ? qgetenv("DC_VERIFY_VENV")
                              : sourcePath(".venv-verify").toUtf8();
  QProcess py;
  py.setProcessChannelMode(QProcess::MergedChannels);
  py.start(QString::fromUtf8(venv) + "/bin/python",
           {sourcePath("tests/e2e/tensorboard_sweep_check.py"), log, p()->statePath()});
  if (py.waitForStarted() && py.waitForFinished(120000) && py.exitCode() != 77) {
    const QString out = QString::fromUtf8(py.readAll());
    EXPECT_EQ(py.exitCode(), 0) << out.toStdString();
    EXPECT_TRUE(out.contains("2 sessions, 2 trials")) << out.toStdString();
  } else {
    std::printf(
        "note: TensorBoard's HParams reader not run: no tensorboard in %s "
        "(installer/verify-venv.sh installs it)\n",
        venv.constData());
  }

  box->setChecked(false);
  EXPECT_FALSE(QSettings().value("experiments/tensorboard", true).toBool());
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  EXPECT_TRUE(p()->logDir().isEmpty());
  ASSERT_TRUE(waitFinished(p()));
  box->setChecked(true);
}

// The space may range over the batch size: the memory check holds the
// largest (as deepcanvas-cli sweep's does), not the Training tab's batch,
// and names the space's values as the thing to lower.
TEST_F(ExperimentsTab, MemoryIsCheckedWithTheSpacesLargestBatch) {
  ASSERT_LE(w->context()->project().training.batch, 256);
  setSweep({"lr=log:1e-3:1e-2", "batch=choice:32,1000000"}, 2, 1);
  EXPECT_FALSE(p()->start());
  EXPECT_FALSE(p()->running());
  const QString text = p()->messageText();
  EXPECT_TRUE(text.contains("batch 1000000 needs about")) << text.toStdString();
  EXPECT_TRUE(
      text.contains("Lower the largest batch in the search space (batch=choice:32,1000000)"))
      << text.toStdString();
  EXPECT_FALSE(text.contains("Training tab")) << text.toStdString();
  // A range's top counts as its largest.
  setSweep({"batch=int:16:1000000"}, 2, 1);
  EXPECT_FALSE(p()->start());
  EXPECT_TRUE(p()->messageText().contains("batch 1000000 needs about"))
      << p()->messageText().toStdString();
  // Small batches start.
  setSweep({"batch=choice:16,32"}, 1, 1);
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
}

TEST(ProjectContextBusy, StaysSetUntilBothOwnersEnd) {
  gui::ProjectContext ctx{Project{}};
  QSignalSpy changed(&ctx, &gui::ProjectContext::busyChanged);
  using O = gui::ProjectContext::BusyOwner;
  ctx.setBusy(O::Sweep, true);
  ctx.setBusy(O::Training, true);
  EXPECT_TRUE(ctx.busy());
  ctx.setBusy(O::Training, false);  // the first to end
  EXPECT_TRUE(ctx.busy());
  EXPECT_TRUE(ctx.busyWith(O::Sweep));
  EXPECT_FALSE(ctx.busyWith(O::Training));
  ctx.setBusy(O::Sweep, false);
  EXPECT_FALSE(ctx.busy());
  ASSERT_EQ(changed.size(), 2);  // on and off, once each
  EXPECT_TRUE(changed[0][0].toBool());
  EXPECT_FALSE(changed[1][0].toBool());
}

TEST_F(ExperimentsTab, SweepAndTrainingRunRefuseEachOther) {
  // A sweep running: the Training tab refuses to start, and the window
  // counts the sweep as training (close asks, the benchmark waits).
  setSweep({"lr=log:1e-3:1e-2"}, 3, 1);
  ASSERT_TRUE(p()->start()) << p()->messageText().toStdString();
  EXPECT_TRUE(w->context()->busy());
  QSignalSpy problems(w->trainingPanel(), &gui::TrainingPanel::problemsFound);
  w->trainingPanel()->startTraining();
  EXPECT_FALSE(w->trainingPanel()->session()->active());
  ASSERT_EQ(problems.size(), 1);
  EXPECT_TRUE(problems[0][0].toStringList().join(" ").contains(
      "A sweep is running in the Experiments tab. Stop it there"));
  QString asked;
  w->setConfirmHandler([&](const QString& q) {
    asked = q;
    return gui::MainWindow::Answer::Cancel;
  });
  EXPECT_FALSE(w->close());  // asked first, and kept open
  EXPECT_TRUE(asked.startsWith("A sweep is running in the Experiments tab. Stop it to close"))
      << asked.toStdString();
  EXPECT_TRUE(p()->running());
  // Stopped and waited for, the context is free at once.
  p()->stopAndWait();
  EXPECT_FALSE(p()->running());
  EXPECT_FALSE(w->context()->busy());
  EXPECT_TRUE(p()->messageText().startsWith("Sweep stopped; Resume continues it"))
      << p()->messageText().toStdString();

  // A training run: the sweep refuses to start.
  w->trainingPanel()->startTraining();
  ASSERT_TRUE(w->trainingPanel()->session()->active());
  EXPECT_FALSE(p()->start());
  EXPECT_TRUE(p()->messageText().startsWith(
      "A training run is in progress in the Training tab. Stop it there"))
      << p()->messageText().toStdString();
  EXPECT_FALSE(p()->running());
  EXPECT_TRUE(w->context()->busyWith(gui::ProjectContext::BusyOwner::Training));
  w->trainingPanel()->session()->stopAndWait();
  EXPECT_FALSE(w->context()->busy());
}

TEST_F(ExperimentsTab, ResumesACliSweepWithHiddenOptionsAndStartUsesDefaults) {
  // A state file as `deepcanvas-cli tune --eta 4` writes it, with shorter
  // epochs: options the tab does not show.
  SweepState st;
  const SearchSpace space = parse_search_space({"lr=log:1e-3:1e-2"}, g());
  st.space = {space.params[0].spec_text()};
  st.options.trials = 2;
  st.options.epochs = 1;
  st.options.eta = 4;
  st.options.tpe = false;
  st.options.seed = 5000000000ULL;  // above a spin box's 2^31 - 1
  st.options.steps_per_epoch_limit = 8;
  st.options.n_startup = 2;  // the file holds it resolved
  const std::string path = (dir + "/p.sweep.json").toStdString();
  write_file_atomic(path, sweep_to_json(st, space));
  w.reset();
  w = open();
  p()->setStepsPerEpochLimit(0);  // only the file's limit
  EXPECT_EQ(p()->options().seed, 5000000000ULL);
  // What Start would use: the defaults, not the file's hidden options.
  EXPECT_EQ(p()->options().eta, SweepOptions{}.eta);
  EXPECT_EQ(p()->options().steps_per_epoch_limit, 0);

  // A visible field changed: the app's words, not the CLI's flags.
  SweepOptions o = p()->options();
  o.trials = 3;
  p()->setOptions(o);
  EXPECT_FALSE(p()->resume());
  EXPECT_TRUE(p()->messageText().contains("trials (2 there, 3 here)"))
      << p()->messageText().toStdString();
  EXPECT_TRUE(p()->messageText().contains("Start replaces it"));
  EXPECT_FALSE(p()->messageText().contains("--fresh"));
  o.trials = 2;
  p()->setOptions(o);

  ASSERT_TRUE(p()->resume()) << p()->messageText().toStdString();
  ASSERT_TRUE(waitFinished(p()));
  ASSERT_EQ(p()->trials()->trials().size(), 2u);
  // ASHA's default first rung (epochs / eta^2 = 1/16 of the one epoch) may
  // stop the second trial.
  for (const Trial& t : p()->trials()->trials()) {
    EXPECT_TRUE(t.status == Trial::Status::Completed || t.status == Trial::Status::Pruned)
        << trial_status_name(t.status);
  }
  SweepState after = sweep_from_json(read_file(path, 1 << 24, "sweep"), path);
  EXPECT_EQ(after.options.eta, 4);
  EXPECT_EQ(after.options.min_epochs, 1.0 / 16);  // resolved with the file's eta
  EXPECT_EQ(after.options.steps_per_epoch_limit, 8);
  EXPECT_EQ(after.options.seed, 5000000000ULL);

  // A fresh Start after it does not inherit the file's steps limit or eta
  // (the state file changes only once a trial reports, so the options Start
  // passes to the engine are checked).
  EXPECT_EQ(p()->options().eta, SweepOptions{}.eta);
  EXPECT_EQ(p()->options().steps_per_epoch_limit, 0);
  EXPECT_EQ(p()->options().seed, 5000000000ULL);
}

// A state file the engine refuses: the tab names the file and what is wrong
// with it, and its own remedy rather than the CLI's flag.
TEST_F(ExperimentsTab, AnUnreadableStateFileIsWordedInTheTabsTerms) {
  write_file_atomic((dir + "/p.sweep.json").toStdString(), "{\"space\": [");
  w.reset();
  w = open();
  const QString m = p()->messageText();
  EXPECT_TRUE(m.startsWith("p.sweep.json cannot be resumed: not a readable sweep state"))
      << m.toStdString();
  EXPECT_TRUE(m.contains("Start replaces it with a new sweep")) << m.toStdString();
  EXPECT_FALSE(m.contains("--fresh")) << m.toStdString();
  // Resume says the same and starts nothing.
  setSweep({"lr=log:1e-3:1e-2"}, 2, 1);
  EXPECT_FALSE(p()->resume());
  EXPECT_TRUE(p()->messageText().startsWith("p.sweep.json cannot be resumed"))
      << p()->messageText().toStdString();
  EXPECT_FALSE(p()->messageText().contains("--fresh"));
  EXPECT_FALSE(p()->running());
}

// A trial that ASHA stopped at a rung inside its first epoch shows the
// fraction of an epoch it trained; whole epochs show as whole numbers.
TEST_F(ExperimentsTab, TheEpochsColumnShowsFractionsOfAnEpoch) {
  const SearchSpace space = parse_search_space({"lr=log:1e-3:1e-2"}, g());
  Trial pruned, completed;
  pruned.id = 0;
  pruned.x = completed.x = {5e-3};
  pruned.status = Trial::Status::Pruned;
  TrialEpoch rung;
  rung.epoch = 1;
  rung.at = 1.0 / 3;
  rung.trained = 0.34;
  rung.val_accuracy = 0.5;
  pruned.epochs = {rung};
  completed.id = 1;
  completed.status = Trial::Status::Completed;
  TrialEpoch end = rung;
  end.at = end.trained = 3;
  end.epoch = 3;
  completed.epochs = {rung, end};
  p()->trials()->reset(space, {pruned, completed});
  const QAbstractItemModel* m = p()->trials();
  const int epochs = m->columnCount() - 1;
  EXPECT_EQ(m->headerData(epochs, Qt::Horizontal).toString(), "Epochs");
  EXPECT_EQ(m->data(m->index(0, epochs)).toString(), "0.34");
  EXPECT_EQ(m->data(m->index(1, epochs)).toString(), "3");
  EXPECT_DOUBLE_EQ(m->data(m->index(0, epochs), Qt::UserRole).toDouble(), 0.34);
}

// A completed trial at x with one epoch's validation accuracy.
Trial completedTrial(std::vector<double> x, double val_accuracy) {
  Trial t;
  t.x = std::move(x);
  t.status = Trial::Status::Completed;
  TrialEpoch e;
  e.epoch = 1;
  e.val_accuracy = val_accuracy;
  t.epochs = {e};
  return t;
}

TEST_F(ExperimentsTab, RefusedApplyBestLeavesNoHalfStepOnTheUndoStacks) {
  // A completed trial whose attribute value the layer refuses (as after the
  // network changed under the sweep), next to a valid setting.
  SearchSpace space = parse_search_space({"lr=log:1e-3:1e-2", "conv1.filters=int:8:12"}, g());
  space.params[1].lo = space.params[1].hi = -8;
  p()->trials()->reset(space, {completedTrial({5e-3, -8}, 0.5)});
  const double lr_before = w->trainingPanel()->config().optimizer.lr;
  const int64_t filters_before = g().node(idOf(g(), "conv1")).attrs.i("filters");
  QUndoStack* undo = w->editor()->undoStack();
  const int count = undo->count();
  const bool could_redo = undo->canRedo();
  EXPECT_FALSE(p()->applyBest());
  EXPECT_TRUE(p()->messageText().startsWith("Apply best failed: "))
      << p()->messageText().toStdString();
  EXPECT_EQ(undo->count(), count);
  EXPECT_EQ(undo->canRedo(), could_redo);
  EXPECT_EQ(w->trainingPanel()->config().optimizer.lr, lr_before);
  EXPECT_EQ(g().node(idOf(g(), "conv1")).attrs.i("filters"), filters_before);
}

// When the best trial is the project as it is (trial 0, the baseline),
// Apply best pushed an empty undo step and marked the project modified: it
// now says there is nothing to apply and changes nothing.
TEST_F(ExperimentsTab, ApplyBestOfTheProjectsOwnValuesChangesNothing) {
  SearchSpace space = parse_search_space({"lr=log:1e-4:1e-2", "conv1.filters=int:8:64"}, g());
  p()->trials()->reset(space,
                       {completedTrial({w->trainingPanel()->config().optimizer.lr,
                                        double(g().node(idOf(g(), "conv1")).attrs.i("filters"))},
                                       0.8)});
  QUndoStack* undo = w->editor()->undoStack();
  const int count = undo->count();
  const bool modified = w->isModified();
  EXPECT_TRUE(p()->applyBest());
  EXPECT_TRUE(p()->messageText().contains("nothing to apply")) << p()->messageText().toStdString();
  EXPECT_EQ(undo->count(), count);
  EXPECT_EQ(w->isModified(), modified);
}

}  // namespace
}  // namespace dc::test
