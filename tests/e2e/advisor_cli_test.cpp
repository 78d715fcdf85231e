// bench-device, advise and train's peak_tensor_bytes from the command line.
// No timings are checked: the cache is seeded, so nothing is measured.
#include "cli_util.h"

namespace dc::e2e {
namespace {

// A bench-device cache in t holding a made-up entry for this machine under
// the key bench-device uses (CPU model and kernel thread count, which is
// the hardware thread count by default), so nothing is measured.
std::string seeded_cache_env(const Tmp& t) {
  CliRun dev = cli("devices --json");
  EXPECT_EQ(dev.code, 0) << dev.out;
  const auto cpu = last_json_line(dev.out)["cpu"];
  const std::string model = cpu["name"].get<std::string>();
  const int threads = cpu["threads"].get<int>();
  nlohmann::json j;
  j["cpu|" + model + "|" + std::to_string(threads) + "t"] = {{"device", "cpu"},
                                                             {"name", model},
                                                             {"threads", threads},
                                                             {"fp32_gflops", 100.0},
                                                             {"conv_gflops", 50.0},
                                                             {"mem_bandwidth_gbs", 10.0},
                                                             {"step_overhead_s", 1e-4},
                                                             {"depthwise_gflops", 20.0},
                                                             {"depthwise_bwd_gflops", 10.0},
                                                             {"measured_at", "seeded"}};
  fs::create_directories(t.path("cache/DeepCanvas"));
  t.write("cache/DeepCanvas/bench-device.json", j.dump());
  return "XDG_CACHE_HOME=" + t.path("cache") + " XDG_CONFIG_HOME=" + t.path("config") + " ";
}

TEST(Cli, BenchDeviceReusesItsCacheAndRefusesAMissingGpu) {
  Tmp t;
  const std::string env = seeded_cache_env(t);
  CliRun r = cli_command(env + std::string(DC_CLI) + " bench-device --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  for (const char* k : {"fp32_gflops", "conv_gflops", "mem_bandwidth_gbs", "step_overhead_s",
                        "threads", "name", "cached", "cache_file"})
    EXPECT_TRUE(j.contains(k)) << k << ": " << r.out;
  EXPECT_TRUE(j["cached"].get<bool>()) << r.out;
  EXPECT_EQ(j["fp32_gflops"].get<double>(), 100.0);
  EXPECT_NE(j["cache_file"].get<std::string>().find(t.path("cache")), std::string::npos);
  CliRun text = cli_command(env + std::string(DC_CLI) + " bench-device");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("cached"), std::string::npos) << text.out;

  CliRun gpu = cli_command(env + std::string(DC_CLI) + " bench-device --device cuda:7");
  EXPECT_NE(gpu.code, 0);
  EXPECT_NE(gpu.out.find("cuda:7"), std::string::npos) << gpu.out;
  CliRun bad = cli("bench-device --device tpu");
  EXPECT_NE(bad.code, 0);
}

TEST(Cli, AdviseReportsThisMachineAndEveryCatalogGpu) {
  Tmp t;
  const std::string env = seeded_cache_env(t);
  const std::string advise =
      env + std::string(DC_CLI) + " advise " + src("resources/templates/lenet5.dcproj");
  CliRun r = cli_command(advise + " --batch 64 --samples 1000 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  for (const char* k : {"predicted_samples_per_s", "training_bytes", "max_batch"})
    EXPECT_TRUE(j["this_machine"].contains(k)) << k;
  EXPECT_GT(j["this_machine"]["training_bytes"].get<int64_t>(), 0);
  ASSERT_EQ(j["gpus"].size(), 18u);
  for (const auto& g : j["gpus"]) {
    for (const char* k : {"name", "fits", "max_batch", "predicted_samples_per_s", "epoch_seconds",
                          "energy_wh_per_epoch"})
      EXPECT_TRUE(g.contains(k)) << k;
    EXPECT_TRUE(g["fits"].get<bool>()) << g["name"];  // LeNet fits everywhere
  }
  CliRun table = cli_command(advise + " --samples 1000");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("NVIDIA H100 SXM"), std::string::npos) << table.out;

  // A user's row joins the catalog; a bad one is an error naming it.
  fs::create_directories(t.path("config/DeepCanvas"));
  t.write("config/DeepCanvas/gpus.json",
          R"({"gpus": [{"name": "My GPU", "memory_gib": 8, "bandwidth_gbs": 448,
              "fp32_tflops": 10, "tdp_w": 200, "source": "my measurements"}]})");
  CliRun u = cli_command(advise + " --samples 1000 --json");
  ASSERT_EQ(u.code, 0) << u.out;
  EXPECT_EQ(last_json_line(u.out)["gpus"].back()["name"], "My GPU");
  t.write("config/DeepCanvas/gpus.json",
          R"({"gpus": [{"name": "Broken", "memory_gib": 8, "bandwidth_gbs": 448,
              "fp32_tflops": -1, "tdp_w": 200, "source": "x"}]})");
  CliRun b = cli_command(advise + " --samples 1000");
  EXPECT_NE(b.code, 0);
  EXPECT_NE(b.out.find("'Broken'"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("fp32_tflops"), std::string::npos) << b.out;
}

TEST(Cli, AdviseProfileShowsEachLayersMeasuredTimeBesideItsPrediction) {
  Tmp t;
  const std::string env = seeded_cache_env(t);
  const std::string advise = env + std::string(DC_CLI) + " advise " +
                             src("sample_data/sample_project.dcproj") + " --samples 1000";
  CliRun r = cli_command(advise + " --batch 8 --profile --steps 2 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  EXPECT_EQ(j["batch"], 8);
  EXPECT_EQ(j["steps"], 2);
  // conv1 relu1 pool1 conv2 relu2 pool2 flatten dense1 relu3 dense2
  ASSERT_EQ(j["layers"].size(), 10u) << r.out;
  EXPECT_EQ(j["layers"][0]["name"], "conv1");
  for (const auto& l : j["layers"]) {
    // The ReLUs after the convolutions run inside them (fused): no time of
    // their own, measured or predicted.
    if (l["name"] == "relu1" || l["name"] == "relu2") {
      EXPECT_EQ(l["measured_s"].get<double>(), 0) << l;
      EXPECT_EQ(l["predicted_s"].get<double>(), 0) << l;
    } else {
      EXPECT_GT(l["measured_s"].get<double>(), 0) << l;
      EXPECT_GT(l["predicted_s"].get<double>(), 0) << l;
    }
  }
  EXPECT_GT(j["step"]["measured_s"].get<double>(), 0);
  CliRun table = cli_command(advise + " --batch 8 --profile --steps 1");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("conv2"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("(optimizer)"), std::string::npos) << table.out;
  // Token input (an Embedding first) gets valid ids.
  CliRun tokens = cli_command(env + std::string(DC_CLI) + " advise " +
                              src("resources/templates/char_lstm.dcproj") +
                              " --samples 1000 --batch 4 --profile --steps 1 --json");
  ASSERT_EQ(tokens.code, 0) << tokens.out;
  EXPECT_EQ(last_json_line(tokens.out)["layers"][0]["type"], "Embedding");
}

// LeNet-5 trained a few steps on the bundled subset, --json.
CliRun train_lenet(const std::string& flags) {
  return cli("train " + src("resources/templates/lenet5.dcproj") + " --data " +
             src("sample_data/fashion-mnist-subset") + " --batch 32 --json --quiet " + flags);
}

TEST(Cli, TrainJsonReportsPeakTensorBytes) {
  CliRun r = train_lenet("--epochs 1 --steps-per-epoch 2");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  ASSERT_TRUE(j.contains("peak_tensor_bytes"));
  EXPECT_GT(j["peak_tensor_bytes"].get<int64_t>(), 1 << 20);
}

// --test-every: the test set every N steps of the run (across epochs),
// with training seconds that only grow, and the setup time before the run.
TEST(Cli, TrainTestEveryGivesATestCurve) {
  CliRun r = train_lenet("--epochs 2 --steps-per-epoch 4 --test-every 3");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  ASSERT_TRUE(j.contains("test_curve")) << r.out;
  const auto& curve = j["test_curve"];
  ASSERT_EQ(curve.size(), 2u) << curve;  // steps 3 and 6 of 8
  EXPECT_EQ(curve[0]["step"], 3);
  EXPECT_EQ(curve[1]["step"], 6);
  EXPECT_EQ(curve[1]["epoch"], 2);
  EXPECT_GT(curve[1]["train_seconds"].get<double>(), curve[0]["train_seconds"].get<double>());
  EXPECT_GE(curve[0]["run_seconds"].get<double>(), curve[0]["train_seconds"].get<double>());
  EXPECT_GT(j["setup_seconds"].get<double>(), 0);
  CliRun plain = train_lenet("--epochs 1 --steps-per-epoch 2");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_FALSE(last_json_line(plain.out).contains("test_curve"));
}

// advise --data: the GPU rows count the dataset the device keeps (the
// training and test sets), which --samples alone does not read.
TEST(Cli, AdviseDataCountsTheResidentDatasetInTheGpuRows) {
  Tmp t;
  const std::string env = seeded_cache_env(t);
  const std::string advise = env + std::string(DC_CLI) + " advise " +
                             src("resources/templates/lenet5.dcproj") + " --batch 32 --json";
  CliRun bare = cli_command(advise + " --samples 1000");
  CliRun data = cli_command(advise + " --data " + src("sample_data/fashion-mnist-subset"));
  ASSERT_EQ(bare.code, 0) << bare.out;
  ASSERT_EQ(data.code, 0) << data.out;
  const auto b = last_json_line(bare.out)["gpus"][0], d = last_json_line(data.out)["gpus"][0];
  // The subset: 10,000 training and 2,000 test images of 28x28 bytes.
  const int64_t resident = (8 << 20) + 40448 + (2 << 20) + 8192;
  EXPECT_EQ(d["allocator_bytes"].get<int64_t>() - b["allocator_bytes"].get<int64_t>(), resident);
  // The CUDA context is the driver's: in the device total, not the allocator's part.
  EXPECT_EQ(b["training_bytes"].get<int64_t>() - b["allocator_bytes"].get<int64_t>(), int64_t(512)
                                                                                          << 20);
  CliRun missing = cli_command(advise + " --data " + t.path("no-such-folder"));
  EXPECT_NE(missing.code, 0) << missing.out;
}

// The closing diagnosis: the prediction from the (seeded) benchmark beside
// the measured figures, and verdicts from the run's timeline.
TEST(Cli, TrainReportsADiagnosis) {
  Tmp t;
  const std::string env = seeded_cache_env(t);
  const std::string train = env + std::string(DC_CLI) + " train " +
                            src("resources/templates/lenet5.dcproj") + " --data " +
                            src("sample_data/fashion-mnist-subset") +
                            " --epochs 1 --steps-per-epoch 8 --batch 32 --quiet";
  CliRun r = cli_command(train + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  ASSERT_TRUE(j.contains("diagnosis")) << r.out;
  const auto& d = j["diagnosis"];
  EXPECT_TRUE(d["enough_data"].get<bool>()) << d.dump();
  EXPECT_EQ(d["steps"].get<int64_t>(), 7);  // the first step is the warm-up
  EXPECT_GE(d["loader_wait_seconds"].get<double>(), 0);
  EXPECT_GT(d["compute_seconds"].get<double>(), 0);
  ASSERT_FALSE(d["verdicts"].empty()) << d.dump();
  for (const auto& v : d["verdicts"])
    for (const char* k : {"kind", "warning", "verdict", "advice"}) EXPECT_TRUE(v.contains(k)) << k;
  ASSERT_TRUE(d["predicted"].is_object()) << d.dump();
  EXPECT_GT(d["predicted"]["samples_per_s"].get<double>(), 0);
  EXPECT_GT(d["predicted"]["training_bytes"].get<int64_t>(), 0);
  EXPECT_GT(d["measured_peak_bytes"].get<int64_t>(), 0);

  CliRun text = cli_command(train);
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("predicted on this machine"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("diagnosis ("), std::string::npos) << text.out;

  // Without a benchmark there is no prediction, and the note says how to get one.
  const std::string bare = "XDG_CACHE_HOME=" + t.path("empty") + " ";
  CliRun none = cli_command(bare + std::string(DC_CLI) + " train " +
                            src("resources/templates/lenet5.dcproj") + " --data " +
                            src("sample_data/fashion-mnist-subset") +
                            " --epochs 1 --steps-per-epoch 4 --batch 32 --quiet --json");
  ASSERT_EQ(none.code, 0) << none.out;
  const auto n = last_json_line(none.out)["diagnosis"];
  EXPECT_TRUE(n["predicted"].is_null());
  EXPECT_NE(n["note"].get<std::string>().find("bench-device"), std::string::npos) << n.dump();
}

}  // namespace
}  // namespace dc::e2e
