// deepcanvas-cli export --precision int8|fp16: what it prints, and each bad
// input refused with its message and nothing written (a checkpoint of
// another network, a calibration set of one class, activations that
// overflow, the accuracy gate); train --qat and the export of its
// checkpoint, which keeps the learned ranges.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>

#include "cli_util.h"

namespace dc::e2e {
namespace {

// One checkpoint of the sample CNN for every test here: a short run, in a
// folder removed when the tests end.
const std::string& sample_checkpoint() {
  static const Tmp dir;
  static const std::string path = [] {
    const std::string p = dir.path("sample.safetensors");
    CliRun r =
        cli("train " + kSample + " --epochs 1 --steps-per-epoch 60 --quiet --checkpoint " + p);
    EXPECT_EQ(r.code, 0) << r.out;
    return p;
  }();
  return path;
}

bool has_onnx() {
  return cli("export --help").out.find("--precision") != std::string::npos &&
         cli("export " + kSample + " -o /dev/null/x.onnx").out.find("no ONNX support") ==
             std::string::npos;
}

TEST(QuantizeCli, Int8AndFp16AreMeasuredAndSmaller) {
  if (!has_onnx()) GTEST_SKIP() << "this deepcanvas-cli has no ONNX support";
  Tmp t;
  const std::string ck = sample_checkpoint();
  CliRun r = cli("export " + kSample + " --checkpoint " + ck + " -o " + t.path("m.onnx") +
                 " --precision int8 --calibrate 64 --calibration entropy");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("calibrating on 64 training samples (entropy)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test accuracy: fp32 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int8 (simulated)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int8 ONNX model (opset 17) written to"), std::string::npos) << r.out;
  r = cli("export " + kSample + " --checkpoint " + ck + " -o " + t.path("m.onnx") +
          " --precision int8 --calibrate 64 --include-preprocessing --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  EXPECT_EQ(j["precision"], "int8");
  EXPECT_EQ(j["calibration"], "percentile");
  EXPECT_TRUE(j["include_preprocessing"].get<bool>());
  EXPECT_LE(j["bytes"].get<double>(), 0.3 * j["fp32_bytes"].get<double>());
  EXPECT_LE(j["fp32_accuracy"].get<double>() - j["int8_accuracy"].get<double>(), 0.01);
  EXPECT_EQ(int64_t(fs::file_size(t.path("m.onnx"))), j["bytes"].get<int64_t>());
  r = cli("export " + kSample + " --checkpoint " + ck + " -o " + t.path("h.onnx") +
          " --precision fp16 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  j = last_json_line(r.out);
  EXPECT_LE(j["bytes"].get<double>(), 0.55 * j["fp32_bytes"].get<double>());
  r = cli("export " + kSample + " -o " + t.path("x.onnx") + " --precision int4");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--precision int4 is not supported"), std::string::npos) << r.out;
}

void expect_refused(const CliRun& r, const std::string& out, const std::string& message) {
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out)) << "written despite the refusal: " << out;
}

TEST(QuantizeCli, BadInputIsRefusedAndNothingWritten) {
  if (!has_onnx()) GTEST_SKIP() << "this deepcanvas-cli has no ONNX support";
  Tmp t;
  const std::string ck = sample_checkpoint();
  const std::string out = t.path("m.onnx");
  // A checkpoint of another network: 16 filters in conv1 instead of 32.
  const std::string other =
      project_in(t, replaced(sample_text(), "\"filters\": 32", "\"filters\": 16"));
  expect_refused(
      cli("export " + other + " --checkpoint " + ck + " -o " + out + " --precision int8"), out,
      "conv1.weight");

  // The gate: a percentile that clips nearly everything.
  expect_refused(cli("export " + kSample + " --checkpoint " + ck + " -o " + out +
                     " --precision int8 --calibrate 32 --percentile 50"),
                 out, "points lower (more than --max-drop 1.00); nothing written");

  // Activations that overflow: conv1's weights scaled to near float's
  // largest value (finite, so the checkpoint itself is valid).
  CheckpointInfo info = read_checkpoint(ck);
  for (auto& [name, tensor] : info.model)
    if (name == "conv1.weight")
      for (int64_t i = 0; i < tensor.numel(); ++i) tensor.f32()[i] = 3e38f;
  CheckpointMeta meta;
  meta.mean = std::stof(info.metadata.at("mean"));
  meta.stddev = std::stof(info.metadata.at("stddev"));
  write_checkpoint(t.path("inf.safetensors"), info.model, {}, meta);
  expect_refused(cli("export " + kSample + " --checkpoint " + t.path("inf.safetensors") + " -o " +
                     out + " --precision int8 --calibrate 16"),
                 out, "Conv2D 'conv1' produced NaN or infinite values");

  // A calibration set of one class: IDX files whose labels are all 3.
  fs::create_directories(t.path("one"));
  auto be32 = [](uint32_t v) {
    return std::string{char(v >> 24), char(v >> 16 & 255), char(v >> 8 & 255), char(v & 255)};
  };
  const uint32_t n = 40;
  for (const char* split : {"train", "t10k"}) {
    std::string images = be32(0x803) + be32(n) + be32(28) + be32(28);
    for (uint32_t i = 0; i < n * 28 * 28; ++i) images += char(i * 7 % 251);
    t.write(std::string("one/") + split + "-images-idx3-ubyte", images);
    t.write(std::string("one/") + split + "-labels-idx1-ubyte",
            be32(0x801) + be32(n) + std::string(n, char(3)));
  }
  expect_refused(cli("export " + kSample + " --checkpoint " + ck + " -o " + out +
                     " --precision int8 --data " + t.path("one")),
                 out, "are all of class 3");
}

// The input scales a QAT checkpoint's metadata holds, by layer.
std::map<std::string, double> qat_scales(const std::string& ck) {
  const CheckpointInfo info = read_checkpoint(ck);
  std::map<std::string, double> r;
  const auto j = nlohmann::json::parse(info.metadata.at("qat"));
  for (const auto& op : j.at("ops")) r[op.at("layer")] = op.at("input_scale").get<double>();
  return r;
}

TEST(QuantizeCli, QatFineTunesAndItsExportKeepsTheLearnedRanges) {
  if (!has_onnx()) GTEST_SKIP() << "this deepcanvas-cli has no ONNX support";
  Tmp t;
  const std::string ck = sample_checkpoint();
  const std::string qat = t.path("qat.safetensors");
  CliRun r = cli("train " + kSample + " --qat --init-weights " + ck + " --checkpoint " + qat +
                 " --epochs 1 --steps-per-epoch 20 --calibrate 64 --calibration minmax --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  EXPECT_EQ(j["start"], "minmax");
  ASSERT_EQ(j["history"].size(), 2u);
  const double qat_int8 = j["int8_accuracy"].get<double>();
  EXPECT_GT(qat_int8, 0.5);
  const std::map<std::string, double> learned = qat_scales(qat);
  ASSERT_EQ(learned.size(), 4u);  // conv1, conv2, dense1, dense2

  // The export reads the scales, calibrates nothing, and its gate measures
  // what the fine-tuning measured last.
  const std::string out = t.path("m.onnx");
  r = cli("export " + kSample + " --checkpoint " + qat + " -o " + out + " --precision int8");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("learned by quantization-aware fine-tuning"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(no calibration)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("calibrating on"), std::string::npos) << r.out;
  r = cli("export " + kSample + " --checkpoint " + qat + " -o " + out + " --precision int8 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  j = last_json_line(r.out);
  EXPECT_EQ(j["calibration"], "qat");
  EXPECT_DOUBLE_EQ(j["int8_accuracy"].get<double>(), qat_int8);
  std::ifstream f(t.path("m.int8.json"));
  const auto int8 = nlohmann::json::parse(f);
  ASSERT_EQ(int8["ops"].size(), learned.size());
  for (const auto& op : int8["ops"])
    EXPECT_EQ(op["input_scale"].get<double>(), learned.at(op["layer"])) << op.dump();
}

TEST(QuantizeCli, QatRefusesMismatchesAndWritesNothing) {
  if (!has_onnx()) GTEST_SKIP() << "this deepcanvas-cli has no ONNX support";
  Tmp t;
  const std::string ck = sample_checkpoint();
  const std::string qat = t.path("qat.safetensors"), out = t.path("out.safetensors");
  const std::string onnx = t.path("m.onnx");
  // Another network: the fp32 checkpoint does not fit it.
  const std::string other =
      project_in(t, replaced(sample_text(), "\"filters\": 32", "\"filters\": 16"));
  expect_refused(cli("train " + other + " --qat --init-weights " + ck + " --checkpoint " + out),
                 out, "conv1.weight");
  expect_refused(cli("train " + kSample + " --qat --checkpoint " + out), out,
                 "train --qat needs --init-weights FP32_CHECKPOINT");
  expect_refused(cli("train " + kSample + " --qat --init-weights " + ck + " --checkpoint " + out +
                     " --device cuda"),
                 out, "runs on the CPU only");
  ASSERT_EQ(cli("train " + kSample + " --qat --init-weights " + ck + " --checkpoint " + qat +
                " --epochs 1 --steps-per-epoch 5 --calibrate 32 --quiet")
                .code,
            0);
  // A QAT checkpoint where an fp32 one is expected, and the other way.
  expect_refused(cli("train " + kSample + " --init-weights " + qat + " --checkpoint " + out), out,
                 "is a quantization-aware (QAT) checkpoint");
  expect_refused(cli("export " + kSample + " --checkpoint " + qat + " -o " + onnx +
                     " --precision int8 --calibration entropy"),
                 onnx, "its int8 ranges are learned and kept");
  // Its network changed since: the tensors no longer fit.
  expect_refused(
      cli("export " + other + " --checkpoint " + qat + " -o " + onnx + " --precision int8"), onnx,
      "conv1.weight");
  // The layers the scales name are not the network's (a Dense renamed,
  // its tensors renamed with it).
  CheckpointInfo info = read_checkpoint(qat);
  auto meta = info.metadata;
  meta["qat"] = replaced(meta["qat"], "\"dense2\"", "\"head\"");
  save_safetensors(t.path("renamed.safetensors"), info.model, meta);
  expect_refused(cli("export " + kSample + " --checkpoint " + t.path("renamed.safetensors") +
                     " -o " + onnx + " --precision int8"),
                 onnx, "learned for another network");
}

}  // namespace
}  // namespace dc::e2e
