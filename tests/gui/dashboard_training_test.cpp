// The training panel end to end: the sample project trains from the GUI,
// plots and progress follow, pause/resume/stop act and leave a checkpoint,
// and the evaluation view lists a confusion-matrix cell's samples.
#include "dashboard_test_util.h"

#include "gui/evaluation_view.h"
#include "gui/inference_panel.h"
#include "gui/training_plots.h"
#include "widgets/confusion_matrix_widget.h"
#include "widgets/live_plot.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/run_log.h>

#include <QCheckBox>
#include <QDir>
#include <QFileInfo>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QTableWidget>
#include <QTest>

namespace dc::test {

using gui::TrainingSession;

TEST(DashboardTraining, OneEpochFillsPlotsAndProgressReachesFull) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  panel.show();
  QTemporaryDir dir;
  QSignalSpy epochs(panel.session(), &TrainingSession::epochEnded);
  QSignalSpy ready(&panel, &gui::TrainingPanel::weightsReady);
  ASSERT_TRUE(train_briefly(panel, dir.path(), 40)) << panel.logText().toStdString();

  EXPECT_EQ(panel.session()->state(), TrainingSession::State::Finished);
  EXPECT_EQ(panel.progressBar()->value(), panel.progressBar()->maximum());
  EXPECT_EQ(epochs.count(), 1);
  EXPECT_EQ(ready.count(), 1);
  // Per-step series got points, the per-epoch series exactly one.
  EXPECT_GT(panel.lossPlot()->pointCount(0), 0);
  EXPECT_EQ(panel.lossPlot()->pointCount(1), 1);
  EXPECT_EQ(panel.lossPlot()->pointCount(3), 1);  // test loss
  EXPECT_GT(panel.accuracyPlot()->pointCount(0), 0);
  EXPECT_EQ(panel.accuracyPlot()->pointCount(3), 1);
  EXPECT_GT(panel.throughputPlot()->totalPoints(), 0);
  EXPECT_GT(panel.lrPlot()->totalPoints(), 0);
  const double acc = panel.accuracyPlot()->lastValue(3);
  EXPECT_GT(acc, 30.0) << "test accuracy after 40 steps";  // chance is 10 %
  // Without a GPU the device plots say what they show instead.
  EXPECT_FALSE(panel.utilizationPlot()->note().isEmpty());
  EXPECT_FALSE(panel.memoryPlot()->note().isEmpty());

  EXPECT_TRUE(ctx->weights().valid());
  EXPECT_TRUE(QFileInfo::exists(panel.session()->lastCheckpoint()));
  EXPECT_TRUE(panel.logText().contains("Finished"));
  EXPECT_TRUE(panel.startButton()->isEnabled());
  EXPECT_FALSE(panel.stopButton()->isEnabled());

  // A second run keeps the first as an overlay for comparison.
  ASSERT_TRUE(train_briefly(panel, dir.path(), 5));
  EXPECT_EQ(panel.lossPlot()->overlayCount(), 1);
  ASSERT_EQ(panel.runHistory()->rowCount(), 2);
  EXPECT_EQ(panel.runHistory()->item(0, 5)->text(), "finished");
  EXPECT_EQ(panel.runHistory()->item(1, 2)->text(), "1/1");

  // Exports.
  EXPECT_TRUE(panel.lossPlot()->exportPng(dir.path() + "/loss.png", 400, 300));
  EXPECT_TRUE(QFileInfo(dir.path() + "/loss.png").size() > 0);
  EXPECT_TRUE(panel.lossPlot()->exportCsv(dir.path() + "/loss.csv"));
  EXPECT_TRUE(panel.lossPlot()->csv().contains("run 1"));
}

TEST(DashboardTraining, PauseResumeStopWriteACheckpoint) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir dir;
  panel.setEpochs(3);
  panel.setStepsPerEpochLimit(0);  // long enough that only Stop ends it
  panel.setCheckpointDir(dir.path());
  QSignalSpy steps(panel.session(), &TrainingSession::steps);
  QSignalSpy states(panel.session(), &TrainingSession::stateChanged);
  QSignalSpy done(panel.session(), &TrainingSession::finished);
  auto wait_state = [&](TrainingSession::State s) {
    while (panel.session()->state() != s)
      if (!states.wait(120000)) return false;
    return true;
  };

  panel.startTraining();
  ASSERT_EQ(panel.session()->state(), TrainingSession::State::Running);
  EXPECT_FALSE(panel.startButton()->isEnabled());
  // The run's data cannot be swapped under it.
  EXPECT_TRUE(ctx->busy());
  EXPECT_THROW(ctx->loadDataset({}), dc::Error);
  ASSERT_TRUE(steps.wait(120000));

  panel.pauseButton()->click();
  ASSERT_TRUE(wait_state(TrainingSession::State::Paused));
  EXPECT_TRUE(panel.resumeButton()->isEnabled());
  EXPECT_FALSE(panel.pauseButton()->isEnabled());
  const int progress_paused = panel.progressBar()->value();
  // Paused: no rate or ETA, even from steps still queued before the pause.
  QTest::qWait(300);
  EXPECT_TRUE(panel.statusText().startsWith("Paused")) << panel.statusText().toStdString();
  EXPECT_FALSE(panel.statusText().contains("samples/s")) << panel.statusText().toStdString();
  EXPECT_FALSE(panel.statusText().contains("ETA")) << panel.statusText().toStdString();

  panel.resumeButton()->click();
  ASSERT_TRUE(wait_state(TrainingSession::State::Running));
  // What the rate and ETA leave out (see DashboardRuns.APauseIsLeftOut...).
  EXPECT_GT(panel.session()->pausedSeconds(), 0.0);
  steps.clear();
  ASSERT_TRUE(steps.wait(120000));  // training goes on after resuming
  EXPECT_GE(panel.progressBar()->value(), progress_paused);
  EXPECT_TRUE(panel.statusText().contains("samples/s")) << panel.statusText().toStdString();

  panel.stopButton()->click();
  ASSERT_TRUE(done.wait(120000));
  EXPECT_FALSE(done.first().at(0).toBool());
  EXPECT_EQ(panel.session()->state(), TrainingSession::State::Cancelled);
  EXPECT_LT(panel.progressBar()->value(), panel.progressBar()->maximum());
  const QString ck = panel.session()->lastCheckpoint();
  EXPECT_TRUE(ck.endsWith("stopped.safetensors")) << ck.toStdString();
  ASSERT_TRUE(QFileInfo::exists(ck));
  // The stopped weights are usable: readable and in the context.
  EXPECT_NO_THROW(gui::weights_from_checkpoint(ck));
  EXPECT_TRUE(ctx->weights().valid());
  EXPECT_FALSE(ctx->busy());
  EXPECT_TRUE(panel.logText().contains("Paused"));
  EXPECT_TRUE(panel.logText().contains("Resumed"));
}

// A checkpoint chosen in the Inference tab stays chosen when a run ends:
// the log says so instead of claiming the run's weights are in use.
TEST(DashboardTraining, AFinishedRunNamesTheWeightsTheInferenceTabStillUses) {
  const TrainedRun& trained = TrainedRun::get();
  ASSERT_TRUE(trained.ok);
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  gui::InferencePanel inference(ctx.get());
  ASSERT_TRUE(inference.loadCheckpoint(trained.checkpoint, "Chosen one"));
  QTemporaryDir dir;
  ASSERT_TRUE(train_briefly(panel, dir.path(), 5));
  EXPECT_TRUE(ctx->weights().valid());
  EXPECT_TRUE(ctx->weightsInUse().source.startsWith("Chosen one"));
  EXPECT_TRUE(panel.logText().contains(
      "Run 1 finished; its weights are the Inference tab's Latest, but it still predicts with "
      "Chosen one"))
      << panel.logText().toStdString();
  EXPECT_FALSE(panel.logText().contains("the Inference tab now uses"));
}

TEST(DashboardTraining, ConfusionCellListsItsSamplesMostConfidentFirst) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir dir;
  ASSERT_TRUE(train_briefly(panel, dir.path(), 30));
  auto* view = panel.evaluation();
  const auto& m = view->matrixWidget()->matrix();
  ASSERT_EQ(m.size(), 10u);
  const auto [t, p, best] = busiest_mistake(m);
  ASSERT_GT(best, 0);
  QSignalSpy listed(view, &gui::EvaluationView::samplesListed);
  // A click on the drawn cell, as the user does it.
  view->resize(900, 600);
  view->show();
  QRect r = view->matrixWidget()->cellRect(t, p);
  ASSERT_EQ(view->matrixWidget()->cellAt(r.center()), QPoint(p, t));
  QTest::mouseClick(view->matrixWidget(), Qt::LeftButton, {}, r.center());
  ASSERT_TRUE(listed.wait(120000));
  EXPECT_EQ(listed.first().at(0).toInt(), int(best));
  const auto& s = view->listed();
  ASSERT_EQ(int64_t(s.size()), best);
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].label, t);
    EXPECT_EQ(s[i].predicted, p);
    if (i) {
      EXPECT_GE(s[i - 1].confidence, s[i].confidence);
    }
  }
  // A later epoch's checkpoint: the listing stays, saying it is older than
  // the matrix (once), until the cell is clicked again.
  const QString ck =
      QFileInfo(panel.session()->lastCheckpoint()).dir().filePath("last.safetensors");
  const QString stale = "Listed with an earlier epoch's weights";
  EXPECT_FALSE(view->cellText().contains(stale));
  view->setCheckpoint(ck);
  view->setCheckpoint(ck);
  EXPECT_EQ(view->cellText().count(stale), 1) << view->cellText().toStdString();
  EXPECT_EQ(int64_t(view->listed().size()), best);
  QTest::mouseClick(view->matrixWidget(), Qt::LeftButton, {}, r.center());
  ASSERT_TRUE(listed.wait(120000));
  EXPECT_FALSE(view->cellText().contains(stale)) << view->cellText().toStdString();
}

}  // namespace dc::test

namespace dc::test {

// GPU runs: the trainer's telemetry (NVML and the allocator's bytes) goes to
// the utilisation and memory plots. Fed by hand here, since CI has no GPU.
TEST(DashboardTraining, TelemetryReadingsReachTheDevicePlots) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  gui::DeviceReading r;
  r.t = 1.0;
  r.utilization_pct = 87;
  r.memory_used = int64_t(3) << 30;
  r.memory_total = int64_t(80) << 30;
  r.allocated = int64_t(1) << 30;
  r.reserved = int64_t(2) << 30;
  Q_EMIT panel.session()->telemetry(r);
  EXPECT_DOUBLE_EQ(panel.utilizationPlot()->lastValue(0), 87.0);
  ASSERT_EQ(panel.memoryPlot()->seriesCount(), 4);
  EXPECT_DOUBLE_EQ(panel.memoryPlot()->lastValue(0), 3.0);   // used, GiB
  EXPECT_DOUBLE_EQ(panel.memoryPlot()->lastValue(1), 80.0);  // total
  EXPECT_DOUBLE_EQ(panel.memoryPlot()->lastValue(2), 1.0);   // engine allocated
  EXPECT_DOUBLE_EQ(panel.memoryPlot()->lastValue(3), 2.0);   // engine reserved
}

// A CPU run shorter than the sampling interval (a few hundred images end in
// half a second) still plots where it ended: endRun takes a last reading.
// A run opened from a folder is another machine's: nothing of this one's.
TEST(DashboardTraining, AShortRunStillPlotsTheProcessAndAnImportedRunDoesNot) {
  gui::TrainingPlots plots;
  plots.startRun(1, -1);
  plots.endRun();
  // CPU use needs an interval, so only the end has it; memory is read at
  // the start too, so even this run draws a line.
  EXPECT_EQ(plots.utilization()->pointCount(0), 1);
  EXPECT_EQ(plots.memory()->pointCount(0), 2);
  EXPECT_GT(plots.memory()->lastValue(0), 1.0);  // MiB resident: this test's process
  plots.startRun(2, -1, /*sample_device=*/false);
  plots.endRun();
  EXPECT_EQ(plots.utilization()->pointCount(0), 0);
  EXPECT_EQ(plots.memory()->pointCount(0), 0);
}

// Each class's recall beside its row and precision under its column, from
// the matrix: "–" where the share has no samples.
TEST(DashboardTraining, ConfusionMatrixShowsRecallAndPrecisionPerClass) {
  // The Evaluation view's matrix after an epoch, with the engine's shares.
  auto ctx = sample_context();
  gui::EvaluationView view(ctx.get());
  // class 0: 8 of 10 right, 9 predicted as 0; class 2 never predicted.
  view.setConfusion({{8, 2, 0}, {1, 3, 0}, {0, 5, 0}}, 1);
  widgets::ConfusionMatrixWidget& w = *view.matrixWidget();
  w.resize(420, 380);
  EXPECT_EQ(w.recallText(0), "80 %");
  EXPECT_EQ(w.precisionText(0), "89 %");
  EXPECT_EQ(w.recallText(1), "75 %");
  EXPECT_EQ(w.precisionText(1), "30 %");
  EXPECT_EQ(w.recallText(2), "0 %");
  EXPECT_EQ(w.precisionText(2), "–");
  EXPECT_TRUE(w.rect().contains(w.scoresRect()));
  // The tooltips: a cell's count, a row's recall with its F1 and samples,
  // a column's precision; nothing outside.
  const QStringList names = w.columnLabels();
  ASSERT_EQ(names.size(), 3);
  const QRect c01 = w.cellRect(0, 1);
  EXPECT_EQ(
      w.toolTipAt(c01.center()),
      QString("true %1, predicted %2: 2 samples\nclick to list them").arg(names[0], names[1]));
  const QRect row1 = w.cellRect(1, 2);
  const QPoint recall1(row1.right() + 6, row1.center().y());
  EXPECT_EQ(
      w.toolTipAt(recall1),
      QString("recall of %1: 75 % of its 4 samples are predicted as %1 (F1 0.429)").arg(names[1]));
  const QRect col2 = w.cellRect(2, 2);
  const QPoint precision2(col2.center().x(), col2.bottom() + 4);
  EXPECT_EQ(w.toolTipAt(precision2),
            QString("precision of %1: – of the samples predicted as %1 are %1").arg(names[2]));
  EXPECT_EQ(w.toolTipAt(QPoint(1, 1)), "");
}

// Issue 18.14: Fashion-MNIST's column names ("T-shirt/top", "Ankle boot")
// read "T-shir…" at the size the Training tab gives the matrix at 1280x720.
TEST(DashboardTraining, ConfusionMatrixColumnNamesAreDrawnWhole) {
  const QStringList names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                             "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  std::vector<std::vector<int64_t>> m(10, std::vector<int64_t>(10, 1));
  widgets::ConfusionMatrixWidget w;
  w.setMatrix(m, names);
  w.setClassShares(std::vector<widgets::ConfusionMatrixWidget::ClassShares>(10));  // as the app
  w.resize(420, 380);
  EXPECT_TRUE(w.columnLabelsRotated());
  EXPECT_EQ(w.columnLabels(), names);
  // The grid, with the recall column and the precision row, still fits
  // inside the widget under the upright labels.
  EXPECT_TRUE(w.rect().contains(w.cellRect(9, 9)));
  EXPECT_TRUE(w.rect().contains(w.scoresRect()))
      << w.scoresRect().right() << " " << w.scoresRect().bottom();
  EXPECT_GT(w.cellRect(0, 0).width(), 20);
  // Short names stay horizontal.
  w.setMatrix(std::vector<std::vector<int64_t>>(3, std::vector<int64_t>(3, 1)), {"a", "b", "c"});
  EXPECT_FALSE(w.columnLabelsRotated());
  EXPECT_EQ(w.columnLabels(), (QStringList{"a", "b", "c"}));
  // The "precision" key left of the scores row has room beside short names.
  EXPECT_GE(w.cellRect(0, 0).left() - 6, QFontMetrics(w.font()).horizontalAdvance("precision"));
}

}  // namespace dc::test

namespace dc::test {

// Every app run leaves metrics.jsonl and a TensorBoard event file in its
// run folder, as CLI runs do (issue 35); the Run tab's box turns the event
// file off (remembered), the metrics log stays.
TEST(DashboardTraining, RunsWriteMetricsAndATensorBoardLogIntoTheirFolder) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  auto* box = panel.findChild<QCheckBox*>("tensorboardLog");
  ASSERT_NE(box, nullptr);
  box->setChecked(true);
  auto run_folder = [](const QString& root) {
    const QStringList runs = QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    return runs.size() == 1 ? QDir(root).filePath(runs.first()) : QString();
  };
  QTemporaryDir on, off;
  ASSERT_TRUE(train_briefly(panel, on.path(), 12)) << panel.logText().toStdString();
  const QString run = run_folder(on.path());
  ASSERT_FALSE(run.isEmpty());
  RunLogReader log(QDir(run).filePath("metrics.jsonl").toStdString());
  int steps = 0;
  for (const TrainEvent& e : log.poll(true)) steps += e.kind == TrainEvent::Kind::Step;
  EXPECT_TRUE(log.finished());
  EXPECT_GE(steps, 1);
  const QFileInfoList events = QDir(run).entryInfoList({"events.out.tfevents.*"}, QDir::Files);
  ASSERT_EQ(events.size(), 1);
  EXPECT_GT(events.first().size(), 0);

  box->setChecked(false);
  EXPECT_FALSE(QSettings().value("training/tensorboard", true).toBool());
  ASSERT_TRUE(train_briefly(panel, off.path(), 4)) << panel.logText().toStdString();
  const QString run2 = run_folder(off.path());
  ASSERT_FALSE(run2.isEmpty());
  EXPECT_TRUE(QFileInfo::exists(QDir(run2).filePath("metrics.jsonl")));
  EXPECT_TRUE(QDir(run2).entryList({"events.out.tfevents.*"}, QDir::Files).isEmpty());
  box->setChecked(true);
}

}  // namespace dc::test
