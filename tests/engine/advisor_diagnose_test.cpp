// The diagnosis from synthetic timelines: each verdict where its evidence
// is, none where it is not (a balanced run raises no alarm), and the
// Trainer's Step events carrying the loader wait it is computed from.
#include "test_util.h"

#include <deepcanvas/advisor/advise.h>
#include <deepcanvas/advisor/diagnose.h>
#include <deepcanvas/advisor/gpu_catalog.h>
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/advisor/run_prediction.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <deepcanvas/parallel.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace dc::advisor {
namespace {

// Steady steps (after a warm-up report the diagnosis leaves out).
std::vector<StepRecord> steady(int n, double wait_s, double compute_s, int util = -1) {
  std::vector<StepRecord> r{{1, 0.5, 0.5, util}};  // warm-up: first batch, first allocations
  for (int i = 0; i < n; ++i) r.push_back({1, wait_s, compute_s, util});
  return r;
}

LayerTime layer(const char* name, const char* type, double busy_s, bool compute,
                double overhead_s = 1e-5) {
  LayerTime l;
  l.name = name;
  l.type = type;
  l.seconds = busy_s + overhead_s;
  l.overhead_s = overhead_s;
  l.compute_bound = compute;
  return l;
}

// A predicted step dominated by a convolution (compute) or by elementwise
// layers (bandwidth), with small fixed costs.
StepTime predicted(bool compute_heavy) {
  StepTime t;
  t.layers.push_back(layer("conv", "Conv2D", compute_heavy ? 0.020 : 0.002, true));
  t.layers.push_back(layer("bn", "BatchNorm", compute_heavy ? 0.002 : 0.015, false));
  t.layers.push_back(layer("relu", "ReLU", compute_heavy ? 0.001 : 0.006, false));
  t.optimizer_s = 0.0005;
  t.overhead_s = 0.0002;
  for (const LayerTime& l : t.layers) t.step_s += l.seconds;
  t.step_s += t.optimizer_s + t.overhead_s;
  return t;
}

DiagnosisInput input(std::vector<StepRecord> steps, bool compute_heavy = true) {
  DiagnosisInput in;
  in.steps = std::move(steps);
  in.predicted = predicted(compute_heavy);
  in.peak_bytes = int64_t(4) << 30;
  in.device_bytes = int64_t(16) << 30;
  in.batch = 64;
  return in;
}

TEST(Diagnose, ABalancedRunRaisesNoAlarm) {
  const Diagnosis d = diagnose(input(steady(20, 0.0002, 0.025)));
  ASSERT_TRUE(d.enough_data);
  EXPECT_EQ(d.steps, 20);
  EXPECT_FALSE(d.any_warning()) << d.text();
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, Bottleneck::ComputeBound);
  EXPECT_NE(d.findings[0].verdict.find("Conv2D 'conv'"), std::string::npos);
  EXPECT_NEAR(d.step_s, 0.0252, 1e-9);
}

TEST(Diagnose, TheLoaderMakingStepsWaitIsInputBoundWithHowLong) {
  const Diagnosis d = diagnose(input(steady(10, 0.012, 0.018)));
  ASSERT_TRUE(d.has(Bottleneck::InputBound)) << d.text();
  EXPECT_EQ(d.findings[0].kind, Bottleneck::InputBound);  // warnings first
  EXPECT_TRUE(d.findings[0].warning);
  EXPECT_NEAR(d.wait_share, 0.4, 1e-9);
  EXPECT_NE(d.findings[0].verdict.find("12.0 ms"), std::string::npos) << d.findings[0].verdict;
  EXPECT_NE(d.findings[0].verdict.find("40 %"), std::string::npos) << d.findings[0].verdict;
  EXPECT_NE(d.findings[0].advice.find("loader threads"), std::string::npos);
  // Just under the threshold it is not.
  EXPECT_FALSE(diagnose(input(steady(10, 0.0028, 0.0172))).has(Bottleneck::InputBound));
}

TEST(Diagnose, TheWarmUpReportIsLeftOut) {
  // The first report waited for the loader's first batch; the rest did not.
  std::vector<StepRecord> r = steady(10, 0.0001, 0.02);
  r[0] = {1, 2.0, 0.02, -1};
  EXPECT_FALSE(diagnose(input(r)).has(Bottleneck::InputBound));
}

TEST(Diagnose, ComputeOrBandwidthFollowsTheRooflinesSplit) {
  const Diagnosis c = diagnose(input(steady(5, 0, 0.02), true));
  EXPECT_TRUE(c.has(Bottleneck::ComputeBound));
  EXPECT_FALSE(c.has(Bottleneck::BandwidthBound));
  DiagnosisInput in = input(steady(5, 0, 0.02), false);
  in.gpu = true;
  const Diagnosis b = diagnose(in);
  ASSERT_TRUE(b.has(Bottleneck::BandwidthBound)) << b.text();
  EXPECT_FALSE(b.has(Bottleneck::ComputeBound));
  EXPECT_FALSE(b.any_warning());
  EXPECT_NE(b.findings.back().advice.find("bf16"), std::string::npos);
  // A GPU run already in bf16 is not told to switch to it.
  in.precision = Precision::Bf16;
  EXPECT_EQ(diagnose(in).findings.back().advice.find("Train in bf16"), std::string::npos);
}

TEST(Diagnose, APeakCloseToTheDevicesMemoryIsNearOutOfMemory) {
  DiagnosisInput in = input(steady(5, 0, 0.02));
  in.peak_bytes = int64_t(15) << 30;  // 94 % of 16 GiB
  const Diagnosis d = diagnose(in);
  ASSERT_TRUE(d.has(Bottleneck::NearOutOfMemory)) << d.text();
  EXPECT_NE(d.findings[0].verdict.find("94 %"), std::string::npos) << d.findings[0].verdict;
  in.peak_bytes = int64_t(13) << 30;  // 81 %
  EXPECT_FALSE(diagnose(in).has(Bottleneck::NearOutOfMemory));
  in.device_bytes = 0;  // unknown: no verdict either way
  in.peak_bytes = int64_t(15) << 30;
  EXPECT_FALSE(diagnose(in).has(Bottleneck::NearOutOfMemory));
}

TEST(Diagnose, AnIdleGpuBetweenKernelsIsHostLaunchBound) {
  DiagnosisInput in = input(steady(8, 0.0001, 0.004, 35));
  in.gpu = true;
  const Diagnosis d = diagnose(in);
  ASSERT_TRUE(d.has(Bottleneck::HostLaunchBound)) << d.text();
  EXPECT_NEAR(d.gpu_util_pct, 35, 1e-9);
  EXPECT_NE(d.findings[0].advice.find("CUDA graphs"), std::string::npos);
  // A busy GPU is not.
  in.steps = steady(8, 0.0001, 0.004, 97);
  EXPECT_FALSE(diagnose(in).has(Bottleneck::HostLaunchBound));
  // An idle GPU waiting for the loader is the loader's fault.
  in.steps = steady(8, 0.004, 0.004, 35);
  const Diagnosis starved = diagnose(in);
  EXPECT_TRUE(starved.has(Bottleneck::InputBound));
  EXPECT_FALSE(starved.has(Bottleneck::HostLaunchBound));
}

TEST(Diagnose, FixedCostsDominatingThePredictionIsOverheadBoundOnTheCpu) {
  DiagnosisInput in = input(steady(5, 0, 0.001));
  in.predicted = StepTime{};
  in.predicted.layers = {layer("d1", "Dense", 1e-5, true, 2e-4),
                         layer("d2", "Dense", 1e-5, true, 2e-4)};
  in.predicted.overhead_s = 3e-4;
  in.predicted.step_s = 2 * 2.1e-4 + 3e-4;
  const Diagnosis d = diagnose(in);
  ASSERT_TRUE(d.has(Bottleneck::HostLaunchBound)) << d.text();
  EXPECT_NE(d.findings[0].verdict.find("overhead-bound"), std::string::npos);
  EXPECT_NE(d.findings[0].advice.find("larger batch"), std::string::npos);
  EXPECT_TRUE(d.prediction_note.empty());
  // Steps 5x faster than predicted: the benchmark was taken under other
  // load, so its fixed costs say nothing about this run.
  in.steps = steady(5, 0, in.predicted.step_s / 5);
  const Diagnosis stale = diagnose(in);
  EXPECT_FALSE(stale.has(Bottleneck::HostLaunchBound)) << stale.text();
  EXPECT_NE(stale.prediction_note.find("0.20×"), std::string::npos) << stale.prediction_note;
  EXPECT_NE(stale.text().find("re-measure"), std::string::npos);
}

TEST(Diagnose, TooFewStepsGiveNoVerdict) {
  const Diagnosis d = diagnose(input(steady(2, 0.5, 0.01)));
  EXPECT_FALSE(d.enough_data);
  EXPECT_TRUE(d.findings.empty());
  EXPECT_NE(d.text().find("collecting"), std::string::npos);
}

TEST(Diagnose, TimelineTakesStepAndTelemetryEvents) {
  DiagnosisInput base = input({});
  base.gpu = true;
  base.device_bytes = 0;
  base.peak_bytes = -1;
  Timeline t(base);
  TrainEvent tel;
  tel.kind = TrainEvent::Kind::Telemetry;
  tel.gpu.utilization_pct = 20;
  tel.gpu.memory_used = int64_t(78) << 30;
  tel.gpu.memory_total = int64_t(80) << 30;
  t.add(tel);
  for (int i = 0; i < 6; ++i) {
    TrainEvent s;
    s.kind = TrainEvent::Kind::Step;
    s.steps_in_report = 25;
    s.loader_wait_s = 0;
    s.compute_s = 0.003;
    t.add(s);
  }
  const Diagnosis d = t.diagnose();
  EXPECT_EQ(d.steps, 125);  // the first report is the warm-up
  EXPECT_TRUE(d.has(Bottleneck::NearOutOfMemory)) << d.text();
  EXPECT_TRUE(d.has(Bottleneck::HostLaunchBound)) << d.text();
}

TEST(RunPrediction, GpuNamesMatchTheirCatalogRow) {
  const std::vector<GpuSpec> cat = load_gpu_catalog();
  auto name = [&](const std::string& reported, int64_t gib) {
    const int i = match_gpu(cat, reported, gib << 30);
    return i < 0 ? std::string("none") : cat[size_t(i)].name;
  };
  EXPECT_EQ(name("NVIDIA H100 80GB HBM3", 80), "NVIDIA H100 SXM");
  EXPECT_EQ(name("NVIDIA H100 PCIe", 80), "NVIDIA H100 PCIe");
  EXPECT_EQ(name("NVIDIA H200", 141), "NVIDIA H200 SXM");
  EXPECT_EQ(name("NVIDIA GeForce RTX 4090", 24), "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(name("NVIDIA A100-SXM4-80GB", 80), "NVIDIA A100 80GB SXM");
  EXPECT_EQ(name("Intel Arc A770", 16), "none");
}

using test::ScratchXdg;

// threads 0 means "the hardware count" to a run, whatever the last Trainer
// (say a parallel sweep's trial) left in num_threads().
TEST(RunPrediction, ThreadsZeroUsesTheHardwareCountNotTheLastRunsSetting) {
  ScratchXdg cache("XDG_CACHE_HOME");  // no benchmark: why names the count
  const int before = num_threads();
  set_num_threads(1);
  TrainConfig c;
  c.threads = 0;
  const RunPrediction r = predict_run(test::quadrant_mlp(), c);
  set_num_threads(before);
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(resolved_threads(0), hw);
  EXPECT_EQ(resolved_threads(3), 3);
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.why.find("at " + std::to_string(hw) + " threads"), std::string::npos) << r.why;
}

// A GPU run's predicted memory is the plugin allocator's part (no CUDA
// context, which the measured peak_device_bytes never sees) and counts the
// datasets the device trainer keeps resident.
TEST(RunPrediction, AGpuRunsMemoryIsTheAllocatorsPartWithTheResidentData) {
  ScratchXdg config("XDG_CONFIG_HOME");  // the bundled catalog only
  TrainConfig c;
  c.device.cuda = true;
  const Graph g = test::quadrant_mlp();
  const RunPrediction bare = predict_run(g, c, "NVIDIA H100 80GB HBM3", int64_t(80) << 30);
  const int64_t resident = cuda_resident_bytes(60000, 784, true);
  const RunPrediction with_data =
      predict_run(g, c, "NVIDIA H100 80GB HBM3", int64_t(80) << 30, resident);
  ASSERT_TRUE(bare.available) << bare.why;
  EXPECT_EQ(with_data.memory_bytes - bare.memory_bytes, resident);
  MemoryOptions mo;
  mo.backend = Backend::Cuda;
  mo.batch = c.batch;
  mo.optimizer = c.optimizer;
  const MemoryPrediction m = predict_memory(g, mo);
  EXPECT_EQ(bare.memory_bytes, m.allocator);
  EXPECT_EQ(m.total - m.allocator, m.context);
}

// A GPU measured here (bench-device --device cuda:N's cached figures) is
// predicted from its measurement: the H100's own figures give its catalog
// prediction (the efficiencies are re-based on that measurement), slower
// figures a slower step.
TEST(RunPrediction, AGpuWithItsOwnBenchmarkIsPredictedFromIt) {
  ScratchXdg config("XDG_CONFIG_HOME");
  ScratchXdg cache("XDG_CACHE_HOME");
  TrainConfig c;
  c.device.cuda = true;
  const Graph g = test::quadrant_mlp();
  const std::string name = "NVIDIA H100 80GB HBM3";
  const int64_t bytes = int64_t(80) << 30;
  const RunPrediction catalog = predict_run(g, c, name, bytes);
  ASSERT_TRUE(catalog.available) << catalog.why;
  EXPECT_NE(catalog.device.find("catalog estimate"), std::string::npos) << catalog.device;
  DeviceBench b;
  b.device = "cuda:0";
  b.name = name;
  b.fp32_gflops = 51736.0;
  b.bf16_gflops = 893765.4;
  b.fp16_gflops = 900424.3;
  b.mem_bandwidth_gbs = 3008.9;
  store_cached_bench(gpu_bench_key(0, name), b);
  const RunPrediction here = predict_run(g, c, name, bytes);
  EXPECT_NE(here.device.find("measured here"), std::string::npos) << here.device;
  EXPECT_NEAR(here.step.step_s, catalog.step.step_s, 1e-9 * catalog.step.step_s);
  b.fp32_gflops /= 4;
  b.mem_bandwidth_gbs /= 4;
  store_cached_bench(gpu_bench_key(0, name), b);
  EXPECT_GT(predict_run(g, c, name, bytes).step.step_s, here.step.step_s);
}

// advise(): a GPU of this machine that bench-device measured gets its own
// row before the catalog's, predicted from its figures (for the H100's own
// measurement, the same as its catalog row), with the catalog row's TDP.
TEST(Advise, AMeasuredGpuHereGetsARowFromItsOwnFigures) {
  Project p;
  p.graph = test::quadrant_mlp();
  const std::vector<GpuSpec> catalog = parse_gpu_catalog(
      R"({"gpus": [{"name": "NVIDIA H100 SXM", "vendor": "NVIDIA", "memory_gib": 80,
          "bandwidth_gbs": 3350, "fp32_tflops": 67, "bf16_tflops": 989.5,
          "fp16_tflops": 989.5, "tdp_w": 700, "source": "datasheet"}]})",
      "test catalog");
  MeasuredGpu m;
  m.bench.device = "cuda:0";
  m.bench.name = "NVIDIA H100 80GB HBM3";
  m.bench.fp32_gflops = 51736.0;
  m.bench.bf16_gflops = 893765.4;
  m.bench.fp16_gflops = 900424.3;
  m.bench.mem_bandwidth_gbs = 3008.9;
  m.memory_bytes = int64_t(80) << 30;
  const Advice a = advise(p, 64, Precision::Fp32, 60000, DeviceBench{}, catalog, 0, {m});
  ASSERT_EQ(a.gpus.size(), 2u);
  EXPECT_EQ(a.gpus[0].name, "NVIDIA H100 80GB HBM3 (measured here)");
  EXPECT_EQ(a.gpus[1].name, "NVIDIA H100 SXM");
  EXPECT_NEAR(a.gpus[0].samples_per_s, a.gpus[1].samples_per_s, 1e-9 * a.gpus[1].samples_per_s);
  EXPECT_EQ(a.gpus[0].tdp_w, 700);
  EXPECT_EQ(a.gpus[0].memory_bytes, int64_t(80) << 30);
  m.bench.fp32_gflops /= 4;
  m.bench.mem_bandwidth_gbs /= 4;
  const Advice slow = advise(p, 64, Precision::Fp32, 60000, DeviceBench{}, catalog, 0, {m});
  EXPECT_LT(slow.gpus[0].samples_per_s, a.gpus[0].samples_per_s);
}

// A CPU benchmark cached before the depthwise rates were measured is
// measured again once (its figures then include them, and survive the
// cache), rather than leaving depthwise layers to the convolution rate.
TEST(DeviceBench, ACpuEntryWithoutDepthwiseRatesIsMeasuredAgainOnce) {
  ScratchXdg cache("XDG_CACHE_HOME");
  DeviceBench old_entry;
  old_entry.device = "cpu";
  old_entry.name = cpu_model_name();
  old_entry.threads = num_threads();
  old_entry.fp32_gflops = old_entry.conv_gflops = 1;
  old_entry.mem_bandwidth_gbs = 1;
  store_cached_bench(bench_key("cpu", old_entry.name, old_entry.threads), old_entry);
  bool cached = true;
  const DeviceBench fresh = cpu_bench(false, &cached);
  EXPECT_FALSE(cached);
  EXPECT_GT(fresh.depthwise_gflops, 0);
  EXPECT_GT(fresh.depthwise_bwd_gflops, 0);
  const DeviceBench again = cpu_bench(false, &cached);
  EXPECT_TRUE(cached);
  EXPECT_EQ(again.depthwise_gflops, fresh.depthwise_gflops);
  EXPECT_EQ(again.depthwise_bwd_gflops, fresh.depthwise_bwd_gflops);
}

// A malformed user GPU catalog costs the prediction, not the run.
TEST(RunPrediction, AMalformedUserCatalogIsAReasonNotAnException) {
  ScratchXdg config("XDG_CONFIG_HOME");
  const std::filesystem::path user = user_gpu_catalog_path();
  ASSERT_EQ(user.string().rfind(config.dir().string(), 0), 0u) << user;
  std::filesystem::create_directories(user.parent_path());
  {
    std::ofstream f(user);
    f << "{ this is not json";
  }
  TrainConfig c;
  c.device.cuda = true;
  RunPrediction r;
  EXPECT_NO_THROW(
      r = predict_run(test::quadrant_mlp(), c, "NVIDIA H100 80GB HBM3", int64_t(80) << 30));
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.why.find(user.string() + ": not valid JSON"), std::string::npos) << r.why;
}

}  // namespace
}  // namespace dc::advisor

namespace dc {
namespace {

// The Step event's timing fields from a real run: one step per CPU report,
// a loader wait and a compute time that are disjoint parts of the run (they
// add up to no more than its elapsed time), and a pause that is neither:
// the trainer checks for a pause after taking the batch, and a 1.5 s pause
// must not show up as waiting for the loader. (In-memory data on the CPU
// never starves the step: converting a pixel costs far less than training
// on it, so the input-bound verdict is tested on synthetic timelines.)
TEST(Trainer, StepEventsTimeTheLoaderWaitAndTheStepApart) {
  TrainConfig c;
  c.epochs = 200;
  c.batch = 32;
  c.threads = 2;
  Trainer t(test::quadrant_mlp(), c, std::make_shared<Dataset>(test::quadrant_toy(512, 1)),
            nullptr);
  t.start();
  std::vector<TrainEvent> steps;
  auto until = [&](TrainEvent::Kind k, size_t min_steps) {
    for (;;) {
      auto e = t.events().pop(std::chrono::milliseconds(60000));
      if (!e) return false;
      if (e->kind == TrainEvent::Kind::Step) steps.push_back(*e);
      if (e->kind == k && steps.size() >= min_steps) return true;
    }
  };
  ASSERT_TRUE(until(TrainEvent::Kind::Step, 5));
  t.pause();
  ASSERT_TRUE(until(TrainEvent::Kind::Paused, 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  t.resume();
  ASSERT_TRUE(until(TrainEvent::Kind::Step, steps.size() + 5));
  t.cancel();
  t.wait();
  double wait = 0, compute = 0;
  for (const TrainEvent& e : steps) {
    EXPECT_EQ(e.steps_in_report, 1);
    EXPECT_GE(e.loader_wait_s, 0);
    EXPECT_GT(e.compute_s, 0);
    EXPECT_LT(e.loader_wait_s, 1.0) << "step " << e.step << ": the pause counted as a wait";
    EXPECT_LT(e.compute_s, 1.0) << "step " << e.step << ": the pause counted as compute";
    EXPECT_GT(e.peak_tensor_bytes, 0);
    wait += e.loader_wait_s;
    compute += e.compute_s;
  }
  EXPECT_LE(wait + compute, steps.back().elapsed_s);
}

}  // namespace
}  // namespace dc
