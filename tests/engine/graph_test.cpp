#include <deepcanvas/errors.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;

// Input 1×28×28 -> Conv(8) -> ReLU -> Flatten -> Dense(10)
Graph small_cnn(const char* activation = "ReLU") {
  Graph g;
  NodeId in = g.add_node("Input", "input", attrs({{"shape", std::vector<int64_t>{1, 28, 28}}}));
  NodeId c = g.add_node("Conv2D", "",
                        attrs({{"filters", int64_t(8)}, {"padding", std::vector<int64_t>{1, 1}}}));
  NodeId r = g.add_node(activation);
  NodeId f = g.add_node("Flatten");
  NodeId d = g.add_node("Dense", "", attrs({{"units", int64_t(10)}}));
  g.connect(in, c);
  g.connect(c, r);
  g.connect(r, f);
  g.connect(f, d);
  return g;
}

// sum(output · R): a loss whose gradient with respect to the output is R,
// for finite-difference checks through a whole plan.
double dot_loss(Plan& p, const Tensor& x, const Tensor& R, RunContext& ctx) {
  const Tensor& o = p.forward(x, ctx);
  double s = 0;
  for (int64_t i = 0; i < o.numel(); ++i) s += double(o.f32()[i]) * R.f32()[i];
  return s;
}

TEST(Graph, AutoNamesAreUniqueAndShapesFlow) {
  Graph g = small_cnn();
  EXPECT_NE(g.find_by_name("conv1"), nullptr);
  EXPECT_NE(g.find_by_name("dense1"), nullptr);
  auto shapes = g.infer_shapes();
  const Node* d = g.find_by_name("dense1");
  ASSERT_TRUE(shapes[d->id].ok()) << shapes[d->id].error;
  EXPECT_EQ(*shapes[d->id].shape, (Shape{10}));
  EXPECT_EQ(*shapes[g.find_by_name("flatten1")->id].shape, (Shape{8 * 28 * 28}));
  EXPECT_NO_THROW(g.validate());
}

TEST(Graph, RefusesCyclesDoubleInputsAndSelfLoops) {
  Graph g = small_cnn();
  NodeId conv = g.find_by_name("conv1")->id, relu = g.find_by_name("relu1")->id;
  EXPECT_NE(g.can_connect(relu, conv, 0).find("already connected"), std::string::npos);
  NodeId extra = g.add_node("ReLU", "extra");
  g.connect(relu, extra);
  // extra -> conv would close relu -> extra -> conv -> relu, but conv's only
  // port is taken; use an Add to test the cycle rule on a free port.
  NodeId add = g.add_node("Add", "add");
  g.connect(extra, add, 0);
  std::string why = g.can_connect(add, extra, 0);
  EXPECT_NE(why, "");
  NodeId tail = g.add_node("ReLU", "tail");
  g.connect(add, tail);
  why = g.can_connect(tail, add, 1);
  EXPECT_NE(why.find("cycle"), std::string::npos) << why;
  EXPECT_THROW(g.connect(tail, add, 1), GraphError);
  EXPECT_NE(g.can_connect(tail, tail, 0).find("itself"), std::string::npos);
  EXPECT_NE(g.can_connect(conv, add, 5).find("does not exist"), std::string::npos);
}

TEST(Graph, ShapeErrorsNameTheNode) {
  Graph g;
  NodeId in = g.add_node("Input", "input", attrs({{"shape", std::vector<int64_t>{1, 28, 28}}}));
  NodeId d = g.add_node("Dense", "head", attrs({{"units", int64_t(10)}}));
  g.connect(in, d);
  auto s = g.infer_shapes();
  ASSERT_FALSE(s[d].ok());
  EXPECT_NE(s[d].error.find("Dense 'head'"), std::string::npos) << s[d].error;
  EXPECT_NE(s[d].error.find("Flatten"), std::string::npos) << s[d].error;
  EXPECT_THROW(g.validate(), GraphError);
}

TEST(Graph, UnconnectedInputAndDownstreamErrors) {
  Graph g;
  NodeId in = g.add_node("Input", "input", attrs({{"shape", std::vector<int64_t>{4}}}));
  NodeId add = g.add_node("Add", "sum");
  NodeId out = g.add_node("Dense", "out");
  g.connect(in, add, 0);
  g.connect(add, out);
  auto s = g.infer_shapes();
  EXPECT_NE(s[add].error.find("input 1 is not connected"), std::string::npos) << s[add].error;
  EXPECT_NE(s[out].error.find("'sum'"), std::string::npos) << s[out].error;
  try {
    g.validate();
    FAIL() << "validate accepted an unconnected input";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("Add 'sum'"), std::string::npos);
  }
}

TEST(Graph, AttributeValidation) {
  Graph g = small_cnn();
  NodeId conv = g.find_by_name("conv1")->id;
  EXPECT_THROW(g.set_attr(conv, "filters", int64_t(0)), GraphError);
  EXPECT_THROW(g.set_attr(conv, "filters", std::string("many")), GraphError);
  EXPECT_THROW(g.set_attr(conv, "no_such_attr", int64_t(1)), GraphError);
  EXPECT_THROW(g.add_node("NoSuchLayer"), GraphError);
  EXPECT_THROW(g.add_node("ReLU", "conv1"), GraphError);  // duplicate name
  g.set_attr(conv, "filters", int64_t(4));
  EXPECT_EQ(*g.infer_shapes()[g.find_by_name("flatten1")->id].shape, (Shape{4 * 28 * 28}));
}

TEST(Graph, ShrinkingPortsDropsEdges) {
  Graph g;
  NodeId in = g.add_node("Input", "input", attrs({{"shape", std::vector<int64_t>{4}}}));
  NodeId add = g.add_node("Add", "sum", attrs({{"inputs", int64_t(3)}}));
  for (int p = 0; p < 3; ++p) g.connect(in, add, p);
  EXPECT_EQ(g.in_edges(add).size(), 3u);
  g.set_attr(add, "inputs", int64_t(2));
  EXPECT_EQ(g.in_edges(add).size(), 2u);
}

TEST(Graph, TopoOrderIsStableAndRemoveNodeDropsEdges) {
  Graph g = small_cnn();
  auto order = g.topo_order();
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(g.node(order.front()).type, "Input");
  EXPECT_EQ(g.node(order.back()).type, "Dense");
  g.remove_node(g.find_by_name("relu1")->id);
  EXPECT_EQ(g.edges().size(), 2u);
  EXPECT_FALSE(g.infer_shapes()[g.find_by_name("flatten1")->id].ok());
}

TEST(Plan, SummaryAndMemoryArePlannedBeforeTheFirstStep) {
  Graph g = small_cnn();
  Plan p(g, 16);
  auto rows = p.summary();
  ASSERT_EQ(rows.size(), 5u);
  int64_t params = 0;
  for (auto& r : rows) params += r.cost.params;
  // conv: 8*1*3*3 + 8 ; dense: 10*6272 + 10
  EXPECT_EQ(params, 8 * 9 + 8 + 10 * 6272 + 10);
  EXPECT_EQ(p.num_parameters(), params);
  // The ReLU is fused into the convolution and writes its buffer: one
  // 8×28×28 activation for the two, and the summary says so.
  EXPECT_EQ(p.activation_bytes(16, false), 16 * 4 * (8 * 784 + 6272 + 10));
  int64_t summed = 0;
  for (auto& r : rows) {
    if (r.type != "Input") summed += r.activation_bytes;
    if (r.type == "ReLU") {
      EXPECT_EQ(r.activation_bytes, 0);
      EXPECT_EQ(r.fused_into, rows[1].name);
    } else {
      EXPECT_EQ(r.fused_into, "");
    }
  }
  EXPECT_EQ(summed * 16, p.activation_bytes(16, false));
  EXPECT_GT(p.activation_bytes(16, true), p.activation_bytes(16, false));
}

// The fused plan's parameter gradients equal the plain one's bit for bit,
// and each has some nonzero entries (running statistics have none).
void expect_same_gradients(Plan& fused, Plan& plain) {
  ASSERT_EQ(fused.params().size(), plain.params().size());
  for (size_t k = 0; k < fused.params().size(); ++k) {
    const Tensor& ga = fused.params()[k].param->grad;
    const Tensor& gb = plain.params()[k].param->grad;
    ASSERT_EQ(fused.params()[k].name, plain.params()[k].name);
    if (!ga.defined()) continue;
    int64_t nonzero = 0;
    for (int64_t i = 0; i < ga.numel(); ++i) {
      EXPECT_EQ(ga.f32()[i], gb.f32()[i]) << fused.params()[k].name << " " << i;
      nonzero += ga.f32()[i] != 0.0f;
    }
    EXPECT_GT(nonzero, 0) << fused.params()[k].name;
  }
}

TEST(Plan, AFusedConvReluGivesTheSameOutputAndGradientsAsSeparateLayers) {
  // conv -> relu -> depthwise conv -> relu -> flatten -> dense, fused by the
  // plan, against the same network with a Dropout(0) after each
  // convolution, which keeps the ReLU a layer of its own; with ReLU and
  // with ReLU6 (inputs large enough that some outputs pass 6). Both run 2
  // threads' chunks.
  for (const std::string act : {"ReLU", "ReLU6"}) {
    SCOPED_TRACE(act);
    auto build = [&act](bool separate) {
      Graph g;
      NodeId prev = g.add_node("Input", "input", attrs({{"shape", std::vector<int64_t>{2, 9, 9}}}));
      auto add = [&](const std::string& type, const std::string& name, Attrs a = {}) {
        NodeId id = g.add_node(type, name, std::move(a));
        g.connect(prev, id);
        prev = id;
      };
      for (int k = 1; k <= 2; ++k) {
        // The second convolution is depthwise (multiplier 2): its own kernel.
        add("Conv2D", "conv" + std::to_string(k),
            attrs({{"filters", int64_t(4 * k)},
                   {"groups", int64_t(k == 2 ? 4 : 1)},
                   {"padding", std::vector<int64_t>{1, 1}}}));
        if (separate) add("Dropout", "drop" + std::to_string(k), attrs({{"rate", 0.0}}));
        add(act, "relu" + std::to_string(k));
      }
      add("Flatten", "flat");
      add("Dense", "fc", attrs({{"units", int64_t(5)}}));
      return g;
    };
    set_num_threads(2);
    const Graph fused_graph = build(false);
    Plan fused(fused_graph, 4), plain(build(true), 4);
    fused.init_params(7);
    plain.load_state(fused.state(), "fused");
    // Fusion saves one activation and one gradient per pair.
    EXPECT_LT(fused.activation_bytes(4, true), plain.activation_bytes(4, true));
    Rng rng(5);
    Tensor x(Shape{4, 2, 9, 9}), dout(Shape{4, 5});
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-40, 40);
    for (int64_t i = 0; i < dout.numel(); ++i) dout.f32()[i] = rng.uniform(-1, 1);
    RunContext ctx{true, &rng};
    const Tensor a = fused.forward(x, ctx).clone();
    const Tensor b = plain.forward(x, ctx).clone();
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.f32()[i], b.f32()[i]) << i;
    fused.zero_grad();
    plain.zero_grad();
    fused.backward(dout, ctx);
    plain.backward(dout, ctx);
    expect_same_gradients(fused, plain);
    if (act == "ReLU6") {
      // Some of the first layer's outputs were capped at 6 (else the cap went
      // untested): the fused layer's buffer is the ReLU6's output.
      const Tensor& h = *fused.activation(fused_graph.find_by_name("relu1")->id);
      int64_t capped = 0;
      for (int64_t i = 0; i < h.numel(); ++i) capped += h.f32()[i] == 6.0f;
      EXPECT_GT(capped, 0);
    }
    set_num_threads(0);
  }
}

TEST(Plan, AReluFusedIntoBatchNormOrAddGivesTheSameOutputAndGradientsAsSeparateLayers) {
  // conv1 -> bn1 -> act1 -> conv2 -> bn2 -> add(bn2, act1) -> act2 -> flat
  // -> fc1 -> bn3 (1-D) -> act3 -> fc2: the plan folds act1 into bn1, act2
  // into the Add and act3 into bn3. Against the same network with a
  // Dropout(0) before each of them, which keeps them layers of their own;
  // with ReLU and ReLU6 (the BatchNorms' scales raised so that some outputs
  // pass 6). act1's gradient comes from conv2 and the Add, so the Add writes
  // it fresh and conv2 adds to it; the BatchNorms write their inputs'
  // gradients fresh.
  for (const std::string act : {"ReLU", "ReLU6"}) {
    SCOPED_TRACE(act);
    auto build = [&act](bool separate) {
      Graph g;
      NodeId in = g.add_node("Input", "input", attrs({{"shape", std::vector<int64_t>{2, 6, 6}}}));
      auto add = [&](const std::string& type, const std::string& name, NodeId from, Attrs a = {}) {
        NodeId id = g.add_node(type, name, std::move(a));
        g.connect(from, id);
        return id;
      };
      // The ReLU after `from`, with a Dropout(0) between them when separate.
      auto relu = [&](const std::string& name, NodeId from) {
        if (separate) from = add("Dropout", "drop_" + name, from, attrs({{"rate", 0.0}}));
        return add(act, name, from);
      };
      const Attrs conv = attrs({{"filters", int64_t(4)}, {"padding", std::vector<int64_t>{1, 1}}});
      NodeId a1 = relu("act1", add("BatchNorm2D", "bn1", add("Conv2D", "conv1", in, conv)));
      NodeId b2 = add("BatchNorm2D", "bn2", add("Conv2D", "conv2", a1, conv));
      NodeId sum = g.add_node("Add", "sum", attrs({{"inputs", int64_t(2)}}));
      g.connect(b2, sum, 0);
      g.connect(a1, sum, 1);
      NodeId fc1 = add("Dense", "fc1", add("Flatten", "flat", relu("act2", sum)),
                       attrs({{"units", int64_t(8)}}));
      add("Dense", "fc2", relu("act3", add("BatchNorm1D", "bn3", fc1)),
          attrs({{"units", int64_t(5)}}));
      return g;
    };
    set_num_threads(2);
    const Graph fused_graph = build(false);
    Plan fused(fused_graph, 4), plain(build(true), 4);
    int folded = 0;
    for (const LayerSummary& r : fused.summary())
      if (r.name.rfind("act", 0) == 0) folded += !r.fused_into.empty();
    EXPECT_EQ(folded, 3);
    fused.init_params(7);
    for (const NamedParam& p : fused.params())
      if (p.name.rfind("bn", 0) == 0 && p.name.find(".weight") != std::string::npos)
        p.param->value.fill(4.0f);
    plain.load_state(fused.state(), "fused");
    EXPECT_LT(fused.activation_bytes(4, true), plain.activation_bytes(4, true));
    Rng rng(5);
    Tensor x(Shape{4, 2, 6, 6}), dout(Shape{4, 5});
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-3, 3);
    for (int64_t i = 0; i < dout.numel(); ++i) dout.f32()[i] = rng.uniform(-1, 1);
    RunContext ctx{true, &rng};
    // Two steps on the same batch: the second meets the first's gradients
    // still in the buffers, which a layer that writes a gradient fresh must
    // overwrite, so its gradients are the first's.
    std::vector<Tensor> first;
    for (int step = 0; step < 2; ++step) {
      const Tensor a = fused.forward(x, ctx).clone();
      const Tensor b = plain.forward(x, ctx).clone();
      for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.f32()[i], b.f32()[i]) << i;
      fused.zero_grad();
      plain.zero_grad();
      fused.backward(dout, ctx);
      plain.backward(dout, ctx);
      size_t k = 0;
      for (const NamedParam& p : fused.params()) {
        if (!p.param->grad.defined()) continue;
        if (step == 0) {
          first.push_back(p.param->grad.clone());
          continue;
        }
        const Tensor& f = first[k++];
        for (int64_t i = 0; i < f.numel(); ++i)
          EXPECT_EQ(p.param->grad.f32()[i], f.f32()[i]) << p.name << " " << i;
      }
    }
    expect_same_gradients(fused, plain);
    // Some outputs were clamped at 0 in every fused layer, and at 6 in
    // ReLU6's (else the masks went untested).
    for (const char* r : {"act1", "act2", "act3"}) {
      const Tensor& h = *fused.activation(fused_graph.find_by_name(r)->id);
      int64_t zero = 0, capped = 0;
      for (int64_t i = 0; i < h.numel(); ++i) {
        zero += h.f32()[i] == 0.0f;
        capped += h.f32()[i] == 6.0f;
      }
      EXPECT_GT(zero, 0) << r;
      if (act == "ReLU6") {
        EXPECT_GT(capped, 0) << r;
      }
    }
    set_num_threads(0);
  }
}

// An Inference plan (run, predict, eval) shares output buffers once no
// layer reads them any more: on every template and on a network with skip
// connections (an Add and a Concat that read a fused ReLU's output long
// after it was made), it computes exactly what a Training plan computes,
// at the full and a smaller batch, with fewer bytes of outputs; it refuses
// backward and keeps only the network's output for activation().
TEST(Plan, AnInferencePlanSharesOutputBuffersAndComputesTheSameOutputs) {
  auto skips = [] {
    Graph g;
    NodeId in = g.add_node("Input", "input", attrs({{"shape", std::vector<int64_t>{3, 8, 8}}}));
    auto conv = [&](const char* name, NodeId from, int64_t filters) {
      NodeId c = g.add_node("Conv2D", name,
                            attrs({{"filters", filters}, {"padding", std::vector<int64_t>{1, 1}}}));
      g.connect(from, c);
      return c;
    };
    NodeId a = conv("a", in, 4);
    NodeId ra = g.add_node("ReLU", "ra");  // fused into a
    g.connect(a, ra);
    NodeId b = conv("b", ra, 4);
    NodeId c = conv("c", b, 4);
    NodeId add = g.add_node("Add", "add");
    g.connect(ra, add, 0);
    g.connect(c, add, 1);
    NodeId cat = g.add_node("Concat", "cat");
    g.connect(add, cat, 0);
    g.connect(ra, cat, 1);
    NodeId pool = g.add_node("GlobalAvgPool2D", "gap");
    g.connect(cat, pool);
    NodeId d = g.add_node("Dense", "fc", attrs({{"units", int64_t(5)}}));
    g.connect(pool, d);
    NodeId out = g.add_node("ReLU", "out");  // the output, a ReLU
    g.connect(d, out);
    return g;
  };
  std::vector<std::pair<std::string, Graph>> nets = {{"skips", skips()}};
  for (const auto& f :
       std::filesystem::directory_iterator(std::string(DC_SOURCE_DIR) + "/resources/templates"))
    if (f.path().extension() == ".dcproj")
      nets.emplace_back(f.path().stem().string(), load_project(f.path().string()).graph);
  ASSERT_EQ(nets.size(), 12u);  // the eleven templates
  for (auto& [name, g] : nets) {
    SCOPED_TRACE(name);
    Plan train(g, 3), infer(g, 3, Plan::Use::Inference);
    train.init_params(11);
    infer.load_state(train.state(), "training plan");
    for (int64_t n : {3, 2}) {
      Tensor x(train.input_shape().with_batch(n));
      Rng rng{uint64_t(n)};
      // Token ids for sequence models, pixel-like values otherwise.
      const bool ids = x.shape().rank() == 2;
      for (int64_t i = 0; i < x.numel(); ++i)
        x.f32()[i] = ids ? float(rng.below(3)) : rng.uniform(-1, 1);
      RunContext ctx{false, nullptr};
      const Tensor want = train.forward(x, ctx).clone();
      const Tensor& got = infer.forward(x, ctx);
      ASSERT_EQ(got.shape(), want.shape());
      for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.f32()[i], want.f32()[i]) << i;
    }
    EXPECT_LT(infer.output_buffer_bytes(), train.output_buffer_bytes());
    const NodeId out = g.outputs().front();
    EXPECT_NE(infer.activation(out), nullptr);
    EXPECT_EQ(infer.activation(g.inputs().front()), nullptr);
    RunContext ctx{true, nullptr};
    EXPECT_THROW(infer.backward(Tensor(infer.output_shape().with_batch(2)), ctx), Error);
  }
}

TEST(Plan, BackwardMatchesFiniteDifferencesThroughTheWholeNetwork) {
  // Tanh rather than ReLU: with thousands of activations, a finite step moves
  // some ReLU inputs across the kink and the central difference is off by
  // O(step) (measured: 0.097 at 3e-2 down to 8e-5 at 3e-4). ReLU's own
  // derivative is checked away from the kink in activation_test.
  Graph g = small_cnn("Tanh");
  Plan p(g, 3);
  p.init_params(1);
  Rng rng(3);
  Tensor x(Shape{3, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-1, 1);
  Tensor R(Shape{3, 10});
  for (int64_t i = 0; i < R.numel(); ++i) R.f32()[i] = rng.uniform(-1, 1);
  RunContext ctx{true, &rng};
  auto loss = [&]() { return dot_loss(p, x, R, ctx); };
  loss();
  p.zero_grad();
  p.backward(R, ctx);
  // Check a few weights of each parameter tensor.
  for (auto& np : p.params()) {
    Param& prm = *np.param;
    for (int64_t i = 0; i < prm.value.numel(); i += std::max<int64_t>(1, prm.value.numel() / 7)) {
      float saved = prm.value.f32()[i];
      prm.value.f32()[i] = saved + 1e-3f;
      double lp = loss();
      prm.value.f32()[i] = saved - 1e-3f;
      double lm = loss();
      prm.value.f32()[i] = saved;
      double num = (lp - lm) / 2e-3;
      EXPECT_NEAR(prm.grad.f32()[i], num, 2e-3 + 2e-2 * std::fabs(num))
          << np.name << "[" << i << "]";
    }
  }
}

TEST(Plan, AGradientWrittenOutrightThenAccumulatedMatchesFiniteDifferences) {
  // tanh feeds a MaxPool2D (which writes its input gradient outright when
  // it is first) and a GlobalAvgPool2D (which accumulates into a zeroed
  // one): whichever runs first, the sum must be the gradient.
  Graph g;
  const NodeId in = g.add_node("Input", "in", attrs({{"shape", std::vector<int64_t>{2, 8, 8}}}));
  const NodeId c = g.add_node(
      "Conv2D", "conv", attrs({{"filters", int64_t(3)}, {"padding", std::vector<int64_t>{1, 1}}}));
  const NodeId t = g.add_node("Tanh", "tanh");
  const NodeId mp = g.add_node("MaxPool2D", "pool");
  const NodeId fl = g.add_node("Flatten", "flat");
  const NodeId gap = g.add_node("GlobalAvgPool2D", "gap");
  const NodeId cat = g.add_node("Concat", "cat");
  const NodeId d = g.add_node("Dense", "fc", attrs({{"units", int64_t(4)}}));
  g.connect(in, c);
  g.connect(c, t);
  g.connect(t, mp);
  g.connect(mp, fl);
  g.connect(t, gap);
  g.connect(fl, cat, 0);
  g.connect(gap, cat, 1);
  g.connect(cat, d);
  Plan p(g, 2);
  p.init_params(4);
  Rng rng(8);
  Tensor x(Shape{2, 2, 8, 8}), R(Shape{2, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-1, 1);
  for (int64_t i = 0; i < R.numel(); ++i) R.f32()[i] = rng.uniform(-1, 1);
  RunContext ctx{true, &rng};
  auto loss = [&]() { return dot_loss(p, x, R, ctx); };
  // Twice: the second backward must not add to stale gradient buffers.
  for (int pass = 0; pass < 2; ++pass) {
    loss();
    p.zero_grad();
    p.backward(R, ctx);
  }
  Param& w = *p.params()[0].param;  // conv.weight: everything flows back to it
  ASSERT_EQ(p.params()[0].name, "conv.weight");
  for (int64_t i = 0; i < w.value.numel(); i += 5) {
    const float saved = w.value.f32()[i];
    w.value.f32()[i] = saved + 1e-3f;
    const double lp = loss();
    w.value.f32()[i] = saved - 1e-3f;
    const double lm = loss();
    w.value.f32()[i] = saved;
    const double num = (lp - lm) / 2e-3;
    EXPECT_NEAR(w.grad.f32()[i], num, 2e-3 + 2e-2 * std::fabs(num)) << i;
  }
}

TEST(Plan, LoadStateRejectsAnotherGraphWithoutChangingWeights) {
  Graph g = small_cnn();
  Plan p(g, 2);
  p.init_params(1);
  auto before = p.state()[0].second.clone();
  std::vector<std::pair<std::string, Tensor>> wrong = {{"conv1.weight", Tensor(Shape{3, 3})}};
  EXPECT_THROW(p.load_state(wrong, "x.safetensors"), IoError);
  auto after = p.state()[0].second;
  for (int64_t i = 0; i < before.numel(); ++i) EXPECT_EQ(before.f32()[i], after.f32()[i]);
}

// Attribute values from text (the CLI's edit --set, a sweep's values).
TEST(Attrs, TextParsesToEachTypeOrSaysWhatIsWrong) {
  auto spec = [](AttrType t) {
    AttrSpec s;
    s.name = "a";
    s.type = t;
    return s;
  };
  using Ints = std::vector<int64_t>;
  EXPECT_EQ(parse_attr_text(spec(AttrType::Int), "20"), AttrValue(int64_t(20)));
  EXPECT_EQ(parse_attr_text(spec(AttrType::Float), "1e-3"), AttrValue(1e-3));
  EXPECT_EQ(parse_attr_text(spec(AttrType::Bool), "false"), AttrValue(false));
  EXPECT_EQ(parse_attr_text(spec(AttrType::Enum), "same"), AttrValue(std::string("same")));
  for (const char* t : {"3x64x64", "3×64×64", "3,64,64", "3X64X64"})
    EXPECT_EQ(parse_attr_text(spec(AttrType::IntList), t), AttrValue(Ints{3, 64, 64})) << t;
  EXPECT_EQ(parse_attr_text(spec(AttrType::IntPair), "5"), AttrValue(Ints{5, 5}));
  EXPECT_EQ(parse_attr_text(spec(AttrType::IntPair), "1x2"), AttrValue(Ints{1, 2}));
  const std::pair<AttrType, const char*> bad[] = {
      {AttrType::Int, "1.5"},     {AttrType::Int, ""},
      {AttrType::Float, "0.5x"},  {AttrType::Bool, "yes"},
      {AttrType::IntList, "3x"},  {AttrType::IntList, "3xx4"},
      {AttrType::IntPair, "a,b"}, {AttrType::Int, "99999999999999999999"}};
  for (const auto& [type, text] : bad) {
    try {
      parse_attr_text(spec(type), text);
      ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is not"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dc
