// Huge and broken graphs (issue 17 item 3): loading, ordering, shape
// inference and validation are linear, so a 250k-layer project loads in
// seconds; messages stay short. No timing is asserted: ctest's TIMEOUT bounds
// these tests, and the quadratic code they replace ran for over 20 minutes.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <string>

namespace dc {
namespace {

constexpr int kLayers = 250000;

Attrs input_shape(std::vector<int64_t> shape) {
  Attrs a;
  a.set("shape", std::move(shape));
  return a;
}

std::string node_json(int id, const std::string& type, const std::string& name,
                      const std::string& attrs = "{}") {
  return "{\"id\":" + std::to_string(id) + ",\"type\":\"" + type + "\",\"name\":\"" + name +
         "\",\"attrs\":" + attrs + "}";
}

// Input -> relu1 -> ... -> reluN, edges listed last-first when `reversed`
// (the order in which a per-edge cycle search visits the whole chain).
std::string chain_project(int n, bool connected, bool reversed) {
  std::string nodes = node_json(1, "Input", "input", "{\"shape\":[4]}");
  for (int i = 1; i <= n; ++i) nodes += "," + node_json(i + 1, "ReLU", "relu" + std::to_string(i));
  std::string edges;
  if (connected) {
    for (int k = 0; k < n; ++k) {
      int i = reversed ? n - k : k + 1;
      std::string from = i == 1 ? "input" : "relu" + std::to_string(i - 1);
      edges += std::string(k ? "," : "") + "{\"from\":\"" + from + "\",\"to\":\"relu" +
               std::to_string(i) + "\"}";
    }
  }
  return "{\"format\":\"deepcanvas-project\",\"version\":1,\"name\":\"chain\",\"graph\":{"
         "\"nodes\":[" +
         nodes + "],\"edges\":[" + edges + "]}}";
}

TEST(GraphScale, A250kLayerChainLoadsOrdersAndValidates) {
  Project p = parse_project(chain_project(kLayers, true, false), "chain.dcproj");
  EXPECT_EQ(p.graph.nodes().size(), size_t(kLayers + 1));
  EXPECT_EQ(p.graph.topo_order().size(), size_t(kLayers + 1));
  EXPECT_NO_THROW(p.graph.validate());
  auto shapes = p.graph.infer_shapes();
  EXPECT_EQ(shapes.at(kLayers + 1).shape->str(), Shape({4}).str());
  EXPECT_EQ(p.graph.find_by_name("relu" + std::to_string(kLayers))->id, kLayers + 1);
}

TEST(GraphScale, AChainWhoseEdgesAreListedBackwardsLoads) {
  Project p = parse_project(chain_project(kLayers, true, true), "chain.dcproj");
  EXPECT_EQ(p.graph.edges().size(), size_t(kLayers));
  EXPECT_NO_THROW(p.graph.validate());
}

TEST(GraphScale, UnconnectedLayersAreRefusedWithAShortMessage) {
  Project p = parse_project(chain_project(kLayers, false, false), "loose.dcproj");
  try {
    p.graph.validate();
    FAIL() << "250k unconnected layers validated";
  } catch (const GraphError& e) {
    std::string m = e.what();
    // Every layer is an output and has an unconnected input; the message names
    // a few and counts the rest instead of listing 250k names twice.
    EXPECT_LT(m.size(), 4000u) << m.substr(0, 400);
    EXPECT_NE(m.find("several outputs (relu1, relu2"), std::string::npos) << m;
    EXPECT_NE(m.find("and " + std::to_string(kLayers - 10) + " more"), std::string::npos) << m;
  }
}

TEST(GraphScale, ACycleInAHugeGraphIsNamed) {
  std::string t = chain_project(1000, true, false);
  // relu1000 -> relu1 closes the chain once input -> relu1 is dropped.
  std::string first = "{\"from\":\"input\",\"to\":\"relu1\"}";
  t.replace(t.find(first), first.size(), "{\"from\":\"relu1000\",\"to\":\"relu1\"}");
  try {
    parse_project(t, "cycle.dcproj");
    FAIL() << "a cycle loaded";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cycle.dcproj"), std::string::npos) << m;
    EXPECT_NE(m.find("ReLU 'relu1' is part of a cycle"), std::string::npos) << m;
  }
}

TEST(GraphScale, NamelessLayersGetNamesWithoutRescanning) {
  Graph g;
  g.add_node("Input", "input", input_shape({4}));
  for (int i = 0; i < kLayers; ++i) g.add_node("ReLU");
  EXPECT_NE(g.find_by_name("relu" + std::to_string(kLayers)), nullptr);
  // A freed name is found again.
  g.remove_node(g.find_by_name("relu7")->id);
  EXPECT_EQ(g.node(g.add_node("ReLU")).name, "relu7");
}

TEST(GraphScale, ShapeErrorsListTheCauseFirstAndCountTheCascade) {
  Graph g;
  NodeId in = g.add_node("Input", "input", input_shape({1, 8, 8}));
  NodeId prev = in;
  // Dense needs a flat input: dense1 fails, the 50 ReLUs after it inherit.
  NodeId dense = g.add_node("Dense", "dense1");
  g.connect(prev, dense);
  prev = dense;
  for (int i = 0; i < 50; ++i) {
    NodeId r = g.add_node("ReLU");
    g.connect(prev, r);
    prev = r;
  }
  try {
    g.validate();
    FAIL() << "a Dense on an image validated";
  } catch (const GraphError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("Dense 'dense1'", 0), 0u) << m;
    EXPECT_NE(m.find("50 layers downstream have no shape because of this"), std::string::npos) << m;
    EXPECT_EQ(m.find("relu7"), std::string::npos) << m;
  }
}

TEST(GraphScale, AProjectFileIsReadOnlyUpToItsLimit) {
  try {
    load_project("/dev/urandom");
    FAIL() << "/dev/urandom loaded";
  } catch (const IoError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("/dev/urandom"), std::string::npos) << m;
    EXPECT_NE(m.find("larger than 64 MiB"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace dc
