// Editing the sample project: refused connections, live revalidation,
// copy/paste, merged moves, delete and undo, problems navigation.
#include "gui/main_window.h"
#include "gui/problems_panel.h"
#include "gui/summary_panel.h"
#include "gui_test_util.h"
#include "widgets/connection_check.h"
#include "widgets/edge_item.h"
#include "widgets/graph_editor.h"
#include "widgets/graph_model.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"
#include "widgets/property_editor.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QClipboard>
#include <QListWidget>
#include <QMimeData>
#include <QSignalSpy>
#include <QSpinBox>
#include <QUndoStack>
#include <set>

namespace dc::test {
namespace {

using EditorEdit = SampleWindowTest;

TEST_F(EditorEdit, IllegalConnectionsAreRefusedWithAReason) {
  // Free conv1's input so that only the cycle is wrong with relu2 -> conv1.
  ASSERT_TRUE(w->editor()->removeNodes({}, {Edge{id("input"), id("conv1"), 0}}));
  const int commands = w->editor()->undoStack()->count();
  QString why;
  // A cycle.
  EXPECT_FALSE(w->editor()->connectPorts(id("relu2"), id("conv1"), 0, &why));
  EXPECT_TRUE(why.contains("cycle")) << why.toStdString();
  // A second edge into a single input.
  why.clear();
  EXPECT_FALSE(w->editor()->connectPorts(id("input"), id("relu2"), 0, &why));
  EXPECT_TRUE(widgets::connectionProblem(g(), id("input"), id("conv1"), 0).empty());
  EXPECT_TRUE(why.contains("already connected")) << why.toStdString();
  // Incompatible rank: a flat vector into a Conv2D.
  why.clear();
  NodeId conv = w->editor()->addLayer("Conv2D", {200, 400});
  NodeId flat = w->editor()->addLayer("Flatten", {400, 400});
  ASSERT_TRUE(w->editor()->connectPorts(id("input"), flat, 0));
  EXPECT_FALSE(w->editor()->connectPorts(flat, conv, 0, &why));
  EXPECT_FALSE(why.isEmpty());
  EXPECT_TRUE(g().in_edges(conv).empty());
  // The scene refuses the same while dragging (same check).
  EXPECT_FALSE(widgets::connectionProblem(g(), flat, conv, 0).empty());
  EXPECT_TRUE(widgets::connectionProblem(g(), id("input"), conv, 0).empty());
  // Refusals leave no trace in the history.
  EXPECT_EQ(w->editor()->undoStack()->count(), commands + 3);
}

// Only a feature map into a layer of 1-D features is bridged by a Flatten;
// a double-click on Dense in the palette after a convolution wires it so.
TEST_F(EditorEdit, AFlattenIsOfferedOnlyWhereItMakesTheConnectionLegal) {
  NodeId dense = w->editor()->addLayer("Dense", {600, 500});
  NodeId conv = w->editor()->addLayer("Conv2D", {400, 500});
  // pool1 (32×14×14) into a Dense: bridged; into a Conv2D: legal as it is.
  EXPECT_FALSE(widgets::connectionProblem(g(), id("pool1"), dense, 0).empty());
  EXPECT_TRUE(widgets::flattenBridges(g(), id("pool1"), dense, 0));
  EXPECT_FALSE(widgets::flattenBridges(g(), id("pool1"), conv, 0));
  // A flat vector into a Conv2D: a Flatten cannot help.
  EXPECT_FALSE(widgets::flattenBridges(g(), id("dense1"), conv, 0));
  // A taken port stays refused.
  EXPECT_FALSE(widgets::flattenBridges(g(), id("pool1"), id("dense1"), 0));
  QString why;
  EXPECT_EQ(w->editor()->connectThroughFlatten(id("pool1"), conv, 0, &why), 0);
  EXPECT_FALSE(why.isEmpty());
  // A sequence (T×F) into a Dense is not bridged: flattening steps is rarely meant.
  Graph seq;
  NodeId in = seq.add_node("SequenceInput", "seq", {});
  NodeId d = seq.add_node("Dense", "d", {});
  ASSERT_EQ(seq.infer_shapes()[in].shape->rank(), 2);
  EXPECT_FALSE(widgets::connectionProblem(seq, in, d, 0).empty());
  EXPECT_FALSE(widgets::flattenBridges(seq, in, d, 0));

  // The palette's double-click with conv selected: Dense wired through a Flatten.
  NodeId conv_in = w->editor()->addLayer("Conv2D", {200, 700});
  ASSERT_TRUE(w->editor()->connectPorts(id("input"), conv_in, 0));
  scene()->selectNodes({conv_in});
  const int history = w->editor()->undoStack()->count();
  QSignalSpy said(w->editor(), &widgets::GraphEditor::statusMessage);
  NodeId added = w->editor()->appendLayer("Dense");
  // The last word on the status line says what was added (not cleared by
  // the step's own end).
  ASSERT_FALSE(said.isEmpty());
  EXPECT_TRUE(said.last().at(0).toString().startsWith("Added flatten"))
      << said.last().at(0).toString().toStdString();
  ASSERT_GT(added, 0);
  ASSERT_EQ(g().in_edges(added).size(), 1u);
  const NodeId flat = g().in_edges(added)[0].src;
  EXPECT_EQ(g().node(flat).type, "Flatten");
  EXPECT_EQ(g().in_edges(flat)[0].src, conv_in);
  EXPECT_TRUE(g().infer_shapes()[added].ok());
  // In one line: the Flatten where the Dense would have gone, the Dense after it.
  EXPECT_EQ(g().node(flat).y, g().node(added).y);
  EXPECT_GT(g().node(flat).x, g().node(conv_in).x);
  EXPECT_GT(g().node(added).x, g().node(flat).x);
  EXPECT_EQ(w->editor()->undoStack()->count(), history + 1);  // one step
}

TEST_F(EditorEdit, RefusedConnectionChangesNothing) {
  const Graph before = g();
  const int commands = w->editor()->undoStack()->count();
  EXPECT_FALSE(w->editor()->connectPorts(id("dense2"), id("input"), 0));  // Input has no inputs
  EXPECT_FALSE(w->editor()->connectPorts(id("relu3"), id("relu1"), 0));
  EXPECT_TRUE(g() == before);
  EXPECT_EQ(w->editor()->undoStack()->count(), commands);
  EXPECT_FALSE(w->isModified());
}

TEST_F(EditorEdit, PropertyEditRevalidatesShapesAtOnce) {
  scene()->selectNodes({id("conv1")});
  ASSERT_EQ(w->properties()->currentNode(), id("conv1"));
  auto* filters = propertyWidget<QSpinBox>(*w, "attr:filters");
  ASSERT_NE(filters, nullptr);
  EXPECT_EQ(filters->value(), 32);
  filters->setValue(16);
  EXPECT_EQ(g().node(id("conv1")).attrs.i("filters"), 16);
  const NodeShape* s = w->editor()->model()->shape(id("conv1"));
  ASSERT_TRUE(s && s->ok());
  EXPECT_EQ(s->shape->str(), "16×28×28");
  auto* edge = scene()->edgeItem(Edge{id("conv1"), id("relu1"), 0});
  ASSERT_NE(edge, nullptr);
  EXPECT_EQ(edge->label(), QString("16×28×28"));
  EXPECT_EQ(scene()->edgeItem(Edge{id("relu2"), id("pool2"), 0})->label(), QString("64×14×14"));
  w->summary()->refresh();
  EXPECT_EQ(w->summary()->totalParams(), 160 + 9280 + 401536 + 1290);
  EXPECT_TRUE(w->summary()->totalsText().contains("batch 64"))
      << w->summary()->totalsText().toStdString();
  auto* batch = w->summary()->findChild<QSpinBox*>("summaryBatch");
  ASSERT_NE(batch, nullptr);
  batch->setValue(256);
  w->summary()->refresh();
  EXPECT_TRUE(w->summary()->totalsText().contains("batch 256"));

  // Breaking a shape rule turns the node red and lists it as a problem.
  scene()->selectNodes({id("pool1")});
  auto* k0 = propertyWidget<QSpinBox>(*w, "attr:kernel:0");
  ASSERT_NE(k0, nullptr);
  EXPECT_EQ(w->problems()->count(), 0);
  k0->setValue(40);  // larger than the 28×28 input
  EXPECT_TRUE(scene()->nodeItem(id("pool1"))->hasError());
  EXPECT_TRUE(scene()->nodeItem(id("pool1"))->toolTip().contains("pool1"));
  EXPECT_GE(w->problems()->count(), 1);
  EXPECT_TRUE(w->problems()->list()->item(0)->text().contains("pool1"));

  // Undo restores the shapes right away.
  w->editor()->undoStack()->undo();
  EXPECT_FALSE(scene()->nodeItem(id("pool1"))->hasError());
  EXPECT_EQ(w->problems()->count(), 0);
}

TEST_F(EditorEdit, OutOfRangeValueIsRefused) {
  QString why;
  EXPECT_FALSE(w->editor()->setAttr(id("conv1"), "filters", int64_t(0), &why));
  EXPECT_FALSE(why.isEmpty());
  EXPECT_EQ(g().node(id("conv1")).attrs.i("filters"), 32);
  EXPECT_FALSE(w->editor()->rename(id("conv1"), "conv2", &why));
  EXPECT_TRUE(why.contains("already exists"));
}

TEST_F(EditorEdit, CopyPasteGivesUniqueNamesAndKeepsInnerEdges) {
  scene()->selectNodes({id("conv2"), id("relu2")});
  ASSERT_TRUE(w->editor()->copySelection());
  const QMimeData* mime = QApplication::clipboard()->mimeData();
  ASSERT_NE(mime, nullptr);
  EXPECT_TRUE(mime->text().contains("\"conv2\""));  // JSON, also as text
  std::vector<NodeId> pasted = w->editor()->paste();
  ASSERT_EQ(pasted.size(), 2u);
  std::set<std::string> names;
  for (const auto& [nid, n] : g().nodes()) EXPECT_TRUE(names.insert(n.name).second) << n.name;
  EXPECT_EQ(g().nodes().size(), 13u);
  EXPECT_EQ(g().in_edges(pasted[1]).size(), 1u);
  EXPECT_EQ(g().in_edges(pasted[1])[0].src, pasted[0]);
  EXPECT_EQ(g().node(pasted[0]).attrs, g().node(id("conv2")).attrs);
  EXPECT_EQ(scene()->selectedNodes(), pasted);
  // A second paste: still unique, and one undo step each.
  std::vector<NodeId> again = w->editor()->paste();
  ASSERT_EQ(again.size(), 2u);
  EXPECT_NE(g().node(again[0]).name, g().node(pasted[0]).name);
  w->editor()->undoStack()->undo();
  w->editor()->undoStack()->undo();
  EXPECT_EQ(g().nodes().size(), 11u);
}

TEST_F(EditorEdit, CutAndDeleteAreOneUndoStepEach) {
  const Graph before = g();
  scene()->selectNodes({id("relu1")});
  w->editor()->cutSelection();
  EXPECT_EQ(g().find_by_name("relu1"), nullptr);
  EXPECT_TRUE(g().out_edges(id("conv1")).empty());
  scene()->selectNodes({id("dense1"), id("relu3")});
  w->editor()->deleteSelection();
  EXPECT_EQ(g().nodes().size(), 8u);
  w->editor()->undoStack()->undo();
  w->editor()->undoStack()->undo();
  EXPECT_TRUE(g() == before);
}

TEST_F(EditorEdit, ConsecutiveMovesMerge) {
  const int base = w->editor()->undoStack()->count();
  NodeId c = id("conv1");
  w->editor()->moveNodes({{c, QPointF(240, 200)}});
  w->editor()->moveNodes({{c, QPointF(260, 220)}});
  w->editor()->moveNodes({{c, QPointF(280, 240)}});
  EXPECT_EQ(w->editor()->undoStack()->count(), base + 1);
  EXPECT_EQ(scene()->nodeItem(c)->pos(), QPointF(280, 240));
  w->editor()->undoStack()->undo();
  EXPECT_EQ(g().node(c).x, 230);
  EXPECT_EQ(scene()->nodeItem(c)->pos(), QPointF(230, 120));
  // A different node starts a new step.
  w->editor()->moveNodes({{c, QPointF(300, 300)}});
  w->editor()->moveNodes({{id("relu1"), QPointF(500, 300)}});
  EXPECT_EQ(w->editor()->undoStack()->count(), base + 2);
}

TEST_F(EditorEdit, AutoLayoutIsUndoableAndLeftToRight) {
  const Graph before = g();
  w->editor()->autoLayout();
  double x = -1e9;
  for (NodeId nid : g().topo_order()) {
    EXPECT_GT(g().node(nid).x, x);
    x = g().node(nid).x;
  }
  w->editor()->undoStack()->undo();
  EXPECT_TRUE(g() == before);
}

TEST_F(EditorEdit, ClickingAProblemSelectsAndCentresItsNode) {
  w->editor()->setAttr(id("dense1"), "units", int64_t(64));
  ASSERT_EQ(w->problems()->count(), 0);
  w->editor()->removeNodes({}, {Edge{id("flatten"), id("dense1"), 0}});
  ASSERT_GE(w->problems()->count(), 1);
  QListWidgetItem* row = w->problems()->list()->item(0);
  ASSERT_TRUE(row->text().contains("dense1")) << row->text().toStdString();
  Q_EMIT w->problems()->list()->itemClicked(row);
  EXPECT_EQ(scene()->selectedNodes(), std::vector<NodeId>{id("dense1")});
  QPointF centre = w->view()->mapToScene(w->view()->viewport()->rect().center());
  QPointF node = scene()->nodeItem(id("dense1"))->sceneBoundingRect().center();
  EXPECT_LT(QLineF(centre, node).length(), 40);
}

}  // namespace
}  // namespace dc::test
