// Transfer learning end to end through deepcanvas-cli, on a tiny
// EfficientNet-like model exported by Debian's torch at test time (no
// network, no PyPI weights): import, `transfer --from`, training that loads
// the base by name and trains a fresh head on grey 28x28 images resized to
// RGB, predict on the result; and the absent-base message.
#include <gtest/gtest.h>

#include "cli_util.h"

namespace dc::e2e {
namespace {

// Conv (TF-"same" ZeroPad2d) + BN + ReLU6, a depthwise block, global pooling
// and a 7-way classifier, as the real base is built.
const char* kTinyModel = R"PY(
import sys, torch
from torch import nn
torch.manual_seed(0)
class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.pad = nn.ZeroPad2d((0, 1, 0, 1))
        self.stem = nn.Conv2d(3, 8, 3, 2, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, 1, 1, groups=8, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pw = nn.Conv2d(8, 16, 1)
        self.act = nn.ReLU6()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 7)
    def forward(self, x):
        x = self.act(self.bn(self.stem(self.pad(x))))
        x = self.act(self.pw(self.act(self.bn2(self.dw(x)))))
        return self.fc(torch.flatten(self.pool(x), 1))
m = Tiny().eval()
x = torch.randn(1, 3, 32, 32)
torch.onnx.export(m, x, sys.argv[1], input_names=["input"], output_names=["logits"],
                  dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, opset_version=13)
)PY";

TEST(TransferCli, ImportedBaseTrainsANewHeadOnResizedGreyImages) {
  Tmp t;
  const std::string script = t.write("tiny.py", kTinyModel);
  CliRun made = cli_command("/usr/bin/python3 " + script + " " + t.path("tiny.onnx"));
  if (made.code != 0 && made.out.find("No module named") != std::string::npos)
    GTEST_SKIP() << "Debian's python3-torch is not installed: " << made.out;
  ASSERT_EQ(made.code, 0) << made.out;
  const std::string base = t.path("base.dcproj");
  CliRun imported = cli("import " + t.path("tiny.onnx") + " -o " + base + " --quiet");
  if (imported.out.find("no ONNX support") != std::string::npos)
    GTEST_SKIP() << "this build has no ONNX support";
  ASSERT_EQ(imported.code, 0) << imported.out;
  // The imported project starts from its own weights.
  EXPECT_NE(read_file(base).find("\"init_weights\": \"base.safetensors\""), std::string::npos);

  const std::string proj = t.path("transfer.dcproj");
  CliRun made_proj = cli("transfer --from " + base + " --size 32 --classes 10 --data " +
                         src("sample_data/fashion-mnist-subset") + " -o " + proj + " --json");
  ASSERT_EQ(made_proj.code, 0) << made_proj.out;
  const auto pj = last_json_line(made_proj.out);
  EXPECT_EQ(pj["input"], (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(pj["trainable_parameters"], 16 * 10 + 10);
  EXPECT_GT(pj["frozen_parameters"].get<int64_t>(), 0);

  const std::string ck = t.path("t.safetensors");
  CliRun trained = cli("train " + proj + " --epochs 1 --steps-per-epoch 3 --json --checkpoint " +
                       ck + " --overwrite");
  ASSERT_EQ(trained.code, 0) << trained.out;
  EXPECT_NE(trained.out.find("weights from "), std::string::npos) << trained.out;
  const auto j = last_json_line(trained.out);
  ASSERT_TRUE(j.contains("init_weights")) << trained.out;
  EXPECT_GE(j["init_weights"]["loaded_layers"].get<int>(), 2) << trained.out;
  EXPECT_EQ(j["init_weights"]["fresh_layers"], std::vector<std::string>{"head_fc"});
  EXPECT_EQ(j["init_weights"]["unused_tensors"], 2);  // the replaced fc's weight and bias

  CliRun predicted = cli("predict " + proj + " --checkpoint " + ck + " --index 0");
  ASSERT_EQ(predicted.code, 0) << predicted.out;
  EXPECT_NE(predicted.out.find("test sample 0"), std::string::npos) << predicted.out;

  CliRun missing = cli("train " + proj + " --epochs 1 --steps-per-epoch 1 --init-weights " +
                       t.path("nope.safetensors"));
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_NE(missing.out.find("nope.safetensors: weights file not found"), std::string::npos)
      << missing.out;
  // Weights of a 12-class head into the 10-class one: the tensor is named.
  const std::string twelve = t.path("twelve.dcproj");
  const std::string ck12 = t.path("twelve.safetensors");
  ASSERT_EQ(cli("transfer --from " + base + " --size 32 --classes 12 --data " +
                src("sample_data/fashion-mnist-subset") + " -o " + twelve)
                .code,
            0);
  CliRun t12 = cli("train " + twelve + " --epochs 1 --steps-per-epoch 1 --quiet --checkpoint " +
                   ck12 + " --overwrite");
  ASSERT_EQ(t12.code, 0) << t12.out;
  CliRun mismatch = cli("train " + proj + " --epochs 1 --steps-per-epoch 1 --init-weights " + ck12);
  EXPECT_EQ(mismatch.code, 1) << mismatch.out;
  EXPECT_NE(mismatch.out.find("tensor 'head_fc.weight' is 12x16 but layer 'head_fc'"),
            std::string::npos)
      << mismatch.out;
}

TEST(TransferCli, AbsentBaseExplainsHowToFetchItAndWritesNothing) {
  Tmp t;
  const std::string out = t.path("x.dcproj");
  CliRun r = cli_command("DEEPCANVAS_PRETRAINED_DIR=" + t.path("none") + " " + DC_CLI +
                         " transfer -o " + out);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("fetch-pretrained.sh"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is not on this computer"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace dc::e2e
