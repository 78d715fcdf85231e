// File > Open Run... (issue 13): a metrics.jsonl written by an exported
// train.py becomes a run of the Training tab, overlaid on a local run; a
// truncated line is skipped with a warning and the rest shown; lines
// appended later are followed; the run's checkpoints are offered.
#include "dashboard_test_util.h"

#include "widgets/live_plot.h"

#include <QTableWidget>
#include <QTest>

namespace dc::test {

namespace {

void append(const QString& path, const QByteArray& text) {
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::Append));
  f.write(text);
}

}  // namespace

TEST(DashboardOpenRun, MetricsBecomeARunOverlaidOnALocalOneAndAreFollowed) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir local, run;
  ASSERT_TRUE(train_briefly(panel, local.path(), 4));
  const QString metrics = run.filePath("metrics.jsonl");
  append(metrics,
         "{\"kind\": \"start\", \"epochs\": 2, \"steps_per_epoch\": 2, \"world_size\": 2, "
         "\"device\": \"cpu\", \"precision\": \"fp32\", \"batch\": 32, \"torch\": \"1.13\"}\n"
         "{\"kind\": \"step\", \"epoch\": 1, \"step\": 1, \"step_in_epoch\": 1, \"loss\": 2.1, "
         "\"accuracy\": 0.2, \"lr\": 0.001, \"samples_per_s\": 500}\n"
         "{\"kind\": \"step\", \"epo\n"
         "{\"kind\": \"epoch\", \"epoch\": 1, \"step\": 2, \"train_loss\": 1.2, "
         "\"train_accuracy\": 0.6, \"test_loss\": 1.0, \"test_accuracy\": 0.65, \"best\": true}\n");
  EXPECT_TRUE(panel.openRun(run.filePath("nothing-here")).contains("metrics.jsonl"));
  ASSERT_EQ(panel.openRun(run.path()), QString());
  ASSERT_EQ(panel.runHistory()->rowCount(), 2);
  EXPECT_TRUE(panel.runHistory()->item(1, 1)->text().contains("imported"));
  EXPECT_TRUE(panel.followingRun());
  EXPECT_EQ(panel.lossPlot()->overlayCount(), 1);  // the local run, under the opened one
  EXPECT_TRUE(panel.logText().contains("line 3")) << panel.logText().toStdString();
  EXPECT_TRUE(panel.runHistory()->item(1, 4)->text().startsWith("65.00"))
      << panel.runHistory()->item(1, 4)->text().toStdString();

  // train.py goes on writing: the panel follows until the end line.
  append(metrics,
         "{\"kind\": \"epoch\", \"epoch\": 2, \"step\": 4, \"train_loss\": 0.9, "
         "\"train_accuracy\": 0.7, \"test_loss\": 0.8, \"test_accuracy\": 0.72, \"best\": true}\n"
         "{\"kind\": \"end\", \"step\": 4, \"replicas_identical\": true}\n");
  panel.pollImportedRun();
  EXPECT_FALSE(panel.followingRun());
  EXPECT_EQ(panel.runHistory()->item(1, 2)->text(), "2/2");
  EXPECT_TRUE(panel.runHistory()->item(1, 5)->text().contains("finished"));
}

// Run with PyTorch…'s side of it: the run folder is followed before train.py
// has created metrics.jsonl; when the process ends without an end line, a
// last line without its newline is still read and the row says how it ended.
TEST(DashboardOpenRun, FollowsARunBeforeItsFileExistsAndEndsWithTheProcess) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir run;
  ASSERT_EQ(panel.followRun(run.path()), QString());
  ASSERT_EQ(panel.runHistory()->rowCount(), 1);
  EXPECT_TRUE(panel.runHistory()->item(0, 1)->text().contains("waiting"));
  EXPECT_TRUE(panel.followingRun());
  panel.pollImportedRun();  // still nothing there: no error, still waiting
  EXPECT_TRUE(panel.followingRun());
  const QString metrics = run.filePath("metrics.jsonl");
  append(metrics,
         "{\"kind\": \"start\", \"epochs\": 1, \"steps_per_epoch\": 3, \"world_size\": 1, "
         "\"device\": \"cpu\", \"precision\": \"fp32\", \"batch\": 32, \"torch\": \"1.13\"}\n"
         "{\"kind\": \"step\", \"epoch\": 1, \"step\": 1, \"loss\": 2.1, \"lr\": 0.001}\n"
         "{\"kind\": \"step\", \"epoch\": 1, \"step\": 2, \"loss\": 1.9,");
  panel.pollImportedRun();
  EXPECT_TRUE(panel.runHistory()->item(0, 1)->text().contains("PyTorch 1.13"))
      << panel.runHistory()->item(0, 1)->text().toStdString();
  EXPECT_EQ(panel.lossPlot()->pointCount(0), 1);  // the half-written step waits
  append(metrics, " \"lr\": 0.001}");             // complete but without its newline
  panel.pollImportedRun();
  EXPECT_EQ(panel.lossPlot()->pointCount(0), 1);
  panel.endFollowedRun(run.path(), "PyTorch: stopped");
  EXPECT_FALSE(panel.followingRun());
  EXPECT_EQ(panel.lossPlot()->pointCount(0), 2);
  EXPECT_EQ(panel.runHistory()->item(0, 5)->text(), "PyTorch: stopped");
}

// A PyTorch run ending does not end a different folder opened with Open
// Run… since: only the run in the folder that ended stops being followed.
TEST(DashboardOpenRun, AnEndedProcessLeavesAnotherFollowedFolderAlone) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir pytorch_run, opened;
  ASSERT_EQ(panel.followRun(pytorch_run.path()), QString());
  ASSERT_EQ(panel.followRun(opened.path()), QString());  // replaces the first
  panel.endFollowedRun(pytorch_run.path(), "PyTorch: finished");
  EXPECT_TRUE(panel.followingRun());
  EXPECT_NE(panel.runHistory()->item(1, 5)->text(), "PyTorch: finished");
  panel.endFollowedRun(opened.path() + "/", "PyTorch: stopped");  // the same folder
  EXPECT_FALSE(panel.followingRun());
  EXPECT_EQ(panel.runHistory()->item(1, 5)->text(), "PyTorch: stopped");
}

}  // namespace dc::test
