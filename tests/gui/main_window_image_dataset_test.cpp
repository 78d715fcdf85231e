// Issue 31: the Dataset tab's choice of an image folder is part of the
// project in the window: it marks the project modified, Edit > Undo takes
// it back (and reloads the previous data), and saving and reopening the
// project loads the same folder with the same options.
#include "gui/dataset_panel.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui_test_util.h"
#include "widgets/graph_editor.h"

#include <deepcanvas/image_data.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <QDir>
#include <QImage>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QUndoStack>

namespace dc::test {
namespace {

class MainWindowDashboardImageDataset : public ::testing::Test {
 protected:
  void SetUp() override { ensureApp(); }
};

void write_class(const QString& dir, int n, int shade) {
  QDir().mkpath(dir);
  for (int i = 0; i < n; ++i) {
    QImage img(24, 24, QImage::Format_Grayscale8);
    img.fill(shade + i * 3);
    ASSERT_TRUE(img.save(dir + QString("/%1.png").arg(i)));
  }
}

TEST_F(MainWindowDashboardImageDataset, AChosenImageFolderIsSavedUndoableAndReopened) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  const QString dir = tempDir();
  write_class(dir + "/photos/ants", 4, 40);
  write_class(dir + "/photos/bees", 4, 180);
  const QString file = dir + "/mine.dcproj";
  DatasetSpec original;
  {
    gui::MainWindow w;
    w.setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
    ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
    ASSERT_TRUE(w.saveFile(file));
    original = w.project().dataset;
    EXPECT_FALSE(w.isModified());

    gui::DatasetPanel* panel = w.datasetPanel();
    gui::DatasetSource s;
    s.kind = gui::DatasetSource::Kind::ImageFolder;
    s.path = dir + "/photos";
    s.test_fraction = 0.25;
    s.crop_fraction = 0.9;
    s.loading = "memory";
    ASSERT_TRUE(panel->loadSource(s)) << panel->messageText().toStdString();
    EXPECT_TRUE(w.isModified());
    EXPECT_EQ(w.project().dataset.kind, "image_folder");
    EXPECT_EQ(w.project().dataset.path, "photos");  // beside the project: relative
    EXPECT_DOUBLE_EQ(w.project().dataset.crop_fraction, 0.9);

    // Undo: the project's previous dataset, loaded again.
    QUndoStack* undo = w.editor()->undoStack();
    ASSERT_TRUE(undo->canUndo());
    QSignalSpy loaded(panel, &gui::DatasetPanel::datasetLoaded);
    undo->undo();
    EXPECT_TRUE(gui::sameSpec(w.project().dataset, original));
    EXPECT_FALSE(w.isModified());
    ASSERT_TRUE(loaded.wait(120000)) << panel->messageText().toStdString();
    EXPECT_EQ(panel->classTable()->rowCount(), 10);
    // Redo: the folder again.
    undo->redo();
    EXPECT_EQ(w.project().dataset.path, "photos");
    EXPECT_TRUE(w.isModified());
    ASSERT_TRUE(loaded.wait(120000)) << panel->messageText().toStdString();
    EXPECT_EQ(panel->classTable()->rowCount(), 2);

    ASSERT_TRUE(w.save());
    EXPECT_FALSE(w.isModified());
  }
  const Project saved = load_project(file.toStdString());
  EXPECT_EQ(saved.dataset.kind, "image_folder");
  EXPECT_EQ(saved.dataset.path, "photos");
  EXPECT_EQ(saved.dataset.loading, "memory");

  // Reopened: the Dataset tab loads the same folder when first shown.
  gui::MainWindow w;
  w.setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
  ASSERT_TRUE(w.openFile(file));
  gui::DatasetPanel* panel = w.datasetPanel();
  QSignalSpy loaded(panel, &gui::DatasetPanel::datasetLoaded);
  w.resize(1280, 720);
  w.show();
  w.showMode(gui::MainWindow::Mode::Dataset);
  ASSERT_TRUE(loaded.count() > 0 || loaded.wait(120000)) << panel->messageText().toStdString();
  ASSERT_EQ(panel->classTable()->rowCount(), 2);
  EXPECT_EQ(panel->classTable()->item(0, 0)->text(), "ants");
  EXPECT_EQ(panel->classTable()->item(1, 0)->text(), "bees");
  const gui::DatasetSource shown = panel->sourceFromWidgets();
  EXPECT_EQ(shown.kind, gui::DatasetSource::Kind::ImageFolder);
  EXPECT_EQ(shown.path, "photos");
  EXPECT_DOUBLE_EQ(shown.crop_fraction, 0.9);
  EXPECT_EQ(shown.loading, "memory");
  EXPECT_FALSE(w.isModified());

  // Save As into another folder: the path still leads to the photos.
  const QString other = tempDir();
  ASSERT_TRUE(w.saveFile(other + "/moved.dcproj"));
  EXPECT_EQ(QDir::cleanPath(QString::fromStdString(
                load_project((other + "/moved.dcproj").toStdString()).dataset.path)),
            QDir::cleanPath(QDir(dir).absoluteFilePath("photos")));
}

// Colour photos for the sample project's grey 28×28 Input: the Dataset tab
// offers a 3×64×64 Input; one click sets it in the network (undoable) and
// the pictures are read again at it; undo takes both back.
TEST_F(MainWindowDashboardImageDataset, TheDatasetTabSetsTheInputThePicturesNeed) {
  if (!image_decoding_supported()) GTEST_SKIP() << "built without OpenCV";
  const QString dir = tempDir();
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 3; ++i) {
      QImage img(160, 140, QImage::Format_RGB888);
      img.fill(c == 0 ? QColor(200, 40 + i * 9, 30) : QColor(20, 60, 180 + i * 9));
      const QString cls = dir + (c == 0 ? "/red" : "/blue");
      QDir().mkpath(cls);
      ASSERT_TRUE(img.save(cls + QString("/%1.png").arg(i)));
    }
  gui::MainWindow w;
  w.setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  gui::DatasetPanel* panel = w.datasetPanel();
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::ImageFolder;
  s.path = dir;
  ASSERT_TRUE(panel->loadSource(s)) << panel->messageText().toStdString();
  ASSERT_FALSE(panel->suggestButton()->isHidden());
  EXPECT_EQ(panel->suggestButton()->text().toStdString(), "Use a 3×64×64 Input");
  const Graph& g = w.editor()->graph();
  const NodeId input = g.find_by_name("input")->id;
  QSignalSpy loaded(panel, &gui::DatasetPanel::datasetLoaded);
  panel->suggestButton()->click();
  EXPECT_EQ(g.node(input).attrs.ints("shape"), (std::vector<int64_t>{3, 64, 64}));
  ASSERT_TRUE(loaded.wait(60000)) << panel->messageText().toStdString();
  EXPECT_EQ(w.context()->trainSet()->sample_shape.str(), "3×64×64");
  EXPECT_TRUE(panel->suggestButton()->isHidden());
  w.editor()->undoStack()->undo();
  EXPECT_EQ(g.node(input).attrs.ints("shape"), (std::vector<int64_t>{1, 28, 28}));
  ASSERT_TRUE(loaded.wait(60000)) << panel->messageText().toStdString();
  EXPECT_EQ(w.context()->trainSet()->sample_shape.str(), "1×28×28");
  EXPECT_FALSE(panel->suggestButton()->isHidden());
  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
}

}  // namespace
}  // namespace dc::test
