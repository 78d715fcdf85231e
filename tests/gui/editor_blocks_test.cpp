// Blocks in the editor (issue 33): group, shared edit, repeat, ungroup and
// rename, each one undo step, on the ViT template, offscreen and through
// the GraphEditor the Edit menu calls.
#include "widgets/block_breadcrumb.h"
#include "widgets/graph_editor.h"
#include "widgets/graph_model.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"

#include <deepcanvas/blocks.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <QApplication>
#include <QToolButton>
#include <QUndoStack>

namespace dc::widgets {
namespace {

class EditorBlocks : public ::testing::Test {
 protected:
  void SetUp() override {
    // The ViT template as written before blocks, every layer by hand.
    flat = load_project(std::string(DC_SOURCE_DIR) + "/tests/engine/blocks_vit_flat.dcproj").graph;
    ed.loadGraph(flat);
  }
  const Graph& g() const { return ed.graph(); }
  NodeId id(const std::string& name) const {
    const Node* n = g().find_by_name(name);
    EXPECT_NE(n, nullptr) << name;
    return n ? n->id : -1;
  }
  std::vector<NodeId> prefixed(const std::string& p) const {
    std::vector<NodeId> v;
    for (const auto& [i, n] : g().nodes())
      if (n.name.rfind(p, 0) == 0) v.push_back(i);
    return v;
  }
  // block1's layers grouped as "encoder", block2's replaced by a repeat.
  void buildTwoInstances() {
    ed.scene()->selectNodes(prefixed("block2_"));
    ed.deleteSelection();
    ASSERT_TRUE(ed.connectPorts(id("block1_add2"), id("final_norm"), 0));
    ed.scene()->selectNodes(prefixed("block1_"));
    QString why;
    const NodeId b = ed.groupSelection("encoder", &why);
    ASSERT_GE(b, 0) << why.toStdString();
    ASSERT_TRUE(ed.repeatBlock(b, 2, &why)) << why.toStdString();
  }

  Graph flat;
  GraphEditor ed;
};

TEST_F(EditorBlocks, GroupMakesOneNodeAndUndoRestoresTheLayers) {
  const int before = ed.undoStack()->count();
  ed.scene()->selectNodes(prefixed("block1_"));
  QString why;
  const NodeId b = ed.groupSelection("encoder", &why);
  ASSERT_GE(b, 0) << why.toStdString();
  EXPECT_EQ(ed.undoStack()->count(), before + 1);
  EXPECT_EQ(g().node(b).type, kBlockType);
  EXPECT_EQ(g().node(b).name, "block1");
  EXPECT_TRUE(prefixed("block1_").empty());
  EXPECT_TRUE(ed.model()->shape(b)->ok()) << ed.model()->shape(b)->error;
  // Wired the same way: the network still compiles, to the same size.
  EXPECT_EQ(Plan(g(), 1).num_parameters(), Plan(flat, 1).num_parameters());
  // Drawn as a block: its definition and layer count on the card.
  ASSERT_NE(ed.scene()->nodeItem(b), nullptr);
  EXPECT_TRUE(ed.scene()->nodeItem(b)->toolTip().contains("Block encoder"))
      << ed.scene()->nodeItem(b)->toolTip().toStdString();
  ed.undoStack()->undo();
  EXPECT_TRUE(g() == flat);
  ed.undoStack()->redo();
  EXPECT_EQ(g().find_by_name("block1")->type, kBlockType);
}

TEST_F(EditorBlocks, GroupRefusesTwoOutputsAndChangesNothing) {
  ed.scene()->selectNodes(
      {id("block1_norm1"), id("block1_attention"), id("block1_add1"), id("block1_norm2")});
  const int before = ed.undoStack()->count();
  QString why;
  EXPECT_LT(ed.groupSelection("half", &why), 0);
  EXPECT_TRUE(why.contains("one output")) << why.toStdString();
  EXPECT_EQ(ed.undoStack()->count(), before);
  EXPECT_TRUE(g() == flat);
}

TEST_F(EditorBlocks, RepeatStacksInstancesSharingTheDefinition) {
  ed.scene()->selectNodes(prefixed("block1_"));
  const NodeId b = ed.groupSelection("encoder");
  ASSERT_GE(b, 0);
  const int before = ed.undoStack()->count();
  ASSERT_TRUE(ed.repeatBlock(b, 3));
  EXPECT_EQ(ed.undoStack()->count(), before + 1);
  EXPECT_EQ(block_instance_counts(g()).at("encoder"), 3);
  // A chain: block1 -> block2 -> block3 -> what block1 fed (block2_norm1...).
  EXPECT_EQ(g().in_edges(id("block3"))[0].src, id("block2"));
  EXPECT_EQ(g().in_edges(id("block2"))[0].src, id("block1"));
  EXPECT_FALSE(g().out_edges(id("block3")).empty());
  EXPECT_TRUE(g().out_edges(id("block1")).size() == 1);
  for (const auto& [i, s] : ed.model()->shapes()) EXPECT_TRUE(s.ok()) << s.error;
  ed.undoStack()->undo();
  EXPECT_EQ(block_instance_counts(g()).at("encoder"), 1);
}

TEST_F(EditorBlocks, EditingTheDefinitionChangesEveryInstance) {
  buildTwoInstances();
  const int64_t params = Plan(g(), 1).num_parameters();
  BlockDef d = *block_definition_of(g().node(id("block1")));
  // Inside: a wider MLP.
  const NodeId mlp1 = d.graph.find_by_name("mlp1")->id;
  const int64_t units = d.graph.node(mlp1).attrs.i("units");
  d.graph.set_attr(mlp1, "units", units * 2);
  // mlp2 maps back to the model width, so the block keeps its shape.
  const int before = ed.undoStack()->count();
  QString why;
  ASSERT_TRUE(ed.setBlockDefinition(d, &why)) << why.toStdString();
  EXPECT_EQ(ed.undoStack()->count(), before + 1);
  for (const char* b : {"block1", "block2"})
    EXPECT_EQ(block_definition_of(g().node(id(b)))->graph.node(mlp1).attrs.i("units"), units * 2)
        << b;
  EXPECT_GT(Plan(g(), 1).num_parameters(), params);
  ed.undoStack()->undo();
  EXPECT_EQ(Plan(g(), 1).num_parameters(), params);
  for (const char* b : {"block1", "block2"})
    EXPECT_EQ(block_definition_of(g().node(id(b)))->graph.node(mlp1).attrs.i("units"), units);
}

TEST_F(EditorBlocks, UngroupAndRenameAreOneStepEach) {
  buildTwoInstances();
  const Graph two = g();
  QString why;
  ASSERT_TRUE(ed.renameBlockDefinition("encoder", "layer", &why)) << why.toStdString();
  EXPECT_EQ(block_instance_counts(g()).at("layer"), 2);
  EXPECT_EQ(g().node(id("block2")).attrs.s("block"), "layer");
  ed.undoStack()->undo();
  EXPECT_TRUE(g() == two);
  ASSERT_TRUE(ed.ungroup(id("block2"), &why)) << why.toStdString();
  EXPECT_NE(g().find_by_name("block2_attention"), nullptr);
  EXPECT_EQ(block_instance_counts(g()).at("encoder"), 1);
  ASSERT_TRUE(ed.ungroup(id("block1"), &why));
  // Both ungrouped: the template's layers and wiring again.
  EXPECT_EQ(g().nodes().size(), flat.nodes().size());
  EXPECT_EQ(Plan(g(), 1).num_parameters(), Plan(flat, 1).num_parameters());
  ed.undoStack()->undo();
  ed.undoStack()->undo();
  EXPECT_TRUE(g() == two);
}

int64_t unitsIn(const Graph& g, const char* block) {
  const auto def = block_definition_of(*g.find_by_name(block));
  return def->graph.find_by_name("mlp1")->attrs.i("units");
}

TEST_F(EditorBlocks, OpenABlockEditItAndEveryInstanceChangesWithUndoAcross) {
  buildTwoInstances();
  const Graph outside = g();
  const int64_t units = unitsIn(g(), "block1");
  const int steps = ed.undoStack()->count();
  QWidget view;
  BlockBreadcrumb crumbs(&ed, &view);
  EXPECT_FALSE(crumbs.isVisibleTo(&view));

  QString why;
  ASSERT_TRUE(ed.openBlock(id("block1"), &why)) << why.toStdString();
  EXPECT_EQ(ed.blockDepth(), 1);
  EXPECT_EQ(ed.openBlocks(), QStringList{"encoder"});
  EXPECT_TRUE(crumbs.isVisibleTo(&view));
  auto* project = crumbs.findChild<QToolButton*>("breadcrumb0");
  ASSERT_NE(project, nullptr);
  EXPECT_EQ(project->text(), "Project");
  // Inside: the definition's layers, fed by an Input shaped as the
  // instance's input, so every shape is live.
  EXPECT_FALSE(has_block_nodes(g()));
  EXPECT_NE(g().find_by_name("mlp1"), nullptr);
  for (const auto& [i, s] : ed.model()->shapes()) EXPECT_TRUE(s.ok()) << s.error;
  ASSERT_TRUE(ed.setAttr(id("mlp1"), "units", units * 2, &why)) << why.toStdString();
  // Saving now saves the project with the edited definition.
  EXPECT_EQ(unitsIn(ed.projectGraph(), "block2"), units * 2);

  project->click();  // back to the project
  EXPECT_EQ(ed.blockDepth(), 0);
  EXPECT_EQ(unitsIn(g(), "block1"), units * 2);
  EXPECT_EQ(unitsIn(g(), "block2"), units * 2);   // the shared definition
  EXPECT_EQ(ed.undoStack()->count(), steps + 3);  // open, edit, close

  ed.undoStack()->undo();  // back inside, with the edit
  EXPECT_EQ(ed.blockDepth(), 1);
  EXPECT_EQ(g().find_by_name("mlp1")->attrs.i("units"), units * 2);
  ed.undoStack()->undo();  // the edit
  EXPECT_EQ(g().find_by_name("mlp1")->attrs.i("units"), units);
  ed.undoStack()->undo();  // out again, unchanged
  EXPECT_EQ(ed.blockDepth(), 0);
  EXPECT_TRUE(g() == outside);
  for (int k = 0; k < 3; ++k) ed.undoStack()->redo();
  EXPECT_EQ(ed.blockDepth(), 0);
  EXPECT_EQ(unitsIn(g(), "block2"), units * 2);
}

TEST_F(EditorBlocks, OpeningAndClosingWithoutEditsLeavesNoStep) {
  buildTwoInstances();
  const int steps = ed.undoStack()->count();
  const Graph outside = g();
  ASSERT_TRUE(ed.openBlock(id("block2")));
  ASSERT_TRUE(ed.closeBlock());
  EXPECT_EQ(ed.undoStack()->count(), steps);
  EXPECT_TRUE(g() == outside);
}

TEST_F(EditorBlocks, ClosingABlockThatLostItsOutputIsRefused) {
  buildTwoInstances();
  ASSERT_TRUE(ed.openBlock(id("block1")));
  ASSERT_TRUE(ed.removeNodes({id("add2")}));
  QString why;
  EXPECT_FALSE(ed.closeBlock(&why));
  EXPECT_TRUE(why.contains("output")) << why.toStdString();
  EXPECT_EQ(ed.blockDepth(), 1);
  ed.undoStack()->undo();
  EXPECT_TRUE(ed.closeBlock(&why)) << why.toStdString();
}

}  // namespace
}  // namespace dc::widgets

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
