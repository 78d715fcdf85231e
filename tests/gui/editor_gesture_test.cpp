// Gestures on the canvas: dragging connections port to port (refused ones
// say why while dragging), moving nodes, dropping a layer from the palette.
#include "gui/main_window.h"
#include "gui_test_util.h"
#include "widgets/graph_editor.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QDropEvent>
#include <QGraphicsSceneMouseEvent>
#include <QMimeData>
#include <QSignalSpy>
#include <QTest>
#include <QUndoStack>

namespace dc::test {
namespace {

class EditorGesture : public ::testing::Test {
 protected:
  void SetUp() override {
    ensureApp();
    w = std::make_unique<gui::MainWindow>();
    ASSERT_TRUE(w->openFile(sourcePath("sample_data/sample_project.dcproj")));
  }
  widgets::NodeScene* scene() const { return w->editor()->scene(); }
  const Graph& g() const { return w->editor()->graph(); }
  NodeId id(const char* n) const { return idOf(g(), n); }

  // Sends a scene mouse event as a view would.
  void mouse(QEvent::Type type, QPointF pos, Qt::MouseButtons buttons) {
    QGraphicsSceneMouseEvent e(type);
    e.setScenePos(pos);
    e.setButton(type == QEvent::GraphicsSceneMouseMove ? Qt::NoButton : Qt::LeftButton);
    e.setButtons(buttons);
    e.setButtonDownScenePos(Qt::LeftButton, pos);
    QApplication::sendEvent(scene(), &e);
  }
  void drag(QPointF from, QPointF to) {
    mouse(QEvent::GraphicsSceneMousePress, from, Qt::LeftButton);
    mouse(QEvent::GraphicsSceneMouseMove, (from + to) / 2, Qt::LeftButton);
    mouse(QEvent::GraphicsSceneMouseMove, to, Qt::LeftButton);
    mouse(QEvent::GraphicsSceneMouseRelease, to, Qt::NoButton);
  }

  std::unique_ptr<gui::MainWindow> w;
};

TEST_F(EditorGesture, DraggingOntoATakenPortIsRefusedWithTheReason) {
  QSignalSpy status(scene(), &widgets::NodeScene::statusMessage);
  const Graph before = g();
  const int history = w->editor()->undoStack()->count();
  QPointF from = scene()->nodeItem(id("input"))->outputPortPos();
  QPointF to = scene()->nodeItem(id("relu2"))->inputPortPos(0);
  drag(from, to);
  bool said = false;
  for (const QList<QVariant>& args : status)
    said |= args[0].toString().contains("already connected");
  EXPECT_TRUE(said);
  EXPECT_TRUE(g() == before);
  EXPECT_EQ(w->editor()->undoStack()->count(), history);
}

TEST_F(EditorGesture, DraggingFromOutputToFreeInputConnects) {
  ASSERT_TRUE(w->editor()->removeNodes({}, {Edge{id("pool1"), id("conv2"), 0}}));
  ASSERT_TRUE(g().in_edges(id("conv2")).empty());
  drag(scene()->nodeItem(id("pool1"))->outputPortPos(),
       scene()->nodeItem(id("conv2"))->inputPortPos(0));
  ASSERT_EQ(g().in_edges(id("conv2")).size(), 1u);
  EXPECT_EQ(g().in_edges(id("conv2"))[0].src, id("pool1"));
  EXPECT_NE(scene()->edgeItem(Edge{id("pool1"), id("conv2"), 0}), nullptr);
  // And the other way round: from an input back to an output.
  ASSERT_TRUE(w->editor()->removeNodes({}, {Edge{id("pool1"), id("conv2"), 0}}));
  drag(scene()->nodeItem(id("conv2"))->inputPortPos(0),
       scene()->nodeItem(id("pool1"))->outputPortPos());
  EXPECT_EQ(g().in_edges(id("conv2")).size(), 1u);
}

// A feature map dragged onto a Dense: said while dragging, and made on
// release through a new Flatten, in one undo step.
TEST_F(EditorGesture, DraggingAFeatureMapOntoADenseInsertsAFlatten) {
  // The sample's flatten taken out: pool2 (64×7×7) is left unwired to dense1.
  ASSERT_TRUE(w->editor()->removeNodes({id("flatten")}));
  ASSERT_TRUE(g().in_edges(id("dense1")).empty());
  const Graph before = g();
  const int history = w->editor()->undoStack()->count();
  QSignalSpy status(scene(), &widgets::NodeScene::statusMessage);
  drag(scene()->nodeItem(id("pool2"))->outputPortPos(),
       scene()->nodeItem(id("dense1"))->inputPortPos(0));
  bool said = false;
  for (const QList<QVariant>& args : status)
    said |= args[0].toString().contains("through a new Flatten");
  EXPECT_TRUE(said);
  ASSERT_EQ(g().in_edges(id("dense1")).size(), 1u);
  const Node& flat = g().node(g().in_edges(id("dense1"))[0].src);
  EXPECT_EQ(flat.type, "Flatten");
  ASSERT_EQ(g().in_edges(flat.id).size(), 1u);
  EXPECT_EQ(g().in_edges(flat.id)[0].src, id("pool2"));
  const auto shapes = g().infer_shapes();
  for (const auto& [node, shape] : shapes) EXPECT_TRUE(shape.ok()) << shape.error;
  EXPECT_EQ(shapes.at(flat.id).shape->str(), "3136");
  EXPECT_EQ(w->editor()->undoStack()->count(), history + 1);
  w->editor()->undoStack()->undo();
  EXPECT_TRUE(g() == before);
}

TEST_F(EditorGesture, DraggingANodeMovesItSnappedAndUndoably) {
  widgets::NodeItem* conv = scene()->nodeItem(id("conv1"));
  QPointF grab = conv->sceneBoundingRect().center() + QPointF(0, 10);  // body, not a port
  scene()->clearSelection();
  drag(grab, grab + QPointF(33, 47));
  const Node& n = g().node(id("conv1"));
  EXPECT_EQ(QPointF(n.x, n.y), conv->pos());
  EXPECT_EQ(std::fmod(n.x, widgets::NodeScene::kGrid), 0.0);
  EXPECT_EQ(std::fmod(n.y, widgets::NodeScene::kGrid), 0.0);
  EXPECT_NE(n.x, 230);
  w->editor()->undoStack()->undo();
  EXPECT_EQ(g().node(id("conv1")).x, 230);
  EXPECT_EQ(conv->pos(), QPointF(230, 120));
}

TEST_F(EditorGesture, ArrowKeysNudgeTheSelectionInOneUndoStep) {
  w->show();
  const int history = w->editor()->undoStack()->count();
  scene()->selectNodes({id("relu1"), id("pool1")});
  w->view()->setFocus();
  QTest::keyClick(w->view(), Qt::Key_Right);
  QTest::keyClick(w->view(), Qt::Key_Right);
  QTest::keyClick(w->view(), Qt::Key_Down, Qt::ShiftModifier);
  EXPECT_EQ(g().node(id("relu1")).x, 420 + 2 * widgets::NodeScene::kGrid);
  EXPECT_EQ(g().node(id("pool1")).y, 120 + 5 * widgets::NodeScene::kGrid);
  EXPECT_EQ(w->editor()->undoStack()->count(), history + 1);
  w->editor()->undoStack()->undo();
  EXPECT_EQ(g().node(id("relu1")).x, 420);
  EXPECT_EQ(g().node(id("pool1")).y, 120);
}

TEST_F(EditorGesture, DroppingALayerFromThePaletteAddsIt) {
  w->show();
  widgets::NodeView* view = w->view();
  auto* mime = new QMimeData;
  mime->setData(widgets::kLayerMimeType, "Dropout");
  QPoint at = view->viewport()->rect().center();
  QDragEnterEvent enter(at, Qt::CopyAction, mime, Qt::LeftButton, {});
  QApplication::sendEvent(view->viewport(), &enter);
  EXPECT_TRUE(enter.isAccepted());
  QDropEvent drop(at, Qt::CopyAction, mime, Qt::LeftButton, {});
  QApplication::sendEvent(view->viewport(), &drop);
  EXPECT_EQ(g().nodes().size(), 12u);
  const Node* d = g().find_by_name("dropout1");
  ASSERT_NE(d, nullptr);
  // The card lands centred under the cursor (within a grid step).
  QPointF centre = scene()->nodeItem(d->id)->sceneBoundingRect().center();
  EXPECT_LT(QLineF(centre, view->mapToScene(at)).length(), 30);
  delete mime;
}

}  // namespace
}  // namespace dc::test
