// deepcanvas-cli's int8 inference: export --precision int8 writes the
// engine's .int8.json beside the .onnx, run and predict take it with
// --int8, and a file for other weights is refused with the reason.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/npy.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "cli_util.h"

namespace dc::e2e {
namespace {

TEST(Int8Cli, ExportWritesTheInt8FileAndRunAndPredictUseIt) {
  if (cli("export " + kSample + " -o /dev/null/x.onnx").out.find("no ONNX support") !=
      std::string::npos)
    GTEST_SKIP() << "this deepcanvas-cli has no ONNX support (export --precision int8 needs it)";
  Tmp t;
  const std::string ck = t.path("sample.safetensors");
  CliRun r =
      cli("train " + kSample + " --epochs 1 --steps-per-epoch 30 --quiet --checkpoint " + ck);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string onnx = t.path("m.onnx"), q = t.path("m.int8.json");
  r = cli("export " + kSample + " --checkpoint " + ck + " -o " + onnx +
          " --precision int8 --calibrate 64 --max-drop 100 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out)["int8_file"], q);
  ASSERT_TRUE(fs::exists(q));

  Rng rng(3);
  Tensor x(Shape{5, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-1.f, 2.f);
  save_npy(t.path("x.npy"), x);
  r = cli("run " + kSample + " --checkpoint " + ck + " --int8 " + q + " --input " +
          t.path("x.npy") + " --output " + t.path("y8.npy") + " --batch 2 --json");
  if (r.out.find("int8 inference needs oneDNN") != std::string::npos)
    GTEST_SKIP() << "this deepcanvas-cli has no oneDNN: " << r.out;
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  EXPECT_EQ(j["precision"], "int8");
  EXPECT_EQ(j["int8_kernels"].size(), 4u) << r.out;  // conv1, conv2, fc1, fc2
  r = cli("run " + kSample + " --checkpoint " + ck + " --input " + t.path("x.npy") + " --output " +
          t.path("y32.npy") + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out)["precision"], "fp32");
  const NpyArray y8 = load_npy(t.path("y8.npy")), y32 = load_npy(t.path("y32.npy"));
  ASSERT_EQ(y8.data.shape().dims(), (std::vector<int64_t>{5, 10}));
  ASSERT_EQ(y32.data.shape().dims(), y8.data.shape().dims());
  double diff = 0, mag = 0;
  for (int64_t i = 0; i < y8.data.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(y8.data.f32()[i]));
    diff = std::max(diff, double(std::fabs(y8.data.f32()[i] - y32.data.f32()[i])));
    mag = std::max(mag, double(std::fabs(y32.data.f32()[i])));
  }
  // int8 is an approximation of fp32, not another network.
  EXPECT_LT(diff, 0.5 * mag + 0.5) << "max |int8 - fp32| " << diff << " of " << mag;

  r = cli("predict " + kSample + " --checkpoint " + ck + " --int8 " + q + " --index 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("test sample 3 (true class: "), std::string::npos) << r.out;

  // A file whose fingerprint is not these weights'.
  std::string text = read_file(q);
  const size_t at = text.find("\"weights_fnv1a\": \"");
  ASSERT_NE(at, std::string::npos);
  text[at + 18] = text[at + 18] == '0' ? '1' : '0';
  write_file_atomic(t.path("other.int8.json"), text);
  r = cli("run " + kSample + " --checkpoint " + ck + " --int8 " + t.path("other.int8.json") +
          " --input " + t.path("x.npy") + " --output " + t.path("y.npy"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("was calibrated with other weights than these"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(t.path("y.npy")));
}

}  // namespace
}  // namespace dc::e2e
