// The Training tab's LR finder (issue 36, item 1): it runs the range test
// from the network's initial weights, as deepcanvas-cli lr-find does, even
// after a training run left its weights in the app, and it loads the
// project's dataset itself as Start does (no visit to the Dataset tab).
#include "dashboard_test_util.h"
#include "gui/lr_finder.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui/training_panel.h"
#include "gui/training_session.h"
#include "gui_test_util.h"

#include <deepcanvas/lr_find.h>
#include <gtest/gtest.h>

#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>

namespace dc::test {
namespace {

// A short range test, to keep CI quick; the default starts at 1e-7.
LrFindOptions shortTest() {
  LrFindOptions o;
  o.steps = 25;
  o.start = 1e-5;
  o.end = 1;
  return o;
}

bool waitForFinder(gui::LrFinderDialog* d) {
  QSignalSpy done(d, &gui::LrFinderDialog::finished);
  // Generous: a bound for a stuck test, not a timing check.
  if (!done.wait(300000)) return false;
  return done.first().first().toBool();
}

TEST(App36LrFinder, RunsWithoutVisitingTheDatasetTab) {
  ensureApp();
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  ASSERT_FALSE(w.context()->hasDataset());  // nothing has loaded it yet
  gui::TrainingPanel* t = w.trainingPanel();
  gui::LrFinderDialog* d = t->openLrFinder(shortTest());
  ASSERT_NE(d, nullptr) << t->problemText().toStdString();
  EXPECT_TRUE(t->problemText().isEmpty()) << t->problemText().toStdString();
  EXPECT_TRUE(w.context()->hasDataset());
  ASSERT_TRUE(waitForFinder(d)) << d->statusText().toStdString();
  EXPECT_TRUE(d->statusText().contains("initial weights")) << d->statusText().toStdString();
  EXPECT_TRUE(d->weightsText().contains("seed 42")) << d->weightsText().toStdString();
}

TEST(App36LrFinder, StartsFromTheInitialWeightsAfterATrainingRun) {
  ensureApp();
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  gui::TrainingPanel* t = w.trainingPanel();
  QTemporaryDir dir;
  ASSERT_TRUE(train_briefly(*t, dir.path(), 80));
  const auto trained_weights = w.context()->weights().state;
  ASSERT_FALSE(trained_weights.empty());

  gui::LrFinderDialog* d = t->openLrFinder(shortTest());
  ASSERT_NE(d, nullptr) << t->problemText().toStdString();
  ASSERT_TRUE(waitForFinder(d)) << d->statusText().toStdString();
  const LrFindResult& r = d->result();
  ASSERT_FALSE(r.losses.empty());

  // What the CLI computes: the same engine call with no weights given.
  TrainConfig c = t->config();
  c.device = DeviceSpec{};
  c.precision = Precision::Fp32;
  const Graph& g = w.context()->project().graph;
  const Dataset& train = *w.context()->trainSet();
  const LrFindResult fresh = lr_find(g, c, train, shortTest());
  const LrFindResult from_trained = lr_find(g, c, train, shortTest(), &trained_weights);
  ASSERT_FALSE(fresh.losses.empty());
  ASSERT_FALSE(from_trained.losses.empty());
  EXPECT_NEAR(r.losses.front(), fresh.losses.front(), 1e-3 * fresh.losses.front());
  // The trained weights start clearly lower: the test above tells them apart.
  EXPECT_GT(r.losses.front(), 1.2 * from_trained.losses.front());
  // The trained curve's minimum sits at its start, so its suggestion is a
  // tenth of the start rate; the fresh curve falls first.
  EXPECT_GT(r.suggested_lr, 10 * shortTest().start) << r.suggested_lr;
  EXPECT_NEAR(r.suggested_lr, fresh.suggested_lr, 1e-6 * fresh.suggested_lr);
  // The app's weights are still the trained ones.
  ASSERT_EQ(w.context()->weights().state.size(), trained_weights.size());
}

// The finder is checked as the range test it is (the engine's
// RunPurpose::LrFind, as deepcanvas-cli lr-find does), not as a training
// run: a batch too large for memory is refused in the range test's words.
TEST(App36LrFinder, IsCheckedAsARangeTestNotATrainingRun) {
  ensureApp();
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  gui::TrainingPanel* t = w.trainingPanel();
  t->setBatch(1'000'000);
  EXPECT_EQ(t->openLrFinder(shortTest()), nullptr);
  const QString text = t->problemText();
  EXPECT_TRUE(text.contains("LR range test at batch 1000000 needs about")) << text.toStdString();
  EXPECT_FALSE(text.contains("Training at batch")) << text.toStdString();
  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
}

}  // namespace
}  // namespace dc::test
