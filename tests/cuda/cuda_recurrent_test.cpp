// The recurrent and sequence layers on CUDA (cuDNN RNN, Embedding, LastStep,
// TimeDistributedDense) against the engine's CPU layers, which match
// PyTorch: forward outputs, input gradients (through the trainable layer in
// front) and every parameter gradient, float32, relative error <= 1e-4.
// Plus the LSTM row classifier trained on both. Skips without a GPU.
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cuda_test_util.h"

namespace dc {
namespace {

using test::A;

struct SeqCase {
  SeqCase(std::string name_, int64_t T_, int64_t F_, bool tokens_, bool pre_, std::string type_,
          Attrs attrs_, std::string post_ = "", Attrs post_attrs_ = {})
      : name(std::move(name_)),
        T(T_),
        F(F_),
        tokens(tokens_),
        pre(pre_),
        type(std::move(type_)),
        attrs(std::move(attrs_)),
        post(std::move(post_)),
        post_attrs(std::move(post_attrs_)) {}
  std::string name;
  int64_t T, F;  // steps x features; with tokens, F is the vocabulary
  bool tokens;   // SequenceInput of token ids -> Embedding(F, 6, padding 1)
  // A trainable layer between input and op, so the op's input gradient is
  // compared through its weight gradient: TimeDistributedDense (F -> F).
  bool pre;
  std::string type;
  Attrs attrs;
  std::string post;  // "" or a layer after the op ("LastStep", "TimeDistributedDense")
  Attrs post_attrs;
};

Graph build(const SeqCase& c) {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("SequenceInput", "input",
                         A({{"steps", c.T},
                            {"features", c.F},
                            {"kind", std::string(c.tokens ? "tokens" : "features")}}));
  NodeId src = in;
  if (c.tokens) {
    src = g.add_node("Embedding", "emb",
                     A({{"vocab_size", c.F}, {"dim", int64_t(6)}, {"padding_idx", int64_t(1)}}));
    g.connect(in, src);
  } else if (c.pre) {
    src = g.add_node("TimeDistributedDense", "pre", A({{"units", c.F}}));
    g.connect(in, src);
  }
  NodeId op = g.add_node(c.type, "op", c.attrs);
  g.connect(src, op);
  if (!c.post.empty()) {
    NodeId p = g.add_node(c.post, "post", c.post_attrs);
    g.connect(op, p);
  }
  return g;
}

Tensor input_for(const SeqCase& c, int64_t N, uint64_t seed) {
  Tensor t(c.tokens ? Shape{N, c.T} : Shape{N, c.T, c.F});
  Rng r(seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.f32()[i] = c.tokens ? float(r.below(uint64_t(c.F))) : r.uniform(-1.f, 1.f);
  return t;
}

Tensor random(const Shape& s, uint64_t seed) {
  return test::uniform_tensor(s, seed, -1.f, 1.f);
}

using test::rel_err;

// Learned initial states start at zero, which would leave their forward
// effect untested: give every parameter a random value first.
void randomize(Plan& p, uint64_t seed) {
  Rng r(seed);
  for (auto& np : p.params())
    if (np.name.find(".h0") != std::string::npos || np.name.find(".c0") != std::string::npos)
      for (int64_t i = 0; i < np.param->value.numel(); ++i)
        np.param->value.f32()[i] = r.uniform(-0.5f, 0.5f);
}

void check(const SeqCase& c, bool training = true, int64_t N = 6) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  SCOPED_TRACE(c.name);
  Graph g = build(c);
  Plan host(g, N);
  host.init_params(7);
  randomize(host, 9);
  DevicePlanOptions o;
  o.max_batch = N;
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();

  Tensor x = input_for(c, N, 11);
  Tensor dout = random(host.output_shape().with_batch(N), 13);
  Rng rng(5);
  RunContext ctx{training, &rng};
  Tensor cpu_out = host.forward(x, ctx).clone();
  host.zero_grad();
  host.backward(dout, ctx);
  std::vector<Tensor> cpu_grads;
  for (auto& p : host.params())
    if (p.param->trainable) cpu_grads.push_back(p.param->grad.clone());

  Tensor gpu_out(host.output_shape().with_batch(N));
  dev->zero_grad();
  dev->forward(x, gpu_out, training, 1);
  dev->backward(dout);
  dev->download_grads();
  EXPECT_LE(rel_err(gpu_out, cpu_out), 1e-4) << "forward output";
  size_t k = 0;
  for (auto& p : host.params())
    if (p.param->trainable) {
      EXPECT_LE(rel_err(p.param->grad, cpu_grads[k]), 1e-4) << "gradient of " << p.name;
      ++k;
    }
  // A smaller batch through the same plan (the last batch of an epoch).
  const int64_t n2 = N / 2;
  Tensor x2 = input_for(c, n2, 21);
  RunContext ctx2{training, &rng};
  Tensor cpu2 = host.forward(x2, ctx2).clone();
  Tensor gpu2(host.output_shape().with_batch(n2));
  dev->forward(x2, gpu2, training, 2);
  EXPECT_LE(rel_err(gpu2, cpu2), 1e-4) << "forward output, batch " << n2;
}

TEST(CudaRecurrent, LstmLastState) {
  check({"lstm", 7, 5, false, true, "LSTM", A({{"hidden_size", int64_t(8)}})});
}
TEST(CudaRecurrent, LstmStackedBidirectionalSequenceLearnedInit) {
  check({"lstm2", 6, 4, false, true, "LSTM",
         A({{"hidden_size", int64_t(5)},
            {"num_layers", int64_t(2)},
            {"bidirectional", true},
            {"return_sequences", true},
            {"initial_state", std::string("learned")}})});
}
TEST(CudaRecurrent, LstmBidirectionalLastStateNoBias) {
  check({"lstm bi", 5, 3, false, true, "LSTM",
         A({{"hidden_size", int64_t(6)}, {"bidirectional", true}, {"bias", false}})});
}
TEST(CudaRecurrent, GruLastStateAndBidirectional) {
  check({"gru", 6, 4, false, true, "GRU", A({{"hidden_size", int64_t(7)}})});
  check({"gru bi", 5, 4, false, true, "GRU",
         A({{"hidden_size", int64_t(5)}, {"bidirectional", true}, {"num_layers", int64_t(2)}})});
}
TEST(CudaRecurrent, GruSequenceLearnedInit) {
  check({"gru learned", 4, 3, false, true, "GRU",
         A({{"hidden_size", int64_t(6)},
            {"return_sequences", true},
            {"initial_state", std::string("learned")}})});
}
TEST(CudaRecurrent, SimpleRnnTanhAndRelu) {
  check({"rnn tanh", 6, 4, false, true, "SimpleRNN", A({{"hidden_size", int64_t(7)}})});
  check({"rnn relu", 5, 4, false, true, "SimpleRNN",
         A({{"hidden_size", int64_t(6)},
            {"nonlinearity", std::string("relu")},
            {"num_layers", int64_t(2)},
            {"return_sequences", true}})});
}
TEST(CudaRecurrent, SimpleRnnBidirectionalLearnedInit) {
  check({"rnn bi", 4, 3, false, true, "SimpleRNN",
         A({{"hidden_size", int64_t(5)},
            {"bidirectional", true},
            {"initial_state", std::string("learned")}})});
}
// cuDNN's persistent algorithm (hidden size <= 128), required here so that a
// refusal fails instead of falling back: the cases above run it by default
// where cuDNN takes it; these name it, with the benchmark's LSTM shape (28
// steps of 28 features, hidden 128) among them, and the standard algorithm
// for comparison.
TEST(CudaRecurrent, PersistentAlgorithmMatchesTheCpu) {
  const test::ScopedEnv algo("DC_CUDA_RNN_ALGO", "persistent");
  check({"lstm persistent", 7, 5, false, true, "LSTM", A({{"hidden_size", int64_t(8)}})});
  check({"lstm persistent, benchmark shape", 28, 28, false, false, "LSTM",
         A({{"hidden_size", int64_t(128)}})},
        true, 64);
  check({"gru persistent, sequence", 6, 4, false, true, "GRU",
         A({{"hidden_size", int64_t(16)}, {"return_sequences", true}})});
}
TEST(CudaRecurrent, StandardAlgorithmMatchesTheCpu) {
  const test::ScopedEnv algo("DC_CUDA_RNN_ALGO", "standard");
  check({"lstm standard", 7, 5, false, true, "LSTM", A({{"hidden_size", int64_t(8)}})});
  check({"lstm standard, benchmark shape", 28, 28, false, false, "LSTM",
         A({{"hidden_size", int64_t(128)}})},
        true, 64);
}
// Dropout between layers is off in evaluation, so CPU and CUDA agree there.
TEST(CudaRecurrent, StackedLstmWithDropoutInEvaluation) {
  check({"lstm dropout eval", 5, 4, false, true, "LSTM",
         A({{"hidden_size", int64_t(6)}, {"num_layers", int64_t(2)}, {"dropout", 0.5}})},
        false);
}
TEST(CudaRecurrent, EmbeddingIntoLstm) {
  check({"embedding", 6, 10, true, false, "LSTM", A({{"hidden_size", int64_t(5)}})});
}
TEST(CudaRecurrent, TimeDistributedDenseAndLastStep) {
  check({"tdd", 5, 4, false, true, "TimeDistributedDense", A({{"units", int64_t(3)}})});
  check({"last", 5, 4, false, true, "LastStep", A({})});
  check({"step 1", 5, 4, false, true, "LastStep", A({{"index", int64_t(1)}})});
  check({"lstm seq -> tdd", 5, 4, false, true, "LSTM",
         A({{"hidden_size", int64_t(6)}, {"return_sequences", true}}), "TimeDistributedDense",
         A({{"units", int64_t(3)}})});
  check({"gru seq -> last", 5, 4, false, true, "GRU",
         A({{"hidden_size", int64_t(6)}, {"return_sequences", true}, {"bidirectional", true}}),
         "LastStep", A({{"index", int64_t(-2)}})});
}

// Training-mode dropout between layers uses cuDNN's masks: not comparable
// element by element, so check what it must do: change the output from the
// evaluation output, keep it finite, and give finite gradients.
TEST(CudaRecurrent, StackedLstmDropoutInTrainingChangesTheOutput) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  SeqCase c{"lstm dropout",
            5,
            4,
            false,
            false,
            "LSTM",
            A({{"hidden_size", int64_t(16)},
               {"num_layers", int64_t(2)},
               {"dropout", 0.5},
               {"return_sequences", true}})};
  const int64_t N = 8;
  Graph g = build(c);
  Plan host(g, N);
  host.init_params(3);
  DevicePlanOptions o;
  o.max_batch = N;
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  Tensor x = input_for(c, N, 4);
  Tensor eval(host.output_shape().with_batch(N)), train(host.output_shape().with_batch(N));
  dev->forward(x, eval, false, 1);
  dev->zero_grad();
  dev->forward(x, train, true, 1);
  Tensor dout = random(host.output_shape().with_batch(N), 5);
  dev->backward(dout);
  dev->download_grads();
  EXPECT_GT(rel_err(train, eval), 1e-3) << "dropout had no effect in training";
  for (int64_t i = 0; i < train.numel(); ++i) ASSERT_TRUE(std::isfinite(train.f32()[i]));
  for (auto& p : host.params())
    for (int64_t i = 0; i < p.param->grad.numel(); ++i)
      ASSERT_TRUE(std::isfinite(p.param->grad.f32()[i])) << p.name;
}

TEST(CudaRecurrent, EmbeddingRefusesAnIdOutsideTheVocabulary) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  SeqCase c{"bad ids", 4, 10, true, false, "LSTM", A({{"hidden_size", int64_t(4)}})};
  Graph g = build(c);
  Plan host(g, 2);
  host.init_params(1);
  DevicePlanOptions o;
  o.max_batch = 2;
  auto dev = be->create_plan(g, host, o);
  Tensor x = input_for(c, 2, 1);
  x.f32()[3] = 10.f;
  Tensor out(host.output_shape().with_batch(2));
  try {
    dev->forward(x, out, false, 0);
    FAIL() << "token id 10 was accepted with a vocabulary of 10";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("token id"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Embedding"), std::string::npos) << e.what();
  }
}

// The LSTM row-classifier template on the bundled subset: the CUDA run
// reaches the CPU run's test accuracy (within run-to-run noise).
TEST(CudaRecurrentTraining, LstmRowClassifierReachesTheCpuAccuracy) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/resources/templates/lstm_rows.dcproj");
  double cpu = test::subset_accuracy(p, "cpu");
  double gpu = test::subset_accuracy(p, "cuda:0");
  std::printf("[ sample subset ] LSTM rows: CPU test accuracy %.4f, CUDA %.4f\n", cpu, gpu);
  EXPECT_GT(gpu, 0.65);
  EXPECT_GE(gpu, cpu - 0.03);
}

// bf16/fp16 with cuDNN's 16-bit data path (16-bit inputs, weights and
// states, float32 math) forced by DC_CUDA_RNN_DATA=low, so a refusal fails
// instead of falling back to float32 data: forward output and every
// gradient against the CPU's float32, within 16-bit error, at the full batch
// and again at half the batch through the same plan (forward and backward:
// the final-state gradient buffers are per batch size). Measured on an
// H200 (cuDNN 9.14): bf16 (8 significant bits) at most 3.5e-3 on outputs
// and 2.1e-2 on gradients, fp16 (11 bits) 4e-4 and 2.3e-3; the tolerances
// leave 2.5x and 4x of that. An error in the conversions or the weight
// layout is of order 1.
double low_tol(const std::string& prec) {
  return prec == "bf16" ? 5e-2 : 1e-2;
}

void check_low(const SeqCase& c, const std::string& prec, int64_t N = 8) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  SCOPED_TRACE(c.name + " " + prec);
  const test::ScopedEnv data("DC_CUDA_RNN_DATA", "low");
  const double tol = low_tol(prec);
  Graph g = build(c);
  Plan host(g, N);
  host.init_params(7);
  randomize(host, 9);
  DevicePlanOptions o;
  o.max_batch = N;
  o.precision = *enum_from_name<Precision>(prec);
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  for (const int64_t n : {N, N / 2}) {
    SCOPED_TRACE("batch " + std::to_string(n));
    Tensor x = input_for(c, n, uint64_t(11 + n));
    Tensor dout = random(host.output_shape().with_batch(n), uint64_t(13 + n));
    RunContext ctx{true, nullptr};
    Tensor cpu_out = host.forward(x, ctx).clone();
    host.zero_grad();
    host.backward(dout, ctx);
    std::vector<Tensor> cpu_grads;
    for (auto& p : host.params())
      if (p.param->trainable) cpu_grads.push_back(p.param->grad.clone());
    Tensor gpu_out(host.output_shape().with_batch(n));
    dev->zero_grad();
    dev->forward(x, gpu_out, true, 1);
    dev->backward(dout);
    dev->download_grads();
    const double e = rel_err(gpu_out, cpu_out);
    std::printf("[ 16-bit RNN ] %s %s batch %lld: output %.2e", c.name.c_str(), prec.c_str(),
                static_cast<long long>(n), e);
    EXPECT_LE(e, tol) << "forward output";
    // 16-bit rounding must show: an error this small means float32 ran.
    EXPECT_GT(e, 1e-6) << "forward output equals float32's: was " << prec << " used?";
    size_t k = 0;
    double worst = 0;
    for (auto& p : host.params())
      if (p.param->trainable) {
        const double ge = rel_err(p.param->grad, cpu_grads[k]);
        worst = std::max(worst, ge);
        EXPECT_LE(ge, tol) << "gradient of " << p.name;
        ++k;
      }
    std::printf(", worst gradient %.2e\n", worst);
  }
}

void low_cases(const std::string& prec) {
  // One layer, one direction, last state: cuDNN's final state converted
  // straight into the output.
  check_low({"lstm", 7, 5, false, true, "LSTM", A({{"hidden_size", int64_t(8)}})}, prec);
  // Stacked and bidirectional: the sequence output converted back; learned
  // initial states converted in, their gradients out.
  check_low({"lstm stacked bi seq learned", 6, 4, false, true, "LSTM",
             A({{"hidden_size", int64_t(8)},
                {"num_layers", int64_t(2)},
                {"bidirectional", true},
                {"return_sequences", true},
                {"initial_state", std::string("learned")}})},
            prec);
  // Bidirectional last state (both directions' final states side by side)
  // and no bias.
  check_low({"lstm bi last no bias", 5, 3, false, true, "LSTM",
             A({{"hidden_size", int64_t(6)}, {"bidirectional", true}, {"bias", false}})},
            prec);
  check_low({"gru stacked bi last", 5, 4, false, true, "GRU",
             A({{"hidden_size", int64_t(8)}, {"bidirectional", true}, {"num_layers", int64_t(2)}})},
            prec);
  check_low({"gru seq learned", 4, 3, false, true, "GRU",
             A({{"hidden_size", int64_t(6)},
                {"return_sequences", true},
                {"initial_state", std::string("learned")}})},
            prec);
  check_low({"rnn tanh last", 6, 4, false, true, "SimpleRNN", A({{"hidden_size", int64_t(7)}})},
            prec);
  check_low({"rnn relu stacked last", 5, 4, false, true, "SimpleRNN",
             A({{"hidden_size", int64_t(6)},
                {"nonlinearity", std::string("relu")},
                {"num_layers", int64_t(2)}})},
            prec);
  // Token ids through an Embedding in front (float32 table gradients from
  // a 16-bit input gradient).
  check_low({"embedding lstm", 6, 10, true, false, "LSTM", A({{"hidden_size", int64_t(8)}})}, prec);
}

TEST(CudaRecurrentLowData, Bf16MatchesTheCpu) {
  low_cases("bf16");
}
TEST(CudaRecurrentLowData, Fp16MatchesTheCpu) {
  low_cases("fp16");
}
// Each algorithm forced in 16 bits, on the benchmark's LSTM shape (28 steps
// of 28 features, hidden 128, batch 64) among others.
TEST(CudaRecurrentLowData, PersistentAndStandardAlgorithmsIn16Bits) {
  for (const char* prec : {"bf16", "fp16"}) {
    {
      const test::ScopedEnv algo("DC_CUDA_RNN_ALGO", "persistent");
      check_low({"lstm persistent, benchmark shape", 28, 28, false, false, "LSTM",
                 A({{"hidden_size", int64_t(128)}})},
                prec, 64);
      check_low({"gru persistent, sequence", 6, 4, false, true, "GRU",
                 A({{"hidden_size", int64_t(16)}, {"return_sequences", true}})},
                prec);
    }
    const test::ScopedEnv algo("DC_CUDA_RNN_ALGO", "standard");
    check_low({"lstm standard, benchmark shape", 28, 28, false, false, "LSTM",
               A({{"hidden_size", int64_t(128)}})},
              prec, 64);
    check_low(
        {"lstm standard, stacked sequence", 6, 5, false, true, "LSTM",
         A({{"hidden_size", int64_t(12)}, {"num_layers", int64_t(2)}, {"return_sequences", true}})},
        prec);
  }
}

// Training steps of a stacked LSTM (final states of the last layer, per
// batch size final-state gradients) in bf16 with the 16-bit data path:
// replayed CUDA graphs give the eager steps' weights. 100 samples in
// batches of 16: the 4-sample last batch of each epoch runs eagerly
// between replays of the 16-sample graph.
struct LowRun {
  std::vector<Tensor> state;
  double loss = 0;
  int64_t graph_steps = 0;
};

LowRun train_low(bool graphs) {
  const test::ScopedEnv data("DC_CUDA_RNN_DATA", "low");
  if (!graphs) setenv("DC_CUDA_GRAPHS", "0", 1);
  DeviceBackend* be = test::gpu_or_skip();
  register_builtin_layers();
  Graph g;
  NodeId in =
      g.add_node("SequenceInput", "input", A({{"steps", int64_t(10)}, {"features", int64_t(6)}}));
  NodeId l =
      g.add_node("LSTM", "lstm", A({{"hidden_size", int64_t(16)}, {"num_layers", int64_t(2)}}));
  NodeId d = g.add_node("Dense", "fc", A({{"units", int64_t(4)}}));
  g.connect(in, l);
  g.connect(l, d);
  const int64_t B = 16, S = 100;
  Plan host(g, B);
  host.init_params(5);
  DevicePlanOptions o;
  o.max_batch = B;
  o.precision = Precision::Bf16;
  auto dev = be->create_plan(g, host, o);
  unsetenv("DC_CUDA_GRAPHS");
  dev->upload_params();
  Dataset ds;
  ds.sample_shape = Shape{10, 6};
  Rng r(2);
  for (int64_t i = 0; i < S * 60; ++i) ds.values.push_back(r.uniform(-1.f, 1.f));
  for (int64_t i = 0; i < S; ++i) ds.labels.push_back(int32_t(r.below(4)));
  ds.num_classes = 4;
  int h = dev->add_dataset(ds);
  LowRun out;
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> order(S);
    for (int64_t i = 0; i < S; ++i) order[size_t(i)] = (i * 37 + epoch * 11) % S;
    for (int64_t b0 = 0; b0 < S; b0 += B) {
      const int64_t n = std::min(B, S - b0);
      dev->train_step(h, order.data() + b0, n, 1e-2, uint64_t(b0));
    }
    const DeviceStepStats st = dev->take_stats();
    EXPECT_TRUE(st.finite);
    out.loss += st.loss_sum;
    out.graph_steps += st.graph_steps;
  }
  dev->download_params();
  for (auto& [k, t] : host.state()) out.state.push_back(t.clone());
  return out;
}

TEST(CudaRecurrentLowData, Bf16GraphReplayMatchesEagerSteps) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  const LowRun eager = train_low(false);
  const LowRun graph = train_low(true);
  EXPECT_EQ(eager.graph_steps, 0);
  EXPECT_GT(graph.graph_steps, 0) << "the 16-bit LSTM turned CUDA graphs off";
  // The same kernels on the same data: a replay with a stale pointer or a
  // missed conversion differs by far more than reordered roundings.
  EXPECT_NEAR(graph.loss, eager.loss, 2e-2 * std::fabs(eager.loss));
  ASSERT_EQ(graph.state.size(), eager.state.size());
  for (size_t i = 0; i < eager.state.size(); ++i)
    EXPECT_LE(rel_err(graph.state[i], eager.state[i]), 2e-2) << "state " << i;
}

}  // namespace
}  // namespace dc
