// The main window's file handling: corrupt and newer files, the title's
// unsaved marker, templates, autosave recovery.
#include "gui/main_window.h"
#include "gui/autosaver.h"
#include "gui/project_context.h"
#include "gui/template_dialog.h"
#include "gui_test_util.h"
#include "widgets/graph_editor.h"
#include "widgets/node_scene.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <QFile>
#include <QFileInfo>
#include <QListWidget>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QUndoStack>
#include <QUrl>

#include <set>

namespace dc::test {
namespace {

class MainWindowFiles : public ::testing::Test {
 protected:
  void SetUp() override { ensureApp(); }
};

void writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

TEST_F(MainWindowFiles, CorruptFileGivesAMessageAndLosesNothing) {
  gui::MainWindow w;
  QStringList errors;
  w.setErrorHandler([&](const QString& e) { errors << e; });
  w.setConfirmHandler([](const QString&) {
    ADD_FAILURE() << "asked to save although the file could not be read";
    return gui::MainWindow::Answer::Cancel;
  });
  QString sample = sourcePath("sample_data/sample_project.dcproj");
  ASSERT_TRUE(w.openFile(sample));
  // An unsaved edit that must survive.
  NodeId extra = w.editor()->addLayer("Dropout", {400, 400});
  ASSERT_GT(extra, 0);
  const Graph before = w.editor()->graph();
  const int history = w.editor()->undoStack()->count();

  QString dir = tempDir();
  QString corrupt = dir + "/corrupt.dcproj";
  writeFile(corrupt,
            "{\"format\": \"deepcanvas-project\", \"version\": 1, \"graph\": {\"nodes\": [");
  EXPECT_FALSE(w.openFile(corrupt));
  ASSERT_EQ(errors.size(), 1);
  EXPECT_TRUE(errors[0].contains("corrupt.dcproj")) << errors[0].toStdString();

  QString newer = dir + "/newer.dcproj";
  QByteArray text;
  {
    QFile f(sample);
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    text = f.readAll();
  }
  text.replace("\"version\": 1", "\"version\": 99");
  writeFile(newer, text);
  EXPECT_FALSE(w.openFile(newer));
  ASSERT_EQ(errors.size(), 2);
  EXPECT_TRUE(errors[1].contains("newer")) << errors[1].toStdString();

  EXPECT_FALSE(w.openFile(dir + "/missing.dcproj"));
  EXPECT_EQ(errors.size(), 3);

  EXPECT_TRUE(w.editor()->graph() == before);
  EXPECT_EQ(w.editor()->undoStack()->count(), history);
  EXPECT_TRUE(w.isModified());
  EXPECT_EQ(w.currentFile(), sample);
}

#ifdef DC_HAVE_ONNX
// File > Export > ONNX Model writes the open network; a network that does
// not compile gives one message and leaves the earlier export untouched.
TEST_F(MainWindowFiles, ExportOnnxWritesTheNetworkAndRefusesABrokenOne) {
  gui::MainWindow w;
  QStringList errors;
  w.setErrorHandler([&](const QString& e) { errors << e; });
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  ASSERT_NE(w.action("actionExportOnnx"), nullptr);
  const QString path = tempDir() + "/sample.onnx";
  ASSERT_TRUE(w.exportOnnx(path)) << errors.join("\n").toStdString();
  EXPECT_TRUE(errors.isEmpty());
  // 421,642 float32 weights plus the graph.
  const qint64 size = QFileInfo(path).size();
  EXPECT_GT(size, 421642 * 4);
  EXPECT_TRUE(w.statusBar()->currentMessage().contains("untrained weights"))
      << w.statusBar()->currentMessage().toStdString();

  ASSERT_GT(w.editor()->addLayer("Dropout", {400, 400}), 0);  // not connected: does not compile
  EXPECT_FALSE(w.exportOnnx(path));
  ASSERT_EQ(errors.size(), 1);
  EXPECT_TRUE(errors[0].contains("Could not export the ONNX model")) << errors[0].toStdString();
  EXPECT_EQ(QFileInfo(path).size(), size);
}

// File > Import ONNX (and an .onnx dropped on the window): the model opens
// as a project laid out on the canvas, with its weights in the Inference
// tab; a second drop of the same model never overwrites the first project;
// a file that is not ONNX gives one message and writes nothing.
TEST_F(MainWindowFiles, ImportOnnxOpensTheModelLaidOutWithItsWeights) {
  const QString dir = tempDir();
  const QString model = dir + "/net.onnx";
  {
    gui::MainWindow exporter;
    ASSERT_TRUE(exporter.openFile(sourcePath("sample_data/sample_project.dcproj")));
    ASSERT_TRUE(exporter.exportOnnx(model));
  }
  gui::MainWindow w;
  QStringList errors;
  w.setErrorHandler([&](const QString& e) { errors << e; });
  ASSERT_NE(w.action("actionImportOnnx"), nullptr);
  ASSERT_TRUE(w.importOnnx(model, dir + "/imported.dcproj")) << errors.join("\n").toStdString();
  EXPECT_TRUE(errors.isEmpty());
  EXPECT_EQ(w.currentFile(), QFileInfo(dir + "/imported.dcproj").absoluteFilePath());
  EXPECT_FALSE(w.isModified());
  EXPECT_TRUE(QFileInfo::exists(dir + "/imported.safetensors"));
  const Graph& g = w.editor()->graph();
  ASSERT_NE(g.find_by_name("conv1"), nullptr);
  // Laid out: no two layers on the same spot.
  std::set<std::pair<double, double>> spots;
  for (const auto& [id, n] : g.nodes()) spots.insert({n.x, n.y});
  EXPECT_EQ(spots.size(), g.nodes().size());
  EXPECT_TRUE(w.context()->weights().valid());

  // Dropped twice: net.dcproj, then net_2.dcproj.
  ASSERT_TRUE(w.openDropped({QUrl::fromLocalFile(model)}));
  EXPECT_EQ(w.currentFile(), QFileInfo(dir + "/net.dcproj").absoluteFilePath());
  ASSERT_TRUE(w.openDropped({QUrl::fromLocalFile(model)}));
  EXPECT_EQ(w.currentFile(), QFileInfo(dir + "/net_2.dcproj").absoluteFilePath());

  writeFile(dir + "/notes.onnx", "not a model");
  EXPECT_FALSE(w.importOnnx(dir + "/notes.onnx", dir + "/notes.dcproj"));
  ASSERT_EQ(errors.size(), 1);
  EXPECT_TRUE(errors[0].contains("not an ONNX model")) << errors[0].toStdString();
  EXPECT_FALSE(QFileInfo::exists(dir + "/notes.dcproj"));
  EXPECT_FALSE(QFileInfo::exists(dir + "/notes.safetensors"));
  EXPECT_EQ(w.currentFile(), QFileInfo(dir + "/net_2.dcproj").absoluteFilePath());
}
#endif

TEST_F(MainWindowFiles, TitleShowsFileAndUnsavedMarker) {
  gui::MainWindow w;
  ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
  EXPECT_EQ(w.windowTitle(), QString("sample_project.dcproj[*] — DeepCanvas"));
  EXPECT_FALSE(w.isWindowModified());
  w.editor()->addLayer("ReLU", {0, 0});
  EXPECT_TRUE(w.isWindowModified());
  w.editor()->undoStack()->undo();
  EXPECT_FALSE(w.isWindowModified());
}

TEST_F(MainWindowFiles, OpenedAndSavedFilesAreRecent) {
  QSettings().remove("recentFiles");
  QString sample = sourcePath("sample_data/sample_project.dcproj");
  QString copy = tempDir() + "/copy.dcproj";
  {
    gui::MainWindow w;
    ASSERT_TRUE(w.openFile(sample));
    ASSERT_TRUE(w.saveFile(copy));
  }
  QStringList recent = QSettings().value("recentFiles").toStringList();
  ASSERT_EQ(recent.size(), 2);
  EXPECT_EQ(recent[0], copy);  // most recent first
  EXPECT_EQ(recent[1], sample);
}

TEST_F(MainWindowFiles, ClosingWithUnsavedChangesAsks) {
  gui::MainWindow w;
  w.editor()->addLayer("Input", {0, 0});
  int asked = 0;
  w.setConfirmHandler([&](const QString&) {
    ++asked;
    return gui::MainWindow::Answer::Cancel;
  });
  EXPECT_FALSE(w.close());
  EXPECT_EQ(asked, 1);
  w.setConfirmHandler([&](const QString&) {
    ++asked;
    return gui::MainWindow::Answer::Discard;
  });
  EXPECT_TRUE(w.close());
  EXPECT_EQ(asked, 2);
}

TEST_F(MainWindowFiles, TemplatesAreListedAndPreviewed) {
  gui::TemplateDialog dlg;
  ASSERT_GE(dlg.list()->count(), 4);
  dlg.list()->setCurrentRow(0);
  QString file = dlg.selectedFile();
  EXPECT_TRUE(file.endsWith(".dcproj"));
  gui::MainWindow w;
  ASSERT_TRUE(w.newFromTemplate(file));
  EXPECT_FALSE(w.editor()->graph().empty());
  EXPECT_TRUE(w.currentFile().isEmpty());  // saving must not overwrite the template
}

TEST_F(MainWindowFiles, ShowingEveryLayerOfEveryTemplateChangesNothing) {
  // The property editor fills its widgets from the node; that must never
  // write back (e.g. a combo box announcing its first item).
  gui::TemplateDialog dlg;
  for (int i = 0; i < dlg.list()->count(); ++i) {
    dlg.list()->setCurrentRow(i);
    // A transfer template needs its fetched base (installer/fetch-pretrained.sh),
    // which a test machine does not have; without it the dialog offers nothing
    // to create (TransferTemplate.* tests cover both cases).
    try {
      gui::TemplateDialog::loadTemplate(dlg.selectedFile());
    } catch (const Error&) {
      EXPECT_TRUE(dlg.selectedFile().startsWith("transfer:")) << dlg.selectedFile().toStdString();
      continue;
    }
    gui::MainWindow w;
    ASSERT_TRUE(w.newFromTemplate(dlg.selectedFile()));
    const Graph before = w.editor()->graph();
    for (const auto& [id, n] : before.nodes()) w.editor()->scene()->selectNodes({id});
    EXPECT_TRUE(w.editor()->graph() == before) << dlg.selectedFile().toStdString();
    EXPECT_EQ(w.editor()->undoStack()->count(), 0);
  }
}

TEST_F(MainWindowFiles, AutosaveIsOfferedBackAfterACrash) {
  for (const gui::Recovery& r : gui::Autosaver::findRecoverable()) gui::Autosaver::discard(r);
  Graph edited;
  {
    gui::MainWindow w;
    ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
    EXPECT_FALSE(w.autosaver()->saveNow());  // nothing changed yet
    w.editor()->addLayer("Dropout", {400, 400});
    edited = w.editor()->graph();
    ASSERT_TRUE(w.autosaver()->saveNow());
    EXPECT_TRUE(gui::Autosaver::findRecoverable().empty());  // its owner is alive
    w.autosaver()->abandon();                                // as if the process died here
    w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
  }
  std::vector<gui::Recovery> found = gui::Autosaver::findRecoverable();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].original, sourcePath("sample_data/sample_project.dcproj"));
  Project p = load_project(found[0].data.toStdString());
  EXPECT_TRUE(p.graph == edited);
  gui::Autosaver::discard(found[0]);
  EXPECT_TRUE(gui::Autosaver::findRecoverable().empty());
}

// Issue 18.14: recovery files went to ~/.local/share/DeepCanvas/DeepCanvas
// (organisation and application name joined). They now go beside the runs
// folder, and a file left in the old folder is still offered back.
TEST_F(MainWindowFiles, RecoveryFilesLiveBesideTheRunsAndOldOnesAreStillFound) {
  for (const gui::Recovery& r : gui::Autosaver::findRecoverable()) gui::Autosaver::discard(r);
  const QString data = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
  EXPECT_EQ(gui::Autosaver::recoveryDir(), data + "/DeepCanvas/recovery");
  const QStringList dirs = gui::Autosaver::recoveryDirs();
  ASSERT_EQ(dirs.size(), 2);
  ASSERT_TRUE(QDir().mkpath(dirs[1]));
  const QString old = dirs[1] + "/session-left-by-an-earlier-version.dcproj";
  ASSERT_TRUE(QFile::copy(sourcePath("sample_data/sample_project.dcproj"), old));
  std::vector<gui::Recovery> found = gui::Autosaver::findRecoverable();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].data, old);
  gui::Autosaver::discard(found[0]);
  EXPECT_FALSE(QFile::exists(old));
}

}  // namespace
}  // namespace dc::test

namespace dc::test {
namespace {

// An unwritable data folder (HOME under a regular file fails even for root):
// the window still opens and edits, and says once that autosave is off.
TEST_F(MainWindowFiles, UnwritableDataFolderIsReportedAndEditingGoesOn) {
  const QByteArray home = qgetenv("HOME");
  qputenv("HOME", "/etc/hostname");  // QStandardPaths' test mode lives under $HOME
  {
    gui::MainWindow w;
    EXPECT_TRUE(w.autosaver()->problem().contains("cannot be created"))
        << w.autosaver()->problem().toStdString();
    EXPECT_TRUE(w.statusBar()->currentMessage().contains("Autosave is off"))
        << w.statusBar()->currentMessage().toStdString();
    ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
    w.editor()->addLayer("Dropout", {400, 400});
    int failures = 0;
    QObject::connect(w.autosaver(), &gui::Autosaver::failed, [&](const QString&) { ++failures; });
    EXPECT_FALSE(w.autosaver()->saveNow());
    EXPECT_FALSE(w.autosaver()->saveNow());
    EXPECT_EQ(failures, 1);  // told once, not every minute
    EXPECT_TRUE(w.statusBar()->currentMessage().contains("Autosave failed"));
    EXPECT_TRUE(w.isModified());  // nothing was lost: the edit is still there
    w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
  }
  qputenv("HOME", home);
}

}  // namespace
}  // namespace dc::test
