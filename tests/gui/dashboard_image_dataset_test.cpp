// Image datasets in the Dataset tab (issue 31): every source becomes the
// project's DatasetSpec and is read by the engine's loader; skipped files
// are named with their reasons and the rest loads; the image options
// (test and crop fraction, loading, bad images) are stored in the spec and
// come back with the project; the augmentation preview starts from the
// whole picture; images found bad while training are named at the end.
#include "dashboard_test_util.h"

#include <deepcanvas/image_data.h>
#include <deepcanvas/project.h>
#include "gui/dataset_panel.h"
#include "gui/inference_panel.h"
#include "widgets/image_grid.h"

#include <QBuffer>
#include <QImage>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTableWidget>

namespace dc::test {

namespace {

void write_png(const QString& path, int w, int h, int shade) {
  QImage img(w, h, QImage::Format_Grayscale8);
  img.fill(shade);
  ASSERT_TRUE(img.save(path));
}

void write_class(const QString& dir, int n, int shade) {
  QDir().mkpath(dir);
  for (int i = 0; i < n; ++i) write_png(dir + QString("/img%1.png").arg(i), 32, 32, shade + i * 5);
}

void write_bytes(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

gui::DatasetSource image_folder(const QString& path) {
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::ImageFolder;
  s.path = path;
  s.test_fraction = 0.25;
  return s;
}

// A PNG whose header and trailer are sound (so listing keeps it) but whose
// pixel data is not: only decoding finds it bad.
QByteArray png_with_bad_pixels() {
  QImage img(32, 32, QImage::Format_Grayscale8);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x) img.scanLine(y)[x] = uchar(x * 7 + y * 13);
  QByteArray bytes;
  QBuffer buf(&bytes);
  buf.open(QIODevice::WriteOnly);
  img.save(&buf, "PNG");
  const int idat = int(bytes.indexOf("IDAT"));
  // The compressed data after the chunk type, overwritten (its CRC no longer matches).
  for (int i = idat + 6; i < idat + 30 && i < bytes.size() - 12; ++i) bytes[i] = char(0xA5);
  return bytes;
}

// The sample project and its Dataset tab, with a folder of 32×32 grey
// cats and dogs (4 each) written beside it.
struct CatsAndDogs {
  std::unique_ptr<gui::ProjectContext> ctx = gui::ProjectContext::load(sample_project_path());
  gui::DatasetPanel panel{ctx.get()};
  QTemporaryDir tmp;
  QString root = tmp.path() + "/photos";
  CatsAndDogs() {
    write_class(root + "/cats", 4, 40);
    write_class(root + "/dogs", 4, 160);
  }
};

}  // namespace

TEST(DashboardImageDataset, SkippedFilesAreNamedWithTheirReasonsAndTheRestLoads) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  CatsAndDogs f;
  auto& [ctx, panel, tmp, root] = f;
  write_bytes(root + "/dogs/broken.png", "\x89PNG not really");
  write_bytes(root + "/cats/notes.txt", "hello");
  ASSERT_TRUE(panel.loadSource(image_folder(root))) << panel.messageText().toStdString();
  const QString msg = panel.messageText();
  // Each named with why, not just counted.
  EXPECT_TRUE(msg.contains(QRegularExpression("broken\\.png \\([^)]+\\)"))) << msg.toStdString();
  EXPECT_TRUE(msg.contains(QRegularExpression("notes\\.txt \\(not an image[^)]*\\)")))
      << msg.toStdString();
  EXPECT_TRUE(msg.contains("2 file(s) skipped")) << msg.toStdString();
  ASSERT_TRUE(ctx->hasDataset());
  EXPECT_TRUE(ctx->imageDataset());
  EXPECT_EQ(ctx->trainSet()->size() + ctx->testSet()->size(), 8);
  ASSERT_EQ(panel.classTable()->rowCount(), 2);
  EXPECT_EQ(panel.classTable()->item(1, 0)->text(), "dogs");
  EXPECT_EQ(panel.classTable()->item(1, 1)->text(), "3");
  EXPECT_EQ(panel.classTable()->item(1, 2)->text(), "1");
  // How the pictures are held, in the summary.
  EXPECT_TRUE(panel.summaryText().contains("Pictures:")) << panel.summaryText().toStdString();
  EXPECT_GT(panel.thumbnails()->count(), 0);

  // Many: the first few named, then how many more.
  for (int i = 0; i < 7; ++i) write_bytes(root + QString("/cats/extra%1.txt").arg(i), "x");
  ASSERT_TRUE(panel.loadSource(image_folder(root)));
  EXPECT_TRUE(panel.messageText().contains("9 file(s) skipped"))
      << panel.messageText().toStdString();
  EXPECT_TRUE(panel.messageText().contains("and 4 more")) << panel.messageText().toStdString();
}

TEST(DashboardImageDataset, ANewInputShapeReadsThePicturesAgain) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  CatsAndDogs f;
  auto& [ctx, panel, tmp, root] = f;
  ASSERT_TRUE(panel.loadSource(image_folder(root))) << panel.messageText().toStdString();
  EXPECT_EQ(ctx->trainSet()->sample_shape, (Shape{1, 28, 28}));
  // What the files hold, from their headers: grey 32×32 PNGs.
  EXPECT_TRUE(panel.summaryText().contains("Files: about 32×32 px, grey"))
      << panel.summaryText().toStdString();
  const std::shared_ptr<Dataset> before = ctx->trainSet();
  auto set_input = [&](std::vector<int64_t> shape) {
    Project p = ctx->project();
    p.graph.node(p.graph.find_by_name("input")->id).attrs.set("shape", shape);
    ctx->setProject(p);
  };
  // Another edit of the network leaves the pictures as they are.
  set_input({1, 28, 28});
  EXPECT_FALSE(panel.loading());
  // A colour Input: read again at 3×32×32, not left to the preflight.
  QSignalSpy loaded(&panel, &gui::DatasetPanel::datasetLoaded);
  set_input({3, 32, 32});
  ASSERT_TRUE(panel.loading());
  // Meanwhile the preflight says what to do.
  EXPECT_TRUE(panel.messageText().contains(
      "was read as pictures of 1×28×28 but the network's Input is 3×32×32; load the dataset again"))
      << panel.messageText().toStdString();
  ASSERT_TRUE(loaded.wait(60000)) << panel.messageText().toStdString();
  EXPECT_NE(ctx->trainSet(), before);
  EXPECT_EQ(ctx->trainSet()->sample_shape, (Shape{3, 32, 32}));
  EXPECT_EQ(ctx->project().dataset.path, root.toStdString());
  EXPECT_FALSE(panel.messageText().contains("Input")) << panel.messageText().toStdString();
  // An Input changed again while the pictures are being read: read once
  // more at the latest shape when that load ends.
  loaded.clear();
  set_input({3, 16, 16});
  ASSERT_TRUE(panel.loading());
  set_input({1, 16, 16});
  ASSERT_TRUE(loaded.wait(60000)) << panel.messageText().toStdString();
  if (loaded.count() < 2) {
    ASSERT_TRUE(loaded.wait(60000)) << panel.messageText().toStdString();
  }
  EXPECT_EQ(ctx->trainSet()->sample_shape, (Shape{1, 16, 16}));
  EXPECT_FALSE(panel.loading());
  // A shape no picture can be read at is the preflight's to name.
  set_input({2, 32, 32});
  EXPECT_FALSE(panel.loading());
  EXPECT_TRUE(panel.messageText().contains("but the network's Input expects 2"))
      << panel.messageText().toStdString();
}

TEST(DashboardImageDataset, TheImageOptionsAreStoredInTheProjectsDatasetSpec) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  QTemporaryDir tmp;
  const QString root = tmp.path() + "/photos";
  write_class(root + "/ants", 4, 40);
  write_class(root + "/bees", 4, 160);
  Project proj = load_project(sample_project_path().toStdString());
  proj.file = (tmp.path() + "/mine.dcproj").toStdString();
  gui::ProjectContext ctx(proj);
  gui::DatasetPanel panel(&ctx);
  QSignalSpy changed(&panel, &gui::DatasetPanel::settingsChanged);
  gui::DatasetSource s = image_folder(root);
  s.test_fraction = 0.5;
  s.crop_fraction = 0.8;
  s.loading = "memory";
  panel.showSource(s);
  const gui::DatasetSource shown = panel.sourceFromWidgets();
  EXPECT_EQ(shown.kind, gui::DatasetSource::Kind::ImageFolder);
  EXPECT_DOUBLE_EQ(shown.crop_fraction, 0.8);
  EXPECT_EQ(shown.loading, "memory");
  ASSERT_TRUE(panel.loadSource(shown)) << panel.messageText().toStdString();
  EXPECT_GE(changed.count(), 1);  // an edit of the project

  const DatasetSpec& spec = ctx.project().dataset;
  EXPECT_EQ(spec.kind, "image_folder");
  EXPECT_EQ(spec.path, "photos");  // inside the project's folder: relative
  EXPECT_DOUBLE_EQ(spec.test_fraction, 0.5);
  EXPECT_DOUBLE_EQ(spec.crop_fraction, 0.8);
  EXPECT_EQ(spec.loading, "memory");
  EXPECT_FALSE(spec.bad_images_are_errors);
  EXPECT_EQ(ctx.testSet()->size(), 4);  // half of each class

  // Through the file and back into a new panel's widgets.
  Project saved = ctx.project();
  save_project(saved, saved.file);
  gui::ProjectContext ctx2(load_project(saved.file));
  gui::DatasetPanel panel2(&ctx2);
  const gui::DatasetSource back = panel2.sourceFromWidgets();
  EXPECT_EQ(back.kind, gui::DatasetSource::Kind::ImageFolder);
  EXPECT_EQ(back.path, "photos");
  EXPECT_DOUBLE_EQ(back.test_fraction, 0.5);
  EXPECT_DOUBLE_EQ(back.crop_fraction, 0.8);
  EXPECT_EQ(back.loading, "memory");
  EXPECT_TRUE(gui::sameSpec(ctx2.project().dataset, spec));

  // The Inference tab crops as evaluation does.
  gui::InferencePanel inference(&ctx2);
  EXPECT_TRUE(inference.preprocessingText().contains("crop fraction 0.8"))
      << inference.preprocessingText().toStdString();

  // "Bad images: stop": a broken file is an error naming it, and the data
  // loaded before stays, as does the project's record of it.
  write_bytes(root + "/bees/broken.png", "\x89PNG not really");
  gui::DatasetSource strict = back;
  strict.path = root;
  strict.bad_images_are_errors = true;
  const auto before = ctx.trainSet();
  EXPECT_FALSE(panel.loadSource(strict));
  EXPECT_TRUE(panel.messageText().contains("broken.png")) << panel.messageText().toStdString();
  EXPECT_EQ(ctx.trainSet(), before);
  EXPECT_FALSE(ctx.project().dataset.bad_images_are_errors);
  // Skipping again: recorded.
  strict.bad_images_are_errors = false;
  strict.loading = "stream";
  ASSERT_TRUE(panel.loadSource(strict)) << panel.messageText().toStdString();
  EXPECT_EQ(ctx.project().dataset.loading, "stream");
}

TEST(DashboardImageDataset, EverySourceIsRecordedAsASpec) {
  Project p;
  p.file = "/home/u/proj/p.dcproj";
  p.dataset.preprocess.size = 224;  // kept whatever the source
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::Sample;
  DatasetSpec spec = gui::datasetSpec(s, p);
  EXPECT_EQ(spec.kind, "idx");
  EXPECT_EQ(spec.path, "sample:fashion-mnist-subset");
  EXPECT_EQ(spec.preprocess.size, 224);
  EXPECT_EQ(gui::datasetSource(spec).kind, gui::DatasetSource::Kind::Sample);

  s.kind = gui::DatasetSource::Kind::Text;
  s.path = "/home/u/proj/data/corpus.txt";
  s.window = 32;
  spec = gui::datasetSpec(s, p);
  EXPECT_EQ(spec.kind, "text");
  EXPECT_EQ(spec.path, "data/corpus.txt");
  EXPECT_EQ(spec.window, 32);

  s.kind = gui::DatasetSource::Kind::ImageCsv;
  s.path = "/data/labels.csv";  // outside the project's folder: absolute
  spec = gui::datasetSpec(s, p);
  EXPECT_EQ(spec.kind, "image_csv");
  EXPECT_EQ(spec.path, "/data/labels.csv");
  s.path = "/home/u/projects/x";  // a sibling whose name starts like the folder's
  s.kind = gui::DatasetSource::Kind::ImageFolder;
  EXPECT_EQ(gui::datasetSpec(s, p).path, "/home/u/projects/x");

  // Save As elsewhere is the engine's save_project (rebase_project_paths).
  s.kind = gui::DatasetSource::Kind::Project;
  EXPECT_TRUE(gui::sameSpec(gui::datasetSpec(s, p), p.dataset));
}

TEST(DashboardImageDataset, ThePreviewStartsFromTheWholePicture) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  QTemporaryDir tmp;
  const QString root = tmp.path() + "/wide";
  for (const char* cls : {"a", "b"}) {
    QDir().mkpath(root + "/" + cls);
    for (int i = 0; i < 3; ++i) {
      // 80×40: the left half white, the right half black.
      QImage img(80, 40, QImage::Format_Grayscale8);
      for (int y = 0; y < 40; ++y)
        for (int x = 0; x < 80; ++x) img.scanLine(y)[x] = x < 40 ? 255 : 0;
      ASSERT_TRUE(img.save(root + QString("/%1/%2.png").arg(cls).arg(i)));
    }
  }
  auto ctx = gui::ProjectContext::load(sample_project_path());
  gui::DatasetPanel panel(ctx.get());
  ASSERT_TRUE(panel.loadSource(image_folder(root))) << panel.messageText().toStdString();
  widgets::ImageGrid* preview = panel.augmentPreview();
  // No training transform: the whole picture and the evaluation crop.
  ASSERT_EQ(preview->count(), 2);
  EXPECT_EQ(preview->item(0)->text(), "whole picture");
  EXPECT_TRUE(preview->item(0)->toolTip().contains("80×40"))
      << preview->item(0)->toolTip().toStdString();
  const QImage whole = preview->item(0)->icon().pixmap(64).toImage();
  EXPECT_EQ(whole.width(), 2 * whole.height());  // not cropped to the Input's square
  EXPECT_GT(qGray(whole.pixel(2, whole.height() / 2)), 200);
  EXPECT_LT(qGray(whole.pixel(whole.width() - 3, whole.height() / 2)), 50);
  EXPECT_EQ(preview->item(1)->text(), "evaluation");
  const QImage eval = preview->item(1)->icon().pixmap(64).toImage();
  EXPECT_EQ(eval.width(), eval.height());  // the Input's 28×28

  // Random resized crop on: training draws from the picture follow.
  AugmentConfig a;
  a.resized_crop = true;
  panel.setAugmentOptions(a);
  EXPECT_TRUE(ctx->project().training.augment.resized_crop);
  ASSERT_EQ(preview->count(), 8);
  for (int k = 2; k < 8; ++k) EXPECT_EQ(preview->item(k)->text(), "training");
  // The batch augmentation applies on top of them.
  a.vflip = true;
  panel.setAugmentOptions(a);
  EXPECT_EQ(preview->count(), 8);
}

// Images that pass the listing but do not decode are counted by the engine
// while reading; the end of a run names them in the log.
TEST(DashboardImageDataset, BadImagesFoundWhileReadingAreNamedAtTheEndOfARun) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  QTemporaryDir tmp;
  const QString root = tmp.path() + "/photos";
  // train/ and test/ folders: the garbled file is a training image.
  write_class(root + "/train/top", 6, 30);
  write_class(root + "/train/bottom", 6, 200);
  write_class(root + "/test/top", 2, 30);
  write_class(root + "/test/bottom", 2, 200);
  write_bytes(root + "/train/top/garbled.png", png_with_bad_pixels());
  auto ctx = gui::ProjectContext::load(sample_project_path());
  Project p = ctx->project();
  for (const auto& [id, node] : p.graph.nodes())
    if (node.name == "dense2") p.graph.set_attr(id, "units", int64_t(2));
  ctx->setProject(p);
  gui::DatasetPanel panel(ctx.get());
  ASSERT_TRUE(panel.loadSource(image_folder(root))) << panel.messageText().toStdString();
  ASSERT_TRUE(ctx->trainingProblems().isEmpty()) << ctx->trainingProblems().join(" ").toStdString();
  ASSERT_EQ(ctx->trainSet()->size(), 13);  // listed: its header is sound

  gui::TrainingPanel training(ctx.get());
  training.setEpochs(1);
  training.setStepsPerEpochLimit(0);
  training.setBatch(4);
  training.setCheckpointDir(tmp.path() + "/runs");
  QSignalSpy done(training.session(), &gui::TrainingSession::finished);
  training.startTraining();
  ASSERT_TRUE(training.problemText().isEmpty()) << training.problemText().toStdString();
  ASSERT_TRUE(done.wait(120000));
  const QString log = training.logText();
  EXPECT_TRUE(log.contains("1 image(s) turned out bad")) << log.toStdString();
  EXPECT_TRUE(log.contains("garbled.png")) << log.toStdString();
}

}  // namespace dc::test
