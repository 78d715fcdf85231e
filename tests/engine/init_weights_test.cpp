// Starting a fresh run from other weights (training.init_weights): tensors
// load by name, a new head keeps its fresh initialisation, and a wrong file
// fails before anything is copied, naming the tensor.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::Ints;

// in {1,8,8} -> conv1 (filters) -> relu -> gap -> <head> (units).
Graph net(const char* head, int64_t filters = 4, int64_t units = 4) {
  register_builtin_layers();
  Graph g;
  NodeId prev = g.add_node("Input", "input", attrs({{"shape", Ints{1, 8, 8}}}));
  auto add = [&](const char* type, const char* name, Attrs a = {}) {
    NodeId id = g.add_node(type, name, std::move(a));
    g.connect(prev, id);
    prev = id;
  };
  add("Conv2D", "conv1",
      attrs({{"filters", filters}, {"kernel", Ints{3, 3}}, {"padding", Ints{1, 1}}}));
  add("ReLU", "relu1");
  add("GlobalAvgPool2D", "gap");
  add("Dense", head, attrs({{"units", units}}));
  return g;
}

const Tensor& param(Plan& p, const std::string& name) {
  for (const NamedParam& np : p.params())
    if (np.name == name) return np.param->value;
  throw Error("no parameter " + name);
}

bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.f32(), b.f32(), size_t(a.bytes())) == 0;
}

// The "pretrained" network's weights, written as a safetensors file.
std::string write_base(const test::TmpDir& tmp, Plan& base) {
  const std::string path = tmp.path("base.safetensors");
  save_safetensors(path, base.state(), {});
  return path;
}

TEST(InitWeights, LoadsMatchingNamesAndLeavesTheNewHeadFresh) {
  test::TmpDir tmp;
  Plan base(net("fc"), 4);
  base.init_params(1);
  const std::string file = write_base(tmp, base);

  Plan fresh(net("head_fc", 4, 3), 4);
  fresh.init_params(2);
  Plan p(net("head_fc", 4, 3), 4);
  p.init_params(2);
  ASSERT_FALSE(same(param(p, "conv1.weight"), param(base, "conv1.weight")));
  const SafetensorsFile f = load_safetensors(file);
  const std::vector<std::pair<std::string, Tensor>> tensors(f.tensors.begin(), f.tensors.end());
  const Plan::MatchReport r = p.load_matching(tensors, file);
  EXPECT_TRUE(same(param(p, "conv1.weight"), param(base, "conv1.weight")));
  EXPECT_TRUE(same(param(p, "conv1.bias"), param(base, "conv1.bias")));
  // The head is the seed's, exactly as without loading.
  EXPECT_TRUE(same(param(p, "head_fc.weight"), param(fresh, "head_fc.weight")));
  EXPECT_EQ(r.loaded_layers, std::vector<std::string>{"conv1"});
  EXPECT_EQ(r.fresh_layers, std::vector<std::string>{"head_fc"});
  EXPECT_EQ(r.loaded_tensors, 2);
  EXPECT_EQ(r.unused, (std::vector<std::string>{"fc.bias", "fc.weight"}));
  EXPECT_NE(r.summary().find("1 layers loaded"), std::string::npos) << r.summary();
  EXPECT_NE(r.summary().find("head_fc"), std::string::npos) << r.summary();
}

TEST(InitWeights, ShapeMismatchNamesTheTensorAndCopiesNothing) {
  Plan base(net("fc", 6), 4);
  base.init_params(1);
  for (NamedParam& np : base.params())  // biases start at zero: make this one differ
    if (np.name == "fc.bias") np.param->value.fill(0.5f);
  Plan p(net("fc", 4), 4);
  p.init_params(2);
  const Tensor before = param(p, "fc.bias").clone();  // fits in both
  try {
    p.load_matching(base.state(), "base.safetensors");
    FAIL() << "a conv1 with 6 filters must not load into one with 4";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("base.safetensors"), std::string::npos) << m;
    EXPECT_NE(m.find("conv1."), std::string::npos) << m;
    EXPECT_NE(m.find("6x1x3x3"), std::string::npos) << m;
  }
  // Checked before copying: not even the tensors that would fit were taken.
  EXPECT_TRUE(same(param(p, "fc.bias"), before));
}

TEST(InitWeights, AFileForAnotherNetworkIsRefused) {
  Plan p(net("fc"), 4);
  p.init_params(2);
  std::vector<std::pair<std::string, Tensor>> other;
  other.emplace_back("encoder.weight", Tensor(Shape{2, 2}));
  try {
    p.load_matching(other, "other.safetensors");
    FAIL() << "no matching name must be an error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("none of its 1 tensors"), std::string::npos) << e.what();
  }
}

// The Trainer loads before the first step: a frozen conv1 ends the run with
// exactly the file's weights, and the run starts at epoch 1.
TEST(InitWeights, TrainerStartsAFreshRunFromTheFile) {
  test::TmpDir tmp;
  Plan base(net("fc"), 4);
  base.init_params(7);
  const std::string file = write_base(tmp, base);
  Graph g = net("head_fc", 4, 4);
  g.set_trainable(g.find_by_name("conv1")->id, false);
  g.set_trainable(g.find_by_name("input")->id, false);
  auto train = std::make_shared<Dataset>(test::quadrant_toy(64, 1));
  TrainConfig c;
  c.epochs = 1;
  c.batch = 16;
  c.init_weights = file;
  Trainer t(g, c, train, nullptr);
  EXPECT_EQ(t.init_report().loaded_layers, std::vector<std::string>{"conv1"});
  EXPECT_EQ(t.init_report().fresh_layers, std::vector<std::string>{"head_fc"});
  t.start();
  t.wait();
  ASSERT_TRUE(t.result().ok) << t.result().error;
  EXPECT_EQ(t.result().epochs_run, 1);
  EXPECT_TRUE(same(param(t.plan(), "conv1.weight"), param(base, "conv1.weight")));
  // The head trained.
  Plan fresh(g, 4);
  fresh.init_params(c.seed);
  EXPECT_FALSE(same(param(t.plan(), "head_fc.weight"), param(fresh, "head_fc.weight")));
}

TEST(InitWeights, MissingFileAndResumeTogetherAreClearErrors) {
  test::TmpDir tmp;
  auto train = std::make_shared<Dataset>(test::quadrant_toy(16, 1));
  TrainConfig c;
  c.init_weights = tmp.path("nope.safetensors");
  try {
    Trainer t(net("fc"), c, train, nullptr);
    FAIL() << "a missing file must be an error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.safetensors: weights file not found"),
              std::string::npos)
        << e.what();
  }
  c.resume = tmp.path("last.safetensors");
  try {
    Trainer t(net("fc"), c, train, nullptr);
    FAIL() << "init_weights with resume must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("give only one"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dc
