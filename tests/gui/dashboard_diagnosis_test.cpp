// The Training tab's predicted-vs-measured box and diagnosis during a run:
// the advisor's figures (from a seeded benchmark) beside measured ones, and
// a verdict that appears while the run is still going.
#include "bench_cache_fixture.h"
#include "dashboard_test_util.h"

#include "gui/training_diagnosis.h"

#include <QLabel>
#include <QTest>

namespace dc::test {

using gui::TrainingSession;

TEST(DashboardDiagnosis, PredictedMeasuredAndAVerdictAppearDuringARun) {
  ScratchBenchCache cache(true);
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  panel.show();
  QTemporaryDir dir;
  panel.setEpochs(1);
  panel.setStepsPerEpochLimit(0);  // a whole epoch: long enough to be stopped
  panel.setBatch(32);
  panel.setCheckpointDir(dir.path());
  gui::RunDiagnosisView* view = panel.diagnosisView();
  view->setRefreshMs(100);
  QSignalSpy done(panel.session(), &TrainingSession::finished);
  panel.startTraining();
  ASSERT_TRUE(panel.problemText().isEmpty()) << panel.problemText().toStdString();
  ASSERT_TRUE(view->prediction().available) << view->prediction().why;
  EXPECT_GT(view->prediction().step.samples_per_s, 0);
  // Wait for the first verdict (a bound for a stuck run, not a timing check).
  QElapsedTimer t;
  t.start();
  while (!view->verdictLabel()->text().contains("Diagnosis</b>") && done.isEmpty() &&
         t.elapsed() < 300000)
    QTest::qWait(50);
  const bool during = panel.session()->active();
  const QString verdict = view->verdictLabel()->text();
  const QString samples = view->samplesLabel()->text(), memory = view->memoryLabel()->text();
  panel.session()->stop();
  if (done.isEmpty()) done.wait(120000);

  EXPECT_TRUE(during) << "the run ended before a verdict";
  EXPECT_TRUE(verdict.contains("Diagnosis</b>")) << verdict.toStdString();
  EXPECT_TRUE(verdict.contains("-bound")) << verdict.toStdString();
  EXPECT_TRUE(samples.contains("predicted") && samples.contains("measured"))
      << samples.toStdString();
  EXPECT_TRUE(memory.contains("predicted") && memory.contains("measured")) << memory.toStdString();
  EXPECT_FALSE(samples.contains("measuring")) << samples.toStdString();
  EXPECT_TRUE(view->isVisible());
  EXPECT_GE(view->diagnosis().steps, advisor::kMinSteps);
}

TEST(DashboardDiagnosis, WithoutABenchmarkItSaysHowToGetOne) {
  ScratchBenchCache cache(false);
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir dir;
  ASSERT_TRUE(train_briefly(panel, dir.path(), 6)) << panel.logText().toStdString();
  const gui::RunDiagnosisView* view = panel.diagnosisView();
  EXPECT_FALSE(view->prediction().available);
  EXPECT_TRUE(view->samplesLabel()->text().contains("—"));
  // The loader wait needs no prediction: the run is still diagnosed.
  EXPECT_TRUE(view->verdictLabel()->text().contains("Diagnosis</b>"))
      << view->verdictLabel()->text().toStdString();
  const QString why = view->deviceLabel()->text();
  EXPECT_TRUE(why.contains("Benchmark this machine")) << why.toStdString();
}

}  // namespace dc::test
