// Reusable blocks (issue 33): a ViT whose encoder layers are instances of
// one Block definition trains and runs as the hand-written flat one, the
// project file holds each definition once and round-trips, and a malformed
// block is refused with a message naming it.
#include <deepcanvas/blocks.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <set>

namespace dc {
namespace {

// The ViT template as it was written before blocks: every layer by hand.
std::string vit_path() {
  return std::string(DC_SOURCE_DIR) + "/tests/engine/blocks_vit_flat.dcproj";
}

std::string vit_template() {
  return std::string(DC_SOURCE_DIR) + "/resources/templates/vit_tiny.dcproj";
}

std::vector<NodeId> with_prefix(const Graph& g, const std::string& prefix) {
  std::vector<NodeId> ids;
  for (const auto& [id, n] : g.nodes())
    if (n.name.rfind(prefix, 0) == 0) ids.push_back(id);
  return ids;
}

// The ViT template with its two encoder layers as two instances of one
// definition "encoder": block2's layers removed, block1's grouped, repeated.
Graph vit_with_blocks(const Graph& flat) {
  Graph g = flat;
  const NodeId last1 = g.find_by_name("block1_add2")->id;
  const NodeId final_norm = g.find_by_name("final_norm")->id;
  for (NodeId id : with_prefix(g, "block2_")) g.remove_node(id);
  g.connect(last1, final_norm, 0);
  const NodeId b = group_as_block(g, with_prefix(g, "block1_"), "encoder");
  EXPECT_EQ(g.node(b).name, "block1");
  repeat_block(g, b, 2);
  return g;
}

std::set<std::string> edge_names(const Graph& g) {
  std::set<std::string> s;
  for (const Edge& e : g.edges())
    s.insert(g.node(e.src).name + ">" + g.node(e.dst).name + ":" + std::to_string(e.dst_port));
  return s;
}

std::set<std::string> node_names(const Graph& g) {
  std::set<std::string> s;
  for (const auto& [id, n] : g.nodes()) s.insert(n.name);
  return s;
}

TEST(Blocks, VitFromOneDefinitionMatchesTheFlatNetwork) {
  const Project p = load_project(vit_path());
  const Graph blocked = vit_with_blocks(p.graph);
  EXPECT_EQ(block_instance_counts(blocked), (std::map<std::string, int>{{"encoder", 2}}));
  EXPECT_LT(blocked.nodes().size(), p.graph.nodes().size());
  // Flattening gives back the template's layers, names and wiring.
  const Graph flat = flatten_blocks(blocked);
  EXPECT_EQ(node_names(flat), node_names(p.graph));
  EXPECT_EQ(edge_names(flat), edge_names(p.graph));
  // The Block node is shaped by its definition.
  const auto shapes = blocked.infer_shapes();
  const auto flat_shapes = p.graph.infer_shapes();
  ASSERT_TRUE(shapes.at(blocked.find_by_name("block2")->id).ok())
      << shapes.at(blocked.find_by_name("block2")->id).error;
  EXPECT_EQ(*shapes.at(blocked.find_by_name("block2")->id).shape,
            *flat_shapes.at(p.graph.find_by_name("block2_add2")->id).shape);

  Plan a(p.graph, 4, Plan::Use::Inference), b(blocked, 4, Plan::Use::Inference);
  EXPECT_EQ(a.num_parameters(), b.num_parameters());
  a.init_params(7);
  b.load_state(a.state(), "flat");  // same tensor names: checkpoints carry over
  Tensor x(a.input_shape().with_batch(4));
  Rng r(3);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = r.uniform(-1.f, 1.f);
  RunContext ctx{false, nullptr};
  const Tensor ya = a.forward(x, ctx);
  const Tensor& yb = b.forward(x, ctx);
  ASSERT_EQ(ya.shape(), yb.shape());
  for (int64_t i = 0; i < ya.numel(); ++i) EXPECT_FLOAT_EQ(ya.f32()[i], yb.f32()[i]) << i;
}

// The template builds its encoder from one definition; flattened, it is
// the hand-written network: same layers, names, initial weights from the
// same seed (so the BENCHMARKS figures hold) and outputs.
TEST(Blocks, VitTemplateIsTheFlatNetworkBuiltFromOneBlock) {
  const Project t = load_project(vit_template());
  const Project f = load_project(vit_path());
  EXPECT_EQ(block_instance_counts(t.graph), (std::map<std::string, int>{{"encoder", 2}}));
  EXPECT_EQ(node_names(flatten_blocks(t.graph)), node_names(f.graph));
  EXPECT_EQ(edge_names(flatten_blocks(t.graph)), edge_names(f.graph));
  Plan a(f.graph, 2), b(t.graph, 2);
  ASSERT_EQ(a.steps().size(), b.steps().size());
  for (size_t i = 0; i < a.steps().size(); ++i) EXPECT_EQ(a.steps()[i].name, b.steps()[i].name);
  a.init_params(42);
  b.init_params(42);
  const auto sa = a.state(), sb = b.state();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, sb[i].first);
    ASSERT_EQ(sa[i].second.numel(), sb[i].second.numel()) << sa[i].first;
    for (int64_t k = 0; k < sa[i].second.numel(); ++k)
      ASSERT_EQ(sa[i].second.f32()[k], sb[i].second.f32()[k]) << sa[i].first << " " << k;
  }
  Tensor x(a.input_shape().with_batch(2));
  Rng r(5);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = r.uniform(0.f, 1.f);
  RunContext ctx{false, nullptr};
  const Tensor ya = a.forward(x, ctx);
  const Tensor& yb = b.forward(x, ctx);
  for (int64_t i = 0; i < ya.numel(); ++i) EXPECT_EQ(ya.f32()[i], yb.f32()[i]) << i;
}

TEST(Blocks, BlockNodeCostIsItsLayers) {
  const Project p = load_project(vit_path());
  const Graph blocked = vit_with_blocks(p.graph);
  const auto& reg = LayerRegistry::instance();
  const auto shapes = blocked.infer_shapes();
  const NodeId b = blocked.find_by_name("block1")->id;
  const Node& n = blocked.node(b);
  std::vector<Shape> in{*shapes.at(blocked.in_edges(b)[0].src).shape};
  const Cost c = reg.get(kBlockType).cost(in, *shapes.at(b).shape, n.attrs);
  Plan flat(p.graph, 1);
  int64_t params = 0;
  for (auto& np : flat.params())
    if (np.name.rfind("block1_", 0) == 0 && np.param->trainable) params += np.param->value.numel();
  EXPECT_EQ(c.params, params);
  EXPECT_GT(c.macs, 0);
}

TEST(Blocks, ProjectRoundTripsBitForBitAndStoresEachDefinitionOnce) {
  Project p = load_project(vit_path());
  // A project without blocks keeps its form: no "blocks".
  EXPECT_EQ(project_to_json(p).find("\"blocks\""), std::string::npos);
  p.graph = vit_with_blocks(p.graph);
  const std::string text = project_to_json(p);
  EXPECT_NE(text.find("\"blocks\""), std::string::npos);
  EXPECT_EQ(text.find("\"definition\""), std::string::npos) << "definitions are stored once";
  const Project q = parse_project(text, "blocks.dcproj");
  EXPECT_EQ(project_to_json(q), text);
  EXPECT_TRUE(q.graph == p.graph);
  EXPECT_EQ(Plan(q.graph, 1).num_parameters(), Plan(p.graph, 1).num_parameters());
}

std::string error_of(const std::string& text) {
  try {
    parse_project(text, "bad.dcproj");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

std::string replace_all(std::string s, const std::string& a, const std::string& b) {
  size_t at = 0, n = 0;
  while ((at = s.find(a, at)) != std::string::npos) {
    s.replace(at, a.size(), b);
    at += b.size();
    ++n;
  }
  EXPECT_GT(n, 0u) << a;
  return s;
}

TEST(Blocks, MalformedBlocksAreRefusedNamingThem) {
  Project p = load_project(vit_path());
  p.graph = vit_with_blocks(p.graph);
  const std::string text = project_to_json(p);
  EXPECT_NE(error_of(replace_all(text, "\"block\": \"encoder\"", "\"block\": \"nope\""))
                .find("unknown block definition 'nope'"),
            std::string::npos);
  EXPECT_NE(error_of(replace_all(text, "\"inputs\": 1", "\"inputs\": 2")).find("input port(s)"),
            std::string::npos);
  EXPECT_NE(error_of(replace_all(text, "\"output\": \"add2\"", "\"output\": \"gone\""))
                .find("its output 'gone' is not a layer of it"),
            std::string::npos);
  // Two definitions holding each other.
  const std::string cycle = R"({"format": "deepcanvas-project", "version": 1, "name": "c",
    "graph": {"nodes": [{"id": 1, "type": "Input", "name": "in", "attrs": {"shape": [4]}},
                        {"id": 2, "type": "Block", "name": "a1", "attrs": {"block": "A"}}],
              "edges": [{"from": "in", "to": "a1", "port": 0}]},
    "blocks": [
      {"name": "A", "graph": {"nodes": [{"id": 1, "type": "Block", "name": "b", "attrs": {"block": "B"}}], "edges": []},
       "inputs": [[{"node": "b", "port": 0}]], "output": "b"},
      {"name": "B", "graph": {"nodes": [{"id": 1, "type": "Block", "name": "a", "attrs": {"block": "A"}}], "edges": []},
       "inputs": [[{"node": "a", "port": 0}]], "output": "a"}]})";
  EXPECT_NE(error_of(cycle).find("block 'A' contains itself (A > B > A)"), std::string::npos)
      << error_of(cycle);
}

TEST(Blocks, UngroupGivesBackTheLayers) {
  const Project p = load_project(vit_path());
  Graph g = vit_with_blocks(p.graph);
  ungroup_block(g, g.find_by_name("block1")->id);
  ungroup_block(g, g.find_by_name("block2")->id);
  EXPECT_FALSE(has_block_nodes(g));
  EXPECT_EQ(node_names(g), node_names(p.graph));
  EXPECT_EQ(edge_names(g), edge_names(p.graph));
}

TEST(Blocks, GroupRefusesASelectionWithTwoOutputs) {
  const Project p = load_project(vit_path());
  Graph g = p.graph;
  const Graph before = g;
  // norm1 feeds attention (inside) and... add1 is outside: two ends leave.
  std::vector<NodeId> sel{g.find_by_name("block1_norm1")->id,
                          g.find_by_name("block1_attention")->id, g.find_by_name("block1_add1")->id,
                          g.find_by_name("block1_norm2")->id};
  try {
    group_as_block(g, sel, "half");
    ADD_FAILURE() << "grouped";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("one output"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(g == before);
}

TEST(Blocks, NestedBlocksAndRenameFlattenTheSame) {
  const Project p = load_project(vit_path());
  Graph g = vit_with_blocks(p.graph);
  const NodeId outer =
      group_as_block(g, {g.find_by_name("block1")->id, g.find_by_name("block2")->id}, "stack");
  EXPECT_EQ(block_definitions(g).size(), 2u);
  rename_block_definition(g, "encoder", "layer");
  const auto defs = block_definitions(g);
  EXPECT_TRUE(defs.count("layer") && !defs.count("encoder"));
  const Graph flat = flatten_blocks(g);
  const std::string o = g.node(outer).name;
  EXPECT_NE(flat.find_by_name(o + "_block2_attention"), nullptr);
  EXPECT_EQ(Plan(g, 1).num_parameters(), Plan(p.graph, 1).num_parameters());
  // And through the file.
  Project q = p;
  q.graph = g;
  const std::string text = project_to_json(q);
  EXPECT_EQ(project_to_json(parse_project(text, "n.dcproj")), text);
}

}  // namespace
}  // namespace dc
