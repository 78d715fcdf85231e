// The Inference tab when another project arrives (issue 36, item 8): the
// previous project's images, prediction and preprocessing line go, and a
// project without a training set is not said to use one's statistics.
#include "gui/inference_panel.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui_test_util.h"
#include "widgets/saliency_view.h"

#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <QColor>
#include <QImage>
#include <QTemporaryDir>

namespace dc::test {
namespace {

// Untrained weights for the context's network, with the given statistics.
gui::ModelWeights freshWeights(const gui::ProjectContext& ctx, float mean, float stddev) {
  Plan plan(ctx.project().graph, 1);
  plan.init_params(7);
  gui::ModelWeights w;
  w.state = plan.state();
  w.mean = mean;
  w.stddev = stddev;
  w.source = "fresh weights (test)";
  return w;
}

QString writeImage(const QString& dir) {
  QImage img(28, 28, QImage::Format_Grayscale8);
  for (int y = 0; y < 28; ++y)
    for (int x = 0; x < 28; ++x) img.setPixelColor(x, y, QColor::fromRgb((x * 9 + y * 3) % 256));
  const QString path = dir + "/shirt.png";
  return img.save(path) ? path : QString();
}

TEST(App36Inference, AnotherProjectClearsTheImagesAndSaysWhichNormalisationApplies) {
  ensureApp();
  QTemporaryDir dir;
  gui::MainWindow w;
  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  gui::InferencePanel* inf = w.inferencePanel();
  w.context()->setWeights(freshWeights(*w.context(), 0.286f, 0.353f));
  const QString png = writeImage(dir.path());
  ASSERT_FALSE(png.isEmpty());
  ASSERT_EQ(inf->openPaths({png}), 1);
  inf->selectImage(0);
  ASSERT_GE(inf->topClass(), 0) << inf->messageText().toStdString();
  ASSERT_FALSE(inf->saliency()->image().isNull());
  EXPECT_TRUE(inf->preprocessingText().contains("training set's statistics"))
      << inf->preprocessingText().toStdString();

  // A project without a training set, with weights that carry no statistics
  // (an imported model's, say).
  Project bare = load_project(sourcePath("sample_data/sample_project.dcproj").toStdString());
  bare.dataset = DatasetSpec{};
  const QString bare_path = dir.path() + "/bare.dcproj";
  save_project(bare, bare_path.toStdString());
  ASSERT_TRUE(w.openFile(bare_path));
  EXPECT_EQ(inf->imageCount(), 0);
  EXPECT_EQ(inf->currentImage(), -1);
  EXPECT_EQ(inf->topClass(), -1);
  EXPECT_TRUE(inf->saliency()->image().isNull());
  EXPECT_TRUE(inf->saliency()->caption().isEmpty());
  EXPECT_FALSE(inf->preprocessingText().contains("training set's statistics"))
      << inf->preprocessingText().toStdString();
  w.context()->setWeights(freshWeights(*w.context(), 0.f, 1.f));
  const QString line = inf->preprocessingText();
  EXPECT_FALSE(line.contains("training set's statistics")) << line.toStdString();
  EXPECT_FALSE(line.contains("0.0000")) << line.toStdString();
  EXPECT_TRUE(line.contains("no training set")) << line.toStdString();

  // File > New resets it as well.
  ASSERT_EQ(inf->openPaths({png}), 1);
  inf->selectImage(0);
  ASSERT_GE(inf->topClass(), 0) << inf->messageText().toStdString();
  w.newProject();
  EXPECT_EQ(inf->imageCount(), 0);
  EXPECT_EQ(inf->topClass(), -1);
  EXPECT_TRUE(inf->saliency()->image().isNull());
}

}  // namespace
}  // namespace dc::test
