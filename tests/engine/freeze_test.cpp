// Frozen layers (Node::trainable false): the optimizer leaves their
// parameters alone, a frozen prefix gets no backward pass and no gradient
// buffers, BatchNorm there runs in its inference form, and the flag survives
// a project round trip.
#include <deepcanvas/errors.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::Ints;

// in -> conv1 -> bn1 -> relu1 -> conv2 -> bn2 -> relu2 -> gap -> fc, with the
// given nodes frozen.
Graph cnn(std::initializer_list<const char*> frozen, bool with_bn1 = true) {
  register_builtin_layers();
  Graph g;
  NodeId prev = g.add_node("Input", "in", attrs({{"shape", Ints{2, 6, 6}}}));
  auto add = [&](const char* type, const char* name, Attrs a = {}) {
    NodeId id = g.add_node(type, name, std::move(a));
    g.connect(prev, id);
    prev = id;
  };
  add("Conv2D", "conv1",
      attrs({{"filters", int64_t(3)}, {"kernel", Ints{3, 3}}, {"padding", Ints{1, 1}}}));
  if (with_bn1) add("BatchNorm2D", "bn1");
  add("ReLU", "relu1");
  add("Conv2D", "conv2", attrs({{"filters", int64_t(4)}, {"kernel", Ints{3, 3}}}));
  add("BatchNorm2D", "bn2");
  add("ReLU", "relu2");
  add("GlobalAvgPool2D", "gap");
  add("Dense", "fc", attrs({{"units", int64_t(3)}}));
  for (const char* name : frozen) g.set_trainable(g.find_by_name(name)->id, false);
  return g;
}

struct Batch {
  Tensor x{Shape{8, 2, 6, 6}};
  std::vector<int32_t> labels;
  explicit Batch(uint64_t seed) {
    Rng r(seed);
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = r.uniform(-1.f, 1.f);
    for (int i = 0; i < 8; ++i) labels.push_back(i % 3);
  }
};

std::map<std::string, Tensor> snapshot(Plan& p) {
  std::map<std::string, Tensor> m;
  for (auto& [name, t] : p.state()) m[name] = t.clone();
  return m;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.f32(), b.f32(), size_t(a.bytes())) == 0;
}

// A few optimizer steps with weight decay (which would move even a
// parameter with a zero gradient).
void train(Plan& plan, int steps, OptimizerType type = OptimizerType::AdamW) {
  auto loss = make_loss(LossType::SoftmaxCrossEntropy);
  OptimizerConfig oc;
  oc.type = type;
  oc.lr = 0.05;
  oc.weight_decay = 0.1;
  auto opt = make_optimizer(oc);
  Tensor dout(plan.output_shape().with_batch(8));
  for (int s = 0; s < steps; ++s) {
    Batch b(100 + uint64_t(s));
    RunContext ctx{true, nullptr};
    const Tensor& out = plan.forward(b.x, ctx);
    loss->compute(out, Targets{b.labels.data(), nullptr}, dout);
    plan.zero_grad();
    plan.backward(dout, ctx);
    opt->step(plan.trainable(), 0.05);
  }
}

TEST(Freeze, FrozenParametersAndStatisticsStayBitIdenticalWhileTheRestTrains) {
  Plan plan(cnn({"conv1", "bn1", "relu1"}), 8);
  plan.init_params(7);
  auto before = snapshot(plan);
  train(plan, 5);
  auto after = snapshot(plan);
  for (const char* name : {"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias",
                           "bn1.running_mean", "bn1.running_var"}) {
    EXPECT_TRUE(same_bits(before[name], after[name])) << name;
  }
  for (const char* name :
       {"conv2.weight", "bn2.weight", "bn2.running_mean", "fc.weight", "fc.bias"}) {
    EXPECT_FALSE(same_bits(before[name], after[name])) << name;
  }
}

TEST(Freeze, AFrozenLayerInTheMiddlePassesGradientsOnButDoesNotChange) {
  for (OptimizerType type : {OptimizerType::Sgd, OptimizerType::Adam}) {
    Plan plan(cnn({"conv2", "bn2"}), 8);
    plan.init_params(7);
    auto before = snapshot(plan);
    train(plan, 4, type);
    auto after = snapshot(plan);
    for (const char* name : {"conv2.weight", "conv2.bias", "bn2.weight", "bn2.bias",
                             "bn2.running_mean", "bn2.running_var"}) {
      EXPECT_TRUE(same_bits(before[name], after[name])) << name;
    }
    // Upstream of the frozen block still learns through it.
    for (const char* name : {"conv1.weight", "bn1.weight", "fc.weight"}) {
      EXPECT_FALSE(same_bits(before[name], after[name])) << name;
    }
  }
}

TEST(Freeze, FrozenBatchNormUsesItsRunningStatisticsWhileTraining) {
  Graph g = cnn({"conv1", "bn1"});
  Plan plan(g, 8);
  plan.init_params(3);
  // Statistics unlike a fresh layer's, so that batch and running statistics
  // would give visibly different outputs.
  for (auto& np : plan.params()) {
    if (np.name == "bn1.running_mean") np.param->value.fill(0.3f);
    if (np.name == "bn1.running_var") np.param->value.fill(2.5f);
  }
  Batch b(1);
  const NodeId bn1 = g.find_by_name("bn1")->id, bn2 = g.find_by_name("bn2")->id;
  RunContext train_ctx{true, nullptr}, eval_ctx{false, nullptr};
  plan.forward(b.x, eval_ctx);
  Tensor bn1_eval = plan.activation(bn1)->clone(), bn2_eval = plan.activation(bn2)->clone();
  plan.forward(b.x, train_ctx);
  EXPECT_TRUE(same_bits(*plan.activation(bn1), bn1_eval));
  // The trainable bn2 normalises with the batch's statistics.
  EXPECT_FALSE(same_bits(*plan.activation(bn2), bn2_eval));
  for (auto& np : plan.params()) {
    if (np.name == "bn1.running_mean") {
      EXPECT_EQ(np.param->value.f32()[0], 0.3f);
    }
    if (np.name == "bn1.running_var") {
      EXPECT_EQ(np.param->value.f32()[0], 2.5f);
    }
  }
}

TEST(Freeze, NoGradientsOrOptimizerStateForFrozenParameters) {
  Plan all(cnn({}), 8), frozen(cnn({"conv1", "bn1", "relu1"}), 8);
  // conv1 (weight, bias) and bn1 (weight, bias) leave the optimizer's list.
  EXPECT_EQ(all.trainable().size(), frozen.trainable().size() + 4);
  int64_t frozen_scalars = 0;
  for (const NamedParam& np : frozen.params()) {
    const bool in_prefix = np.name.rfind("conv1.", 0) == 0 || np.name.rfind("bn1.", 0) == 0;
    EXPECT_FALSE(np.param->trainable && in_prefix) << np.name;
    if (in_prefix) {
      EXPECT_FALSE(np.param->grad.defined()) << np.name;
    }
    const bool running = np.name.find("running_") != std::string::npos;
    EXPECT_EQ(np.frozen, in_prefix && !running) << np.name;
    if (np.frozen) frozen_scalars += np.param->value.numel();
  }
  EXPECT_EQ(frozen_scalars, 3 * 2 * 9 + 3 + 3 + 3);
  EXPECT_EQ(frozen.num_frozen_parameters(), frozen_scalars);
  EXPECT_EQ(frozen.num_parameters() + frozen_scalars, all.num_parameters());
  EXPECT_EQ(all.num_frozen_parameters(), 0);

  // Optimizer state covers exactly the trainable list, and is checked
  // against it when loaded.
  frozen.init_params(1);
  OptimizerConfig oc;
  oc.type = OptimizerType::Adam;
  auto opt = make_optimizer(oc);
  Batch b(2);
  RunContext ctx{true, nullptr};
  const Tensor& out = frozen.forward(b.x, ctx);
  Tensor dout(out.shape());
  make_loss(LossType::SoftmaxCrossEntropy)->compute(out, Targets{b.labels.data(), nullptr}, dout);
  frozen.zero_grad();
  frozen.backward(dout, ctx);
  opt->step(frozen.trainable(), 1e-3);
  auto st = opt->state();
  ASSERT_EQ(st.size(), 2 * frozen.trainable().size());
  int64_t state_scalars = 0;
  for (auto& [name, t] : st) state_scalars += t.numel();
  EXPECT_EQ(state_scalars, 2 * frozen.num_parameters());
  auto again = make_optimizer(oc);
  EXPECT_NO_THROW(again->load_state(st, frozen.trainable(), "ck"));
  // State of the unfrozen network (more parameters) does not fit the frozen
  // one's list: refused (its first entry is conv1's, whose shape is not the
  // frozen list's first parameter's). The Trainer also compares the frozen
  // sets by name before this (trainer_test).
  all.init_params(1);
  auto opt_all = make_optimizer(oc);
  const Tensor& out2 = all.forward(b.x, ctx);
  make_loss(LossType::SoftmaxCrossEntropy)->compute(out2, Targets{b.labels.data(), nullptr}, dout);
  all.zero_grad();
  all.backward(dout, ctx);
  opt_all->step(all.trainable(), 1e-3);
  try {
    again->load_state(opt_all->state(), frozen.trainable(), "ck");
    ADD_FAILURE() << "state of another parameter list was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("different network"), std::string::npos) << e.what();
  }

  // No activation gradients for the frozen prefix: conv1's and relu1's
  // outputs (3×6×6 floats each) at batch 8; relu1 is fused into bn1, which
  // then has no gradient buffer of its own.
  const FreezeSavings s = frozen.freeze_savings();
  EXPECT_EQ(s.activation_grad_bytes_per_sample, 2 * (3 * 6 * 6 * 4));
  EXPECT_EQ(all.activation_bytes(8, true) - frozen.activation_bytes(8, true),
            s.activation_grad_bytes_per_sample * 8);
  EXPECT_EQ(s.parameter_state_bytes, frozen_scalars * 12);
  EXPECT_EQ(all.training_bytes(8) - frozen.training_bytes(8), s.bytes_saved(8));
  EXPECT_EQ(s.trainable_params, frozen.num_parameters());
  EXPECT_EQ(s.frozen_params, frozen_scalars);
  EXPECT_EQ(s.frozen_nodes, 3);
  // conv1 had only its weight gradient to compute (its input is the data);
  // bn1 (C·S = 108 MACs) both of its gradients; ReLU costs nothing.
  EXPECT_EQ(s.backward_macs_saved, 3 * 36 * 2 * 9 + 2 * 108);
  EXPECT_EQ(all.freeze_savings().backward_macs_saved, 0);
  EXPECT_EQ(all.freeze_savings().bytes_saved(8), 0);
}

// The trainable part's gradients do not depend on whether the prefix is
// frozen (it has no BatchNorm, whose frozen form would change the forward),
// and they match finite differences of the loss.
TEST(Freeze, TrainableGradientsAreUnchangedByFreezingThePrefix) {
  Plan all(cnn({}, false), 8), frozen(cnn({"conv1", "relu1"}, false), 8);
  all.init_params(11);
  frozen.init_params(11);
  auto loss = make_loss(LossType::SoftmaxCrossEntropy);
  Batch b(5);
  auto loss_of = [&](Plan& p) {
    RunContext ctx{true, nullptr};
    const Tensor& out = p.forward(b.x, ctx);
    Tensor d(out.shape());
    return double(loss->compute(out, Targets{b.labels.data(), nullptr}, d));
  };
  auto grads = [&](Plan& p) {
    RunContext ctx{true, nullptr};
    const Tensor& out = p.forward(b.x, ctx);
    Tensor d(out.shape());
    loss->compute(out, Targets{b.labels.data(), nullptr}, d);
    p.zero_grad();
    p.backward(d, ctx);
    std::map<std::string, Tensor> g;
    for (const NamedParam& np : p.params())
      if (np.param->trainable) g[np.name] = np.param->grad.clone();
    return g;
  };
  auto ga = grads(all), gf = grads(frozen);
  EXPECT_EQ(ga.size(), gf.size() + 2);  // conv1.weight, conv1.bias
  for (auto& [name, t] : gf) {
    ASSERT_TRUE(ga.count(name)) << name;
    EXPECT_TRUE(same_bits(t, ga[name])) << name;
  }
  // Central differences of the frozen plan's loss for a spread of entries.
  for (NamedParam& np : frozen.params()) {
    if (!np.param->trainable) continue;
    Tensor& w = np.param->value;
    const Tensor& g = gf[np.name];
    for (int64_t i = 0; i < w.numel(); i += std::max<int64_t>(1, w.numel() / 7)) {
      const float keep = w.f32()[i], h = 1e-2f;
      w.f32()[i] = keep + h;
      double up = loss_of(frozen);
      w.f32()[i] = keep - h;
      double down = loss_of(frozen);
      w.f32()[i] = keep;
      double num = (up - down) / (2.0 * double(h));
      EXPECT_NEAR(g.f32()[i], num, 2e-3 + 2e-2 * std::abs(num)) << np.name << "[" << i << "]";
    }
  }
}

TEST(Freeze, ProjectRoundTripKeepsTheFlagAndOldFilesLoadUnchanged) {
  Graph g = cnn({"conv1", "bn1"});
  std::string text = graph_to_json(g);
  // Written only for frozen nodes.
  size_t count = 0;
  for (size_t at = text.find("\"trainable\""); at != std::string::npos;
       at = text.find("\"trainable\"", at + 1))
    ++count;
  EXPECT_EQ(count, 2u);
  Graph back = graph_from_json(text, "mem");
  EXPECT_TRUE(back == g);
  EXPECT_FALSE(back.find_by_name("conv1")->trainable);
  EXPECT_FALSE(back.find_by_name("bn1")->trainable);
  EXPECT_TRUE(back.find_by_name("conv2")->trainable);
  // Equality sees the flag.
  back.set_trainable(back.find_by_name("conv1")->id, true);
  EXPECT_FALSE(back == g);
  // Nothing frozen: the text has no trainable key at all (the old form).
  EXPECT_EQ(graph_to_json(cnn({})).find("trainable"), std::string::npos);
  // Every template loads with every node trainable.
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/resources/templates/two_conv_cnn.dcproj");
  for (const auto& [id, n] : p.graph.nodes()) EXPECT_TRUE(n.trainable) << n.name;
  // A wrong type is refused with the JSON path.
  std::string bad = text;
  bad.replace(bad.find("\"trainable\": false"), std::strlen("\"trainable\": false"),
              "\"trainable\": \"no\"");
  try {
    graph_from_json(bad, "bad.dcproj");
    ADD_FAILURE() << "a string trainable was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("trainable"), std::string::npos) << e.what();
  }
}

TEST(Freeze, PreflightTakesFrozenLayersOnEitherDeviceAndRefusesAnAllFrozenNetwork) {
  auto has = [](const std::vector<RunProblem>& v, RunProblem::Kind k, const std::string& what) {
    for (const RunProblem& p : v)
      if (p.kind == k && p.message.find(what) != std::string::npos) return true;
    return false;
  };
  for (const DeviceSpec& d : {DeviceSpec{}, DeviceSpec{true, 0}}) {
    TrainConfig c;
    c.device = d;
    auto v = network_problems(cnn({"conv1"}), c);
    EXPECT_TRUE(v.empty()) << (d.cuda ? "cuda: " : "cpu: ") << v[0].message;
    auto all = network_problems(cnn({"conv1", "bn1", "conv2", "bn2", "fc"}), c);
    EXPECT_TRUE(has(all, RunProblem::Kind::Network, "every layer is frozen"));
  }
}

// The rule the CPU Plan, the CUDA plan and the memory model share: backward
// reaches a layer that trains and everything after it; a frozen prefix,
// parameter-free layers before the first trainable one, and the Input are
// never reached; a frozen layer after a trainable one is.
TEST(Freeze, BackwardReachesWhatTrainsAndEverythingDownstream) {
  const std::vector<PlanStep> steps = lower_graph(cnn({"in", "conv1", "bn1", "relu1", "bn2"}));
  const std::vector<bool> reach = backward_reach(steps), all = backward_reach(steps, true);
  std::string got, unfrozen;
  for (size_t i = 0; i < steps.size(); ++i) {
    got += steps[i].name + (reach[i] ? "+ " : "- ");
    unfrozen += steps[i].name + (all[i] ? "+ " : "- ");
  }
  EXPECT_EQ(got, "in- conv1- bn1- relu1- conv2+ bn2+ relu2+ gap+ fc+ ");
  EXPECT_EQ(unfrozen, "in- conv1+ bn1+ relu1+ conv2+ bn2+ relu2+ gap+ fc+ ");
}

TEST(Freeze, FreezeUntilFreezesTheLayerAndEverythingBeforeIt) {
  Graph g = cnn({});
  EXPECT_EQ(freeze_until(g, "relu1"), 4);  // in, conv1, bn1, relu1
  for (const char* name : {"in", "conv1", "bn1", "relu1"}) {
    EXPECT_FALSE(g.find_by_name(name)->trainable) << name;
  }
  for (const char* name : {"conv2", "bn2", "fc"}) {
    EXPECT_TRUE(g.find_by_name(name)->trainable) << name;
  }
  EXPECT_THROW(freeze_until(g, "nope"), GraphError);
}

TEST(Freeze, UpstreamOfFollowsEveryBranchOfAJoin) {
  // in -> a -> add <- b <- in, add -> out; c hangs off a and is downstream.
  register_builtin_layers();
  Graph g;
  const NodeId in = g.add_node("Input", "in", attrs({{"shape", Ints{4}}}));
  const NodeId a = g.add_node("Dense", "a", attrs({{"units", int64_t(4)}}));
  const NodeId b = g.add_node("Dense", "b", attrs({{"units", int64_t(4)}}));
  const NodeId add = g.add_node("Add", "add");
  const NodeId c = g.add_node("ReLU", "c");
  const NodeId out = g.add_node("Dense", "out", attrs({{"units", int64_t(2)}}));
  g.connect(in, a);
  g.connect(in, b);
  g.connect(a, add, 0);
  g.connect(b, add, 1);
  g.connect(a, c);
  g.connect(add, out);
  EXPECT_EQ(upstream_of(g, add), (std::unordered_set<NodeId>{in, a, b, add}));
  EXPECT_EQ(upstream_of(g, in), (std::unordered_set<NodeId>{in}));
  EXPECT_EQ(upstream_of(g, out).count(c), 0u);
}

}  // namespace
}  // namespace dc
