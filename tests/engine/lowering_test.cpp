// lower_graph: the one walk of a graph that the Plan, the activation probe
// and the CUDA plan all build from.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/probe.h>
#include <gtest/gtest.h>

namespace dc {
namespace {

Attrs attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attrs a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}

// Two branches of different widths into a Concat, wired port 1 first, and
// the output node created before the branches so ids do not follow the flow.
Graph branchy() {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("Input", "in", attrs({{"shape", std::vector<int64_t>{4}}}));
  NodeId out = g.add_node("Dense", "out", attrs({{"units", int64_t(3)}}));
  NodeId cat = g.add_node("Concat", "cat", attrs({{"axis", int64_t(0)}}));
  NodeId wide = g.add_node("Dense", "wide", attrs({{"units", int64_t(6)}}));
  NodeId narrow = g.add_node("Dense", "narrow", attrs({{"units", int64_t(2)}}));
  g.connect(in, wide);
  g.connect(in, narrow);
  g.connect(wide, cat, 1);
  g.connect(narrow, cat, 0);
  g.connect(cat, out);
  return g;
}

const PlanStep& step(const std::vector<PlanStep>& s, const std::string& name) {
  for (const PlanStep& p : s)
    if (p.name == name) return p;
  throw Error("no step " + name);
}

TEST(Lowering, StepsTakeInputsInPortOrderAndEndWithTheOutput) {
  Graph g = branchy();
  std::vector<PlanStep> s = lower_graph(g);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_TRUE(s.front().is_input);
  EXPECT_EQ(s.back().name, "out");
  const PlanStep& cat = step(s, "cat");
  ASSERT_EQ(cat.inputs.size(), 2u);
  EXPECT_EQ(s[size_t(cat.inputs[0])].name, "narrow");
  EXPECT_EQ(s[size_t(cat.inputs[1])].name, "wide");
  EXPECT_EQ(cat.in_shapes[0], Shape{2});
  EXPECT_EQ(cat.in_shapes[1], Shape{6});
  EXPECT_EQ(cat.out_shape, Shape{8});
  EXPECT_EQ(cat.label, "Concat 'cat'");
  // Every producer comes before its consumer.
  for (size_t k = 0; k < s.size(); ++k)
    for (int i : s[k].inputs) EXPECT_LT(size_t(i), k) << s[k].name;
}

TEST(Lowering, StepsCarryEveryAttributeWithItsDefault) {
  Graph g = branchy();
  const std::vector<PlanStep> steps = lower_graph(g);  // outlives the reference into it
  const PlanStep& wide = step(steps, "wide");
  ASSERT_NE(wide.desc, nullptr);
  for (const AttrSpec& spec : wide.desc->attrs) EXPECT_TRUE(wide.attrs.has(spec.name)) << spec.name;
  EXPECT_EQ(wide.attrs.i("units"), 6);
}

TEST(Lowering, PlanAndProbeRunTheSameSteps) {
  Graph g = branchy();
  Plan plan(g, 2);
  plan.init_params(7);
  ModelProbe probe(g, plan.state());
  const std::vector<PlanStep>& steps = plan.steps();
  auto acts = probe.activations();
  ASSERT_EQ(acts.size(), steps.size());
  for (size_t k = 0; k < steps.size(); ++k) EXPECT_EQ(acts[k].id, steps[k].id);
  Tensor x(Shape{1, 4});
  for (int i = 0; i < 4; ++i) x.f32()[i] = float(i) - 1.5f;
  RunContext ctx{false, nullptr};
  const Tensor& y = plan.forward(x, ctx);
  const Tensor& p = probe.forward(x);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(y.f32()[i], p.f32()[i]);
}

TEST(Lowering, RefusesAnInvalidGraphNamingTheNode) {
  register_builtin_layers();
  Graph g;
  g.add_node("Input", "in", attrs({{"shape", std::vector<int64_t>{4}}}));
  g.add_node("Dense", "lonely", attrs({{"units", int64_t(3)}}));
  try {
    lower_graph(g);
    FAIL() << "an unconnected Dense was lowered";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("lonely"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dc

namespace dc {
namespace {

// Which ReLUs both backends fold into the layer before them (relu_fusions):
// into a BatchNorm, an Add or a Conv2D; never where that layer feeds
// something else too, nor into a Dense.
TEST(Lowering, ReluFoldsIntoBatchNormAddAndConv2D) {
  register_builtin_layers();
  Graph g;
  auto add = [&](const std::string& type, const std::string& name, Attrs a = {}) {
    return g.add_node(type, name, std::move(a));
  };
  NodeId in = add("Input", "in", attrs({{"shape", std::vector<int64_t>{3, 8, 8}}}));
  NodeId conv = add("Conv2D", "conv",
                    attrs({{"filters", int64_t(4)},
                           {"kernel", std::vector<int64_t>{3, 3}},
                           {"padding", std::vector<int64_t>{1, 1}}}));
  NodeId bn = add("BatchNorm2D", "bn");
  NodeId r_bn = add("ReLU", "r_bn");
  NodeId bn2 = add("BatchNorm2D", "bn2");  // feeds a ReLU and the Add: not folded
  NodeId r_bn2 = add("ReLU6", "r_bn2");
  NodeId sum = add("Add", "sum", attrs({{"inputs", int64_t(2)}}));
  NodeId r_sum = add("ReLU6", "r_sum");
  NodeId conv2 = add("Conv2D", "conv2", attrs({{"filters", int64_t(2)}}));
  NodeId r_conv2 = add("ReLU6", "r_conv2");  // both backends fold this one
  NodeId flat = add("Flatten", "flat");
  NodeId fc = add("Dense", "fc", attrs({{"units", int64_t(3)}}));
  NodeId r_fc = add("ReLU", "r_fc");  // after a Dense: neither backend folds it
  g.connect(in, conv);
  g.connect(conv, bn);
  g.connect(bn, r_bn);
  g.connect(r_bn, bn2);
  g.connect(bn2, r_bn2);
  g.connect(r_bn2, sum, 0);
  g.connect(bn2, sum, 1);
  g.connect(sum, r_sum);
  g.connect(r_sum, conv2);
  g.connect(conv2, r_conv2);
  g.connect(r_conv2, flat);
  g.connect(flat, fc);
  g.connect(fc, r_fc);
  const std::vector<PlanStep> s = lower_graph(g);
  auto index = [&](const std::string& name) { return int(&step(s, name) - s.data()); };
  const std::vector<int> fused = relu_fusions(s);
  ASSERT_EQ(fused.size(), s.size());
  EXPECT_EQ(fused[size_t(index("r_bn"))], index("bn"));
  EXPECT_EQ(fused[size_t(index("r_sum"))], index("sum"));
  EXPECT_EQ(fused[size_t(index("r_conv2"))], index("conv2"));
  EXPECT_EQ(fused[size_t(index("r_bn2"))], -1);
  EXPECT_EQ(fused[size_t(index("r_fc"))], -1);
  int folds = 0;
  for (int f : fused) folds += f >= 0;
  EXPECT_EQ(folds, 3);
}

}  // namespace
}  // namespace dc
