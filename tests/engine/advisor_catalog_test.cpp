// The GPU catalog's validation and the step-time roofline's cost rules.
#include <deepcanvas/advisor/gpu_catalog.h>
#include <deepcanvas/advisor/step_time.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <set>

namespace dc::advisor {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_gpu_catalog(text, "test.json");
  } catch (const IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

const char* kGood =
    R"({"name": "G", "memory_gib": 8, "bandwidth_gbs": 448, "fp32_tflops": 10,
        "tf32_tflops": null, "bf16_tflops": 20, "tdp_w": 200, "source": "s"})";

TEST(GpuCatalog, BundledCatalogHasTheIssuesGpusAndValidates) {
  const auto gpus = parse_gpu_catalog(read_file(bundled_gpu_catalog_path()), "gpus.json");
  std::set<std::string> names;
  for (const GpuSpec& g : gpus) {
    names.insert(g.name);
    EXPECT_FALSE(g.source.empty()) << g.name;
    EXPECT_GT(g.memory_bytes, int64_t(1) << 30) << g.name;
  }
  for (const char* n :
       {"NVIDIA H200 SXM", "NVIDIA H100 SXM", "NVIDIA H100 PCIe", "NVIDIA A100 40GB SXM",
        "NVIDIA A100 80GB SXM", "NVIDIA L40S", "NVIDIA L4", "NVIDIA A10", "NVIDIA T4",
        "NVIDIA V100 SXM2 32GB", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4080",
        "NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3060 12GB", "NVIDIA Jetson AGX Orin 64GB",
        "NVIDIA Jetson Orin Nano 8GB", "AMD Instinct MI300X", "AMD Radeon RX 7900 XTX"})
    EXPECT_TRUE(names.count(n)) << n;
}

TEST(GpuCatalog, BadRowsAreErrorsNamingRowAndField) {
  auto rows = [](const std::string& r) {
    return std::string(R"({"gpus": [)") + kGood + "," + r + "]}";
  };
  EXPECT_EQ(parse_gpu_catalog(std::string(R"({"gpus": [)") + kGood + "]}", "t").size(), 1u);
  std::string e = error_of(rows(R"({"name": "Bad", "memory_gib": 8, "bandwidth_gbs": 448,
      "fp32_tflops": "fast", "tdp_w": 200, "source": "s"})"));
  EXPECT_NE(e.find("test.json"), std::string::npos) << e;
  EXPECT_NE(e.find("row 2 ('Bad')"), std::string::npos) << e;
  EXPECT_NE(e.find("'fp32_tflops'"), std::string::npos) << e;
  e = error_of(rows(R"({"name": "NoMem", "bandwidth_gbs": 448, "fp32_tflops": 1, "tdp_w": 2,
      "source": "s"})"));
  EXPECT_NE(e.find("'memory_gib' is missing"), std::string::npos) << e;
  e = error_of(rows(R"({"name": "TB", "memory_gib": 8, "bandwidth_gbs": 3.35, "fp32_tflops": 1,
      "tdp_w": 2, "source": "s"})"));
  EXPECT_NE(e.find("TB/s"), std::string::npos) << e;
  e = error_of(rows(R"({"name": "G", "memory_gib": 8, "bandwidth_gbs": 448, "fp32_tflops": 1,
      "tdp_w": 2, "source": "s"})"));
  EXPECT_NE(e.find("repeats"), std::string::npos) << e;
  e = error_of(rows(R"({"memory_gib": 8})"));
  EXPECT_NE(e.find("row 2: field 'name' is missing"), std::string::npos) << e;
  e = error_of(rows(R"({"name": "NoSource", "memory_gib": 8, "bandwidth_gbs": 448,
      "fp32_tflops": 1, "tdp_w": 2})"));
  EXPECT_NE(e.find("'source'"), std::string::npos) << e;
  EXPECT_NE(error_of("[1, 2]").find("\"gpus\""), std::string::npos);
  EXPECT_NE(error_of("{not json").find("not valid JSON"), std::string::npos);
}

TEST(GpuCatalog, MatmulRateFallsBackWhenThereIsNoTensorPath) {
  const GpuSpec g = parse_gpu_catalog(std::string(R"({"gpus": [)") + kGood + "]}", "t")[0];
  EXPECT_EQ(g.matmul_tflops(Precision::Fp32), 10);  // CUDA cores: the backend never uses TF32
  EXPECT_EQ(g.matmul_tflops(Precision::Bf16), 20);
  EXPECT_EQ(g.matmul_tflops(Precision::Fp16), 10);  // no FP16 tensor figure
}

TEST(StepTime, FlopsFollowTheCostRules) {
  const Project p = load_project(std::string(DC_SOURCE_DIR) + "/resources/templates/lenet5.dcproj");
  DeviceRates d;
  d.gemm_flops = d.conv_flops = d.rnn_flops = 1e9;
  d.bandwidth = 1e12;  // compute-bound everywhere that has MACs
  const StepTime t = predict_step_time(p.graph, 10, d);
  ASSERT_FALSE(t.layers.empty());
  // Forward 2·MACs; backward 2·MACs for the weight gradient and 2·MACs for
  // the input gradient, which the first layer (fed the batch) does not need.
  const auto steps = lower_graph(p.graph);
  bool first = true;
  for (size_t i = 0, k = 0; i < steps.size(); ++i) {
    if (steps[i].is_input) continue;
    const Cost c = steps[i].desc->cost(steps[i].in_shapes, steps[i].out_shape, steps[i].attrs);
    const LayerTime& l = t.layers[k++];
    if (c.macs == 0) {
      EXPECT_EQ(l.flops, 0) << l.name;
      continue;
    }
    // Pooling has MACs but no weights: no weight-gradient term.
    const int factor = 2 + (c.params > 0 ? 2 : 0) + (first ? 0 : 2);
    EXPECT_EQ(l.flops, double(c.macs) * 10 * factor) << l.name;
    EXPECT_TRUE(l.compute_bound) << l.name;
    first = false;
  }
  EXPECT_GT(t.samples_per_s, 0);
  // Twice the rates, at most twice as fast (the overheads stay).
  DeviceRates d2 = d;
  d2.gemm_flops = d2.conv_flops = d2.rnn_flops = 2e9;
  EXPECT_LE(predict_step_time(p.graph, 10, d2).samples_per_s, 2 * t.samples_per_s + 1e-9);
}

TEST(StepTime, CpuConvolutionCountsItsIm2colColumns) {
  // in [1, 28, 28] -> Conv2D 6 filters 5×5 (LeNet's first) -> Conv2D 1×1
  // (pointwise: no columns) -> Flatten -> Dense 10.
  register_builtin_layers();
  Graph g;
  Attrs in, c5, c1, fc;
  in.set("shape", std::vector<int64_t>{1, 28, 28});
  c5.set("filters", int64_t(6));
  c5.set("kernel", std::vector<int64_t>{5, 5});
  c5.set("padding", std::vector<int64_t>{2, 2});
  c1.set("filters", int64_t(4));
  c1.set("kernel", std::vector<int64_t>{1, 1});
  fc.set("units", int64_t(10));
  const NodeId x = g.add_node("Input", "in", in);
  const NodeId a = g.add_node("Conv2D", "c5", c5);
  const NodeId b = g.add_node("Conv2D", "c1", c1);
  const NodeId f = g.add_node("Flatten", "flat");
  const NodeId d = g.add_node("Dense", "fc", fc);
  g.connect(x, a);
  g.connect(a, b);
  g.connect(b, f);
  g.connect(f, d);
  DeviceRates gpu;
  gpu.gemm_flops = gpu.conv_flops = gpu.rnn_flops = 1e11;
  gpu.bandwidth = 1e10;
  DeviceRates cpu = gpu;
  cpu.im2col_convolutions = true;  // what cpu_rates() sets: the CPU backend
  const int64_t n = 8;
  const StepTime tg = predict_step_time(g, n, gpu), tc = predict_step_time(g, n, cpu);
  // The 5×5 layer: 25·28·28 floats of columns per sample, written and read
  // forward and again for the weight gradient (its input needs no gradient).
  EXPECT_DOUBLE_EQ(tc.layers[0].bytes - tg.layers[0].bytes, double(n) * 25 * 784 * 4 * 4);
  // 6 filters do 3 FLOP per column byte: bound by that traffic, not FLOPs.
  EXPECT_FALSE(tc.layers[0].compute_bound);
  EXPECT_GT(tc.layers[0].seconds, tg.layers[0].seconds);
  // The pointwise convolution reads its input in place.
  EXPECT_DOUBLE_EQ(tc.layers[1].bytes, tg.layers[1].bytes);
}

}  // namespace
}  // namespace dc::advisor
