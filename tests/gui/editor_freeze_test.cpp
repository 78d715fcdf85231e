// Frozen layers and Replace Head in the editor: Layer → Freeze / Unfreeze on
// a selection is one undo step, frozen nodes are drawn locked, the
// Properties panel's Trainable box, the summary's trainable and frozen
// counts, and Replace Head as one undo step; at 1280x720 the summary's
// last line stays on screen with frozen layers (issue 36).
#include "gui/main_window.h"
#include "gui/summary_panel.h"
#include "gui_test_util.h"
#include "widgets/graph_editor.h"
#include "widgets/graph_model.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/property_editor.h"

#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QLabel>
#include <QTest>
#include <QTreeWidget>
#include <QUndoStack>

namespace dc::test {
namespace {

class EditorFreeze : public SampleWindowTest {
 protected:
  QUndoStack* undo() const { return w->editor()->undoStack(); }
  bool frozen(const char* name) const { return !g().node(id(name)).trainable; }
  bool drawnFrozen(const char* name) const { return scene()->nodeItem(id(name))->isFrozen(); }
};

TEST_F(EditorFreeze, FreezingASelectionIsOneUndoStepAndShowsLocked) {
  w->summary()->refresh();
  const int64_t total = w->summary()->totalParams();
  EXPECT_EQ(w->summary()->frozenParams(), 0);
  EXPECT_EQ(w->summary()->trainableParams(), total);
  EXPECT_FALSE(w->action("actionFreeze")->isEnabled());  // nothing selected

  scene()->selectNodes({id("conv1"), id("relu1"), id("pool1"), id("conv2")});
  ASSERT_TRUE(w->action("actionFreeze")->isEnabled());
  EXPECT_FALSE(w->action("actionUnfreeze")->isEnabled());
  const int before = undo()->count();
  w->action("actionFreeze")->trigger();
  EXPECT_EQ(undo()->count(), before + 1);
  for (const char* n : {"conv1", "relu1", "pool1", "conv2"}) {
    EXPECT_TRUE(frozen(n)) << n;
    EXPECT_TRUE(drawnFrozen(n)) << n;
  }
  EXPECT_FALSE(frozen("dense1"));
  EXPECT_FALSE(drawnFrozen("dense1"));
  EXPECT_TRUE(w->isModified());
  EXPECT_TRUE(w->action("actionUnfreeze")->isEnabled());

  // conv1: 32·1·9 + 32, conv2: 64·32·9 + 64.
  const int64_t conv = 32 * 9 + 32 + 64 * 32 * 9 + 64;
  w->summary()->refresh();
  EXPECT_EQ(w->summary()->frozenParams(), conv);
  EXPECT_EQ(w->summary()->trainableParams(), total - conv);
  EXPECT_EQ(w->summary()->totalParams(), total);
  EXPECT_TRUE(w->summary()->totalsText().contains("frozen"))
      << w->summary()->totalsText().toStdString();

  undo()->undo();
  for (const char* n : {"conv1", "relu1", "pool1", "conv2"}) {
    EXPECT_FALSE(frozen(n)) << n;
    EXPECT_FALSE(drawnFrozen(n)) << n;
  }
  w->summary()->refresh();
  EXPECT_EQ(w->summary()->frozenParams(), 0);
  EXPECT_FALSE(w->summary()->totalsText().contains("frozen"));
  undo()->redo();
  EXPECT_TRUE(frozen("conv2"));

  // Unfreezing part of the selection: only the nodes that change are in
  // the step, and it too is one step.
  scene()->selectNodes({id("conv2"), id("dense1")});
  w->action("actionUnfreeze")->trigger();
  EXPECT_FALSE(frozen("conv2"));
  EXPECT_TRUE(frozen("conv1"));
  EXPECT_EQ(undo()->count(), before + 2);
  undo()->undo();
  EXPECT_TRUE(frozen("conv2"));
  // Nothing to change: no step.
  scene()->selectNodes({id("conv1")});
  EXPECT_FALSE(w->editor()->setTrainable({id("conv1")}, false));
  EXPECT_EQ(undo()->index(), before + 1);
}

TEST_F(EditorFreeze, TrainableCheckboxDeleteUndoPasteAndSaveKeepTheFlag) {
  scene()->selectNodes({id("conv1")});
  auto* box = propertyWidget<QCheckBox>(*w, "trainable");
  ASSERT_NE(box, nullptr);
  EXPECT_TRUE(box->isChecked());
  box->click();
  EXPECT_TRUE(frozen("conv1"));
  EXPECT_TRUE(drawnFrozen("conv1"));
  undo()->undo();
  EXPECT_FALSE(frozen("conv1"));
  EXPECT_TRUE(box->isChecked());  // follows the model
  undo()->redo();
  EXPECT_FALSE(box->isChecked());

  // Delete and undo bring the node back frozen.
  const NodeId conv1 = id("conv1");
  ASSERT_TRUE(w->editor()->removeNodes({conv1}));
  undo()->undo();
  EXPECT_TRUE(frozen("conv1"));
  EXPECT_TRUE(drawnFrozen("conv1"));
  // A pasted copy of a frozen layer is frozen too.
  scene()->selectNodes({conv1});
  ASSERT_TRUE(w->editor()->copySelection());
  std::vector<NodeId> pasted = w->editor()->paste();
  ASSERT_EQ(pasted.size(), 1u);
  EXPECT_FALSE(g().node(pasted[0]).trainable);
  undo()->undo();

  // Saved and opened again.
  const QString file = tempDir() + "/frozen.dcproj";
  ASSERT_TRUE(w->saveFile(file));
  ASSERT_TRUE(w->openFile(file));
  EXPECT_TRUE(frozen("conv1"));
  EXPECT_FALSE(frozen("conv2"));
  EXPECT_TRUE(drawnFrozen("conv1"));
}

TEST_F(EditorFreeze, ReplaceHeadKeepsTheBaseAndIsOneUndoStep) {
  const Graph before = g();
  const int steps = undo()->count();
  // pool2's output is 64×7×7: a GlobalAvgPool2D, then the new Dense.
  scene()->selectNodes({id("pool2")});
  ASSERT_TRUE(w->action("actionReplaceHead")->isEnabled());
  NodeId fc = w->editor()->replaceHead(id("pool2"), 5);
  ASSERT_GT(fc, 0);
  EXPECT_EQ(undo()->count(), steps + 1);
  for (const char* gone : {"flatten", "dense1", "relu3", "dense2"}) {
    EXPECT_EQ(g().find_by_name(gone), nullptr) << gone;
  }
  for (const char* kept : {"input", "conv1", "relu1", "pool1", "conv2", "relu2", "pool2"}) {
    EXPECT_NE(g().find_by_name(kept), nullptr) << kept;
  }
  const Node& dense = g().node(fc);
  EXPECT_EQ(dense.type, "Dense");
  EXPECT_EQ(dense.attrs.i("units"), 5);
  ASSERT_EQ(g().in_edges(fc).size(), 1u);
  const Node& pool = g().node(g().in_edges(fc)[0].src);
  EXPECT_EQ(pool.type, "GlobalAvgPool2D");
  EXPECT_EQ(g().in_edges(pool.id)[0].src, id("pool2"));
  EXPECT_NO_THROW(g().validate());
  const Graph after = g();

  undo()->undo();
  EXPECT_TRUE(g() == before);
  undo()->redo();
  EXPECT_TRUE(g() == after);
  undo()->undo();

  // A flat output (relu3, 128 values) gets the Dense directly; without a
  // count the current output's size (10) is kept.
  NodeId fc2 = w->editor()->replaceHead(id("relu3"), 0);
  ASSERT_GT(fc2, 0);
  EXPECT_EQ(g().node(fc2).attrs.i("units"), 10);
  EXPECT_EQ(g().in_edges(fc2)[0].src, id("relu3"));
  EXPECT_EQ(g().find_by_name("dense2"), nullptr);
  EXPECT_EQ(g().nodes().size(), before.nodes().size());
  undo()->undo();
  EXPECT_TRUE(g() == before);

  // Through the window's action: the loaded dataset's classes (or the
  // current 10 outputs when none is loaded).
  scene()->selectNodes({id("relu2")});
  NodeId fc3 = w->replaceHead();
  ASSERT_GT(fc3, 0);
  EXPECT_EQ(g().node(fc3).attrs.i("units"), 10);
  EXPECT_NO_THROW(g().validate());
}

// Issue 36: in a 1280x720 screen's window (1264x676 inside openbox's title
// bar and borders) the Model Summary dock's totals grew by the frozen line
// and the advice's "fits on: …" line was cut off at the dock's bottom. The
// totals now keep the height their text needs, the layer table gives way.
TEST_F(EditorFreeze, TheSummarysLastLineShowsAt1280By720WithFrozenLayers) {
  w->resize(1264, 676);
  w->show();
  scene()->selectNodes({id("conv1"), id("relu1"), id("pool1"), id("conv2")});
  w->action("actionFreeze")->trigger();
  gui::SummaryPanel* s = w->summary();
  s->refresh();
  QTRY_VERIFY_WITH_TIMEOUT(s->adviceIdle() && !s->adviceText().isEmpty(), 30000);
  QApplication::processEvents();
  auto* totals = s->findChild<QLabel*>("summaryTotals");
  ASSERT_NE(totals, nullptr);
  ASSERT_TRUE(totals->text().contains("frozen"));
  ASSERT_TRUE(totals->text().contains("fits on:"));
  ASSERT_TRUE(totals->isVisible());
  // The whole text: as tall as the label needs at its width, and inside
  // the panel and the window.
  EXPECT_GE(totals->height(), totals->heightForWidth(totals->width()))
      << "label " << totals->width() << "x" << totals->height() << ", panel " << s->height();
  const QRect in_panel(totals->mapTo(s, QPoint(0, 0)), totals->size());
  EXPECT_TRUE(s->rect().contains(in_panel));
  const QRect in_window(totals->mapTo(w.get(), QPoint(0, 0)), totals->size());
  EXPECT_TRUE(w->rect().contains(in_window));
  // The totals sit beside the layer table in a dock this wide, so the
  // table shows several rows, not the single one it had under them.
  EXPECT_GT(totals->mapTo(s, QPoint(0, 0)).x(), s->width() / 3);
  const int row = s->table()->sizeHintForRow(0);
  ASSERT_GT(row, 0);
  EXPECT_GE(s->table()->viewport()->height(), 4 * row)
      << "table " << s->table()->viewport()->height() << " px, rows of " << row;
  w->setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
}

TEST_F(EditorFreeze, ReplaceHeadRefusesANodeWithoutAShape) {
  NodeId loose = w->editor()->addLayer("Dense", {600, 600});
  const Graph before = g();
  const int steps = undo()->count();
  QString why;
  EXPECT_EQ(w->editor()->replaceHead(loose, 3, &why), -1);
  EXPECT_FALSE(why.isEmpty());
  EXPECT_TRUE(g() == before);
  EXPECT_EQ(undo()->count(), steps);
}

}  // namespace
}  // namespace dc::test
