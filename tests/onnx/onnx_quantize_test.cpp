// Deployment models: the QDQ int8 model passes the ONNX checker, holds int8
// weights (at most 30 % of the fp32 file) and, run by onnxruntime, agrees
// with the engine's simulated int8 on the sample CNN's test images; fp16
// stays within float16's tolerance of fp32; the preprocessing inside the
// model reproduces the dataset's normalisation.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/npy.h>
#include <deepcanvas/onnx_quantize.h>
#include <deepcanvas/project.h>
#include <deepcanvas/qat.h>
#include <deepcanvas/quantize.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>

namespace dc {
namespace {

namespace fs = std::filesystem;

std::string verify_python() {
  const char* env = std::getenv("DC_VERIFY_VENV");
  const std::string venv = env ? env : std::string(DC_SOURCE_DIR) + "/.venv-verify";
  return fs::exists(venv + "/bin/python") ? venv + "/bin/python" : "";
}

// The sample CNN (conv, pool, conv, pool, dense, dense) trained for a
// few steps on the sample subset: enough for confident predictions.
struct Trained {
  Project project;
  std::shared_ptr<Dataset> train, test;
  std::vector<PlanStep> steps;
  std::vector<std::pair<std::string, Tensor>> state;
};

const Trained& trained() {
  static const Trained t = [] {
    Trained r;
    r.project = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
    TrainTest d =
        load_fashion_mnist(std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset");
    r.train = std::make_shared<Dataset>(std::move(d.train));
    r.test = std::make_shared<Dataset>(std::move(d.test));
    TrainConfig c = r.project.training;
    c.epochs = 1;
    c.steps_per_epoch_limit = 80;
    c.val_split = 0;
    Trainer tr(r.project.graph, c, r.train, r.test);
    tr.start();
    for (;;) {
      auto e = tr.events().pop(std::chrono::milliseconds(120000));
      if (!e) throw Error("training the sample CNN sent no event for 120 s");
      if (e->kind == TrainEvent::Kind::Failed) throw Error(e->message);
      if (e->kind == TrainEvent::Kind::Finished || e->kind == TrainEvent::Kind::Cancelled) break;
    }
    tr.wait();
    r.steps = tr.plan().steps();
    r.state = tr.plan().state();
    return r;
  }();
  return t;
}

int64_t count_nodes(const std::string& bytes, const std::string& op) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  int64_t n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op;
  return n;
}

// The first `n` test images: normalised floats and their bytes.
void test_images(const Dataset& ds, int64_t n, Tensor& x, std::vector<uint8_t>& bytes) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[size_t(i)] = i;
  x = Tensor(ds.sample_shape.with_batch(n));
  std::vector<int32_t> labels(static_cast<size_t>(n));
  ds.gather(idx.data(), n, x.f32(), labels.data());
  const int64_t per = ds.sample_shape.numel();
  bytes.assign(ds.pixels.begin(), ds.pixels.begin() + n * per);
}

void save_u8_npy(const std::string& path, const std::vector<uint8_t>& v,
                 const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = uint16_t(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size()));
}

// onnxruntime's first output for the model in `bytes` on x.npy.
Tensor run_ort(const fs::path& dir, const std::string& bytes, const std::string& x_npy) {
  write_file_atomic((dir / "m.onnx").string(), bytes);
  const std::string cmd = verify_python() + " " + DC_SOURCE_DIR + "/tests/onnx/ort_run.py " +
                          (dir / "m.onnx").string() + " " + x_npy + " " + (dir / "y.npy").string() +
                          " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(p ? ::pclose(p) : -1, 0) << out;
  return load_npy((dir / "y.npy").string()).data;
}

double argmax_agreement(const Tensor& a, const Tensor& b) {
  const int64_t n = a.dim(0), k = a.numel() / n;
  EXPECT_EQ(a.numel(), b.numel());
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* pa = a.f32() + i * k;
    const float* pb = b.f32() + i * k;
    same += std::max_element(pa, pa + k) - pa == std::max_element(pb, pb + k) - pb;
  }
  return double(same) / double(n);
}

TEST(OnnxQuantize, QdqModelPassesTheCheckerWithInt8Weights) {
  const Trained& t = trained();
  QuantNetwork net = fold_batch_norms(t.steps, t.state);
  QuantizeOptions o;
  o.calibrate = 64;
  QuantizedNetwork q = calibrate(net, *t.train, calibration_indices(*t.train, 64, 1), o);
  ASSERT_EQ(q.ops.size(), 4u);  // conv1, conv2, fc1, fc2
  OnnxExportOptions eo;
  const std::string bytes = onnx_qdq_model_bytes(q, eo);  // the checker runs inside
  EXPECT_EQ(count_nodes(bytes, "QuantizeLinear"), 4);
  EXPECT_EQ(count_nodes(bytes, "DequantizeLinear"), 8);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  int int8_weights = 0;
  for (const auto& init : m.graph().initializer())
    int8_weights += init.data_type() == onnx::TensorProto::INT8 && init.dims_size() > 1;
  EXPECT_EQ(int8_weights, 4);
  std::map<std::string, Tensor> w(t.state.begin(), t.state.end());
  const std::string fp32 = onnx_float_model_bytes(t.steps, w, eo, false);
  EXPECT_LE(double(bytes.size()), 0.30 * double(fp32.size()))
      << bytes.size() << " vs " << fp32.size();
  eo.opset = 12;
  const std::string why = [&] {
    try {
      onnx_qdq_model_bytes(q, eo);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  }();
  EXPECT_NE(why.find("needs opset 13"), std::string::npos) << why;
}

// A QAT checkpoint's export: the scales of its QuantizeLinear nodes are the
// ones the checkpoint stored, not a calibration's (export does what this
// does: read, load into the project's network, fold, take the scales).
TEST(OnnxQuantize, QatCheckpointExportsItsLearnedScales) {
  const Trained& t = trained();
  QuantizeOptions o;
  o.method = CalibrationMethod::MinMax;
  const QuantizedNetwork ptq = calibrate(fold_batch_norms(t.steps, t.state), *t.train,
                                         calibration_indices(*t.train, 64, 1), o);
  QatOptions qo;
  qo.epochs = 1;
  qo.steps_per_epoch_limit = 5;
  qo.batch = 32;
  const QuantizedNetwork q = train_qat(ptq, *t.train, Dataset{}, qo);
  const fs::path dir = fs::temp_directory_path() / ("dc_qat_onnx_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "qat.safetensors").string();
  write_qat_checkpoint(path, t.steps, t.state, q,
                       {{"format", "deepcanvas-checkpoint"},
                        {"format_version", "1"},
                        {"epoch", "1"},
                        {"step", "0"},
                        {"input_shape", "1x28x28"},
                        {"num_classes", "10"},
                        {"mean", "0.28"},
                        {"stddev", "0.35"},
                        {"class_names", "[]"}},
                       "fp32.safetensors", 1, NAN);
  const CheckpointInfo info = read_checkpoint(path);
  Plan plan(t.project.graph, 1);
  plan.load_state(info.model, path);
  const QuantizedNetwork back =
      load_qat_scales(info.metadata, fold_batch_norms(plan.steps(), plan.state()), path);
  std::map<std::string, float> stored;
  for (const QuantOp& op : q.ops) stored[q.net.steps[size_t(op.step)].name] = op.input_scale;
  // The fine-tuning moved them, so the comparison tells them apart.
  for (const QuantOp& op : ptq.ops)
    EXPECT_NE(stored.at(ptq.net.steps[size_t(op.step)].name), op.input_scale);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(onnx_qdq_model_bytes(back, OnnxExportOptions{})));
  std::map<std::string, float> init;
  for (const auto& i : m.graph().initializer())
    if (i.data_type() == onnx::TensorProto::FLOAT && i.float_data_size() == 1)
      init[i.name()] = i.float_data(0);
  int quantize = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "QuantizeLinear") continue;
    ++quantize;
    const std::string layer = n.name().substr(0, n.name().find('/'));
    ASSERT_TRUE(init.count(n.input(1))) << n.input(1);
    EXPECT_EQ(init.at(n.input(1)), stored.at(layer)) << layer;
  }
  EXPECT_EQ(quantize, int(stored.size()));
  fs::remove_all(dir);
}

TEST(OnnxQuantize, OnnxRuntimeAgreesWithTheSimulation) {
  if (verify_python().empty())
    GTEST_SKIP() << "onnxruntime is not installed: run installer/verify-venv.sh (downloads it "
                    "from PyPI into .venv-verify)";
  const Trained& t = trained();
  const fs::path dir = fs::temp_directory_path() / ("dc_quant_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const int64_t n = 300;
  Tensor x;
  std::vector<uint8_t> bytes;
  test_images(*t.test, n, x, bytes);
  save_npy((dir / "x.npy").string(), x);
  save_u8_npy((dir / "x_u8.npy").string(), bytes, {n, 1, 28, 28});

  QuantNetwork net = fold_batch_norms(t.steps, t.state);
  QuantizeOptions o;
  QuantizedNetwork q = calibrate(net, *t.train, calibration_indices(*t.train, 256, 1), o);
  QuantRunner sim(q.net, n), fp(q.net, n);
  sim.set_quantized(&q);
  const Tensor simulated = sim.forward(x).clone();
  const Tensor reference = fp.forward(x).clone();
  OnnxExportOptions eo;
  const Tensor ort_int8 = run_ort(dir, onnx_qdq_model_bytes(q, eo), (dir / "x.npy").string());
  EXPECT_GE(argmax_agreement(ort_int8, simulated), 0.995);
  // The preprocessing inside: the bytes in, the same predictions out.
  OnnxPreprocessing pre;
  pre.enabled = true;
  pre.mean = t.test->mean;
  pre.stddev = t.test->stddev;
  const Tensor ort_pre =
      run_ort(dir, onnx_qdq_model_bytes(q, eo, pre), (dir / "x_u8.npy").string());
  EXPECT_GE(argmax_agreement(ort_pre, simulated), 0.995);
  std::map<std::string, Tensor> w(t.state.begin(), t.state.end());
  const Tensor ort_fp32_pre =
      run_ort(dir, onnx_float_model_bytes(t.steps, w, eo, false, pre), (dir / "x_u8.npy").string());
  double worst = 0, scale = 1;
  for (int64_t i = 0; i < reference.numel(); ++i) {
    worst = std::max(worst, double(std::fabs(ort_fp32_pre.f32()[i] - reference.f32()[i])));
    scale = std::max(scale, double(std::fabs(reference.f32()[i])));
  }
  EXPECT_LT(worst / scale, 1e-4);
  // fp16: float16 weights and arithmetic, float32 in and out.
  const Tensor ort_fp16 =
      run_ort(dir, onnx_float_model_bytes(t.steps, w, eo, true), (dir / "x.npy").string());
  worst = 0;
  for (int64_t i = 0; i < reference.numel(); ++i)
    worst = std::max(worst, double(std::fabs(ort_fp16.f32()[i] - reference.f32()[i])));
  EXPECT_LT(worst / scale, 2e-2);
  EXPECT_GE(argmax_agreement(ort_fp16, reference), 0.99);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dc
