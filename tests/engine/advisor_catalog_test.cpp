// The GPU catalog's validation and the step-time roofline's cost rules.
#include <deepcanvas/advisor/device_bench.h>
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

// Runs fn with convolutions on oneDNN's kernels (onednn) or on im2col and
// the depthwise kernels, as the layers would run; false when this build
// cannot.
template <class F>
bool with_conv_path(bool onednn, F fn) {
  const bool saved = cpu_conv_onednn();
  set_cpu_conv_onednn(onednn);
  const bool ran = cpu_conv_onednn() == onednn;
  if (ran) fn();
  set_cpu_conv_onednn(saved);
  return ran;
}

TEST(StepTime, CpuConvolutionCountsItsIm2colColumns) {
  // in [1, 28, 28] -> Conv2D 6 filters 5×5 (LeNet's first) -> Conv2D 1×1
  // (pointwise: no columns) -> Flatten -> Dense 10.
  register_builtin_layers();
  ASSERT_TRUE(with_conv_path(false, [] {
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
  }));
}

TEST(StepTime, RecurrentLayersCountBackpropagationThroughTime) {
  // SequenceInput [T 10, F 6] -> LSTM H 8 (2 layers) -> Dense 3; and the
  // same LSTM fed by another LSTM's sequence of 6 (its input then needs a
  // gradient).
  register_builtin_layers();
  auto net = [](bool dense_first) {
    Graph g;
    Attrs in, lstm, fc, pre;
    in.set("steps", int64_t(10));
    in.set("features", int64_t(6));
    lstm.set("hidden_size", int64_t(8));
    lstm.set("num_layers", int64_t(2));
    fc.set("units", int64_t(3));
    NodeId prev = g.add_node("SequenceInput", "in", in);
    if (dense_first) {
      pre.set("hidden_size", int64_t(6));
      pre.set("return_sequences", true);
      const NodeId d = g.add_node("LSTM", "pre", pre);
      g.connect(prev, d);
      prev = d;
    }
    const NodeId l = g.add_node("LSTM", "lstm", lstm);
    const NodeId f = g.add_node("Dense", "fc", fc);
    g.connect(prev, l);
    g.connect(l, f);
    return g;
  };
  DeviceRates r;
  r.gemm_flops = r.conv_flops = r.rnn_flops = 1e11;
  r.bandwidth = 1e10;
  const int64_t n = 4;
  const double tgh = 10 * 4 * 8;  // T·G·H
  // Layer 1 (input 6): forward 2·tgh·14, weights 2·tgh·14, hidden state
  // 2·tgh·8, no input gradient; layer 2 (input 8): the same with 16 and
  // its input's gradient 2·tgh·8.
  const double first = 2 * tgh * 14 * 2 + 2 * tgh * 8;
  const double second = 2 * tgh * 16 * 2 + 2 * tgh * 8 + 2 * tgh * 8;
  const StepTime a = predict_step_time(net(false), n, r);
  EXPECT_DOUBLE_EQ(a.layers[0].flops, n * (first + second));
  // Fed by a trainable layer, its first layer adds its input's gradient.
  const StepTime b = predict_step_time(net(true), n, r);
  EXPECT_DOUBLE_EQ(b.layers[1].flops, n * (first + 2 * tgh * 6 + second));
}

TEST(StepTime, BatchNormAndDropoutCountTheirPasses) {
  // Dense 16 -> BatchNorm1D -> Dropout -> Dense 2, on [8] inputs.
  register_builtin_layers();
  Graph g;
  Attrs in, h, o;
  in.set("shape", std::vector<int64_t>{8});
  h.set("units", int64_t(16));
  o.set("units", int64_t(2));
  const NodeId x = g.add_node("Input", "in", in);
  const NodeId d = g.add_node("Dense", "h", h);
  const NodeId bn = g.add_node("BatchNorm1D", "bn");
  const NodeId dr = g.add_node("Dropout", "drop");
  const NodeId y = g.add_node("Dense", "out", o);
  g.connect(x, d);
  g.connect(d, bn);
  g.connect(bn, dr);
  g.connect(dr, y);
  DeviceRates r;
  r.gemm_flops = 1e11;
  r.bandwidth = 1e10;
  const int64_t n = 32;
  const StepTime t = predict_step_time(g, n, r);
  const double act = double(n) * 16 * 4;
  // BatchNorm: 4 passes forward, 6 backward, and its 32 parameters.
  EXPECT_DOUBLE_EQ(t.layers[1].bytes, 10 * act + 32 * 4 * 4);
  // Dropout: x, y, mask forward; dy, mask and dx read and written backward.
  EXPECT_DOUBLE_EQ(t.layers[2].bytes, 7 * act);
}

TEST(DeviceBench, BandwidthIsTheMedianOfTheLastFiveMeasurements) {
  // One triad on a shared host can read half or twice the usual figure; the
  // figure the predictions use is the median of the machine's last five.
  DeviceBench first;
  first.mem_bandwidth_gbs = 50;
  merge_bandwidth_samples(nullptr, first);
  EXPECT_EQ(first.mem_bandwidth_gbs, 50);
  EXPECT_EQ(first.mem_bandwidth_samples, std::vector<double>{50});
  DeviceBench prev = first;
  for (double v : {30.0, 52.0, 89.0, 48.0, 51.0}) {
    DeviceBench next;
    next.mem_bandwidth_gbs = v;
    merge_bandwidth_samples(&prev, next);
    prev = next;
  }
  // 50 dropped out (oldest); median of 30, 52, 89, 48, 51.
  EXPECT_EQ(prev.mem_bandwidth_samples, (std::vector<double>{30, 52, 89, 48, 51}));
  EXPECT_EQ(prev.mem_bandwidth_gbs, 51);
  // Two samples: their mean. A cache entry written before samples were
  // kept counts with its one figure.
  DeviceBench old_entry;
  old_entry.mem_bandwidth_gbs = 40;
  DeviceBench fresh;
  fresh.mem_bandwidth_gbs = 60;
  merge_bandwidth_samples(&old_entry, fresh);
  EXPECT_EQ(fresh.mem_bandwidth_gbs, 50);
  // Samples survive the cache's JSON.
  const DeviceBench back = bench_from_json(bench_to_json(prev));
  EXPECT_EQ(back.mem_bandwidth_samples, prev.mem_bandwidth_samples);
  EXPECT_EQ(back.mem_bandwidth_gbs, 51);
}

// in [4, 12, 12] -> Conv2D 8 -> [ReLU6] -> depthwise Conv2D 8 -> [ReLU] ->
// Flatten -> Dense 10, with the two activations when asked: a base of a
// convolution and a depthwise one, and a head.
struct ConvDwHead {
  Graph g;
  NodeId conv = -1, dw = -1, fc = -1;
};
ConvDwHead conv_dw_head(bool activations) {
  register_builtin_layers();
  ConvDwHead h;
  Attrs in, conv, dw, fc;
  in.set("shape", std::vector<int64_t>{4, 12, 12});
  conv.set("filters", int64_t(8));
  conv.set("padding", std::vector<int64_t>{1, 1});
  dw = conv;
  dw.set("groups", int64_t(8));
  fc.set("units", int64_t(10));
  NodeId prev = h.g.add_node("Input", "in", in);
  auto add = [&](const char* type, const char* name, const Attrs& a = {}) {
    const NodeId id = h.g.add_node(type, name, a);
    h.g.connect(prev, id);
    prev = id;
    return id;
  };
  h.conv = add("Conv2D", "conv", conv);
  if (activations) add("ReLU6", "relu6");
  h.dw = add("Conv2D", "dw", dw);
  if (activations) add("ReLU", "relu");
  add("Flatten", "flat");
  h.fc = add("Dense", "fc", fc);
  return h;
}

TEST(StepTime, FrozenLayersAndFusedActivations) {
  // A frozen base with a new head.
  ConvDwHead h = conv_dw_head(true);
  Graph& g = h.g;
  const NodeId a = h.conv, b = h.dw;
  DeviceRates gpu;
  gpu.gemm_flops = gpu.conv_flops = gpu.rnn_flops = 1e11;
  gpu.bandwidth = 1e10;
  DeviceRates cpu = gpu;
  cpu.im2col_convolutions = true;
  const int64_t n = 8;
  const StepTime trainable_gpu = predict_step_time(g, n, gpu);
  g.set_trainable(a, false);
  g.set_trainable(b, false);
  const StepTime tg = predict_step_time(g, n, gpu), tc = predict_step_time(g, n, cpu);
  // The frozen prefix runs forward only: 2·MACs, no weight or input gradient.
  EXPECT_DOUBLE_EQ(tg.layers[0].flops, 2.0 * n * 8 * 144 * 4 * 9);
  EXPECT_DOUBLE_EQ(tg.layers[2].flops, 2.0 * n * 8 * 144 * 9);
  EXPECT_LT(tg.layers[0].flops, trainable_gpu.layers[0].flops);
  // The head: forward and its weight gradient; its input needs none.
  EXPECT_DOUBLE_EQ(tg.layers[5].flops, 4.0 * n * 1152 * 10);
  // Only the head's weights are stepped by the optimizer.
  EXPECT_LT(tg.optimizer_s, trainable_gpu.optimizer_s);
  // The ReLU6 and the ReLU run inside the convolutions before them: on
  // the CPU on each sample's output while it is in cache, on the GPU in the
  // convolution's bias pass (relu_fusions).
  EXPECT_EQ(tc.layers[1].seconds, 0);
  EXPECT_EQ(tc.layers[3].seconds, 0);
  EXPECT_EQ(tg.layers[1].seconds, 0);
  EXPECT_EQ(tg.layers[3].seconds, 0);
  // Unfused, after a Dense, an activation is a pass of its own on both.
  Graph dense_relu = g;
  const NodeId act = dense_relu.add_node("ReLU", "after_fc");
  dense_relu.connect(h.fc, act);
  for (const DeviceRates* d : {&gpu, &cpu})
    EXPECT_GT(predict_step_time(dense_relu, n, *d).layers.back().seconds, 0);
  // The depthwise convolution moves nothing extra on its own kernel, and
  // x and y reordered on oneDNN's (forward only: frozen); the other moves
  // columns or oneDNN's reorders.
  const double dw_bytes = 8.0 * 144 * 4;
  EXPECT_DOUBLE_EQ(tc.layers[2].bytes - tg.layers[2].bytes,
                   cpu_conv_onednn() ? double(n) * 2 * (dw_bytes + dw_bytes) : 0.0);
  EXPECT_GT(tc.layers[0].bytes, tg.layers[0].bytes);
}

TEST(StepTime, CpuConvolutionOnOneDnnCountsItsReorders) {
  // The dense convolution of in [4, 12, 12] -> Conv2D 8 filters 3×3:
  // x and y reordered forward, the output gradient backward (the network
  // input needs no gradient).
  const bool ran = with_conv_path(true, [] {
    ConvDwHead h = conv_dw_head(false);
    DeviceRates gpu;
    gpu.gemm_flops = gpu.conv_flops = gpu.rnn_flops = 1e11;
    gpu.bandwidth = 1e10;
    DeviceRates cpu = gpu;
    cpu.im2col_convolutions = true;
    const int64_t n = 8;
    const StepTime tg = predict_step_time(h.g, n, gpu), tc = predict_step_time(h.g, n, cpu);
    const double in_bytes = 4.0 * 144 * 4, out_bytes = 8.0 * 144 * 4;
    EXPECT_DOUBLE_EQ(tc.layers[0].bytes - tg.layers[0].bytes,
                     double(n) * 2 * (in_bytes + 2 * out_bytes));
  });
  if (!ran) GTEST_SKIP() << "this build has no oneDNN";
}

// The CPU's depthwise kernel at its own measured rates: forward at
// depthwise_flops, each backward gradient (weights, input) at
// depthwise_bwd_flops; without them (a GPU, an old cache) the convolution
// rate as before.
TEST(StepTime, DepthwiseConvolutionsUseTheirOwnRatesOnTheCpu) {
  ConvDwHead h = conv_dw_head(false);
  Graph& g = h.g;
  const NodeId a = h.conv, b = h.dw;
  DeviceRates r;
  r.gemm_flops = r.conv_flops = r.rnn_flops = 1e11;
  r.bandwidth = 1e15;  // compute-bound
  const int64_t n = 4;
  const double macs = double(n) * 8 * 144 * 9;
  const StepTime generic = predict_step_time(g, n, r);
  EXPECT_DOUBLE_EQ(generic.layers[1].seconds, 6 * macs / 1e11);
  r.depthwise_flops = 1e9;
  r.depthwise_bwd_flops = 5e8;
  // Trainable, after a trainable layer: forward, weight and input gradients.
  EXPECT_DOUBLE_EQ(predict_step_time(g, n, r).layers[1].seconds, 2 * macs / 1e9 + 4 * macs / 5e8);
  // Frozen behind a frozen prefix: forward only.
  g.set_trainable(a, false);
  g.set_trainable(b, false);
  EXPECT_DOUBLE_EQ(predict_step_time(g, n, r).layers[1].seconds, 2 * macs / 1e9);
  // The other convolution keeps the convolution rate.
  EXPECT_DOUBLE_EQ(predict_step_time(g, n, r).layers[0].seconds, 2 * macs * 4 / 1e11);
}

// bf16/fp16 on the GPU: a Conv2D on cuDNN pays its conversions to and from
// 16-bit copies (6 bytes per input and output element forward, 6 per
// output-gradient and 10 per input-gradient element backward), timed at
// the streaming rate; a depthwise one (own kernels) pays none, and a 1×1
// one in bf16 (GEMMs on the float32 tensors) none either.
TEST(StepTime, SixteenBitConvolutionsPayTheirConversions) {
  register_builtin_layers();
  Graph g;
  Attrs in, conv, pw, dw;
  in.set("shape", std::vector<int64_t>{16, 16, 16});
  conv.set("filters", int64_t(16));
  conv.set("padding", std::vector<int64_t>{1, 1});
  pw.set("filters", int64_t(16));
  pw.set("kernel", std::vector<int64_t>{1, 1});
  dw = conv;
  dw.set("groups", int64_t(16));
  NodeId prev = g.add_node("Input", "in", in);
  for (const auto& [name, a] : {std::pair{"conv", conv}, {"pw", pw}, {"dw", dw}}) {
    const NodeId id = g.add_node("Conv2D", name, a);
    g.connect(prev, id);
    prev = id;
  }
  DeviceRates fp32;
  fp32.gemm_flops = fp32.conv_flops = 1e12;
  fp32.bandwidth = 1e11;
  DeviceRates bf16 = fp32, fp16 = fp32;
  bf16.conv_16bit_copies = fp16.conv_16bit_copies = true;
  bf16.pointwise_gemms = true;
  bf16.stream_bandwidth = fp16.stream_bandwidth = 1e12;
  const int64_t n = 4;
  const double x = double(n) * 16 * 16 * 16;  // every layer's input and output
  const StepTime t32 = predict_step_time(g, n, fp32), tb = predict_step_time(g, n, bf16),
                 th = predict_step_time(g, n, fp16);
  // The first convolution: no input gradient (its input is the network's).
  EXPECT_DOUBLE_EQ(tb.layers[0].bytes - t32.layers[0].bytes, 18 * x);
  EXPECT_NEAR(tb.layers[0].seconds - t32.layers[0].seconds, 18 * x / 1e12, 1e-15);
  // The 1×1 one: none in bf16; in fp16 all four, the input gradient too.
  EXPECT_DOUBLE_EQ(tb.layers[1].bytes, t32.layers[1].bytes);
  EXPECT_DOUBLE_EQ(th.layers[1].bytes - t32.layers[1].bytes, 28 * x);
  // Depthwise: none in either.
  EXPECT_DOUBLE_EQ(tb.layers[2].bytes, t32.layers[2].bytes);
  EXPECT_DOUBLE_EQ(th.layers[2].bytes, t32.layers[2].bytes);
  // What gpu_rates sets for each precision.
  DeviceBench b;
  b.fp32_gflops = 50000;
  b.bf16_gflops = b.fp16_gflops = 900000;
  b.mem_bandwidth_gbs = 4000;
  EXPECT_FALSE(gpu_rates(b, Precision::Fp32).conv_16bit_copies);
  EXPECT_TRUE(gpu_rates(b, Precision::Bf16).pointwise_gemms);
  EXPECT_TRUE(gpu_rates(b, Precision::Fp16).conv_16bit_copies);
  EXPECT_FALSE(gpu_rates(b, Precision::Fp16).pointwise_gemms);
  EXPECT_NEAR(gpu_rates(b, Precision::Bf16).stream_bandwidth, 4000e9, 1e6);
}

// A stacked recurrent layer with dropout between its layers cannot be
// captured into a CUDA graph (cuda/rnn.cpp graph_safe): its step pays the
// eager overhead on top; without the dropout it does not.
TEST(StepTime, AStepWithoutACudaGraphPaysTheEagerOverhead) {
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/resources/templates/stacked_lstm.dcproj");
  GpuModel m;
  m.eager_step_overhead = 1e-3;
  DeviceBench b;
  b.fp32_gflops = 50000;
  b.mem_bandwidth_gbs = 4000;
  const DeviceRates r = gpu_rates(b, Precision::Fp32, m);
  EXPECT_DOUBLE_EQ(r.eager_step_overhead, 1e-3);
  EXPECT_FALSE(cuda_graph_capturable(lower_graph(p.graph)));
  const StepTime eager = predict_step_time(p.graph, 64, r);
  EXPECT_DOUBLE_EQ(eager.overhead_s, m.step_overhead + 1e-3);
  std::vector<NodeId> lstms;
  for (const auto& [id, n] : p.graph.nodes())
    if (n.type == "LSTM") lstms.push_back(id);
  ASSERT_FALSE(lstms.empty());
  for (NodeId id : lstms) p.graph.set_attr(id, "dropout", 0.0);
  EXPECT_TRUE(cuda_graph_capturable(lower_graph(p.graph)));
  const StepTime graphed = predict_step_time(p.graph, 64, r);
  EXPECT_DOUBLE_EQ(graphed.overhead_s, m.step_overhead);
  EXPECT_NEAR(eager.step_s - graphed.step_s, 1e-3, 1e-9);
}

}  // namespace

}  // namespace dc::advisor
