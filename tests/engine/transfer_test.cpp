// The transfer template: a fetched base becomes "frozen base + new head",
// and an absent base is a clear error saying how to fetch it.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/transfer.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::Ints;

// A small "pretrained classifier": in {3,64,64} -> stem (stride 2) -> relu
// -> block -> relu -> gap -> flatten-free fc (1000 classes).
Project small_base() {
  register_builtin_layers();
  Project p;
  p.name = "small base";
  Graph& g = p.graph;
  NodeId prev = g.add_node("Input", "input", attrs({{"shape", Ints{3, 64, 64}}}));
  auto add = [&](const char* type, const char* name, Attrs a = {}) {
    NodeId id = g.add_node(type, name, std::move(a));
    g.connect(prev, id);
    prev = id;
  };
  add("Conv2D", "stem",
      attrs({{"filters", int64_t(4)},
             {"kernel", Ints{3, 3}},
             {"stride", Ints{2, 2}},
             {"padding", Ints{1, 1}}}));
  add("ReLU", "stem_act");
  add("Conv2D", "block", attrs({{"filters", int64_t(8)}, {"kernel", Ints{3, 3}}}));
  add("ReLU", "block_act");
  add("GlobalAvgPool2D", "pool");
  add("Dense", "fc", attrs({{"units", int64_t(1000)}}));
  return p;
}

// Points pretrained_dir() at a scratch folder for one test.
struct PretrainedDirFor {
  explicit PretrainedDirFor(const std::string& d) {
    ::setenv("DEEPCANVAS_PRETRAINED_DIR", d.c_str(), 1);
  }
  ~PretrainedDirFor() { ::unsetenv("DEEPCANVAS_PRETRAINED_DIR"); }
};

TEST(TransferTemplate, AbsentBaseSaysHowToFetchIt) {
  test::TmpDir tmp;
  PretrainedDirFor dir(tmp.dir.string());
  const PretrainedBase& b = pretrained_base("efficientnet_lite0");
  EXPECT_FALSE(base_files(b).present());
  const std::string why = base_missing_message(b);
  EXPECT_NE(why.find("fetch-pretrained.sh"), std::string::npos) << why;
  EXPECT_NE(why.find(tmp.dir.string()), std::string::npos) << why;
  try {
    transfer_project(b, {});
    FAIL() << "an absent base must be an error";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), why);
  }
  EXPECT_THROW(pretrained_base("resnet9000"), Error);
}

TEST(TransferTemplate, PresentBaseGivesAFrozenBaseAndANewHead) {
  test::TmpDir tmp;
  PretrainedDirFor dir(tmp.dir.string());
  const PretrainedBase& b = pretrained_base("efficientnet_lite0");
  const BaseFiles f = base_files(b);
  std::filesystem::create_directories(f.dir);
  Project base = small_base();
  save_project(base, f.project);
  Plan bp(base.graph, 1);
  bp.init_params(3);
  save_safetensors(f.weights, bp.state(), {});
  ASSERT_TRUE(f.present());
  EXPECT_EQ(base_missing_message(b), "");

  TransferOptions o;
  o.size = 96;
  o.classes = 10;
  const Project p = transfer_project(b, o);
  EXPECT_NE(p.name.find("Transfer: EfficientNet-Lite0"), std::string::npos) << p.name;
  const Graph& g = p.graph;
  // The old classifier is gone; pooling and a 10-way Dense follow the last
  // feature map; everything before them is frozen.
  EXPECT_EQ(g.find_by_name("fc"), nullptr);
  EXPECT_EQ(g.find_by_name("pool"), nullptr);
  ASSERT_NE(g.find_by_name("head_pool"), nullptr);
  ASSERT_NE(g.find_by_name("head_fc"), nullptr);
  for (const char* frozen : {"input", "stem", "stem_act", "block", "block_act"}) {
    EXPECT_FALSE(g.find_by_name(frozen)->trainable) << frozen;
  }
  EXPECT_TRUE(g.find_by_name("head_fc")->trainable);
  Plan plan(g, 1);
  EXPECT_EQ(plan.input_shape(), (Shape{3, 96, 96}));
  EXPECT_EQ(plan.output_shape(), (Shape{10}));
  EXPECT_EQ(plan.num_parameters(), 8 * 10 + 10);  // the head alone trains
  EXPECT_EQ(p.training.init_weights, f.weights);
  EXPECT_EQ(p.dataset.path, "sample:fashion-mnist-subset");
  EXPECT_EQ(p.dataset.preprocess.size, 96);
  EXPECT_EQ(p.dataset.preprocess.channels, 3);
  EXPECT_EQ(p.dataset.preprocess.mean, b.mean);
  // Its weights load: the base's layers from the file, the head fresh.
  Plan fresh(g, 1);
  fresh.init_params(1);
  const SafetensorsFile w = load_safetensors(f.weights);
  const Plan::MatchReport r = fresh.load_matching({w.tensors.begin(), w.tensors.end()}, f.weights);
  EXPECT_EQ(r.loaded_layers, (std::vector<std::string>{"stem", "block"}));
  EXPECT_EQ(r.fresh_layers, std::vector<std::string>{"head_fc"});
  // The project survives a save and load.
  const Project q = parse_project(project_to_json(p), "t.dcproj");
  EXPECT_EQ(q.graph, p.graph);
  EXPECT_EQ(q.training.init_weights, p.training.init_weights);

  // A folder of photos, what transfer learning is for, is recorded as an
  // image folder (it was recorded as IDX, which then failed to read).
  for (const char* c : {"cats", "dogs"}) {
    std::filesystem::create_directories(tmp.dir / "photos" / c);
    tmp.write(std::string("photos/") + c + "/a.png", std::string("\x89PNG\r\n\x1a\n", 8));
  }
  o.dataset.path = tmp.path("photos");
  EXPECT_EQ(transfer_project(b, o).dataset.kind, "image_folder");
}

}  // namespace
}  // namespace dc
