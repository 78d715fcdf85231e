// The dataset panel and the checks before training: sources load with their
// class counts and thumbnails; bad image folders (non-image or unreadable
// files, a single class, wrong channels, a class count the network does not
// output) give a message naming the cause before training starts, and the
// dataset loaded before stays.
#include "dashboard_test_util.h"

#include <deepcanvas/image_data.h>
#include "gui/dataset_panel.h"
#include "gui/inference_panel.h"
#include "widgets/image_grid.h"
#include "widgets/series_plot.h"

#include <QAbstractItemDelegate>
#include <QApplication>
#include <QImage>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QStyleOptionViewItem>
#include <QTableWidget>

namespace dc::test {

namespace {
void write_images(const QString& dir, int n, bool colour, int seed = 0) {
  QDir().mkpath(dir);
  for (int i = 0; i < n; ++i) {
    QImage img(32, 32, colour ? QImage::Format_RGB888 : QImage::Format_Grayscale8);
    img.fill(QColor((seed * 40 + i * 7) % 255, 80, 120));
    ASSERT_TRUE(img.save(dir + QString("/img%1.png").arg(i)));
  }
}
void write_file(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}
gui::DatasetSource folder(const QString& path) {
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::ImageFolder;
  s.path = path;
  s.test_fraction = 0.25;
  return s;
}
}  // namespace

TEST(DashboardDataset, SampleShowsClassCountsThumbnailsAndAugmentation) {
  auto ctx = gui::ProjectContext::load(sample_project_path());
  gui::DatasetPanel panel(ctx.get());
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::Sample;
  ASSERT_TRUE(panel.loadSource(s)) << panel.messageText().toStdString();
  ASSERT_EQ(panel.classTable()->rowCount(), 10);
  EXPECT_EQ(panel.classTable()->item(1, 0)->text(), "Trouser");
  EXPECT_EQ(panel.classTable()->item(1, 1)->text(), "1000");
  EXPECT_EQ(panel.classTable()->item(1, 2)->text(), "200");
  EXPECT_EQ(panel.thumbnails()->count(), 60);  // 6 per class
  EXPECT_TRUE(panel.showsAugmentation());
  // Every caption reads in full ("Ankle boot", not "An…"): each item has
  // the room its delegate asks for.
  panel.resize(1200, 700);
  panel.show();
  QApplication::processEvents();
  widgets::ImageGrid* grid = panel.thumbnails();
  QStyleOptionViewItem opt;
  opt.initFrom(grid);
  opt.decorationSize = grid->iconSize();
  opt.decorationPosition = QStyleOptionViewItem::Top;
  opt.displayAlignment = Qt::AlignHCenter | Qt::AlignTop;
  opt.features = QStyleOptionViewItem::WrapText | QStyleOptionViewItem::HasDecoration |
                 QStyleOptionViewItem::HasDisplay;
  for (int i = 0; i < grid->count(); ++i) {
    const QRect r = grid->visualItemRect(grid->item(i));
    const QSize need = grid->itemDelegate()->sizeHint(opt, grid->model()->index(i, 0));
    EXPECT_TRUE(r.width() >= need.width() && r.height() >= need.height())
        << grid->item(i)->text().toStdString() << ": " << r.width() << "x" << r.height() << " for "
        << need.width() << "x" << need.height();
  }
  panel.hide();
  EXPECT_EQ(panel.augmentPreview()->count(), 1);  // the original only
  EXPECT_TRUE(ctx->trainingProblems().isEmpty());

  // Every augmentation is the engine's, per batch: the panel writes it into
  // the project's training settings and makes no copies of the data.
  const auto train = ctx->trainSet();
  AugmentConfig o;
  o.flip = true;
  o.crop_padding = 2;
  o.rotate = 10;
  panel.setAugmentOptions(o);
  EXPECT_EQ(panel.augmentPreview()->count(), 8);
  EXPECT_TRUE(ctx->project().training.augment.flip);
  EXPECT_EQ(ctx->project().training.augment.crop_padding, 2);
  EXPECT_EQ(ctx->project().training.augment.rotate, 10);
  o = {};
  o.vflip = true;  // alone, too: nothing else needed for it to count
  panel.setAugmentOptions(o);
  EXPECT_TRUE(ctx->project().training.augment.vflip);
  EXPECT_FALSE(ctx->project().training.augment.flip);
  EXPECT_EQ(panel.augmentPreview()->count(), 8);
  EXPECT_EQ(ctx->trainSet(), train);
}

TEST(DashboardDataset, LoadsOnAWorkerThreadAndKeepsTheOldDataOnFailure) {
  auto ctx = gui::ProjectContext::load(sample_project_path());
  gui::DatasetPanel panel(ctx.get());
  QSignalSpy loaded(&panel, &gui::DatasetPanel::datasetLoaded);
  QSignalSpy failed(&panel, &gui::DatasetPanel::loadFailed);
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::Sample;
  panel.loadSourceAsync(s);
  EXPECT_TRUE(panel.loading());
  ASSERT_TRUE(loaded.wait(120000));
  EXPECT_FALSE(panel.loading());
  ASSERT_TRUE(ctx->hasDataset());
  EXPECT_EQ(ctx->trainSet()->size(), 10000);
  EXPECT_EQ(panel.classTable()->rowCount(), 10);
  auto before = ctx->trainSet();

  gui::DatasetSource bad;
  bad.kind = gui::DatasetSource::Kind::Idx;
  bad.path = QString(DC_SOURCE_DIR) + "/no/such/folder";
  panel.loadSourceAsync(bad);
  ASSERT_TRUE(failed.wait(120000));
  EXPECT_TRUE(failed.first().at(0).toString().contains("no/such/folder"));
  EXPECT_TRUE(panel.messageText().contains("no/such/folder"));
  EXPECT_EQ(ctx->trainSet(), before);
  EXPECT_EQ(panel.classTable()->rowCount(), 10);
}

TEST(DashboardDataset, TheProjectsDatasetLoadsInTheBackgroundWhenFirstShown) {
  auto ctx = gui::ProjectContext::load(sample_project_path());
  ASSERT_FALSE(ctx->project().dataset.path.empty());
  gui::DatasetPanel panel(ctx.get());
  QSignalSpy loaded(&panel, &gui::DatasetPanel::datasetLoaded);
  EXPECT_FALSE(panel.loading());  // not before the tab is seen
  panel.show();
  EXPECT_TRUE(panel.loading());
  EXPECT_TRUE(panel.loadProgress()->isVisible());
  ASSERT_TRUE(loaded.wait(120000)) << panel.messageText().toStdString();
  EXPECT_FALSE(panel.loadProgress()->isVisible());
  ASSERT_TRUE(ctx->hasDataset());
  EXPECT_EQ(panel.classTable()->rowCount(), 10);
  // Shown again: nothing reloads.
  panel.hide();
  panel.show();
  EXPECT_FALSE(panel.loading());
}

// Another project opened while the tab loads the first one's dataset (the
// app opens a project named on its command line after the window, and so
// the tab, is shown): the first one's data is dropped, the new project's own
// is loaded, and its dataset record is not changed.
TEST(DashboardDataset, AProjectOpenedDuringALoadGetsItsOwnDataset) {
  auto ctx = gui::ProjectContext::load(sample_project_path());
  gui::DatasetPanel panel(ctx.get());
  QSignalSpy loaded(&panel, &gui::DatasetPanel::datasetLoaded);
  panel.show();
  ASSERT_TRUE(panel.loading());
  QTemporaryDir tmp;
  write_file(tmp.path() + "/series.csv", "a,b,label\n1,2,0\n2,3,1\n3,4,0\n4,5,1\n5,6,0\n6,7,1\n");
  Project p = ctx->project();
  p.dataset = DatasetSpec{};
  p.dataset.kind = "csv_sequence";
  p.dataset.path = (tmp.path() + "/series.csv").toStdString();
  p.dataset.window = 2;
  p.dataset.target = "label";
  p.dataset.test_fraction = 0.2;
  const DatasetSpec record = p.dataset;
  ctx->replaceProject(p);
  QSignalSpy changed(ctx.get(), &gui::ProjectContext::datasetSpecChanged);
  ASSERT_TRUE(loaded.wait(120000)) << panel.messageText().toStdString();
  ASSERT_TRUE(ctx->hasDataset());
  EXPECT_EQ(ctx->trainSet()->sample_shape, (Shape{2, 2}));
  EXPECT_EQ(changed.count(), 0);
  EXPECT_EQ(ctx->project().dataset.kind, record.kind);
  EXPECT_EQ(ctx->project().dataset.path, record.path);
  EXPECT_TRUE(panel.seriesPlot()->isVisibleTo(&panel));
  EXPECT_FALSE(panel.loading());
}

// The preview is the engine's own augmentation: a vertical flip of a sample
// with a bright top row shows that row at the bottom in some draw.
TEST(DashboardDataset, ThePreviewDrawsTheEnginesAugmentation) {
  auto ctx = sample_context();
  gui::DatasetPanel panel(ctx.get());
  AugmentConfig o;
  o.vflip = true;
  panel.setAugmentOptions(o);
  ASSERT_EQ(panel.augmentPreview()->count(), 8);
  const QImage original = panel.augmentPreview()->item(0)->icon().pixmap(64).toImage();
  const QImage flipped = original.mirrored(false, true);
  bool seen_flip = false;
  for (int k = 1; k < 8; ++k) {
    const QImage img = panel.augmentPreview()->item(k)->icon().pixmap(64).toImage();
    ASSERT_EQ(img.size(), original.size());
    seen_flip |= img == flipped;
    EXPECT_TRUE(img == original || img == flipped) << "draw " << k;  // a flip or nothing
  }
  EXPECT_TRUE(seen_flip);
}

TEST(DashboardDataset, ImageFolderProblemsAreNamedBeforeTraining) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  auto ctx = sample_context();
  auto before = ctx->trainSet();
  gui::DatasetPanel panel(ctx.get());
  gui::TrainingPanel training(ctx.get());
  QTemporaryDir tmp;
  const QString root = tmp.path();

  // A broken image is skipped and named (issue 31: bad files stop nothing);
  // the other images load.
  write_images(root + "/bad/cats", 4, false, 1);
  write_images(root + "/bad/dogs", 4, false, 2);
  write_file(root + "/bad/dogs/broken.png", "\x89PNG not really");
  ASSERT_TRUE(panel.loadSource(folder(root + "/bad"))) << panel.messageText().toStdString();
  EXPECT_TRUE(panel.messageText().contains("broken.png")) << panel.messageText().toStdString();
  EXPECT_NE(ctx->trainSet(), before);
  EXPECT_EQ(ctx->trainSet()->size() + (ctx->testSet() ? ctx->testSet()->size() : 0), 8);

  // Colour images for a greyscale Input are converted to grey.
  write_images(root + "/colour/a", 3, true, 1);
  write_images(root + "/colour/b", 3, true, 2);
  ASSERT_TRUE(panel.loadSource(folder(root + "/colour"))) << panel.messageText().toStdString();
  EXPECT_EQ(ctx->trainSet()->sample_shape, before->sample_shape);

  // Non-image files are skipped with a warning; 2 classes vs 10 outputs
  // stops training with the fix named, and no run starts.
  write_images(root + "/two/cats", 4, false, 1);
  write_images(root + "/two/dogs", 4, false, 2);
  write_file(root + "/two/cats/notes.txt", "hello");
  ASSERT_TRUE(panel.loadSource(folder(root + "/two"))) << panel.messageText().toStdString();
  EXPECT_TRUE(panel.messageText().contains("notes.txt"));
  EXPECT_TRUE(panel.messageText().contains("2 classes")) << panel.messageText().toStdString();
  EXPECT_EQ(panel.classTable()->rowCount(), 2);
  EXPECT_EQ(panel.classTable()->item(0, 0)->text(), "cats");
  EXPECT_EQ(panel.classTable()->item(0, 1)->text(), "3");  // 1 of 4 went to the test set
  QSignalSpy problems(&training, &gui::TrainingPanel::problemsFound);
  training.startTraining();
  EXPECT_EQ(problems.count(), 1);
  EXPECT_EQ(training.session()->state(), gui::TrainingSession::State::Idle);
  EXPECT_TRUE(training.problemText().contains("outputs 10"))
      << training.problemText().toStdString();

  // A single class.
  write_images(root + "/one/cats", 4, false, 1);
  ASSERT_TRUE(panel.loadSource(folder(root + "/one")));
  EXPECT_TRUE(panel.messageText().contains("single class")) << panel.messageText().toStdString();
  training.startTraining();
  EXPECT_EQ(training.session()->state(), gui::TrainingSession::State::Idle);
  EXPECT_TRUE(training.problemText().contains("single class"));

  // Back to the sample: everything is fine again.
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::Sample;
  ASSERT_TRUE(panel.loadSource(s));
  EXPECT_TRUE(ctx->trainingProblems().isEmpty());
}

TEST(DashboardDataset, TextAndCsvSourcesLoad) {
  auto ctx =
      gui::ProjectContext::load(QString(DC_SOURCE_DIR) + "/resources/templates/char_lstm.dcproj");
  gui::DatasetPanel panel(ctx.get());
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::Text;
  s.path = QString(DC_SOURCE_DIR) + "/sample_data/text/corpus.txt";
  s.window = 32;
  s.test_fraction = 0.1;
  ASSERT_TRUE(panel.loadSource(s)) << panel.messageText().toStdString();
  EXPECT_GT(panel.classTable()->rowCount(), 20);  // the vocabulary
  // Padding first, then the characters in code order: whitespace is named.
  EXPECT_EQ(panel.classTable()->item(0, 0)->text(), "(padding)");
  EXPECT_EQ(panel.classTable()->item(1, 0)->text(), "\\n");
  EXPECT_EQ(panel.classTable()->item(2, 0)->text(), "(space)");
  EXPECT_FALSE(panel.showsAugmentation());  // pictures only
  // Samples as text: ten 32-character windows, each with its next character.
  EXPECT_FALSE(panel.thumbnails()->isVisibleTo(&panel));
  ASSERT_TRUE(panel.textSamples()->isVisibleTo(&panel));
  const QStringList lines = panel.textSamples()->toPlainText().split('\n');
  ASSERT_EQ(lines.size(), 10);
  for (const QString& l : lines) {
    ASSERT_EQ(l.size(), 32 + 5 + 1) << l.toStdString();  // window, "  →  ", next
    EXPECT_EQ(l.mid(32, 5), "  →  ") << l.toStdString();
  }
  EXPECT_EQ(panel.thumbnails()->count(), 0);  // not images

  QTemporaryDir tmp;
  write_file(tmp.path() + "/series.csv", "a,b,label\n1,2,0\n2,3,1\n3,4,0\n4,5,1\n5,6,0\n6,7,1\n");
  s.kind = gui::DatasetSource::Kind::Csv;
  s.path = tmp.path() + "/series.csv";
  s.window = 2;
  s.test_fraction = 0.2;
  ASSERT_TRUE(panel.loadSource(s)) << panel.messageText().toStdString();
  EXPECT_EQ(panel.classTable()->rowCount(), 2);
  EXPECT_FALSE(panel.textSamples()->isVisibleTo(&panel));
  EXPECT_FALSE(panel.showsAugmentation());  // a series is no picture either
  // Samples as a plot of the series: its features by name over the rows
  // (four training windows of two rows: rows 0 to 4), and the class of
  // each window at the row it labels.
  EXPECT_FALSE(panel.thumbnails()->isVisibleTo(&panel));
  QCustomPlot* plot = panel.seriesPlot();
  ASSERT_TRUE(plot->isVisibleTo(&panel));
  ASSERT_EQ(plot->graphCount(), 3);
  EXPECT_EQ(plot->graph(0)->name(), "a");
  EXPECT_EQ(plot->graph(1)->name(), "b");
  ASSERT_EQ(plot->graph(0)->data()->size(), 5);
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ((plot->graph(0)->data()->begin() + r)->key, r);
    EXPECT_EQ((plot->graph(0)->data()->begin() + r)->value, r + 1);  // a = row + 1
    EXPECT_EQ((plot->graph(1)->data()->begin() + r)->value, r + 2);  // b = row + 2
  }
  const QCPGraph* cls = plot->graph(2);
  EXPECT_EQ(cls->valueAxis(), plot->yAxis2);
  ASSERT_EQ(cls->data()->size(), 4);
  EXPECT_EQ(cls->data()->begin()->key, 1);    // window 0 labels row 1
  EXPECT_EQ(cls->data()->begin()->value, 1);  // whose label is 1
  EXPECT_EQ((cls->data()->begin() + 3)->key, 4);
  EXPECT_EQ((cls->data()->begin() + 3)->value, 0);

  // A target column that is not the last is shown, and loading again from
  // the panel keeps it: the project's record does not change.
  write_file(tmp.path() + "/first.csv", "label,a,b\n0,1,2\n1,2,3\n0,3,4\n1,4,5\n");
  auto first = s;
  first.path = tmp.path() + "/first.csv";
  first.target = "label";
  ASSERT_TRUE(panel.loadSource(first)) << panel.messageText().toStdString();
  EXPECT_EQ(panel.sourceFromWidgets().target, "label");
  EXPECT_EQ(plot->graph(0)->name(), "a");
  QSignalSpy changed(ctx.get(), &gui::ProjectContext::datasetSpecChanged);
  ASSERT_TRUE(panel.loadSource(panel.sourceFromWidgets())) << panel.messageText().toStdString();
  EXPECT_EQ(changed.count(), 0);
  EXPECT_EQ(ctx->project().dataset.target, "label");
  EXPECT_EQ(panel.classTable()->rowCount(), 2);

  write_file(tmp.path() + "/broken.csv", "a,b,label\n1,x,0\n");
  EXPECT_FALSE(panel.loadSource([&] {
    auto b = s;
    b.path = tmp.path() + "/broken.csv";
    return b;
  }()));
  EXPECT_FALSE(panel.messageText().isEmpty());
  EXPECT_EQ(panel.classTable()->rowCount(), 2);  // the previous dataset stays
}

}  // namespace dc::test

namespace dc::test {

// An image folder trains end to end once the network fits it (two classes,
// so the last Dense gets two units), and the trained weights classify one of
// its images in the inference panel.
TEST(DashboardDataset, ImageFolderTrainsAndPredictsWhenTheNetworkFits) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  QTemporaryDir tmp;
  for (int c = 0; c < 2; ++c) {
    const QString dir = tmp.path() + (c ? "/bottom" : "/top");
    QDir().mkpath(dir);
    for (int i = 0; i < 12; ++i) {
      // Bright half at the top or the bottom, with a little variation.
      QImage img(40, 40, QImage::Format_Grayscale8);
      img.fill(20 + i);
      for (int y = 0; y < 20; ++y)
        for (int x = 0; x < 40; ++x) img.setPixel(x, c ? 39 - y : y, qRgb(230 - i, 0, 0));
      ASSERT_TRUE(
          img.convertToFormat(QImage::Format_Grayscale8).save(dir + QString("/%1.png").arg(i)));
    }
  }
  auto ctx = gui::ProjectContext::load(sample_project_path());
  Project p = ctx->project();
  for (const auto& [id, node] : p.graph.nodes())
    if (node.name == "dense2") p.graph.set_attr(id, "units", int64_t(2));
  ctx->setProject(p);
  gui::DatasetPanel panel(ctx.get());
  ASSERT_TRUE(panel.loadSource(folder(tmp.path()))) << panel.messageText().toStdString();
  EXPECT_TRUE(ctx->trainingProblems().isEmpty());
  EXPECT_EQ(ctx->classNames(), QStringList({"bottom", "top"}));

  gui::TrainingPanel training(ctx.get());
  training.setEpochs(4);
  training.setStepsPerEpochLimit(0);
  training.setBatch(6);
  training.setCheckpointDir(tmp.path() + "/runs");
  QSignalSpy done(training.session(), &gui::TrainingSession::finished);
  training.startTraining();
  ASSERT_TRUE(training.problemText().isEmpty()) << training.problemText().toStdString();
  ASSERT_TRUE(done.wait(120000));
  ASSERT_TRUE(done.first().at(0).toBool()) << training.logText().toStdString();

  gui::InferencePanel inference(ctx.get());
  ASSERT_EQ(inference.openPaths({tmp.path() + "/top/3.png", tmp.path() + "/bottom/5.png"}), 2);
  inference.selectImage(0);
  EXPECT_EQ(inference.topClassName(), "top");
  inference.selectImage(1);
  EXPECT_EQ(inference.topClassName(), "bottom");
}

}  // namespace dc::test
