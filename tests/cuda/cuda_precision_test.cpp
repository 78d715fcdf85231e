// Mixed precision on CUDA: the layers that compute in bf16/fp16 (Conv2D,
// Dense, TimeDistributedDense; recurrent layers in fp16) against the CPU's
// float32, forward and backward, within 16-bit error (relative <= 2e-2);
// fp16 loss scaling surviving overflowing gradients; and training runs in
// bf16 and fp16 reaching the float32 run's accuracy. Skips without a GPU.
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace dc {
namespace {

using test::A;
using test::pair;

Tensor random(const Shape& s, uint64_t seed) {
  return test::uniform_tensor(s, seed, -1.f, 1.f);
}

using test::rel_err;

// input -> first -> ReLU -> second: two layers that compute in 16 bits, so
// the gradient one passes to the other is checked through its weights.
Graph chain(const std::string& input_type, Attrs input, const std::string& t1, Attrs a1,
            const std::string& t2, Attrs a2) {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node(input_type, "input", std::move(input));
  NodeId l1 = g.add_node(t1, "first", std::move(a1));
  NodeId r = g.add_node(input_type == "Input" ? "ReLU" : "Tanh", "act");
  NodeId l2 = g.add_node(t2, "second", std::move(a2));
  g.connect(in, l1);
  g.connect(l1, r);
  g.connect(r, l2);
  return g;
}

// tol applies to the output and every gradient, except the first layer's
// gradients, which get first_tol (see conv_and_dense). rounds: whether the
// output must show 16-bit rounding (cuBLAS's FAST_16BF compute type
// allow it but need not round a small GEMM).
void check(const std::string& name, const Graph& g, const Shape& input, const std::string& prec,
           double tol = 2e-2, double first_tol = 2e-2, bool rounds = true) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  SCOPED_TRACE(name + " " + prec);
  const int64_t N = 8;
  Plan host(g, N);
  host.init_params(7);
  DevicePlanOptions o;
  o.max_batch = N;
  o.precision = *enum_from_name<Precision>(prec);
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  Tensor x = random(input.with_batch(N), 11);
  Tensor dout = random(host.output_shape().with_batch(N), 13);
  RunContext ctx{true, nullptr};
  Tensor cpu_out = host.forward(x, ctx).clone();
  host.zero_grad();
  host.backward(dout, ctx);
  std::vector<Tensor> cpu_grads;
  for (auto& p : host.params()) cpu_grads.push_back(p.param->grad.clone());
  Tensor gpu_out(host.output_shape().with_batch(N));
  dev->zero_grad();
  dev->forward(x, gpu_out, true, 1);
  dev->backward(dout);
  dev->download_grads();
  const double e = rel_err(gpu_out, cpu_out);
  EXPECT_LE(e, tol) << "forward output";
  // 16-bit rounding must show: an error this small means fp32 ran instead.
  if (rounds) {
    EXPECT_GT(e, 1e-6) << "forward output equals float32's: was " << prec << " used?";
  }
  size_t k = 0;
  for (auto& p : host.params()) {
    const double t = p.name.rfind("first.", 0) == 0 ? first_tol : tol;
    EXPECT_LE(rel_err(p.param->grad, cpu_grads[k]), t) << "gradient of " << p.name;
    ++k;
  }
}

// The first convolution's gradients are sums over the second one's weights
// (its backward data) that largely cancel, which amplifies the rounding of
// those weights to 16 bits by the cancellation factor (about 10 here). With
// bf16's 8 significant bits (unit roundoff 2^-8) that gives 3-6 % measured
// on an H100; fp16 (2^-11) stays under 2e-2. Any bf16 implementation that
// rounds weights (torch.autocast does) shows the same; an error in the
// kernels would be of order 1.
void conv_and_dense(const std::string& prec) {
  const double first_tol = prec == "bf16" ? 8e-2 : 2e-2;
  check("conv",
        chain("Input", A({{"shape", std::vector<int64_t>{3, 10, 9}}}), "Conv2D",
              A({{"filters", int64_t(8)}, {"kernel", pair(3, 3)}, {"padding", pair(1, 1)}}),
              "Conv2D", A({{"filters", int64_t(4)}, {"kernel", pair(3, 3)}})),
        Shape{3, 10, 9}, prec, 2e-2, first_tol);
  // Channel counts multiples of 8: channels last (NHWC copies, a KRSC
  // weight), on a plane whose sides are not multiples of the transposes'
  // 32-wide tiles; a stride and a dilation in the second layer. Every
  // convolution path: the graph API channels last (the default; required
  // here, so a silent fall back to the legacy API fails), the graph API
  // NCHW, the legacy API NCHW and channels last, and the weight gradient
  // as a GEMM over unfolded columns (DC_CUDA_WGRAD=gemm).
  using test::ScopedEnv;
  const Graph channels_last = chain(
      "Input", A({{"shape", std::vector<int64_t>{8, 10, 9}}}), "Conv2D",
      A({{"filters", int64_t(16)}, {"kernel", pair(3, 3)}, {"padding", pair(1, 1)}}), "Conv2D",
      A({{"filters", int64_t(8)},
         {"kernel", pair(3, 2)},
         {"stride", pair(2, 1)},
         {"dilation", pair(1, 2)}}));
  {
    const ScopedEnv graph("DC_CUDA_CONV", "graph");
    check("conv, graph API", channels_last, Shape{8, 10, 9}, prec, 2e-2, first_tol);
    {
      const ScopedEnv nchw("DC_CUDA_NHWC", "0");
      check("conv, graph API NCHW", channels_last, Shape{8, 10, 9}, prec, 2e-2, first_tol);
    }
    // Groups (NCHW: channels last needs one group) through the graph API.
    check("grouped conv, graph API",
          chain("Input", A({{"shape", std::vector<int64_t>{8, 7, 6}}}), "Conv2D",
                A({{"filters", int64_t(8)}, {"kernel", pair(3, 3)}, {"padding", pair(1, 1)}}),
                "Conv2D",
                A({{"filters", int64_t(8)}, {"kernel", pair(3, 3)}, {"groups", int64_t(4)}})),
          Shape{8, 7, 6}, prec, 2e-2, first_tol);
    const ScopedEnv gemm("DC_CUDA_WGRAD", "gemm");
    check("conv channels last, GEMM weight gradient", channels_last, Shape{8, 10, 9}, prec, 2e-2,
          first_tol);
  }
  {
    const ScopedEnv legacy("DC_CUDA_CONV", "legacy");
    check("conv, legacy API", channels_last, Shape{8, 10, 9}, prec, 2e-2, first_tol);
    const ScopedEnv nhwc("DC_CUDA_NHWC", "1");
    check("conv, legacy API channels last", channels_last, Shape{8, 10, 9}, prec, 2e-2, first_tol);
  }
  // 1×1 convolutions on a 10×9 plane (90 pixels, at least the 64 of
  // deepcanvas/cuda_pointwise.h): cuBLAS GEMMs on the float32 planes with
  // 16-bit operands (the default in bf16; fp16 stays on cuDNN's copies,
  // cuda/ops.h low_on_float32), with TF32 (DC_CUDA_PW=tf32), and cuDNN
  // (DC_CUDA_PW=cudnn). The log says which path each layer took, so a
  // silent fall back to cuDNN, or fp16 on the GEMMs, fails.
  if (!test::gpu_or_skip()) return;  // check() has said why it skips
  const Graph pointwise = chain("Input", A({{"shape", std::vector<int64_t>{8, 10, 9}}}), "Conv2D",
                                A({{"filters", int64_t(16)}, {"kernel", pair(1, 1)}}), "Conv2D",
                                A({{"filters", int64_t(8)}, {"kernel", pair(1, 1)}}));
  for (const char* mode : {"", "tf32", "cudnn"}) {
    const ScopedEnv pw("DC_CUDA_PW", mode);
    const ScopedEnv log("DC_CUDA_LOG_ALGOS", "1");
    testing::internal::CaptureStderr();
    const bool on_gemm = std::string(mode) == "tf32" || (*mode == 0 && prec == "bf16");
    check(std::string("pointwise conv, DC_CUDA_PW=") + mode, pointwise, Shape{8, 10, 9}, prec, 2e-2,
          first_tol, !on_gemm);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.find("pointwise GEMMs on cuBLAS") != std::string::npos, on_gemm)
        << mode << ": " << err;
  }
  // Self-attention after a token-wise projection: its GEMMs take the
  // float32 tensors with 16-bit compute types (the softmax stays float32),
  // so rounding need not show in a case this small. The softmax's backward
  // subtracts each row's weighted sum, which cancels as the convolutions'
  // data gradients do: 5e-2 for the attention's own gradients.
  check("attention",
        chain("SequenceInput", A({{"steps", int64_t(6)}, {"features", int64_t(16)}}),
              "TimeDistributedDense", A({{"units", int64_t(16)}}), "MultiHeadAttention",
              A({{"heads", int64_t(2)}})),
        Shape{6, 16}, prec, 5e-2, first_tol, false);
  // Dense on the float32 tensors with a 16-bit compute type (bf16's
  // default, which need not round here) and on 16-bit copies
  // (DC_CUDA_DENSE=copies; fp16 always, which must round).
  for (const char* mode : {"", "copies"}) {
    const ScopedEnv dense("DC_CUDA_DENSE", mode);
    const bool copies = *mode != 0 || prec == "fp16";
    check(std::string("dense ") + mode,
          chain("Input", A({{"shape", std::vector<int64_t>{40}}}), "Dense",
                A({{"units", int64_t(24)}}), "Dense", A({{"units", int64_t(10)}})),
          Shape{40}, prec, 2e-2, 2e-2, copies);
    check(std::string("time distributed ") + mode,
          chain("SequenceInput", A({{"steps", int64_t(6)}, {"features", int64_t(12)}}),
                "TimeDistributedDense", A({{"units", int64_t(16)}}), "TimeDistributedDense",
                A({{"units", int64_t(5)}})),
          Shape{6, 12}, prec, 2e-2, 2e-2, copies);
  }
}

TEST(CudaPrecision, Bf16ConvolutionsAndGemmsWithinBf16Error) {
  conv_and_dense("bf16");
}
TEST(CudaPrecision, Fp16ConvolutionsAndGemmsWithinFp16Error) {
  conv_and_dense("fp16");
}
// fp16 LSTM by default: 16-bit data with float32 math in cuDNN's RNN.
TEST(CudaPrecision, Fp16LstmWithinFp16Error) {
  check("lstm",
        chain("SequenceInput", A({{"steps", int64_t(7)}, {"features", int64_t(16)}}),
              "TimeDistributedDense", A({{"units", int64_t(16)}}), "LSTM",
              A({{"hidden_size", int64_t(32)}})),
        Shape{7, 16}, "fp16");
}

// bf16 LSTM by default (float32 data under cuDNN's persistent algorithm,
// which is faster there, behind the bf16 TimeDistributedDense). The LSTM's
// error compounds over its steps and gates, so it gets the tolerance of
// bf16's compounding layers.
TEST(CudaPrecision, Bf16LstmWithinBf16Error) {
  check("lstm",
        chain("SequenceInput", A({{"steps", int64_t(7)}, {"features", int64_t(16)}}),
              "TimeDistributedDense", A({{"units", int64_t(16)}}), "LSTM",
              A({{"hidden_size", int64_t(32)}})),
        Shape{7, 16}, "bf16", 8e-2, 8e-2);
}

// Inputs of magnitude 1000 make the loss gradient about 1e2-1e3, which the
// initial scale (2^16) pushes past fp16's 65504: those steps must be skipped
// (weights untouched, no NaN) while the scale halves, and training then
// proceeds with finite weights.
TEST(CudaPrecision, Fp16LossScalingSkipsOverflowingSteps) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{16}}}));
  NodeId d = g.add_node("Dense", "fc", A({{"units", int64_t(4)}}));
  g.connect(in, d);
  const int64_t N = 32;
  Plan host(g, N);
  host.init_params(3);
  DevicePlanOptions o;
  o.max_batch = N;
  o.precision = Precision::Fp16;
  o.loss = LossType::Mse;
  o.optimizer.type = OptimizerType::Sgd;
  o.optimizer.momentum = 0.0;
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  Dataset ds;
  ds.sample_shape = Shape{16};
  Rng r(1);
  for (int64_t i = 0; i < N * 16; ++i) ds.values.push_back(r.uniform(-1000.f, 1000.f));
  for (int64_t i = 0; i < N; ++i) ds.labels.push_back(int32_t(i % 4));
  ds.num_classes = 4;
  int h = dev->add_dataset(ds);
  std::vector<int64_t> idx(N);
  for (int64_t i = 0; i < N; ++i) idx[size_t(i)] = i;
  Tensor w0 = host.params()[0].param->value.clone();
  // The first step overflows: nothing may change.
  dev->train_step(h, idx.data(), N, 1e-9, 1);
  DeviceStepStats s0 = dev->take_stats();
  EXPECT_TRUE(s0.finite);
  dev->download_params();
  EXPECT_EQ(rel_err(host.params()[0].param->value, w0), 0.0) << "an overflowing step was applied";
  for (int k = 0; k < 30; ++k) dev->train_step(h, idx.data(), N, 1e-9, uint64_t(k + 2));
  dev->take_stats();
  dev->download_params();
  const Tensor& w = host.params()[0].param->value;
  for (int64_t i = 0; i < w.numel(); ++i) ASSERT_TRUE(std::isfinite(w.f32()[i])) << i;
  EXPECT_GT(rel_err(w, w0), 0.0) << "no step was ever applied: the scale never came down";
}

// The sample project (two-conv CNN) for two epochs in each precision: bf16
// and fp16 reach the float32 CUDA run's test accuracy within noise.
TEST(CudaPrecisionTraining, Bf16AndFp16ReachTheFp32Accuracy) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  auto run = [&](const std::string& prec) {
    TrainTest tt =
        load_fashion_mnist(std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset");
    TrainConfig c = p.training;
    c.epochs = 2;
    c.device = parse_device("cuda:0");
    c.precision = *enum_from_name<Precision>(prec);
    c.seed = 1;
    Trainer t(p.graph, c, std::make_shared<Dataset>(std::move(tt.train)),
              std::make_shared<Dataset>(std::move(tt.test)));
    t.start();
    t.wait();
    EXPECT_TRUE(t.result().ok) << prec << ": " << t.result().error;
    return t.result().test_accuracy;
  };
  double f32 = run("fp32"), b16 = run("bf16"), f16 = run("fp16");
  std::printf("[ sample subset ] CNN test accuracy: fp32 %.4f, bf16 %.4f, fp16 %.4f\n", f32, b16,
              f16);
  EXPECT_GE(b16, f32 - 0.02);
  EXPECT_GE(f16, f32 - 0.02);
}

TEST(CudaPrecisionTraining, CpuRefusesReducedPrecision) {
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  TrainTest tt =
      load_fashion_mnist(std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset");
  TrainConfig c = p.training;
  c.device = parse_device("cpu");
  c.precision = Precision::Bf16;
  try {
    Trainer t(p.graph, c, std::make_shared<Dataset>(std::move(tt.train)), nullptr);
    FAIL() << "bf16 on the CPU was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
}

// The project setting: read, written back only when not fp32, and checked.
TEST(CudaPrecisionProject, PrecisionIsAProjectSettingAndIsValidated) {
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  EXPECT_EQ(p.training.precision, Precision::Fp32);
  EXPECT_EQ(project_to_json(p).find("precision"), std::string::npos);
  p.training.precision = Precision::Bf16;
  Project q = parse_project(project_to_json(p), "round trip");
  EXPECT_EQ(q.training.precision, Precision::Bf16);
  std::string bad = project_to_json(p);
  bad.replace(bad.find("\"bf16\""), 6, "\"fp8\"");
  try {
    parse_project(bad, "bad.dcproj");
    FAIL() << "precision fp8 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("training.precision"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dc
