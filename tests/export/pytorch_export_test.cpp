// PyTorch export (issue 13): every template and the sample project export;
// model.py computes DeepCanvas's forward to 1e-5 on the same weights (Debian's
// python3-torch, skipped with the reason when it is missing); bad input is
// refused with a message; the Kubernetes manifests have what Kubeflow's
// PyTorchJob requires; torchrun with 2 gloo processes trains a few dozen
// steps, keeps the replicas identical and leaves a checkpoint that
// `deepcanvas-cli eval` reads; metrics.jsonl reads back, bad lines skipped;
// train.py's TensorBoard event file (rank 0's only) has whole frames with
// good CRCs and, read by TensorBoard's EventAccumulator when the verify venv
// has it, every figure of metrics.jsonl at its step.
#include <deepcanvas/blocks.h>
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/escape.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/metrics.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/npy.h>
#include <deepcanvas/project.h>
#include <deepcanvas/pytorch_export.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/run_log.h>
#include <deepcanvas/tensorboard_writer.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "torch_ref_util.h"

#include "test_util.h"

namespace dc {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using test::kPython;
using test::run_command;

std::string python_missing(const std::string& modules) {
  int code = 0;
  std::string out = run_command(kPython + " -c 'import " + modules + "'", &code);
  return code == 0 ? std::string() : kPython + " cannot import " + modules + ": " + out;
}

using test::project_files;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("dc_pytorch_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

// The event files train.py left in `out`.
std::vector<fs::path> event_files(const fs::path& out) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) v.push_back(e.path());
  return v;
}

// The records of an event file; every frame whole, both its CRCs checked
// with the engine's CRC-32C (train.py computes its own in Python).
std::vector<std::string> event_records(const fs::path& file) {
  const std::string s = read_file(file.string());
  auto le = [&s](size_t at, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(uint8_t(s[at + i])) << (8 * i);
    return v;
  };
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    if (s.size() - at < 12) {
      ADD_FAILURE() << file << ": a frame cut short at " << at;
      break;
    }
    const uint64_t n = le(at, 8);
    EXPECT_EQ(le(at + 8, 4), tfrecord_masked_crc(s.data() + at, 8)) << "length CRC at " << at;
    if (s.size() - at - 12 < n + 4) {
      ADD_FAILURE() << file << ": a frame cut short at " << at;
      break;
    }
    EXPECT_EQ(le(at + 12 + n, 4), tfrecord_masked_crc(s.data() + at + 12, size_t(n)))
        << "data CRC at " << at;
    out.push_back(s.substr(at + 12, size_t(n)));
    at += 16 + size_t(n);
  }
  return out;
}

// train.py's event file in `out`: the frames, the tags DeepCanvas's runs
// use, and TensorBoard's own reader (tests/engine/tensorboard_check.py: every
// figure of metrics.jsonl a scalar at its step, the settings text) when the
// verify venv has it; a note says when it was not there to ask.
void expect_event_file_like_metrics(const fs::path& out) {
  const std::vector<fs::path> files = event_files(out);
  ASSERT_EQ(files.size(), 1u) << "one event file, rank 0's";
  const std::vector<std::string> records = event_records(files[0]);
  ASSERT_GT(records.size(), 2u);
  EXPECT_NE(records[0].find("brain.Event:2"), std::string::npos);
  auto any = [&records](const std::string& what) {
    return std::any_of(records.begin(), records.end(),
                       [&](const std::string& r) { return r.find(what) != std::string::npos; });
  };
  for (const char* tag : {"step/loss", "step/lr", "step/samples_per_s", "epoch/train_loss",
                          "epoch/test_accuracy", "settings"})
    EXPECT_TRUE(any(tag)) << tag;
  const char* env = std::getenv("DC_VERIFY_VENV");
  const std::string venv = env ? env : std::string(DC_SOURCE_DIR) + "/.venv-verify";
  int code = 0;
  run_command(venv + "/bin/python -c 'import tensorboard'", &code);
  if (code != 0) {
    std::printf(
        "note: TensorBoard's reader not run: tensorboard is not installed in %s "
        "(installer/verify-venv.sh installs it from PyPI)\n",
        venv.c_str());
    return;
  }
  const std::string log = run_command(
      venv + "/bin/python " + DC_SOURCE_DIR + "/tests/engine/tensorboard_check.py " + out.string(),
      &code);
  EXPECT_EQ(code, 0) << log;
  EXPECT_NE(log.find("scalars in the event file"), std::string::npos) << log;
}

// Weights that make every path count: the seed's initialisation, then
// BatchNorm statistics and scales away from their identity values.
void randomise_state(Plan& plan, uint64_t seed) {
  plan.init_params(seed);
  Rng rng(seed + 1);
  for (NamedParam& np : plan.params()) {
    const std::string& n = np.name;
    float* v = np.param->value.f32();
    const int64_t count = np.param->value.numel();
    const bool var = n.find("running_var") != std::string::npos;
    const bool bn = var || n.find("running_mean") != std::string::npos ||
                    n.find("bn") != std::string::npos || n.find(".h0") != std::string::npos ||
                    n.find(".c0") != std::string::npos || n.find("bias") != std::string::npos;
    if (!bn) continue;
    for (int64_t i = 0; i < count; ++i)
      v[i] = var ? rng.uniform(0.5f, 2.0f) : rng.uniform(-0.5f, 0.5f);
  }
}

// Exports p into dir with plan's weights, plus x.npy and DeepCanvas's y.npy.
void write_case(const Project& p, const fs::path& dir, uint64_t seed) {
  const int64_t n = 3;
  Plan plan(p.graph, n);
  randomise_state(plan, seed);
  PyTorchExportOptions o;
  o.data_path = "/nonexistent";  // forward only
  export_pytorch(dir.string(), p, plan, o);
  Tensor x(plan.input_shape().with_batch(n));
  Rng rng(seed + 2);
  const Node& in = p.graph.node(p.graph.inputs().at(0));
  const bool tokens =
      in.type == "SequenceInput" &&
      LayerRegistry::instance().get(in.type).with_defaults(in.attrs).s("kind") == "tokens";
  int64_t vocab = 2;
  for (const auto& [id, node] : p.graph.nodes())
    if (node.type == "Embedding")
      vocab = LayerRegistry::instance().get("Embedding").with_defaults(node.attrs).i("vocab_size");
  for (int64_t i = 0; i < x.numel(); ++i)
    x.f32()[i] = tokens ? float(rng.below(uint64_t(vocab))) : rng.uniform(-2.0f, 2.0f);
  RunContext ctx{false, nullptr};
  const Tensor& y = plan.forward(x, ctx);
  save_npy((dir / "x.npy").string(), x);
  save_npy((dir / "y.npy").string(), y);
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PyTorchExport, EveryTemplateExportsWithLayerNamesAndFiles) {
  for (const std::string& file : project_files()) {
    SCOPED_TRACE(file);
    Project p = load_project(file);
    auto files = pytorch_project_files(p, {});
    for (const char* name : {"model.py", "train.py", "dc_safetensors.py", "requirements.txt",
                             "Dockerfile", "README.md", "k8s/pytorchjob.yaml", "k8s/job.yaml"}) {
      ASSERT_TRUE(files.count(name)) << name;
      EXPECT_EQ(files[name].find('@' + std::string("PROJECT_NAME@")), std::string::npos) << name;
    }
    // One attribute per layer with parameters, named as the layer; a layer
    // inside a block is an attribute of its block's module, its module path
    // mapped to its name in RENAMED.
    Plan plan(p.graph, 1);
    const std::string& py = files["model.py"];
    for (const NamedParam& np : plan.params()) {
      const std::string layer = np.name.substr(0, np.name.rfind('.'));
      EXPECT_TRUE(py.find("self." + layer + " = ") != std::string::npos ||
                  py.find(": \"" + layer + "\",") != std::string::npos)
          << layer;
    }
    // One class per block definition, shared by its instances.
    for (const auto& [name, count] : block_instance_counts(p.graph)) {
      EXPECT_EQ(count_of(py, "\nclass Block_" + name + "(nn.Module):"), 1) << name;
      EXPECT_EQ(count_of(py, " = Block_" + name + "()\n"), count) << name;
    }
    EXPECT_NE(files["README.md"].find("--redirects 2 --tee 1"), std::string::npos);
    EXPECT_NE(files["train.py"].find("\"epochs\": " + std::to_string(p.training.epochs)),
              std::string::npos);
  }
}

TEST(PyTorchExport, ForwardEqualsTheEngineForEveryTemplate) {
  if (auto why = python_missing("torch, numpy"); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  std::string args;
  uint64_t seed = 7;
  for (const std::string& file : project_files()) {
    const fs::path dir = tmp.path / fs::path(file).stem();
    write_case(load_project(file), dir, seed++);
    args += " " + dir.string();
  }
  int code = 0;
  const std::string out = run_command(
      kPython + " " + std::string(DC_SOURCE_DIR) + "/tests/export/forward_check.py" + args, &code);
  ASSERT_EQ(code, 0) << out;
  json r = json::parse(out.substr(out.find('{')), nullptr, false);
  ASSERT_TRUE(r.is_object()) << out;
  EXPECT_EQ(r.size(), project_files().size()) << out;
  for (auto& [k, v] : r.items()) {
    ASSERT_TRUE(v.is_number()) << k << ": " << v.dump();
    EXPECT_LE(v.get<double>(), 1e-5) << k;
    std::printf("max |torch - deepcanvas| / (1 + |deepcanvas|) for %s: %.3g\n",
                fs::path(k).filename().c_str(), v.get<double>());
  }
}

// Layer forms the templates do not use: same/valid padding with strides,
// padded pooling, GELU/LeakyReLU/ReLU6/Sigmoid/Softmax, BatchNorm1D on C×L,
// LayerNorm with and without affine, MultiHeadAttention (cross, and causal
// self-attention without biases), ClassToken, PositionalEmbedding (both
// kinds),
// Concat, Reshape, bidirectional and stacked recurrent layers with learned
// initial states, TimeDistributedDense, LastStep, and names that are not
// Python identifiers.
TEST(PyTorchExport, ForwardEqualsTheEngineForEveryLayerForm) {
  if (auto why = python_missing("torch, numpy"); !why.empty()) GTEST_SKIP() << why;
  register_builtin_layers();
  auto pair = [](int64_t a, int64_t b) { return AttrValue(std::vector<int64_t>{a, b}); };
  Project img;
  img.name = "forms";
  Graph& g = img.graph;
  Attrs in;
  in.set("shape", std::vector<int64_t>{3, 11, 9});
  int i = g.add_node("Input", "input", in);
  Attrs c1;
  c1.set("filters", int64_t{4});
  c1.set("padding_mode", std::string("same"));
  c1.set("stride", pair(2, 2));
  c1.set("kernel", pair(4, 3));
  int a = g.add_node("Conv2D", "conv same", c1);
  g.connect(i, a);
  Attrs c2;
  c2.set("filters", int64_t{4});
  c2.set("padding_mode", std::string("valid"));
  c2.set("dilation", pair(2, 1));
  c2.set("groups", int64_t{2});
  int b = g.add_node("Conv2D", "2conv", c2);
  g.connect(a, b);
  int bn = g.add_node("BatchNorm2D", "class", {});
  g.connect(b, bn);
  Attrs lr;
  lr.set("slope", 0.2);
  int act = g.add_node("LeakyReLU", "leaky", lr);
  g.connect(bn, act);
  Attrs ap;
  ap.set("kernel", pair(3, 3));
  ap.set("stride", pair(1, 1));
  ap.set("padding", pair(1, 1));
  int avg = g.add_node("AvgPool2D", "avg", ap);
  g.connect(act, avg);
  int mp = g.add_node("MaxPool2D", "max", ap);
  g.connect(act, mp);
  Attrs cat;
  cat.set("inputs", int64_t{2});
  int cc = g.add_node("Concat", "cat", cat);
  g.connect(avg, cc, 0);
  g.connect(mp, cc, 1);
  int ge = g.add_node("GELU", "gelu", {});
  g.connect(cc, ge);
  int r6 = g.add_node("ReLU6", "relu6", {});
  g.connect(ge, r6);
  Attrs rs;
  rs.set("shape", std::vector<int64_t>{8, -1});
  int re = g.add_node("Reshape", "reshape", rs);
  g.connect(r6, re);
  Attrs lnf;
  lnf.set("affine", false);
  int ln0 = g.add_node("LayerNorm", "ln plain", lnf);
  g.connect(re, ln0);
  int b1 = g.add_node("BatchNorm1D", "bn1d", {});
  g.connect(ln0, b1);
  int fl = g.add_node("Flatten", "flat", {});
  g.connect(b1, fl);
  Attrs d;
  d.set("units", int64_t{5});
  int de = g.add_node("Dense", "dense", d);
  g.connect(fl, de);
  int sg = g.add_node("Sigmoid", "sig", {});
  g.connect(de, sg);
  int sm = g.add_node("Softmax", "soft", {});
  g.connect(sg, sm);

  Project seq;
  seq.name = "sequence forms";
  Graph& s = seq.graph;
  Attrs si;
  si.set("steps", int64_t{6});
  si.set("features", int64_t{5});
  int s0 = s.add_node("SequenceInput", "input", si);
  Attrs gru;
  gru.set("hidden_size", int64_t{7});
  gru.set("bidirectional", true);
  gru.set("return_sequences", true);
  gru.set("initial_state", std::string("learned"));
  int s1 = s.add_node("GRU", "gru", gru);
  s.connect(s0, s1);
  Attrs td;
  td.set("units", int64_t{6});
  int s2 = s.add_node("TimeDistributedDense", "td", td);
  s.connect(s1, s2);
  Attrs rnn;
  rnn.set("hidden_size", int64_t{4});
  rnn.set("num_layers", int64_t{2});
  rnn.set("nonlinearity", std::string("relu"));
  rnn.set("return_sequences", true);
  Attrs lne;
  lne.set("eps", 1e-3);
  int sln = s.add_node("LayerNorm", "ln", lne);
  s.connect(s2, sln);
  Attrs cross;
  cross.set("heads", int64_t{3});
  cross.set("mode", std::string("cross"));
  int sx = s.add_node("MultiHeadAttention", "cross attention", cross);
  s.connect(sln, sx, 0);
  s.connect(s2, sx, 1);
  Attrs causal;
  causal.set("heads", int64_t{2});
  causal.set("causal", true);
  causal.set("bias", false);
  int sa = s.add_node("MultiHeadAttention", "attention", causal);
  s.connect(sx, sa);
  int sc = s.add_node("ClassToken", "cls", {});
  s.connect(sa, sc);
  Attrs sin;
  sin.set("kind", std::string("sinusoidal"));
  int sp = s.add_node("PositionalEmbedding", "sinusoids", sin);
  s.connect(sc, sp);
  int sl = s.add_node("PositionalEmbedding", "positions", {});
  s.connect(sp, sl);
  int s3 = s.add_node("SimpleRNN", "rnn", rnn);
  s.connect(sl, s3);
  Attrs lstm;
  lstm.set("hidden_size", int64_t{5});
  lstm.set("num_layers", int64_t{2});
  lstm.set("bidirectional", true);
  lstm.set("return_sequences", true);
  lstm.set("initial_state", std::string("learned"));
  int s4 = s.add_node("LSTM", "lstm", lstm);
  s.connect(s3, s4);
  Attrs ls;
  ls.set("index", int64_t{-2});
  int s5 = s.add_node("LastStep", "last", ls);
  s.connect(s4, s5);

  // An image's patches as tokens, pooled two ways.
  Project tok;
  tok.name = "token forms";
  Graph& t = tok.graph;
  Attrs ti;
  ti.set("shape", std::vector<int64_t>{4, 3, 5});
  int t0 = t.add_node("Input", "input", ti);
  int t1 = t.add_node("ImageToTokens", "tokens", {});
  t.connect(t0, t1);
  Attrs first;
  first.set("mode", std::string("first"));
  int t2 = t.add_node("TokenPooling", "first", first);
  t.connect(t1, t2);
  int t3 = t.add_node("TokenPooling", "mean", {});
  t.connect(t1, t3);
  Attrs two;
  two.set("inputs", int64_t{2});
  int t4 = t.add_node("Add", "both", two);
  t.connect(t2, t4, 0);
  t.connect(t3, t4, 1);

  TempDir tmp;
  write_case(img, tmp.path / "img", 11);
  write_case(seq, tmp.path / "seq", 12);
  write_case(tok, tmp.path / "tok", 13);
  const std::string model = read_file((tmp.path / "img" / "model.py").string());
  EXPECT_NE(model.find("\"conv_same\": \"conv same\""), std::string::npos) << model;
  EXPECT_NE(model.find("self.class_ = nn.BatchNorm2d"), std::string::npos) << model;
  int code = 0;
  const std::string out =
      run_command(kPython + " " + std::string(DC_SOURCE_DIR) + "/tests/export/forward_check.py " +
                      (tmp.path / "img").string() + " " + (tmp.path / "seq").string() + " " +
                      (tmp.path / "tok").string(),
                  &code);
  ASSERT_EQ(code, 0) << out;
  json r = json::parse(out.substr(out.find('{')), nullptr, false);
  ASSERT_EQ(r.size(), 3u) << out;
  for (auto& [k, v] : r.items()) {
    ASSERT_TRUE(v.is_number()) << k << ": " << v.dump();
    EXPECT_LE(v.get<double>(), 1e-5) << k;
    std::printf("max |torch - deepcanvas| / (1 + |deepcanvas|) for %s: %.3g\n",
                fs::path(k).filename().c_str(), v.get<double>());
  }
}

// A transfer-learning project's frozen base stays frozen in model.py: its
// parameters take no gradient, its BatchNorm normalises with the running
// statistics in training and keeps them (the engine's training-mode forward
// is matched), while the trainable BatchNorm after it re-estimates its own
// and a frozen Dropout would still drop.
TEST(PyTorchExport, FrozenLayersStayFrozenInTraining) {
  if (auto why = python_missing("torch, numpy"); !why.empty()) GTEST_SKIP() << why;
  register_builtin_layers();
  Project p;
  p.name = "frozen";
  Graph& g = p.graph;
  Attrs in;
  in.set("shape", std::vector<int64_t>{2, 6, 6});
  int i = g.add_node("Input", "input", in);
  Attrs c;
  c.set("filters", int64_t{3});
  int conv = g.add_node("Conv2D", "base_conv", c);
  g.connect(i, conv);
  int bn = g.add_node("BatchNorm2D", "base_bn", {});
  g.connect(conv, bn);
  int c2 = g.add_node("Conv2D", "head_conv", c);
  g.connect(bn, c2);
  int bn2 = g.add_node("BatchNorm2D", "head_bn", {});
  g.connect(c2, bn2);
  int fl = g.add_node("Flatten", "flat", {});
  g.connect(bn2, fl);
  Attrs d;
  d.set("units", int64_t{4});
  int dense = g.add_node("Dense", "head", d);
  g.connect(fl, dense);
  g.set_trainable(conv, false);
  g.set_trainable(bn, false);

  TempDir tmp;
  const int64_t n = 5;
  Plan plan(p.graph, n);
  randomise_state(plan, 11);
  PyTorchExportOptions o;
  o.data_path = "/nonexistent";
  export_pytorch(tmp.path.string(), p, plan, o);
  Tensor x(plan.input_shape().with_batch(n));
  Rng rng(13);
  for (int64_t k = 0; k < x.numel(); ++k) x.f32()[k] = rng.uniform(-2.0f, 2.0f);
  RunContext ctx{true, &rng};
  save_npy((tmp.path / "x.npy").string(), x);
  save_npy((tmp.path / "y_train.npy").string(), plan.forward(x, ctx));

  int code = 0;
  const std::string out = run_command(kPython + " " + std::string(DC_SOURCE_DIR) +
                                          "/tests/export/frozen_check.py " + tmp.path.string(),
                                      &code);
  ASSERT_EQ(code, 0) << out;
  json r = json::parse(out.substr(out.find('{')), nullptr, false);
  ASSERT_TRUE(r.is_object()) << out;
  EXPECT_EQ(r["frozen"], json({"base_conv", "base_bn"}));
  EXPECT_LE(r["training_forward_err"].get<double>(), 1e-5) << out;
  EXPECT_EQ(r["no_grad"],
            json({"base_bn.bias", "base_bn.weight", "base_conv.bias", "base_conv.weight"}));
  EXPECT_EQ(r["with_grad"], json({"head.bias", "head.weight", "head_bn.bias", "head_bn.weight",
                                  "head_conv.bias", "head_conv.weight"}));
  // Only the trainable BatchNorm re-estimated its running statistics.
  EXPECT_EQ(r["changed_buffers"], json({"head_bn.running_mean", "head_bn.running_var"}));
  EXPECT_EQ(r["in_eval"], json({"base_bn", "base_conv"}));
}

// Blocks become one nn.Module class per definition: a residual block (one
// block input feeding two layers) nested in another with a second input,
// the outer instance frozen. The forward equals the engine's,
// the checkpoint's names load through the module paths, and the frozen
// instance's layers are listed by path.
TEST(PyTorchExport, BlocksBecomeOneClassPerDefinition) {
  if (auto why = python_missing("torch, numpy"); !why.empty()) GTEST_SKIP() << why;
  register_builtin_layers();
  Project p;
  p.name = "blocks";
  Graph& g = p.graph;
  Attrs in;
  in.set("shape", std::vector<int64_t>{4, 6, 6});
  const NodeId i = g.add_node("Input", "input", in);
  Attrs c;
  c.set("filters", int64_t{4});
  c.set("padding_mode", std::string("same"));
  const NodeId stem = g.add_node("Conv2D", "stem", c);
  g.connect(i, stem);
  const NodeId c1 = g.add_node("Conv2D", "r_conv", c);
  g.connect(stem, c1);
  const NodeId bn = g.add_node("BatchNorm2D", "r_bn", {});
  g.connect(c1, bn);
  Attrs two;
  two.set("inputs", int64_t{2});
  const NodeId add = g.add_node("Add", "r_add", two);
  g.connect(stem, add, 0);
  g.connect(bn, add, 1);
  const NodeId mix = g.add_node("Add", "mix", two);
  g.connect(add, mix, 0);
  g.connect(i, mix, 1);
  const NodeId relu = g.add_node("ReLU", "relu", {});
  g.connect(mix, relu);
  const NodeId fl = g.add_node("Flatten", "flat", {});
  g.connect(relu, fl);
  Attrs d;
  d.set("units", int64_t{3});
  const NodeId head = g.add_node("Dense", "head", d);
  g.connect(fl, head);
  const NodeId r = group_as_block(g, {c1, bn, add}, "res");
  ASSERT_EQ(g.node(r).name, "r");  // the selection's common prefix
  const NodeId o = group_as_block(g, {r, mix, relu}, "outer");
  EXPECT_EQ(g.num_inputs(o), 2);
  const std::string outer = g.node(o).name;
  g.set_trainable(o, false);

  TempDir tmp;
  write_case(p, tmp.path, 21);
  int code = 0;
  const std::string out = run_command(kPython + " " + std::string(DC_SOURCE_DIR) +
                                          "/tests/export/forward_check.py " + tmp.path.string(),
                                      &code);
  ASSERT_EQ(code, 0) << out;
  json res = json::parse(out.substr(out.find('{')), nullptr, false);
  ASSERT_TRUE(res.is_object()) << out;
  ASSERT_TRUE(res[tmp.path.string()].is_number()) << out;
  EXPECT_LE(res[tmp.path.string()].get<double>(), 1e-5) << out;

  const std::string py = read_file((tmp.path / "model.py").string());
  EXPECT_EQ(count_of(py, "\nclass Block_res(nn.Module):"), 1) << py;
  EXPECT_EQ(count_of(py, "\nclass Block_outer(nn.Module):"), 1) << py;
  EXPECT_NE(py.find("self.r = Block_res()"), std::string::npos) << py;
  EXPECT_NE(py.find("def forward(self, _in0, _in1):"), std::string::npos) << py;
  EXPECT_NE(py.find("\"" + outer + ".r.conv\": \"" + outer + "_r_conv\""), std::string::npos) << py;
  EXPECT_NE(py.find("    \"" + outer + ".r.bn\",\n"), std::string::npos)
      << "frozen by path: " << py;
}

TEST(PyTorchExport, RefusesANonEmptyFolderUnlessForced) {
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  Plan plan(p.graph, 1);
  plan.init_params(1);
  TempDir tmp;
  const fs::path dir = tmp.path / "out";
  fs::create_directories(dir);
  write_file_atomic((dir / "keep.txt").string(), "mine");
  try {
    export_pytorch(dir.string(), p, plan, {});
    FAIL() << "a non-empty folder was overwritten";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("not empty"), std::string::npos) << e.what();
    // The engine names no front end's control: the CLI adds --force, the
    // app its own offer.
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("-o"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was replaced"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(dir / "keep.txt"));
  PyTorchExportOptions o;
  o.force = true;
  export_pytorch(dir.string(), p, plan, o);
  EXPECT_FALSE(fs::exists(dir / "keep.txt"));
  EXPECT_TRUE(fs::exists(dir / "model.py"));
  EXPECT_TRUE(fs::exists(dir / "weights.safetensors"));
  // Nothing left beside it: the temporary folder was renamed into place.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) entries += e.path() != dir;
  EXPECT_EQ(entries, 0);
  // The weights are a checkpoint DeepCanvas reads.
  CheckpointInfo ck = read_checkpoint((dir / "weights.safetensors").string());
  EXPECT_EQ(ck.model.size(), plan.state().size());
}

TEST(PyTorchExport, ALayerWithoutPyTorchCounterpartIsNamed) {
  register_builtin_layers();
  if (!LayerRegistry::instance().find("TestOnlyMystery")) {
    LayerDescriptor d;
    d.type = "TestOnlyMystery";
    d.category = "Test";
    d.num_inputs = [](const Attrs&) { return 1; };
    d.infer = [](const std::vector<Shape>& in, const Attrs&) { return in.at(0); };
    d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
    LayerRegistry::instance().add(std::move(d));
  }
  Project p;
  p.name = "mystery";
  Attrs in;
  in.set("shape", std::vector<int64_t>{4});
  int i = p.graph.add_node("Input", "input", in);
  int m = p.graph.add_node("TestOnlyMystery", "odd", {});
  p.graph.connect(i, m);
  try {
    pytorch_model_py(p);
    FAIL() << "exported a layer torch has no counterpart for";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TestOnlyMystery 'odd'"), std::string::npos) << e.what();
  }
}

TEST(PyTorchExport, KubernetesManifestsHaveWhatPyTorchJobRequires) {
  if (auto why = python_missing("yaml"); !why.empty()) GTEST_SKIP() << why;
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  TempDir tmp;
  fs::create_directories(tmp.path / "k8s");
  for (const auto& [name, text] : pytorch_project_files(p, {}))
    if (name.rfind("k8s/", 0) == 0) write_file_atomic((tmp.path / name).string(), text);
  int code = 0;
  std::string out = run_command(kPython + " " + std::string(DC_SOURCE_DIR) +
                                    "/tests/export/k8s_check.py " + tmp.path.string(),
                                &code);
  EXPECT_EQ(code, 0) << out;
  // The checker itself refuses a manifest without the Worker spec.
  std::string job = read_file((tmp.path / "k8s/pytorchjob.yaml").string());
  write_file_atomic((tmp.path / "k8s/pytorchjob.yaml").string(),
                    job.substr(0, job.find("    Worker:")));
  out = run_command(kPython + " " + std::string(DC_SOURCE_DIR) + "/tests/export/k8s_check.py " +
                        tmp.path.string(),
                    &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("Master and Worker"), std::string::npos) << out;
}

TEST(PyTorchExport, MetricsLogReadsBackSkippingATruncatedLine) {
  TempDir tmp;
  const std::string path = (tmp.path / "metrics.jsonl").string();
  {
    std::ofstream f(path);
    f << R"({"kind": "start", "epochs": 2, "steps_per_epoch": 3, "world_size": 2, "device": "cpu", "torch": "1.13"})"
      << "\n"
      << R"({"kind": "step", "epoch": 1, "step": 1, "loss": 2.0, "accuracy": 0.1, "lr": 0.001, "samples_per_s": 100})"
      << "\n"
      << R"({"kind": "step", "epoch": 1, "ste)"
      << "\n"
      << R"({"kind": "epoch", "epoch": 1, "step": 3, "train_loss": 1.5, "train_accuracy": 0.4, "test_accuracy": 0.5, "best": true})"
      << "\n"
      << R"({"kind": "step", "epoch": 2, "step": 4, "loss": 1.)";  // still being written
  }
  RunLogReader r(path);
  std::vector<TrainEvent> ev = r.poll();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].kind, TrainEvent::Kind::Started);
  EXPECT_EQ(ev[1].kind, TrainEvent::Kind::Step);
  EXPECT_DOUBLE_EQ(ev[1].loss, 2.0);
  EXPECT_EQ(ev[1].epochs, 2);
  EXPECT_EQ(ev[2].kind, TrainEvent::Kind::Epoch);
  EXPECT_DOUBLE_EQ(ev[2].test_accuracy, 0.5);
  EXPECT_TRUE(std::isnan(ev[2].val_accuracy));
  ASSERT_EQ(r.warnings().size(), 1u);
  EXPECT_NE(r.warnings()[0].find("line 3"), std::string::npos) << r.warnings()[0];
  // The writer finishes its line and the run: the reader follows.
  {
    std::ofstream f(path, std::ios::app);
    f << "5, \"accuracy\": 0.6, \"lr\": 0.001}\n{\"kind\": \"end\", \"step\": 4}\n";
  }
  ev = r.poll();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_DOUBLE_EQ(ev[0].loss, 1.5);
  EXPECT_TRUE(r.finished());
  EXPECT_TRUE(r.poll(true).empty());
}

// The command line: the format follows -o, a non-empty folder needs
// --force, and the messages say what to do.
TEST(PyTorchExport, CommandLineRefusesANonEmptyFolderAndSaysHow) {
  TempDir tmp;
  const std::string project = std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj";
  const std::string dir = (tmp.path / "x").string();
  int code = 0;
  std::string out =
      run_command(std::string(DC_CLI) + " export " + project + " -o " + dir + " --json", &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"format\":\"pytorch\""), std::string::npos) << out;
  out = run_command(std::string(DC_CLI) + " export " + project + " -o " + dir, &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("is not empty"), std::string::npos) << out;
  EXPECT_NE(out.find("--force"), std::string::npos) << out;
  EXPECT_EQ(out.find("ask for its contents"), std::string::npos) << out;  // the CLI's words
  out = run_command(std::string(DC_CLI) + " export " + project + " -o " + dir + " --force --quiet",
                    &code);
  EXPECT_EQ(code, 0) << out;
  out = run_command(std::string(DC_CLI) + " export " + project + " -o " + dir + " --format keras",
                    &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("use --format onnx or --format pytorch"), std::string::npos) << out;
}

// The whole distributed path on CPUs: export the sample project, train a few
// dozen steps with torchrun and 2 gloo processes, check the replicas hold
// identical weights and that DeepCanvas evaluates the checkpoint.
TEST(PyTorchExport, TorchrunTwoProcessesThenDeepCanvasEval) {
  if (auto why = python_missing("torch, numpy"); !why.empty()) GTEST_SKIP() << why;
  int code = 0;
  if (run_command("command -v torchrun", &code); code != 0) GTEST_SKIP() << "no torchrun";
  TempDir tmp;
  const std::string project = std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj";
  const std::string dir = (tmp.path / "export").string(), out = (tmp.path / "out").string();
  std::string log = run_command(
      std::string(DC_CLI) + " export " + project + " --format pytorch -o " + dir + " --quiet",
      &code);
  ASSERT_EQ(code, 0) << log;
  // Debian's torch 1.13 torchrun on Python 3.11 needs --redirects 2 --tee 1.
  // A free rendezvous port rather than --standalone's fixed 29400, which the
  // app's torchrun test may hold at the same time (ctest -j).
  log = run_command("cd " + dir +
                        " && OMP_NUM_THREADS=1 torchrun --nnodes=1 --rdzv_backend=c10d "
                        "--rdzv_endpoint=localhost:0 --rdzv_id=export-test --nproc_per_node=2 "
                        "--redirects 2 --tee 1 train.py --device cpu --epochs 1 --batch 32 "
                        "--max-steps 30 --threads 1 --out " +
                        out,
                    &code);
  ASSERT_EQ(code, 0) << log;
  RunLogReader r(out + "/metrics.jsonl");
  std::vector<TrainEvent> ev = r.poll(true);
  EXPECT_TRUE(r.warnings().empty());
  int steps = 0, epochs = 0;
  std::string end;
  for (const TrainEvent& e : ev) {
    steps += e.kind == TrainEvent::Kind::Step;
    epochs += e.kind == TrainEvent::Kind::Epoch;
    if (e.kind == TrainEvent::Kind::Finished) end = e.message;
  }
  EXPECT_EQ(steps, 30);
  EXPECT_EQ(epochs, 1);
  EXPECT_EQ(end, "replicas identical") << log;
  expect_event_file_like_metrics(out);
  ASSERT_TRUE(fs::exists(out + "/last.safetensors"));
  ASSERT_TRUE(fs::exists(out + "/best.safetensors"));
  log = run_command(std::string(DC_CLI) + " eval " + project + " --checkpoint " + out +
                        "/last.safetensors --json",
                    &code);
  ASSERT_EQ(code, 0) << log;
  json j = json::parse(log.substr(log.find('{')), nullptr, false);
  ASSERT_TRUE(j.is_object()) << log;
  // 30 steps of 64 samples already beat chance (10 %) by far.
  EXPECT_GT(j.value("test_accuracy", 0.0), 0.5) << log;
}

}  // namespace
}  // namespace dc

namespace dc {
namespace {

// The follower of a growing metrics.jsonl: written in chunks that cut lines
// anywhere, it yields each record once its newline has arrived, never a
// half line, and ends with the same records as reading the file whole.
TEST(PyTorchExport, MetricsLogFollowsAFileWrittenInChunks) {
  TempDir tmp;
  const std::string path = (tmp.path / "metrics.jsonl").string();
  std::string text =
      R"({"kind": "start", "epochs": 2, "steps_per_epoch": 4, "world_size": 1, "device": "cpu"})"
      "\n";
  for (int s = 1; s <= 8; ++s) {
    text += R"({"kind": "step", "epoch": )" + std::to_string((s + 3) / 4) + R"(, "step": )" +
            std::to_string(s) + R"(, "loss": )" + std::to_string(3.0 - 0.25 * s) +
            R"(, "accuracy": 0.5, "lr": 0.01, "samples_per_s": 1000})" + "\n";
    if (s % 4 == 0)
      text += R"({"kind": "epoch", "epoch": )" + std::to_string(s / 4) + R"(, "step": )" +
              std::to_string(s) +
              R"(, "train_loss": 1.0, "train_accuracy": 0.6, "test_accuracy": 0.7})" + "\n";
  }
  text += R"({"kind": "end", "step": 8})";
  text += "\n";
  { std::ofstream f(path, std::ios::binary); }  // exists, empty: train.py has just opened it
  RunLogReader r(path);
  std::vector<TrainEvent> got;
  size_t at = 0;
  for (int k = 0; at < text.size(); ++k) {
    const size_t n = std::min<size_t>(1 + size_t(k * 7) % 23, text.size() - at);  // 1..23 bytes
    {
      std::ofstream f(path, std::ios::binary | std::ios::app);
      f << text.substr(at, n);
    }
    at += n;
    for (TrainEvent& e : r.poll()) got.push_back(std::move(e));
    // Exactly the complete lines so far, never the one being written.
    const auto complete = std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n');
    ASSERT_EQ(int64_t(got.size()), int64_t(complete)) << "after " << at << " bytes";
  }
  EXPECT_TRUE(r.warnings().empty()) << r.warnings().front();
  EXPECT_TRUE(r.finished());
  RunLogReader whole(path);
  const std::vector<TrainEvent> all = whole.poll(true);
  ASSERT_EQ(got.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(got[i].kind, all[i].kind) << i;
    EXPECT_EQ(got[i].step, all[i].step) << i;
    if (all[i].kind == TrainEvent::Kind::Step) {
      EXPECT_DOUBLE_EQ(got[i].loss, all[i].loss) << i;
    }
  }
  EXPECT_EQ(std::count_if(got.begin(), got.end(),
                          [](const TrainEvent& e) { return e.kind == TrainEvent::Kind::Step; }),
            8);
}

// What "runs on a fresh machine with only its requirements" can be checked
// offline: a copy of the export alone in a temporary folder, train.py run by
// `python3 -I` (isolated: no PYTHON* variables, no user site, neither the
// current nor the script's folder on sys.path) with an empty environment,
// and afterwards every module Python loaded comes from its own library, its
// site-packages (torch, numpy) or the export itself: nothing of DeepCanvas.
TEST(PyTorchExport, TrainPyRunsIsolatedFromACopyWithNothingOfOurs) {
  if (auto why = python_missing("torch, numpy"); !why.empty()) GTEST_SKIP() << why;
  TempDir src, iso;
  const std::string project = std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj";
  int code = 0;
  std::string log =
      run_command(std::string(DC_CLI) + " export " + project + " --format pytorch -o " +
                      (src.path / "x").string() + " --quiet",
                  &code);
  ASSERT_EQ(code, 0) << log;
  const fs::path exp = iso.path / "export", data = iso.path / "data", out = iso.path / "out";
  fs::copy(src.path / "x", exp, fs::copy_options::recursive);
  fs::copy(fs::path(DC_SOURCE_DIR) / "sample_data/fashion-mnist-subset", data,
           fs::copy_options::recursive);
  // Runs train.py as `python3 -I train.py ...` would, then audits sys.modules.
  const std::string audit = R"PY(
import os, runpy, site, sys, sysconfig
exp = os.path.realpath(sys.argv[1])
assert exp not in sys.path and "" not in sys.path and os.getcwd() not in sys.path, sys.path
sys.argv = [os.path.join(exp, "train.py")] + sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
dirs = [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")]
dirs += site.getsitepackages() + [exp]
roots = {f(d) for d in dirs for f in (os.path.abspath, os.path.realpath)}
# abspath too: Debian's sitecustomize.py in the stdlib folder links to /etc.
inside = lambda f: any(g(f).startswith(r + os.sep) for r in roots for g in (os.path.abspath, os.path.realpath))
foreign = sorted(f"{n}: {m.__file__}" for n, m in list(sys.modules.items())
                 if n != "__main__" and getattr(m, "__file__", None) and not inside(m.__file__))
print("\n".join(["FOREIGN " + f for f in foreign]) or "ALL MODULES FROM PYTHON OR THE EXPORT")
print("OURS", sorted(n for n, m in sys.modules.items()
                     if os.path.realpath(getattr(m, "__file__", None) or "/").startswith(exp + os.sep)))
sys.exit(1 if foreign else 0)
)PY";
  {
    std::ofstream f(iso.path / "audit.py");
    f << audit;
  }
  log = run_command("cd " + iso.path.string() + " && env -i PATH=/usr/bin:/bin HOME=" +
                        iso.path.string() + " PYTHONPATH= OMP_NUM_THREADS=1 /usr/bin/python3 -I " +
                        "audit.py " + exp.string() + " --data " + data.string() + " --out " +
                        out.string() + " --device cpu --epochs 1 --batch 32 --max-steps 8",
                    &code);
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("ALL MODULES FROM PYTHON OR THE EXPORT"), std::string::npos) << log;
  EXPECT_NE(log.find("'model'"), std::string::npos) << log;  // the export's own, from the copy
  EXPECT_NE(log.find("'dc_safetensors'"), std::string::npos) << log;
  RunLogReader r((out / "metrics.jsonl").string());
  const std::vector<TrainEvent> ev = r.poll(true);
  EXPECT_TRUE(r.finished());
  EXPECT_EQ(std::count_if(ev.begin(), ev.end(),
                          [](const TrainEvent& e) { return e.kind == TrainEvent::Kind::Step; }),
            8);
  EXPECT_TRUE(fs::exists(out / "last.safetensors"));
  // Written by train.py's own writer, so `python3 -I` with torch and numpy
  // alone has one, and it reads back as TensorBoard reads it.
  expect_event_file_like_metrics(out);
}

}  // namespace
}  // namespace dc

namespace dc {
namespace {

// Strings a shared project or an imported ONNX model may carry, one per
// language the export writes (issue 29): Python (closing a """ docstring, a
// ''' raw string, a "..." literal, a comment by a newline or a carriage
// return), YAML (a second document, keys through U+2028/U+0085), the
// Dockerfile (an instruction after a newline, parser directives), the shell
// of the README's commands, and bytes that break parsers or terminals.
const std::vector<std::string>& payloads() {
  static const std::vector<std::string> p = {
      "x\"\"\"\nimport os; open('PWNED-py', 'w')\n\"\"\"",
      "x'''+str(open('PWNED-raw', 'w'))+r'''",
      "q\" + str(open('PWNED-str', 'w')) + \"",
      "c\rimport os\\",
      "a\n---\napiVersion: v1\nkind: Pod",
      "k\u2028evil: 1\u0085other: 2\u2029",
      "n\nRUN touch PWNED-docker",
      "syntax=evil/frontend",
      "$(touch PWNED-sh); `touch PWNED-tick`; touch PWNED-semi",
      "it's \"quoted\" \\ back",
      std::string("nul\0and\x1b[31mansi\x7f", 17),
      "<script>[link](x) | `code` *bold*",
      "Фото ✓ \u202eevil",
  };
  return p;
}

struct InjectionCase {
  std::string dir, name, data, target, file, cache;
  std::vector<std::string> layers;
};

// The sample project with every string field set from s, exported into dir;
// kind "image_csv" adds the image dataset's fields (issue 31) and names a
// CSV file, whose name the README repeats.
InjectionCase export_with_strings(const std::string& s, const fs::path& dir,
                                  const std::string& kind = "idx") {
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  p.dataset.kind = kind;
  InjectionCase c;
  c.dir = dir.string();
  c.name = p.name = s;
  // A path holds no NUL and no '/' in a name: the shell and the file system
  // would not pass them on, so neither can a project.
  std::string path_safe;
  for (char ch : s) path_safe += ch == '\0' ? '0' : ch == '/' ? '_' : ch;
  c.data = p.dataset.path = "/nonexistent/" + path_safe;
  c.target = p.dataset.target = s;
  if (kind == "image_csv") {
    c.cache = p.dataset.cache = s;
    p.dataset.loading = s;
    p.dataset.split_seed = 7;
    p.dataset.preprocess.mean = {0.5f};
    p.dataset.preprocess.std = {0.25f};
  }
  c.file = path_safe + ".dcproj";
  p.file = "/projects/" + c.file;
  std::vector<NodeId> ids;
  for (const auto& [id, n] : p.graph.nodes()) ids.push_back(id);
  for (size_t k = 0; k < ids.size(); ++k) {
    p.graph.rename(ids[k], s + " " + std::to_string(k));
    c.layers.push_back(p.graph.node(ids[k]).name);
  }
  Plan plan(p.graph, 1);
  plan.init_params(1);
  PyTorchExportOptions o;
  o.weights_source = s;
  export_pytorch(c.dir, p, plan, o);
  return c;
}

json case_json(const InjectionCase& c) {
  json j = {{"dir", c.dir},   {"name", c.name},     {"layers", c.layers},
            {"data", c.data}, {"target", c.target}, {"file", c.file}};
  if (!c.cache.empty()) j["cache"] = c.cache;
  return j;
}

TEST(PyTorchExport, StringsFromTheProjectCannotAddCodeToAnyFile) {
  if (auto why = python_missing("yaml"); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  json spec;
  spec["baseline"] = case_json(export_with_strings("plain name", tmp.path / "baseline"));
  spec["cases"] = json::array();
  int k = 1;
  for (const std::string& s : payloads()) {
    SCOPED_TRACE(k);
    spec["cases"].push_back(
        case_json(export_with_strings(s, tmp.path / ("case" + std::to_string(k)))));
    ++k;
  }
  write_file_atomic((tmp.path / "cases.json").string(), spec.dump());
  int code = 0;
  const std::string checker = std::string(DC_SOURCE_DIR) + "/tests/export/injection_check.py";
  std::string out = run_command(
      "cd " + tmp.path.string() + " && " + kPython + " " + checker + " cases.json 2>&1", &code);
  EXPECT_EQ(code, 0) << out;
  // Nothing ran: no marker file anywhere the payloads point.
  for (const auto& e : fs::recursive_directory_iterator(tmp.path))
    EXPECT_EQ(e.path().filename().string().find("PWNED"), std::string::npos) << e.path();

  // The checker is not blind: a README whose data path went in unquoted, and
  // a train.py with a statement added, are both reported.
  const fs::path bad = tmp.path / "case9";
  std::string readme = read_file((bad / "README.md").string());
  const std::string quoted = escape::sh_word(spec["cases"][8]["data"].get<std::string>());
  ASSERT_NE(readme.find(quoted), std::string::npos);
  readme.replace(readme.find(quoted), quoted.size(), spec["cases"][8]["data"].get<std::string>());
  write_file_atomic((bad / "README.md").string(), readme);
  write_file_atomic((bad / "train.py").string(),
                    read_file((bad / "train.py").string()) + "open('x', 'w')\n");
  out = run_command(
      "cd " + tmp.path.string() + " && " + kPython + " " + checker + " cases.json 2>&1", &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("case9/README.md"), std::string::npos) << out;
  EXPECT_NE(out.find("case9/train.py: its statements differ"), std::string::npos) << out;
  EXPECT_NE(out.find("ran something"), std::string::npos) << out;
}

// The same payloads in an image CSV project: its extra CONFIG fields and
// the README's words about the CSV's name go through the escapes too.
TEST(PyTorchExport, StringsFromAnImageProjectCannotAddCodeToAnyFile) {
  if (auto why = python_missing("yaml"); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  json spec;
  spec["baseline"] =
      case_json(export_with_strings("plain name", tmp.path / "baseline", "image_csv"));
  spec["cases"] = json::array();
  int k = 1;
  for (const std::string& s : payloads()) {
    SCOPED_TRACE(k);
    spec["cases"].push_back(
        case_json(export_with_strings(s, tmp.path / ("case" + std::to_string(k)), "image_csv")));
    ++k;
  }
  write_file_atomic((tmp.path / "cases.json").string(), spec.dump());
  int code = 0;
  const std::string checker = std::string(DC_SOURCE_DIR) + "/tests/export/injection_check.py";
  std::string out = run_command(
      "cd " + tmp.path.string() + " && " + kPython + " " + checker + " cases.json 2>&1", &code);
  EXPECT_EQ(code, 0) << out;
  for (const auto& e : fs::recursive_directory_iterator(tmp.path))
    EXPECT_EQ(e.path().filename().string().find("PWNED"), std::string::npos) << e.path();
  // The CSV's name is in the README, shown as code, not as Markdown.
  const std::string readme = read_file((tmp.path / "case12" / "README.md").string());
  EXPECT_NE(readme.find(escape::md_code(
                fs::path(spec["cases"][11]["data"].get<std::string>()).filename().string())),
            std::string::npos);
}

TEST(PyTorchExport, ABaseImageThatIsNotOneWordIsRefused) {
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  PyTorchExportOptions o;
  o.image = "ubuntu\nRUN touch /tmp/x";
  EXPECT_THROW(pytorch_project_files(p, o), Error);
}

TEST(PyTorchExport, AFolderWithATrailingSlashIsTheFolder) {
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  Plan plan(p.graph, 1);
  plan.init_params(1);
  TempDir tmp;
  export_pytorch((tmp.path / "out").string() + "/", p, plan, {});
  EXPECT_TRUE(fs::exists(tmp.path / "out" / "model.py"));
  int entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) entries += e.path() != tmp.path / "out";
  EXPECT_EQ(entries, 0);
}

}  // namespace
}  // namespace dc

namespace dc {
namespace {

// A small photo folder made with Pillow: classes cat and dog of 12 PNGs each
// (sizes from 20 to 90 px; RGB, grey, RGBA and palette pictures; a third in
// a subfolder; one non-ASCII name, which sorts after ASCII bytewise), plus a
// text file named broken.png, a notes.txt and a hidden .png.
void make_image_folder(const fs::path& root) {
  const std::string script = R"PY(
import os, random, sys
from PIL import Image
root = sys.argv[1]
rnd = random.Random(5)
for ci, cls in enumerate(["cat", "dog"]):
    os.makedirs(os.path.join(root, cls, "more"), exist_ok=True)
    for k in range(12):
        w, h = rnd.randint(20, 90), rnd.randint(20, 90)
        im = Image.new("RGB", (w, h), (200, 60, 40) if ci == 0 else (40, 60, 200))
        im.paste((rnd.randint(0, 255),) * 3, (0, 0, w // 2, h // 2))
        im = im.convert(["RGB", "L", "RGBA", "P"][k % 4])
        name = "Фото.png" if (ci, k) == (1, 5) else f"img{k:02d}.png"
        im.save(os.path.join(root, cls, "more" if k % 3 == 0 else "", name))
with open(os.path.join(root, "cat", "broken.png"), "w") as f:
    f.write("this is not a png")
with open(os.path.join(root, "dog", "notes.txt"), "w") as f:
    f.write("notes")
with open(os.path.join(root, "dog", ".hidden.png"), "w") as f:
    f.write("hidden")
)PY";
  fs::create_directories(root);
  write_file_atomic((root / "make.py").string(), script);
  int code = 0;
  const std::string out =
      run_command(kPython + " " + (root / "make.py").string() + " " + root.string(), &code);
  fs::remove(root / "make.py");
  ASSERT_EQ(code, 0) << out;
}

std::vector<std::string> relative(const std::vector<ImageItem>& v, const fs::path& root) {
  std::vector<std::string> out;
  for (const ImageItem& it : v) out.push_back(fs::path(it.path).lexically_relative(root).string());
  return out;
}

// The sample project (a CNN on 1×28×28) reading an image dataset at path.
Project image_project(const std::string& kind, const fs::path& path) {
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  p.dataset.kind = kind;
  p.dataset.path = path.string();
  p.dataset.split_seed = 3;
  p.dataset.test_fraction = 0.25;
  p.training.augment.resized_crop = true;
  p.training.augment.color_jitter = 0.3;
  p.training.augment.flip = true;
  return p;
}

void export_project(const Project& p, const fs::path& dir) {
  Plan plan(p.graph, 1);
  plan.init_params(1);
  export_pytorch(dir.string(), p, plan, {});
}

// train.py's split (OUT/split.json) against the engine's listing of `root`.
void expect_same_split(const fs::path& split_json, const ImageList& engine, const fs::path& root) {
  ASSERT_TRUE(fs::exists(split_json));
  const json j = json::parse(read_file(split_json.string()));
  EXPECT_EQ(j["classes"].get<std::vector<std::string>>(), engine.class_names);
  EXPECT_EQ(j["train"].get<std::vector<std::string>>(), relative(engine.train, root));
  EXPECT_EQ(j["val"].get<std::vector<std::string>>(), relative(engine.val, root));
  EXPECT_EQ(j["test"].get<std::vector<std::string>>(), relative(engine.test, root));
}

json record_of(const fs::path& metrics, const std::string& kind) {
  std::istringstream in(read_file(metrics.string()));
  json found;
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("kind", "") == kind) found = j;
  }
  return found;
}

std::string image_python_missing() {
  if (auto why = python_missing("torch, numpy, torchvision, PIL"); !why.empty()) return why;
  int code = 0;
  if (run_command("command -v torchrun", &code); code != 0) return "no torchrun";
  return "";
}

// Issue 31: the exported project trains on a photo folder under torchrun
// (2 gloo processes, a DistributedSampler each, DataLoader workers) with
// exactly the engine's listing and split, and a bad file is named and
// counted, not a crash.
TEST(PyTorchExport, ImageFolderTrainsUnderTorchrunWithTheEnginesSplit) {
  if (auto why = image_python_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  const fs::path data = tmp.path / "photos", dir = tmp.path / "export", out = tmp.path / "out";
  make_image_folder(data);
  const Project p = image_project("image_folder", data);
  export_project(p, dir);
  const std::string train_py = read_file((dir / "train.py").string());
  EXPECT_NE(train_py.find("\"split_seed\": 3"), std::string::npos);
  EXPECT_NE(train_py.find("\"resized_crop\": True"), std::string::npos);
  int code = 0;
  const std::string log =
      run_command("cd " + dir.string() +
                      " && OMP_NUM_THREADS=1 torchrun --nnodes=1 --rdzv_backend=c10d "
                      "--rdzv_endpoint=localhost:0 --rdzv_id=export-images --nproc_per_node=2 "
                      "--redirects 2 --tee 1 train.py --device cpu --epochs 1 --batch 4 "
                      "--threads 1 --workers 1 --out " +
                      out.string(),
                  &code);
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("cat/broken.png"), std::string::npos) << log;
  EXPECT_NE(log.find("dog/notes.txt"), std::string::npos) << log;
  EXPECT_EQ(log.find(".hidden.png"), std::string::npos) << log;

  ImageListOptions o;
  o.split_seed = 3;
  o.test_fraction = 0.25;
  const ImageList engine = list_image_folder(data.string(), o);
  ASSERT_EQ(engine.class_names.size(), 2u);
  ASSERT_EQ(engine.train.size() + engine.test.size(), 24u);
  expect_same_split(out / "split.json", engine, data);
  // Not a comparison any split passes: another seed gives other test files.
  ImageListOptions other = o;
  other.split_seed = 4;
  EXPECT_NE(json::parse(read_file((out / "split.json").string()))["test"],
            json(relative(list_image_folder(data.string(), other).test, data)));

  const json start = record_of(out / "metrics.jsonl", "start");
  const json end = record_of(out / "metrics.jsonl", "end");
  ASSERT_TRUE(start.contains("images")) << log;
  EXPECT_EQ(start["images"]["train"], json::array({9, 9})) << start.dump();
  EXPECT_EQ(start["images"]["test"], json::array({3, 3})) << start.dump();
  EXPECT_EQ(end.value("bad_images", -1), 1) << end.dump();
  EXPECT_EQ(end.value("replicas_identical", false), true) << end.dump();
  const json epoch = record_of(out / "metrics.jsonl", "epoch");
  EXPECT_TRUE(epoch.contains("test_accuracy")) << log;
  EXPECT_TRUE(fs::exists(out / "last.safetensors"));
}

// The CSV list variant, run as the Docker image runs it: --data names the
// folder the CSV lies in (its paths are relative to it), and train.py finds
// the CSV there by its name. The rows list the folder's files (and one that
// is missing): the split is the folder's, by list_image_csv's contract.
TEST(PyTorchExport, ImageCsvListTrainsFromItsFolderWithTheSameSplit) {
  if (auto why = image_python_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  const fs::path data = tmp.path / "photos", dir = tmp.path / "export", out = tmp.path / "out";
  make_image_folder(data);
  ImageListOptions o;
  o.split_seed = 3;
  o.test_fraction = 0.25;
  o.check_files = false;  // every name, the broken one too
  const ImageList all = list_image_folder(data.string(), o);
  std::string csv = "path,label\n";
  for (const auto* split : {&all.train, &all.test})
    for (const ImageItem& it : *split)
      csv += fs::path(it.path).lexically_relative(data).string() + "," +
             all.class_names[size_t(it.label)] + "\n";
  csv += "dog/gone.png,dog\n";
  write_file_atomic((data / "labels.csv").string(), csv);
  export_project(image_project("image_csv", data / "labels.csv"), dir);
  int code = 0;
  const std::string log = run_command("cd " + dir.string() + " && OMP_NUM_THREADS=1 " + kPython +
                                          " train.py --device cpu --epochs 1 --batch 8 "
                                          "--threads 1 --workers 0 --data " +
                                          data.string() + " --out " + out.string(),
                                      &code);
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("cat/broken.png"), std::string::npos) << log;
  EXPECT_NE(log.find("dog/gone.png"), std::string::npos) << log;
  o.check_files = true;
  expect_same_split(out / "split.json", list_image_folder(data.string(), o), data);
  EXPECT_EQ(record_of(out / "metrics.jsonl", "end").value("bad_images", -1), 2) << log;
}

}  // namespace
}  // namespace dc

namespace dc {
namespace {

// train.py's rule for a network that predicts every step (the Character
// Transformer) against the engine's BatchScorer on the same numbers: the
// training loss over every step with padding targets left out, the loss
// and hits shown at the last step. The exported module is imported, not
// run, so its own functions are what is checked.
TEST(PyTorchExport, TrainPyScoresEveryStepAsTheEngineDoes) {
  if (auto why = python_missing("torch, numpy"); !why.empty()) GTEST_SKIP() << why;
  TempDir tmp;
  Project p =
      load_project(std::string(DC_SOURCE_DIR) + "/resources/templates/char_transformer.dcproj");
  Plan plan(p.graph, 1);
  plan.init_params(1);
  const fs::path exp = tmp.path / "export";
  export_pytorch(exp.string(), p, plan, {});
  const int64_t N = 4, T = plan.input_shape()[0], V = plan.output_shape()[1];
  ASSERT_EQ(plan.output_shape(), (Shape{T, V}));

  Rng r(5);
  Tensor x(Shape{N, T}), out(Shape{N, T, V}), labels_f(Shape{N});
  std::vector<int32_t> labels(static_cast<size_t>(N));
  for (int64_t i = 0; i < N * T; ++i) x.f32()[i] = float(1 + r.below(uint64_t(V - 1)));
  for (int64_t t = 0; t < 7; ++t) x.f32()[t] = 0;  // window 0 starts before the text
  for (int64_t i = 0; i < out.numel(); ++i) out.f32()[i] = r.uniform(-4, 4);
  for (int64_t n = 0; n < N; ++n)
    labels_f.f32()[n] = float(labels[size_t(n)] = int32_t(1 + r.below(uint64_t(V - 1))));
  // Some last-step predictions right, so the hits count something.
  for (int64_t n = 0; n < 2; ++n) out.f32()[(n * T + T - 1) * V + labels[size_t(n)]] = 20;
  save_npy((tmp.path / "x.npy").string(), x);
  save_npy((tmp.path / "out.npy").string(), out);
  save_npy((tmp.path / "y.npy").string(), labels_f);

  auto loss = make_loss(LossType::SoftmaxCrossEntropy);
  BatchScorer scorer(*loss, /*every_step=*/true);
  Tensor dout(out.shape());
  ClassificationMetrics m;
  float shown = 0;
  const float trained = scorer.train(out, x, labels.data(), dout, &m, &shown);
  ClassificationMetrics me;
  const float evaluated = scorer.eval(out, labels.data(), dout, &me);

  const std::string script = R"PY(
import json, sys
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
import train
d = sys.argv[2]
x = torch.from_numpy(np.load(d + "/x.npy")).long()
out = torch.from_numpy(np.load(d + "/out.npy"))
y = torch.from_numpy(np.load(d + "/y.npy")).long()
print(json.dumps({"every_step": bool(train.every_step(out, x)),
                  "train": float(train.loss_fn(out, y, x, True)),
                  "shown": float(train.loss_fn(out, y, x, False)),
                  "hits": train.hits(out, y, x)}))
)PY";
  {
    std::ofstream f(tmp.path / "check.py");
    f << script;
  }
  int code = 0;
  const std::string log = run_command(kPython + " " + (tmp.path / "check.py").string() + " " +
                                          exp.string() + " " + tmp.path.string(),
                                      &code);
  ASSERT_EQ(code, 0) << log;
  const json j = json::parse(log.substr(log.rfind('{')));
  EXPECT_TRUE(j["every_step"].get<bool>()) << log;
  EXPECT_NEAR(j["train"].get<double>(), trained, 1e-5 * std::abs(trained)) << log;
  EXPECT_NEAR(j["shown"].get<double>(), shown, 1e-5 * std::abs(shown)) << log;
  EXPECT_NEAR(j["shown"].get<double>(), evaluated, 1e-5 * std::abs(evaluated)) << log;
  EXPECT_EQ(j["hits"].get<int64_t>(), m.top1_hits()) << log;
  EXPECT_GE(m.top1_hits(), 2);
  // Over every step the loss is not the last step's: the check tells them apart.
  EXPECT_GT(std::abs(trained - shown), 0.05) << trained << " " << shown;
}

}  // namespace
}  // namespace dc
