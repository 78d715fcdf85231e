// The inference panel: a trained checkpoint classifies a sample image
// correctly through the whole GUI path (file decode, resize, normalisation,
// probe), and bad files or checkpoints give a message without breaking it.
#include "dashboard_test_util.h"

#include "gui/inference_panel.h"
#include "widgets/dialog_dirs.h"
#include "widgets/saliency_view.h"
#include "widgets/top_k_bars.h"

#include <deepcanvas/probe.h>
#include <deepcanvas/project.h>

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace dc::test {

namespace {
// The test sample the checkpoint is most confident about and right on,
// written as a PNG the way a user would have it on disk.
struct ConfidentSample {
  QString path;
  int label = -1;
  float confidence = 0;
};
ConfidentSample confident_sample(gui::ProjectContext& ctx, const QString& checkpoint,
                                 const QString& dir) {
  gui::ModelWeights w = gui::weights_from_checkpoint(checkpoint);
  Plan plan(ctx.project().graph, 256);
  plan.load_state(w.state, checkpoint.toStdString());
  Dataset test = *ctx.testSet();
  test.mean = w.mean;
  test.stddev = w.stddev;
  auto preds = predict_samples(plan, test);
  ConfidentSample best;
  int64_t index = -1;
  for (const auto& p : preds)
    if (p.predicted == p.label && p.confidence > best.confidence) {
      best.confidence = p.confidence;
      best.label = p.label;
      index = p.index;
    }
  if (index < 0) return best;
  best.path = dir + "/sample.png";
  gui::sample_image(test, index).save(best.path);
  return best;
}
}  // namespace

TEST(DashboardInference, TrainedCheckpointGivesTheRightTopClass) {
  TrainedRun& run = TrainedRun::get();
  ASSERT_TRUE(run.ok);
  ASSERT_TRUE(QFileInfo::exists(run.checkpoint));
  auto ctx = sample_context();
  QTemporaryDir dir;
  ConfidentSample s = confident_sample(*ctx, run.checkpoint, dir.path());
  ASSERT_FALSE(s.path.isEmpty());
  ASSERT_GT(s.confidence, 0.9f);

  gui::InferencePanel panel(ctx.get());
  ASSERT_TRUE(panel.loadCheckpoint(run.checkpoint)) << panel.messageText().toStdString();
  EXPECT_TRUE(panel.weightsSource().contains(QFileInfo(run.checkpoint).fileName()));
  QSignalSpy predicted(&panel, &gui::InferencePanel::predicted);
  ASSERT_EQ(panel.openPaths({s.path}), 1) << panel.messageText().toStdString();
  ASSERT_EQ(predicted.count(), 1);
  EXPECT_EQ(panel.topClass(), s.label);
  EXPECT_EQ(panel.topClassName(), ctx->classNames().at(s.label));
  EXPECT_NEAR(panel.topProbability(), s.confidence, 1e-3);
  ASSERT_EQ(panel.topK()->entries().size(), 5);
  EXPECT_EQ(panel.topK()->entries().front().name, ctx->classNames().at(s.label));
  for (int i = 1; i < 5; ++i)
    EXPECT_GE(panel.topK()->entries()[i - 1].probability, panel.topK()->entries()[i].probability);
  EXPECT_TRUE(panel.saliency()->hasHeatmap());
  EXPECT_GT(panel.activationMapCount(), 0);
  EXPECT_TRUE(panel.preprocessingText().contains("28×28"));
  EXPECT_TRUE(panel.preprocessingText().contains("greyscale"));
  EXPECT_TRUE(panel.saliency()->caption().contains(panel.topClassName()));

  // A 1-D activation (the logits) as one bar per class, named and valued.
  const int logits = panel.activationLayer()->findText("dense2", Qt::MatchStartsWith);
  ASSERT_GE(logits, 0);
  panel.activationLayer()->setCurrentIndex(logits);
  const auto& bars = panel.activationBars()->entries();
  ASSERT_EQ(bars.size(), ctx->classNames().size());
  for (int i = 0; i < bars.size(); ++i) {
    EXPECT_EQ(bars[i].name, ctx->classNames().at(i));
    EXPECT_FALSE(bars[i].text.isEmpty());
  }

  // A network that no longer compiles: no prediction, and the caption no
  // longer names one either.
  Project broken = ctx->project();
  broken.graph.disconnect(broken.graph.edges().front());
  ctx->setProject(broken);
  EXPECT_TRUE(panel.topK()->entries().isEmpty());
  EXPECT_EQ(panel.saliency()->caption(), "sample.png");
  EXPECT_EQ(panel.topClass(), -1);
}

TEST(DashboardInference, CorruptImageGivesAMessageAndThePanelKeepsWorking) {
  TrainedRun& run = TrainedRun::get();
  ASSERT_TRUE(run.ok);
  auto ctx = sample_context();
  QTemporaryDir dir;
  gui::InferencePanel panel(ctx.get());
  ASSERT_TRUE(panel.loadCheckpoint(run.checkpoint));

  QFile bad(dir.path() + "/broken.png");
  ASSERT_TRUE(bad.open(QIODevice::WriteOnly));
  bad.write("\x89PNG\r\n\x1a\n this is not really a png");
  bad.close();
  EXPECT_EQ(panel.openPaths({bad.fileName()}), 0);
  EXPECT_TRUE(panel.messageText().contains("broken.png")) << panel.messageText().toStdString();
  EXPECT_EQ(panel.imageCount(), 0);

  // A corrupt checkpoint is refused and the one in use stays.
  QFile badck(dir.path() + "/bad.safetensors");
  ASSERT_TRUE(badck.open(QIODevice::WriteOnly));
  badck.write("garbage");
  badck.close();
  EXPECT_FALSE(panel.loadCheckpoint(badck.fileName()));
  EXPECT_TRUE(panel.messageText().contains("bad.safetensors"));
  EXPECT_TRUE(panel.weightsSource().contains(QFileInfo(run.checkpoint).fileName()));

  // Still works: a good image from the dataset predicts.
  QString good = dir.path() + "/good.png";
  ASSERT_TRUE(gui::sample_image(*ctx->testSet(), 0).save(good));
  EXPECT_EQ(panel.openPaths({good, bad.fileName()}), 1);
  EXPECT_GE(panel.topClass(), 0);
  EXPECT_EQ(panel.topK()->entries().size(), 5);
  EXPECT_TRUE(panel.messageText().contains("broken.png"));
}

TEST(DashboardInference, FolderOpensEveryImageAndWorksWithoutWeights) {
  auto ctx = sample_context();
  QTemporaryDir dir;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(gui::sample_image(*ctx->testSet(), i).save(dir.path() + QString("/%1.png").arg(i)));
  QFile note(dir.path() + "/readme.txt");
  ASSERT_TRUE(note.open(QIODevice::WriteOnly));
  note.close();
  gui::InferencePanel panel(ctx.get());
  EXPECT_EQ(panel.openPaths({dir.path()}), 3);
  EXPECT_EQ(panel.topClass(), -1);  // no weights yet: shown, not predicted
  EXPECT_TRUE(panel.messageText().contains("No weights"));
  // Weights arriving from a training run are used at once.
  TrainedRun& run = TrainedRun::get();
  ASSERT_TRUE(run.ok);
  ctx->setWeights(gui::weights_from_checkpoint(run.checkpoint));
  EXPECT_GE(panel.topClass(), 0);

  // A whole dataset (class folders, no pictures of its own): the message
  // names the folders to open, not "No images found".
  ASSERT_TRUE(QDir().mkpath(dir.path() + "/set/cat") && QDir().mkpath(dir.path() + "/set/dog"));
  ASSERT_TRUE(gui::sample_image(*ctx->testSet(), 0).save(dir.path() + "/set/cat/1.png"));
  ASSERT_TRUE(gui::sample_image(*ctx->testSet(), 1).save(dir.path() + "/set/dog/1.png"));
  EXPECT_EQ(panel.openPaths({dir.path() + "/set"}), 0);
  EXPECT_TRUE(panel.messageText().contains("holds class folders (cat, dog), not pictures"))
      << panel.messageText().toStdString();
  // Dropped with a picture: the picture still opens, and the note stays.
  EXPECT_EQ(panel.openPaths({dir.path() + "/set", dir.path() + "/set/cat/1.png"}), 1);
  EXPECT_TRUE(panel.messageText().contains("holds class folders (cat, dog)"))
      << panel.messageText().toStdString();
}

// The open dialogs started in the process's working folder: wherever the
// app was launched from, never where the pictures are. They start at the
// project's image dataset (relative to the project file), and then where
// the last pictures or checkpoint were chosen, as long as that exists.
TEST(DashboardInference, FileDialogsStartAtTheDataThenWhereTheLastChoiceWas) {
  QSettings().remove("dialogs");
  QTemporaryDir dir;
  const QString folder = dir.path() + "/proj", photos = folder + "/photos";
  ASSERT_TRUE(QDir().mkpath(photos + "/cat"));
  Project p = load_project(sample_project_path().toStdString());
  p.file = (folder + "/mine.dcproj").toStdString();
  p.dataset.kind = "image_folder";
  p.dataset.path = "photos";
  gui::ProjectContext ctx(p);
  gui::InferencePanel panel(&ctx);
  EXPECT_EQ(panel.imageDialogStart(), photos);
  EXPECT_EQ(panel.checkpointDialogStart(), folder);

  widgets::rememberDialogChoice("inferenceImages", photos + "/cat/tabby.png");
  widgets::rememberDialogChoice("checkpoints", dir.path());
  widgets::rememberDialogChoice("checkpoints", "");  // a cancelled dialog
  EXPECT_EQ(panel.imageDialogStart(), photos + "/cat");
  EXPECT_EQ(panel.checkpointDialogStart(), dir.path());
  // A remembered folder that is gone gives way to the project's.
  ASSERT_TRUE(QDir(photos + "/cat").removeRecursively());
  EXPECT_EQ(panel.imageDialogStart(), photos);

  // Not image data: the project's folder; unsaved and nothing remembered:
  // home (the plots' exports too, until the first).
  QSettings().remove("dialogs");
  p.dataset.kind = "idx";
  ctx.setProject(p);
  EXPECT_EQ(panel.imageDialogStart(), folder);
  p.file.clear();
  ctx.setProject(p);
  EXPECT_EQ(panel.imageDialogStart(), QDir::homePath());
  EXPECT_EQ(widgets::dialogStart("plotExport"), QDir::homePath());
  // The exports' folder from before "dialogs/exports", until one is chosen.
  QSettings().setValue("exportDir", photos);
  EXPECT_EQ(widgets::dialogStart("exports"), photos);
  widgets::rememberDialogChoice("exports", folder + "/model.onnx");
  EXPECT_EQ(widgets::dialogStart("exports"), folder);
  QSettings().remove("exportDir");
  QSettings().remove("dialogs");
}

TEST(DashboardInference, CameraAddsAFrameOrSaysWhyNot) {
  auto ctx = sample_context();
  gui::InferencePanel panel(ctx.get());
  if (panel.captureCamera()) {
    EXPECT_EQ(panel.imageCount(), 1);
    EXPECT_EQ(panel.currentImage(), 0);
  } else {  // CI machines have no camera: a message, and nothing added
    EXPECT_TRUE(panel.messageText().startsWith("Camera: ")) << panel.messageText().toStdString();
    EXPECT_EQ(panel.imageCount(), 0);
  }
}

}  // namespace dc::test
