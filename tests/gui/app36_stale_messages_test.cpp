// Messages that outlived what they describe (issue 36, item 10): the Model
// Summary's "not benchmarked yet" after a benchmark finished, the Evaluation
// panel's cell description after a new run started, "Cannot connect…" and
// "Applied trial …; Ctrl+Z undoes it." after an undo.
#include "bench_cache_fixture.h"
#include "gui/evaluation_view.h"
#include "gui/experiments_panel.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui/summary_panel.h"
#include "gui/training_panel.h"
#include "gui/training_session.h"
#include "gui_test_util.h"
#include "widgets/graph_editor.h"

#include <deepcanvas/sweep.h>
#include <gtest/gtest.h>

#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

namespace dc::test {
namespace {

const char* kNotBenchmarked = "not benchmarked yet";

TEST(App36StaleMessages, SummaryDropsNotBenchmarkedOnceTheBenchmarkIsCached) {
  ensureApp();
  ScratchBenchCache cache(/*seeded=*/false);
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  gui::SummaryPanel* s = w.summary();
  QTRY_VERIFY_WITH_TIMEOUT(s->adviceIdle() && s->adviceText().contains(kNotBenchmarked), 30000);
  // What Help → Benchmark This Machine (or deepcanvas-cli bench-device)
  // leaves when it finishes.
  cache.seed();
  // No edit of the network: the summary notices the new figures by itself.
  QTRY_VERIFY_WITH_TIMEOUT(!s->adviceText().isEmpty() && !s->adviceText().contains(kNotBenchmarked),
                           30000);
  EXPECT_TRUE(s->adviceText().contains("fits on")) << s->adviceText().toStdString();
}

TEST(App36StaleMessages, ANewRunClearsTheEvaluationCellDescription) {
  ensureApp();
  QTemporaryDir dir;
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  gui::TrainingPanel* t = w.trainingPanel();
  gui::EvaluationView* e = t->evaluation();
  const QString prompt = e->cellText();
  e->setConfusion({{3, 1}, {2, 4}}, 1);
  e->showCell(0, 1);  // no checkpoint yet: the cell says why it lists nothing
  ASSERT_NE(e->cellText(), prompt);
  t->setEpochs(1);
  t->setStepsPerEpochLimit(4);
  t->setCheckpointDir(dir.path());
  QSignalSpy done(t->session(), &gui::TrainingSession::finished);
  t->startTraining();
  ASSERT_TRUE(t->problemText().isEmpty()) << t->problemText().toStdString();
  EXPECT_EQ(e->cellText(), prompt);
  EXPECT_TRUE(e->listed().empty());
  ASSERT_TRUE(done.wait(300000));  // a bound for a stuck run
}

TEST(App36StaleMessages, CannotConnectGoesWithAnUndo) {
  ensureApp();
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  widgets::GraphEditor* ed = w.editor();
  ASSERT_GE(ed->addLayer("Dropout", {900, 400}), 0);
  QString why;
  // The Input layer takes nothing in.
  EXPECT_FALSE(ed->connectPorts(idOf(ed->graph(), "dense2"), idOf(ed->graph(), "input"), 0, &why));
  ASSERT_FALSE(why.isEmpty());
  EXPECT_TRUE(w.statusBar()->currentMessage().startsWith("Cannot connect"))
      << w.statusBar()->currentMessage().toStdString();
  ed->undoStack()->undo();  // Ctrl+Z: the Dropout goes
  EXPECT_TRUE(w.statusBar()->currentMessage().isEmpty())
      << w.statusBar()->currentMessage().toStdString();
  // The next refusal shows again, and goes with the next step too.
  EXPECT_FALSE(ed->connectPorts(idOf(ed->graph(), "dense2"), idOf(ed->graph(), "input"), 0, &why));
  EXPECT_TRUE(w.statusBar()->currentMessage().startsWith("Cannot connect"));
  ed->undoStack()->redo();
  EXPECT_TRUE(w.statusBar()->currentMessage().isEmpty())
      << w.statusBar()->currentMessage().toStdString();
}

TEST(App36StaleMessages, AppliedTrialMessageGoesWithItsUndo) {
  ensureApp();
  gui::MainWindow w;
  w.setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
  const QString file = tempDir() + "/p.dcproj";
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")) && w.saveFile(file));
  gui::ExperimentsPanel* p = w.experimentsPanel();
  p->setStepsPerEpochLimit(8);
  p->setConfirmHandler([](const QString&) { return true; });
  p->setSpace({"lr=log:1e-3:1e-2"});
  // A drawn trial, not the project's own values: applying them is an edit.
  SweepOptions o;
  o.baseline = false;
  o.trials = 1;
  o.epochs = 1;
  o.seed = 3;
  p->setOptions(o);
  QSignalSpy finished(p, &gui::ExperimentsPanel::finished);
  ASSERT_TRUE(p->start()) << p->messageText().toStdString();
  ASSERT_TRUE(finished.wait(300000));  // a bound for a stuck sweep
  ASSERT_TRUE(p->applyBest()) << p->messageText().toStdString();
  ASSERT_TRUE(p->messageText().contains("Ctrl+Z undoes it")) << p->messageText().toStdString();
  w.editor()->undoStack()->undo();
  EXPECT_FALSE(p->messageText().contains("Ctrl+Z undoes it")) << p->messageText().toStdString();
}

}  // namespace
}  // namespace dc::test
