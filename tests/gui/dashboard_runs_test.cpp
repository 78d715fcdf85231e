// Several runs in one panel: the plots' legends stay out of the data with
// one entry per run, the Runs table chooses the overlays, a stopped worse
// run does not take over the Inference tab, and a pause is left out of the
// rate and ETA.
#include "dashboard_test_util.h"

#include "gui/inference_panel.h"
#include "widgets/live_plot.h"

#include <QHeaderView>
#include <QPushButton>
#include <QTableWidget>
#include <QTest>

namespace dc::test {

using gui::TrainingSession;

TEST(DashboardRuns, LegendsAboveThePlotsOneEntryPerRunAndTheRunsTableChoosesOverlays) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir dir;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(train_briefly(panel, dir.path(), 4));

  for (widgets::LivePlot* p : {panel.lossPlot(), panel.accuracyPlot()}) {
    EXPECT_FALSE(p->legendOverData());
    // The series keys (told apart by line style) and one entry per run,
    // not one per series and run. The sample holds out no validation
    // split: no "validation" key for a curve that is never drawn.
    EXPECT_EQ(p->legendEntries(),
              QStringList({"train", "train (epoch)", "test", "run 1", "run 2", "run 3"}));
  }
  ASSERT_EQ(panel.lossPlot()->overlayCount(), 2);

  // Unticking run 1 in the Runs table takes it off every plot; run 2 stays.
  QTableWidgetItem* run1 = panel.runHistory()->item(0, 0);
  ASSERT_NE(run1, nullptr);
  ASSERT_TRUE(run1->flags() & Qt::ItemIsUserCheckable);
  run1->setCheckState(Qt::Unchecked);
  for (widgets::LivePlot* p : {panel.lossPlot(), panel.accuracyPlot(), panel.throughputPlot()}) {
    EXPECT_FALSE(p->overlayVisible(0));
    EXPECT_TRUE(p->overlayVisible(1));
  }
  EXPECT_FALSE(panel.lossPlot()->legendEntries().contains("run 1"));
  EXPECT_TRUE(panel.lossPlot()->legendEntries().contains("run 2"));
  run1->setCheckState(Qt::Checked);
  EXPECT_TRUE(panel.lossPlot()->overlayVisible(0));
  // The table's header reads in full.
  QHeaderView* h = panel.runHistory()->horizontalHeader();
  const QString held = panel.runHistory()->horizontalHeaderItem(4)->text();
  EXPECT_GE(h->sectionSize(4), h->fontMetrics().horizontalAdvance(held));
}

// "validation" is listed for a run that holds out a validation split, and
// stays listed while an earlier run's overlay draws it.
TEST(DashboardRuns, TheValidationKeyIsListedWhereAValidationCurveIsDrawn) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir dir;
  Project p = ctx->project();
  p.training.val_split = 0.1;
  ctx->setProject(p);
  ASSERT_TRUE(train_briefly(panel, dir.path(), 4));
  EXPECT_TRUE(panel.lossPlot()->legendEntries().contains("validation"));
  EXPECT_TRUE(panel.accuracyPlot()->legendEntries().contains("validation"));
  p.training.val_split = 0;
  ctx->setProject(p);
  ASSERT_TRUE(train_briefly(panel, dir.path(), 4));
  EXPECT_TRUE(panel.lossPlot()->legendEntries().contains("validation"));  // run 1's
  panel.lossPlot()->clearOverlays();
  EXPECT_FALSE(panel.lossPlot()->legendEntries().contains("validation"));
}

// A run's entry joined the four series keys on a second legend row (a fixed
// wrap of four), which took the curves' height at 1280x720: the entries now
// fill the rows the plot's width holds.
TEST(DashboardRuns, LegendEntriesFillTheRowsThePlotsWidthHolds) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir dir;
  ASSERT_TRUE(train_briefly(panel, dir.path(), 4));
  widgets::LivePlot* p = panel.lossPlot();
  ASSERT_EQ(p->legendEntries().size(), 4);
  panel.resize(2600, 900);
  panel.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&panel));
  QApplication::processEvents();
  ASSERT_GT(p->width(), 700);
  EXPECT_EQ(p->legendRows(), 1) << "plot " << p->width() << " px wide";
  panel.resize(900, 900);
  QApplication::processEvents();
  ASSERT_LT(p->width(), 300);
  EXPECT_GE(p->legendRows(), 2) << "plot " << p->width() << " px wide";
}

TEST(DashboardRuns, AStoppedRunDoesNotReplaceTheWeightsInferenceUses) {
  auto ctx = sample_context();
  gui::TrainingPanel training(ctx.get());
  gui::InferencePanel inference(ctx.get());
  QTemporaryDir dir;
  ASSERT_TRUE(train_briefly(training, dir.path(), 30));
  EXPECT_TRUE(inference.weightsSource().contains("run 1"))
      << inference.weightsSource().toStdString();
  // The normalisation came with the weights.
  EXPECT_TRUE(inference.preprocessingText().contains("training set's statistics"))
      << inference.preprocessingText().toStdString();

  // A second run, stopped early: worse, and not what Inference should switch to.
  QSignalSpy said(&training, &gui::TrainingPanel::message);
  QSignalSpy steps(training.session(), &TrainingSession::steps);
  QSignalSpy done(training.session(), &TrainingSession::finished);
  training.setEpochs(3);
  training.setStepsPerEpochLimit(0);
  training.startTraining();
  ASSERT_TRUE(steps.wait(120000));
  training.stopButton()->click();
  ASSERT_TRUE(done.wait(120000));
  ASSERT_EQ(training.session()->state(), TrainingSession::State::Cancelled);
  EXPECT_TRUE(ctx->weights().source.contains("run 1")) << ctx->weights().source.toStdString();
  EXPECT_TRUE(inference.weightsSource().contains("run 1"));
  ASSERT_FALSE(said.isEmpty());
  const QString line = said.last().at(0).toString();
  EXPECT_TRUE(line.contains("still uses") && line.contains("run 1")) << line.toStdString();

  // Every run's checkpoints are offered by name, and choosing one uses it.
  const QStringList choices = inference.weightChoices();
  EXPECT_TRUE(choices.contains("Run 2: as stopped")) << choices.join(" | ").toStdString();
  EXPECT_TRUE(choices.contains("Run 1: last epoch"));
  EXPECT_EQ(choices.filter("Run 1: best (epoch 1").size(), 1);
  EXPECT_TRUE(choices.last().startsWith("Checkpoint file"));
  ASSERT_TRUE(inference.chooseWeights("Run 2: as stopped"));
  EXPECT_TRUE(inference.weightsSource().startsWith("Run 2: as stopped"))
      << inference.weightsSource().toStdString();
  QString image = dir.path() + "/x.png";
  ASSERT_TRUE(gui::sample_image(*ctx->testSet(), 0).save(image));
  ASSERT_EQ(inference.openPaths({image}), 1);
  EXPECT_GE(inference.topClass(), 0);
  // And back to the latest (run 1's) weights.
  ASSERT_TRUE(inference.chooseWeights(choices.first()));
  EXPECT_TRUE(inference.weightsSource().contains("run 1"));
}

// The paused panel's status is checked in DashboardTraining.PauseResumeStop...
TEST(DashboardRuns, APauseIsLeftOutOfTheRateAndTheEta) {
  // The trainer's epoch clock runs on through a pause: 640 samples in 6.4 s
  // of which 3.2 s paused is 200 samples/s, not 100.
  TrainEvent e;
  e.step = 10;
  e.steps_total = 20;
  e.step_in_epoch = 10;
  e.samples_per_s = 100;
  e.eta_s = 6.4;
  TrainingSession::discountPause(e, 64, 3.2);
  EXPECT_DOUBLE_EQ(e.samples_per_s, 200);
  EXPECT_DOUBLE_EQ(e.eta_s, 3.2);
  // No pause: the trainer's figures stand.
  TrainEvent f = e;
  TrainingSession::discountPause(f, 64, 0);
  EXPECT_DOUBLE_EQ(f.samples_per_s, e.samples_per_s);
}

}  // namespace dc::test
