// The dashboard inside the main window: the four modes, the project's
// training settings reaching the Training tab and saved back with the
// project, a short run trained from the window whose weights reach the
// Inference tab, and a running training guarded against closing or opening.
#include "dashboard_test_util.h"
#include "gui/dataset_panel.h"
#include "gui/evaluation_view.h"
#include "gui/inference_panel.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui/summary_panel.h"
#include "gui/training_panel.h"
#include "gui/training_session.h"
#include "gui_test_util.h"
#include "widgets/confusion_matrix_widget.h"
#include "widgets/graph_editor.h"
#include "widgets/image_grid.h"
#include "widgets/live_plot.h"

#include <deepcanvas/project.h>
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFontMetrics>
#include <QMessageBox>
#include <QProgressBar>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

namespace dc::test {
namespace {

class MainWindowDashboard : public ::testing::Test {
 protected:
  void SetUp() override { ensureApp(); }
};

TEST_F(MainWindowDashboard, ModesAndTheProjectsSettings) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  auto* tabs = w.findChild<QTabWidget*>("modes");
  ASSERT_NE(tabs, nullptr);
  ASSERT_EQ(tabs->count(), 5);
  EXPECT_EQ(tabs->tabText(2), "Training");
  w.action("actionMode2")->trigger();  // Ctrl+3
  EXPECT_EQ(w.mode(), gui::MainWindow::Mode::Training);

  // The sample project's own settings, not the defaults of a new project.
  const Project file = load_project(sourcePath("sample_data/sample_project.dcproj").toStdString());
  TrainConfig c = w.trainingPanel()->config();
  EXPECT_EQ(c.schedule.type, file.training.schedule.type);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, file.training.optimizer.lr);
  EXPECT_EQ(c.epochs, file.training.epochs);
  EXPECT_FALSE(w.isModified());

  // Before any run the epoch plots span the epochs the run will train.
  QCPAxis* epochs = w.trainingPanel()->lossPlot()->customPlot()->xAxis;
  EXPECT_DOUBLE_EQ(epochs->range().upper, file.training.epochs);

  // A setting edited in the Training tab marks the project and is saved with it.
  w.trainingPanel()->setEpochs(file.training.epochs + 4);
  EXPECT_TRUE(w.isModified());
  EXPECT_DOUBLE_EQ(epochs->range().upper, file.training.epochs + 4);
  QTemporaryDir dir;
  const QString path = dir.path() + "/p.dcproj";
  ASSERT_TRUE(w.saveFile(path));
  EXPECT_FALSE(w.isModified());
  EXPECT_EQ(load_project(path.toStdString()).training.epochs, file.training.epochs + 4);

  // The editor's graph reaches the panels at once.
  w.editor()->addLayer("Dropout", {900, 400});
  EXPECT_TRUE(w.context()->project().graph == w.editor()->graph());
}

TEST_F(MainWindowDashboard, TrainsFromTheWindowAndGuardsTheRun) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  QTemporaryDir dir;
  gui::TrainingPanel* t = w.trainingPanel();
  t->setEpochs(1);
  t->setStepsPerEpochLimit(30);
  t->setCheckpointDir(dir.path());
  QSignalSpy done(t->session(), &gui::TrainingSession::finished);
  t->startTraining();
  ASSERT_TRUE(t->session()->active()) << t->problemText().toStdString();

  // While it runs, opening another project asks first; "keep it" changes nothing.
  QString asked;
  w.setConfirmHandler([&](const QString& q) {
    asked = q;
    return gui::MainWindow::Answer::Cancel;
  });
  EXPECT_FALSE(w.openFile(sourcePath("resources/templates/lenet5.dcproj")));
  EXPECT_TRUE(asked.contains("training run is in progress")) << asked.toStdString();
  EXPECT_TRUE(w.currentFile().endsWith("sample_project.dcproj"));

  // A bound for a stuck run, not a timing check.
  ASSERT_TRUE(done.wait(600000));
  EXPECT_TRUE(done.first().at(0).toBool()) << done.first().at(1).toString().toStdString();
  EXPECT_TRUE(w.context()->weights().valid());  // what the Inference tab predicts with
  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
}

TEST_F(MainWindowDashboard, ANewProjectStartsWithAFreshDashboard) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  // The opened (valid) network's Input, not the empty one the window began with.
  EXPECT_TRUE(w.inferencePanel()->preprocessingText().contains("28×28"))
      << w.inferencePanel()->preprocessingText().toStdString();
  QTemporaryDir dir;
  gui::TrainingPanel* t = w.trainingPanel();
  t->setEpochs(1);
  t->setStepsPerEpochLimit(10);
  t->setCheckpointDir(dir.path());
  QSignalSpy done(t->session(), &gui::TrainingSession::finished);
  t->startTraining();
  ASSERT_TRUE(done.wait(600000)) << t->problemText().toStdString();
  ASSERT_TRUE(w.context()->weights().valid());
  ASSERT_GT(t->lossPlot()->totalPoints(), 0);
  gui::InferencePanel* inf = w.inferencePanel();
  ASSERT_TRUE(inf->weightsSource().contains("run 1"));
  ASSERT_TRUE(inf->loadCheckpoint(t->session()->lastCheckpoint()));

  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
  w.newProject();
  // Nothing of the previous project's runs is left on the Training tab...
  EXPECT_EQ(t->lossPlot()->totalPoints(), 0);
  EXPECT_EQ(t->lossPlot()->overlayCount(), 0);
  EXPECT_EQ(t->accuracyPlot()->totalPoints(), 0);
  EXPECT_EQ(t->throughputPlot()->totalPoints(), 0);
  EXPECT_TRUE(t->logText().isEmpty()) << t->logText().toStdString();
  EXPECT_EQ(t->progressBar()->value(), 0);
  EXPECT_EQ(t->runHistory()->rowCount(), 0);
  EXPECT_EQ(t->statusText(), "Ready");
  // ...nor on the Inference tab, which says it has no weights.
  EXPECT_FALSE(w.context()->weights().valid());
  EXPECT_TRUE(w.context()->runCheckpoints().isEmpty());
  EXPECT_TRUE(inf->weightsSource().startsWith("none yet")) << inf->weightsSource().toStdString();
  EXPECT_EQ(inf->weightChoices().size(), 2);  // "none yet" and "Checkpoint file…"
  EXPECT_FALSE(w.context()->hasDataset());
}

// A mistake listed under the confusion matrix, double-clicked, opens in the
// Inference tab with the listing's checkpoint: the same class and
// confidence as listed, its true class beside it. With the listing's
// weights even when the checkpoint file was rewritten since (each epoch
// rewrites last.safetensors).
TEST_F(MainWindowDashboard, ASampleUnderTheConfusionMatrixOpensInTheInferenceTab) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  QTemporaryDir dir;
  gui::TrainingPanel* t = w.trainingPanel();
  ASSERT_TRUE(train_briefly(*t, dir.path(), 30));
  gui::EvaluationView* eval = t->evaluation();
  const auto& m = eval->matrixWidget()->matrix();
  ASSERT_EQ(m.size(), 10u);
  const auto [truth, guess, most] = busiest_mistake(m);
  ASSERT_GT(most, 0);
  QSignalSpy listed(eval, &gui::EvaluationView::samplesListed);
  eval->showCell(truth, guess);
  ASSERT_TRUE(listed.wait(120000));
  ASSERT_FALSE(eval->listed().empty());
  const SamplePrediction first = eval->listed().front();
  // Another run's weights written over the file, as a later epoch would.
  const QString ck = QFileInfo(t->session()->lastCheckpoint()).dir().filePath("last.safetensors");
  ASSERT_TRUE(QFileInfo::exists(ck)) << ck.toStdString();
  const TrainedRun& other = TrainedRun::get();
  ASSERT_TRUE(other.ok);
  ASSERT_TRUE(QFile::remove(ck));
  ASSERT_TRUE(QFile::copy(other.checkpoint, ck));

  // The double-click, on the drawn thumbnail.
  w.resize(1280, 720);
  w.show();
  w.showMode(gui::MainWindow::Mode::Training);
  QWidget* page = eval;
  while (page->parentWidget() && !qobject_cast<QTabWidget*>(page->parentWidget()->parentWidget()))
    page = page->parentWidget();
  ASSERT_TRUE(page->parentWidget());
  qobject_cast<QTabWidget*>(page->parentWidget()->parentWidget())->setCurrentWidget(page);
  widgets::ImageGrid* grid = eval->samplesGrid();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  const QRect r = grid->visualItemRect(grid->item(0));
  ASSERT_TRUE(r.isValid());
  // A click only selects (QTest's double-click event needs the press of
  // the click before it, as a real double-click has).
  QTest::mouseClick(grid->viewport(), Qt::LeftButton, {}, r.center());
  EXPECT_EQ(w.mode(), gui::MainWindow::Mode::Training);
  EXPECT_EQ(w.inferencePanel()->imageCount(), 0);
  QTest::mouseDClick(grid->viewport(), Qt::LeftButton, {}, r.center());
  EXPECT_EQ(w.mode(), gui::MainWindow::Mode::Inference);
  gui::InferencePanel* inf = w.inferencePanel();
  ASSERT_EQ(inf->imageCount(), 1);
  EXPECT_EQ(inf->topClass(), guess);
  EXPECT_NEAR(inf->topProbability(), first.confidence, 1e-4);
  const QString text = inf->images()->item(0)->text(), tip = inf->images()->item(0)->toolTip();
  EXPECT_TRUE(text.startsWith(QString("test #%1\n").arg(first.index))) << text.toStdString();
  // Both caption lines fit the list's cell, the percentage kept.
  EXPECT_TRUE(text.endsWith(" %")) << text.toStdString();
  const QFontMetrics fm(inf->images()->font());
  for (const QString& line : text.split('\n'))
    EXPECT_LE(fm.horizontalAdvance(line), inf->images()->gridSize().width()) << line.toStdString();
  EXPECT_EQ(
      tip,
      QString("test #%1 (true: %2)").arg(first.index).arg(w.context()->classNames().at(truth)));
  // Under the checkpoint behind the listing, chosen in the list.
  EXPECT_TRUE(inf->weightsSource().contains("last.safetensors"))
      << inf->weightsSource().toStdString();
  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
}

// A sample the Inference tab cannot take (another shape than the Input's,
// or no bytes) is refused with the shapes named, and nothing is added or
// changed: not the images, not the weights in use.
TEST_F(MainWindowDashboard, AnInspectedSampleOfAnotherShapeIsRefusedSayingWhy) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  gui::InferencePanel* inf = w.inferencePanel();
  const QString before = inf->weightsSource();
  auto weights = std::make_shared<gui::ModelWeights>();
  weights->state = {{"dense2.bias", Tensor(Shape{10})}};
  weights->source = "other weights";
  gui::InspectedSample colour;
  colour.name = "photo.jpg";
  colour.shape = Shape{3, 28, 28};
  colour.chw.assign(size_t(colour.shape.numel()), 128);
  colour.weights = weights;
  EXPECT_FALSE(inf->inspectSample(colour));
  EXPECT_EQ(inf->messageText(),
            "photo.jpg cannot be shown here: it is 3×28×28 and the Inference tab takes pictures "
            "at the Input's shape, 1×28×28.");
  gui::InspectedSample empty;
  empty.name = "test #4";
  empty.shape = Shape{1, 28, 28};
  EXPECT_FALSE(inf->inspectSample(empty));
  EXPECT_TRUE(inf->messageText().startsWith("test #4 cannot be shown here"))
      << inf->messageText().toStdString();
  EXPECT_EQ(inf->imageCount(), 0);
  EXPECT_EQ(inf->weightsSource(), before);
  EXPECT_FALSE(w.context()->weightsInUse().valid());
}

TEST_F(MainWindowDashboard, DatasetAndTrainingSettingsMarkTheProjectModified) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  w.show();
  ASSERT_FALSE(w.isWindowModified());
  w.trainingPanel()->setBatch(w.trainingPanel()->config().batch + 1);
  EXPECT_TRUE(w.isWindowModified());  // the "*" in the title
  QTemporaryDir dir;
  ASSERT_TRUE(w.saveFile(dir.path() + "/p.dcproj"));
  ASSERT_FALSE(w.isWindowModified());

  AugmentConfig o = w.datasetPanel()->augmentOptions();
  o.flip = !o.flip;
  w.datasetPanel()->setAugmentOptions(o);
  EXPECT_TRUE(w.isWindowModified());
  ASSERT_TRUE(w.saveFile(dir.path() + "/p.dcproj"));
  EXPECT_EQ(load_project((dir.path() + "/p.dcproj").toStdString()).training.augment.flip, o.flip);
  // A vertical flip alone is saved too (it needed "copies per sample" once).
  o = {};
  o.vflip = true;
  w.datasetPanel()->setAugmentOptions(o);
  EXPECT_TRUE(w.isWindowModified());
  ASSERT_TRUE(w.saveFile(dir.path() + "/p.dcproj"));
  EXPECT_TRUE(load_project((dir.path() + "/p.dcproj").toStdString()).training.augment.vflip);
  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
}

// Issue 18 item 3: the dashboard tabs fit a 1280×720 window, no sideways
// scrolling, every plot wholly inside it.
TEST_F(MainWindowDashboard, DashboardTabsFitA1280By720Window) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  w.resize(1280, 720);
  w.show();
  for (auto m : {gui::MainWindow::Mode::Dataset, gui::MainWindow::Mode::Training,
                 gui::MainWindow::Mode::Inference}) {
    w.showMode(m);
    QApplication::processEvents();
    QWidget* page = m == gui::MainWindow::Mode::Dataset ? static_cast<QWidget*>(w.datasetPanel())
                    : m == gui::MainWindow::Mode::Training
                        ? static_cast<QWidget*>(w.trainingPanel())
                        : static_cast<QWidget*>(w.inferencePanel());
    auto* area = qobject_cast<QScrollArea*>(page->parentWidget()->parentWidget());
    ASSERT_NE(area, nullptr);
    EXPECT_FALSE(area->horizontalScrollBar()->isVisible()) << "mode " << int(m);
    EXPECT_LE(page->width(), area->viewport()->width()) << "mode " << int(m);
  }
  gui::TrainingPanel* t = w.trainingPanel();
  for (widgets::LivePlot* p : {t->lossPlot(), t->accuracyPlot(), t->throughputPlot(), t->lrPlot(),
                               t->utilizationPlot(), t->memoryPlot()}) {
    const QRect r(p->mapTo(t, QPoint(0, 0)), p->size());
    EXPECT_TRUE(t->rect().contains(r)) << p->objectName().toStdString();
  }
  // Folding the settings away leaves the plots more room.
  const int before = t->lossPlot()->width();
  t->setSettingsVisible(false);
  QApplication::processEvents();
  EXPECT_FALSE(t->settingsVisible());
  EXPECT_GE(t->lossPlot()->width(), before);
}

// Issue 36 item 5: once a run had filled the diagnosis below the settings,
// the Training page grew taller than a 1280x720 screen's window (676 pixels
// inside openbox's title bar and borders): a vertical scroll bar, the last
// plots cut, Start and Pause scrolled away. The settings scroll on their own
// now and the page fits.
TEST_F(MainWindowDashboard, TheTrainingTabFitsA1280By720ScreenAfterARun) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  w.resize(1264, 676);
  w.show();
  w.showMode(gui::MainWindow::Mode::Training);
  QTemporaryDir dir;
  gui::TrainingPanel* t = w.trainingPanel();
  ASSERT_TRUE(train_briefly(*t, dir.path(), 20));
  QApplication::processEvents();
  auto* area = qobject_cast<QScrollArea*>(t->parentWidget()->parentWidget());
  ASSERT_NE(area, nullptr);
  EXPECT_FALSE(area->verticalScrollBar()->isVisible())
      << "page " << t->minimumSizeHint().height() << " px for " << area->viewport()->height();
  for (const char* name : {"Start", "Pause"})
    for (QAbstractButton* b : t->findChildren<QAbstractButton*>())
      if (b->text() == name) {
        const QRect r(b->mapTo(area->viewport(), QPoint(0, 0)), b->size());
        EXPECT_TRUE(area->viewport()->rect().contains(r)) << name;
      }
}

// Issue 36: the Dataset tab stacked the augmentation's eight options under
// the source and preparation, taller than a 1280x720 screen's window inside
// openbox's title bar and borders (1264x676): a vertical scroll bar, and the
// augmentation preview below the fold. The options sit beside the preview now.
TEST_F(MainWindowDashboard, TheDatasetTabFitsA1280By720Screen) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  w.resize(1264, 676);
  w.show();
  w.showMode(gui::MainWindow::Mode::Dataset);
  gui::DatasetPanel* d = w.datasetPanel();
  QSignalSpy loaded(d, &gui::DatasetPanel::datasetLoaded);
  if (!w.context()->hasDataset()) {
    ASSERT_TRUE(loaded.wait(30000)) << d->messageText().toStdString();
  }
  QApplication::processEvents();
  auto* area = qobject_cast<QScrollArea*>(d->parentWidget()->parentWidget());
  ASSERT_NE(area, nullptr);
  EXPECT_FALSE(area->verticalScrollBar()->isVisible())
      << "page " << d->minimumSizeHint().height() << " px for " << area->viewport()->height();
  EXPECT_LE(d->minimumSizeHint().height(), area->viewport()->height());
  // The samples and the preview are on screen, with room for two rows of
  // samples and a row of draws, captions included.
  const std::pair<widgets::ImageGrid*, int> grids[] = {{d->thumbnails(), 2},
                                                       {d->augmentPreview(), 1}};
  for (const auto& [grid, rows] : grids) {
    const QRect r(grid->mapTo(area->viewport(), QPoint(0, 0)), grid->size());
    EXPECT_TRUE(area->viewport()->rect().contains(r)) << rows;
    EXPECT_GE(grid->viewport()->height(), rows * grid->gridSize().height()) << rows;
  }
  EXPECT_GT(d->augmentPreview()->count(), 0);
  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
}

TEST_F(MainWindowDashboard, ClosingStopsARunningTrainingWhenConfirmed) {
  auto w = std::make_unique<gui::MainWindow>();
  ASSERT_TRUE(w->openFile(sourcePath("sample_data/sample_project.dcproj")));
  QTemporaryDir dir;
  gui::TrainingPanel* t = w->trainingPanel();
  t->setEpochs(50);  // only Stop ends it
  t->setCheckpointDir(dir.path());
  t->startTraining();
  ASSERT_TRUE(t->session()->active()) << t->problemText().toStdString();
  w->setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Cancel; });
  EXPECT_FALSE(w->close());  // kept running
  EXPECT_TRUE(t->session()->active());
  // The real question's buttons say what they do ("Discard" would suggest
  // losing the run): answered Cancel here, from inside its event loop.
  w->setConfirmHandler({});
  QStringList buttons;
  QTimer::singleShot(0, [&] {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (!box) return;
    for (QAbstractButton* b : box->buttons()) buttons << b->text().remove('&');
    box->button(QMessageBox::Cancel)->click();
  });
  EXPECT_FALSE(w->close());
  EXPECT_TRUE(buttons.contains("Stop training and close the window"))
      << buttons.join(" | ").toStdString();
  EXPECT_FALSE(buttons.contains("Discard"));
  EXPECT_TRUE(t->session()->active());
  w->setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
  EXPECT_TRUE(w->close());
  EXPECT_FALSE(t->session()->active());
  EXPECT_EQ(t->session()->state(), gui::TrainingSession::State::Cancelled);
}

}  // namespace
}  // namespace dc::test

namespace dc::test {
namespace {

// The same network in the editor: the summary reports it from the layers'
// cost rules, and the window stays up.
TEST_F(MainWindowDashboard, ANetworkTooLargeToAllocateIsReportedNotBuilt) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  const Graph& g = w.editor()->graph();
  QString why;
  ASSERT_TRUE(w.editor()->setAttr(g.find_by_name("input")->id, "shape",
                                  std::vector<int64_t>{1, 100000, 100000}, &why))
      << why.toStdString();
  w.summary()->refresh();  // the panel coalesces edits on a timer
  EXPECT_TRUE(w.summary()->totalsText().contains("too large to size or train"))
      << w.summary()->totalsText().toStdString();
  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
}

}  // namespace
}  // namespace dc::test
