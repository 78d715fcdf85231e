// Building the classic two-conv CNN purely through editor actions, saving,
// reopening, and undoing/redoing all of it.
#include "gui/main_window.h"
#include "gui_test_util.h"
#include "widgets/graph_editor.h"
#include "widgets/node_scene.h"
#include "widgets/property_editor.h"

#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <QLineEdit>
#include <QSpinBox>
#include <QUndoStack>

namespace dc::test {
namespace {

struct Step {
  const char* type;
  const char* name;
};

// The sample project's layers, in its order (so ids match too).
const Step kCnn[] = {{"Input", "input"},     {"Conv2D", "conv1"},    {"ReLU", "relu1"},
                     {"MaxPool2D", "pool1"}, {"Conv2D", "conv2"},    {"ReLU", "relu2"},
                     {"MaxPool2D", "pool2"}, {"Flatten", "flatten"}, {"Dense", "dense1"},
                     {"ReLU", "relu3"},      {"Dense", "dense2"}};

void setSpin(gui::MainWindow& w, const QString& name, int v) {
  auto* box = propertyWidget<QSpinBox>(w, name);
  ASSERT_NE(box, nullptr) << name.toStdString();
  box->setValue(v);
}

void setName(gui::MainWindow& w, const char* name) {
  auto* edit = propertyWidget<QLineEdit>(w, "name");
  ASSERT_NE(edit, nullptr);
  edit->setText(name);
  Q_EMIT edit->editingFinished();
}

void setList(gui::MainWindow& w, const QString& attr, const QString& text) {
  auto* edit = propertyWidget<QLineEdit>(w, attr);
  ASSERT_NE(edit, nullptr);
  edit->setText(text);
  Q_EMIT edit->editingFinished();
}

// Adds, names and configures every layer through the palette and the
// property editor, and connects them through the editor's connect action
// (what a port-to-port drag ends in).
void buildCnn(gui::MainWindow& w) {
  NodeId prev = -1;
  for (const Step& s : kCnn) {
    // With nothing selected the palette only adds; the connection below is
    // the explicit port-to-port action.
    w.editor()->scene()->clearSelection();
    NodeId id = addFromPalette(w, s.type);
    ASSERT_GT(id, 0) << s.type;
    ASSERT_EQ(w.properties()->currentNode(), id);  // a new layer is selected
    setName(w, s.name);
    std::string n = s.name;
    if (n == "input") setList(w, "attr:shape", "1, 28, 28");
    if (n == "conv1" || n == "conv2") {
      setSpin(w, "attr:filters", n == "conv1" ? 32 : 64);
      setSpin(w, "attr:padding:0", 1);
      setSpin(w, "attr:padding:1", 1);
    }
    if (n == "pool1" || n == "pool2") {
      setSpin(w, "attr:stride:0", 2);
      setSpin(w, "attr:stride:1", 2);
    }
    if (n == "dense1") setSpin(w, "attr:units", 128);
    if (n == "dense2") setSpin(w, "attr:units", 10);
    if (prev > 0) {
      QString why;
      ASSERT_TRUE(w.editor()->connectPorts(prev, id, 0, &why)) << why.toStdString();
    }
    prev = id;
  }
}

// With a layer selected, the palette appends after it: the CNN again,
// without a single explicit connection.
void appendCnn(gui::MainWindow& w) {
  for (const Step& s : kCnn) {
    ASSERT_GT(addFromPalette(w, s.type), 0) << s.type;
    setName(w, s.name);
  }
}

Graph sampleGraph() {
  return load_project(sourcePath("sample_data/sample_project.dcproj").toStdString()).graph;
}

class EditorBuild : public ::testing::Test {
 protected:
  void SetUp() override { ensureApp(); }
};

TEST_F(EditorBuild, TwoConvCnnFromPaletteMatchesSampleAndSurvivesSaveAndReopen) {
  gui::MainWindow w;
  w.setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
  buildCnn(w);
  ASSERT_FALSE(HasFatalFailure());
  const Graph built = w.editor()->graph();
  EXPECT_TRUE(sameStructure(built, sampleGraph())) << graph_to_json(built);
  for (const auto& [id, s] : built.infer_shapes()) EXPECT_TRUE(s.ok()) << s.error;
  EXPECT_TRUE(w.isModified());

  QString path = tempDir() + "/cnn.dcproj";
  ASSERT_TRUE(w.saveFile(path));
  EXPECT_FALSE(w.isModified());
  EXPECT_TRUE(w.windowTitle().startsWith("cnn.dcproj"));

  gui::MainWindow again;
  again.setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
  ASSERT_TRUE(again.openFile(path));
  EXPECT_TRUE(again.editor()->graph() == built);  // positions included
  EXPECT_FALSE(again.isModified());
}

TEST_F(EditorBuild, PaletteAppendsAfterTheSelectedLayer) {
  gui::MainWindow w;
  appendCnn(w);
  ASSERT_FALSE(HasFatalFailure());
  const Graph& g = w.editor()->graph();
  ASSERT_EQ(g.nodes().size(), 11u);
  EXPECT_EQ(g.edges().size(), 10u);
  for (size_t i = 1; i < std::size(kCnn); ++i) {
    auto in = g.in_edges(idOf(g, kCnn[i].name));
    ASSERT_EQ(in.size(), 1u) << kCnn[i].name;
    EXPECT_EQ(g.node(in[0].src).name, kCnn[i - 1].name);
  }
  // Left to right, no two cards on the same spot.
  for (size_t i = 1; i < std::size(kCnn); ++i)
    EXPECT_GT(g.node(idOf(g, kCnn[i].name)).x, g.node(idOf(g, kCnn[i - 1].name)).x);
  // Adding and wiring is one step: one undo removes both.
  // (The palette already named it "dense2", so there was no rename.)
  w.editor()->undoStack()->undo();
  EXPECT_EQ(g.nodes().size(), 10u);
  EXPECT_EQ(g.edges().size(), 9u);
}

TEST_F(EditorBuild, UndoEverythingEmptiesRedoEverythingRebuilds) {
  gui::MainWindow w;
  buildCnn(w);
  ASSERT_FALSE(HasFatalFailure());
  const Graph built = w.editor()->graph();
  QUndoStack* undo = w.editor()->undoStack();
  ASSERT_GT(undo->count(), 11 * 2);
  while (undo->canUndo()) undo->undo();
  EXPECT_TRUE(w.editor()->graph().empty());
  EXPECT_FALSE(w.isModified());
  while (undo->canRedo()) undo->redo();
  EXPECT_TRUE(w.editor()->graph() == built);
  EXPECT_TRUE(w.isModified());
}

}  // namespace
}  // namespace dc::test
