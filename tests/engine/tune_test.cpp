// The tuning engine: TPE against random search on synthetic objectives,
// ASHA's promotions against the published rule, the search-space parser's
// messages, the LR range test and a small resumable sweep.
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/asha.h>
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/search_space.h>
#include <deepcanvas/sweep.h>
#include <deepcanvas/tpe.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

namespace dc {
namespace {

namespace fs = std::filesystem;

SearchParam range(SearchParam::Kind kind, double lo, double hi) {
  SearchParam p;
  p.kind = kind;
  p.lo = lo;
  p.hi = hi;
  return p;
}

// Branin on [-5, 10] x [0, 15]; minimum 0.397887.
double branin(double x, double y) {
  const double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
  return std::pow(y - b * x * x + c * x - 6, 2) + 10 * (1 - t) * std::cos(x) + 10;
}

double best_after(Sampler& s, const std::vector<SearchParam>& space, int trials,
                  const std::function<double(const SearchPoint&)>& f) {
  std::vector<Observation> done;
  double best = INFINITY;
  for (int i = 0; i < trials; ++i) {
    SearchPoint x = s.sample(space, done, i);
    const double v = f(x);
    best = std::min(best, v);
    done.push_back({x, v, 1});
  }
  return best;
}

TEST(Tpe, BeatsRandomSearchOnAverageOverSeeds) {
  const std::vector<SearchParam> branin_space = {range(SearchParam::Kind::Float, -5, 10),
                                                 range(SearchParam::Kind::Float, 0, 15)};
  auto f_branin = [](const SearchPoint& x) { return branin(x[0], x[1]); };
  // A 3-D quadratic with a log-scaled axis and an integer axis, as lr, a
  // rate and a layer width would be.
  const std::vector<SearchParam> quad_space = {range(SearchParam::Kind::Log, 1e-5, 1),
                                               range(SearchParam::Kind::Float, 0, 1),
                                               range(SearchParam::Kind::Int, 8, 128)};
  auto f_quad = [](const SearchPoint& x) {
    const double a = std::log10(x[0]) + 2.5, b = x[1] - 0.3, c = (x[2] - 40) / 120;
    return a * a + 4 * b * b + 9 * c * c;
  };
  double tpe_b = 0, rnd_b = 0, tpe_q = 0, rnd_q = 0;
  const int seeds = 20, trials = 40;
  for (int s = 0; s < seeds; ++s) {
    TpeSampler tpe{uint64_t(s)};
    RandomSampler rnd{uint64_t(s)};
    tpe_b += best_after(tpe, branin_space, trials, f_branin) / seeds;
    rnd_b += best_after(rnd, branin_space, trials, f_branin) / seeds;
    tpe_q += best_after(tpe, quad_space, trials, f_quad) / seeds;
    rnd_q += best_after(rnd, quad_space, trials, f_quad) / seeds;
  }
  std::printf(
      "mean best over %d seeds, %d trials: branin TPE %.4f random %.4f; "
      "quadratic TPE %.4f random %.4f\n",
      seeds, trials, tpe_b, rnd_b, tpe_q, rnd_q);
  EXPECT_LT(tpe_b, rnd_b);
  EXPECT_LT(tpe_q, rnd_q);
}

TEST(Tpe, IsDeterministicForASeedAndStaysInRange) {
  std::vector<SearchParam> space = {range(SearchParam::Kind::Log, 1e-4, 1e-2),
                                    range(SearchParam::Kind::Int, 16, 64)};
  SearchParam choice;
  choice.kind = SearchParam::Kind::Choice;
  choice.choices = {"32", "64", "128"};
  space.push_back(choice);
  auto run = [&](uint64_t seed) {
    TpeSampler s(seed, 5);
    std::vector<Observation> done;
    std::vector<SearchPoint> xs;
    for (int i = 0; i < 20; ++i) {
      SearchPoint x = s.sample(space, done, i);
      xs.push_back(x);
      done.push_back({x, std::abs(std::log10(x[0]) + 3) + std::abs(x[1] - 30) / 10 + x[2], 1});
    }
    return xs;
  };
  const auto a = run(7), b = run(7), c = run(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (const SearchPoint& x : a) {
    EXPECT_GE(x[0], 1e-4);
    EXPECT_LE(x[0], 1e-2);
    EXPECT_EQ(x[1], std::round(x[1]));
    EXPECT_GE(x[1], 16);
    EXPECT_LE(x[1], 64);
    EXPECT_TRUE(x[2] == 0 || x[2] == 1 || x[2] == 2);
  }
}

TEST(Asha, RungsAreMinTimesEtaPowers) {
  Asha a(1, 27, 3);
  EXPECT_EQ(a.rungs(), (std::vector<double>{1, 3, 9, 27}));
  EXPECT_EQ(a.rung_of(9), 2);
  EXPECT_EQ(a.rung_of(4), -1);
  EXPECT_THROW(Asha(0, 3, 3), Error);
  EXPECT_THROW(Asha(1, 3, 1), Error);
}

// Li et al. 2020, Algorithm 2, run sequentially on trials with a hidden
// quality: every promotion out of rung k must be a trial in the top
// floor(n_k / eta) of that rung at that moment, never promoted before, and
// a new trial is started only when no rung has such a candidate.
void expect_scheduler_follows_the_rule(double min_resource, double max_resource) {
  const int eta = 3;
  Asha a(min_resource, max_resource, eta);
  ASSERT_EQ(a.rungs().size(), 3u);
  Rng r(3);
  std::vector<double> quality;
  std::vector<std::set<int>> promoted(3);
  int promotions = 0;
  for (int job = 0; job < 60; ++job) {
    // The rule, checked before the scheduler answers: is any candidate due?
    bool due = false;
    for (int k = 0; k < 2; ++k) {
      const auto& rung = a.results()[size_t(k)];
      const size_t top = rung.size() / eta;
      for (auto [t, v] : rung)
        if (a.in_top(k, t, top) && !promoted[size_t(k)].count(t)) due = true;
    }
    Asha::Job j = a.next_job();
    if (j.trial < 0) {
      EXPECT_FALSE(due) << "job " << job << ": a new trial was started while a promotion was due";
      j.trial = int(quality.size());
      quality.push_back(r.uniform());
    } else {
      const int from = j.rung - 1;
      const size_t top = a.results()[size_t(from)].size() / eta;
      EXPECT_TRUE(a.in_top(from, j.trial, top))
          << "trial " << j.trial << " promoted from rung " << from << " outside the top " << top;
      EXPECT_FALSE(promoted[size_t(from)].count(j.trial)) << "promoted twice";
      promoted[size_t(from)].insert(j.trial);
      ++promotions;
    }
    // Lower is better; more resource makes every trial a little better.
    a.record(j.trial, j.rung, quality[size_t(j.trial)] - 0.01 * j.rung);
  }
  EXPECT_GT(promotions, 10);
  // Each rung holds fewer trials than the one below. (Not a third: a trial
  // promoted early may later drop out of the top third, which the
  // asynchronous rule accepts by design.)
  EXPECT_LT(a.results()[1].size(), a.results()[0].size());
  EXPECT_LE(a.results()[2].size(), a.results()[1].size());
}

TEST(Asha, SchedulerPromotesOnlyTheTopOneOverEtaOfARung) {
  expect_scheduler_follows_the_rule(1, 9);  // rungs 1, 3, 9
}

// Hyperband's most aggressive bracket for one epoch: rungs at 1/9, 1/3, 1.
TEST(Asha, SchedulerFollowsTheRuleOnFractionalRungs) {
  expect_scheduler_follows_the_rule(1.0 / 9, 1);
}

TEST(Asha, FractionalRungsLandOnWholeEpochs) {
  Asha a(1.0 / 3, 3, 3);
  EXPECT_EQ(a.rungs(), (std::vector<double>{1.0 / 3, 1, 3}));
  EXPECT_EQ(a.rung_of(1.0 / 3), 0);
  EXPECT_EQ(a.rung_of(1), 1);
  EXPECT_EQ(a.rung_of(0.34), -1);
  EXPECT_EQ(Asha(0.25, 3, 2).rungs(), (std::vector<double>{0.25, 0.5, 1, 2}));
  EXPECT_EQ(Asha(3.0 / 16, 3, 4).rungs(), (std::vector<double>{3.0 / 16, 0.75, 3}));
  EXPECT_THROW(Asha(-0.5, 3, 3), Error);
  EXPECT_THROW(Asha(3, 3, 3), Error);
}

// The pruner's rule is the same at a rung inside an epoch.
TEST(Asha, PrunerKeepsTheTopOneOverEtaAtAFractionalRung) {
  Asha a(1.0 / 3, 3, 3);                     // decisions at 1/3 epoch and 1
  EXPECT_TRUE(a.report(0, 1.0 / 3, 0.5));    // first at the rung: best so far
  EXPECT_FALSE(a.report(1, 1.0 / 3, 0.6));   // floor(2/3) = 0: only the best goes on
  EXPECT_TRUE(a.report(2, 1.0 / 3, 0.4));    // 3 at the rung: top 1
  EXPECT_FALSE(a.report(3, 1.0 / 3, 0.45));  // 4: top 1 is 0.4
  EXPECT_FALSE(a.report(4, 1.0 / 3, 0.55));
  EXPECT_TRUE(a.report(5, 1.0 / 3, 0.41));  // 6: top 2 = {0.4, 0.41}
  EXPECT_TRUE(a.report(0, 0.5, 0.1));       // not a rung: always on
  EXPECT_TRUE(a.report(0, 1, 0.3));         // rung 1's first
  EXPECT_EQ(a.results()[0].size(), 6u);
  EXPECT_EQ(a.results()[1].size(), 1u);
}

TEST(Asha, PrunerKeepsTheTopOneOverEtaAndTheBestSoFarWhileARungIsSmall) {
  Asha a(1, 9, 3);                     // decisions at epochs 1 and 3
  EXPECT_TRUE(a.report(0, 1, 0.5));    // first at the rung: best so far
  EXPECT_FALSE(a.report(1, 1, 0.6));   // 2 at the rung, floor(2/3) = 0: only the best goes on
  EXPECT_TRUE(a.report(2, 1, 0.4));    // 3 at the rung: top 1
  EXPECT_FALSE(a.report(3, 1, 0.45));  // 4: top 1 is 0.4
  EXPECT_FALSE(a.report(4, 1, 0.55));
  EXPECT_TRUE(a.report(5, 1, 0.41));  // 6: top 2 = {0.4, 0.41}
  EXPECT_TRUE(a.report(0, 2, 0.1));   // not a rung: always on
  EXPECT_TRUE(a.report(0, 3, 0.3));   // rung 1's first
}

// Input -> Conv2D "conv1" -> Dropout "dropout".
Graph conv_graph() {
  register_builtin_layers();
  Graph g;
  NodeId i = g.add_node("Input", "input", test::attrs({{"shape", test::Ints{1, 8, 8}}}));
  NodeId conv = g.add_node("Conv2D", "conv1",
                           test::attrs({{"filters", int64_t(8)}, {"kernel", test::Ints{3, 3}}}));
  g.connect(i, conv);
  g.connect(conv, g.add_node("Dropout", "dropout"));
  return g;
}

TEST(SearchSpace, ParsesSettingsFlagsKeysAndLayerAttributes) {
  const Graph g = conv_graph();
  const SearchSpace s =
      parse_search_space({"lr=log:1e-4:1e-2", "batch=choice:32,64,128", "conv1.filters=int:16:64",
                          "dropout.rate=float:0:0.5", "optimizer.type=choice:adam,sgd"},
                         g);
  ASSERT_EQ(s.params.size(), 5u);
  EXPECT_EQ(s.params[0].setting, find_setting("optimizer.lr"));
  EXPECT_EQ(s.params[0].kind, SearchParam::Kind::Log);
  EXPECT_EQ(s.params[2].node, "conv1");
  EXPECT_EQ(s.params[2].attr, "filters");
  EXPECT_EQ(s.params[1].spec_text(), "batch=choice:32,64,128");
  Graph g2 = g;
  TrainConfig t;
  apply_search_point(s, {3e-3, 2, 40.4, 0.25, 1}, g2, t);
  EXPECT_DOUBLE_EQ(t.optimizer.lr, 3e-3);
  EXPECT_EQ(t.batch, 128);
  EXPECT_EQ(t.optimizer.type, OptimizerType::Sgd);
  EXPECT_EQ(g2.find_by_name("conv1")->attrs.i("filters"), 40);
  EXPECT_DOUBLE_EQ(g2.find_by_name("dropout")->attrs.f("rate"), 0.25);
}

std::string parse_error(const std::string& spec) {
  try {
    parse_search_param(spec, conv_graph());
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(SearchSpace, BadInputGetsAClearMessage) {
  auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  std::string m = parse_error("lr=log:1e-2:1e-4");
  EXPECT_TRUE(has(m, "empty range")) << m;
  m = parse_error("lr=float:0.1:0.1");
  EXPECT_TRUE(has(m, "empty range")) << m;
  m = parse_error("weight-decay=log:0:1e-2");
  EXPECT_TRUE(has(m, "log range must be above 0")) << m;
  m = parse_error("momentum=log:-1:0.9");
  EXPECT_TRUE(has(m, "log range must be above 0")) << m;
  m = parse_error("lerning_rate=log:1e-4:1e-2");
  EXPECT_TRUE(has(m, "unknown parameter 'lerning_rate'")) << m;
  m = parse_error("conv1.filtres=int:16:64");
  EXPECT_TRUE(has(m, "did you mean 'conv1.filters'")) << m;
  m = parse_error("optimizer.lrr=log:1e-4:1e-2");
  EXPECT_TRUE(has(m, "did you mean 'optimizer.lr'")) << m;
  m = parse_error("batch=int:0:64");
  EXPECT_TRUE(has(m, "bound 0 is outside what batch takes")) << m;
  m = parse_error("momentum=float:0.5:1");
  EXPECT_TRUE(has(m, "outside what momentum takes")) << m;
  m = parse_error("conv1.filters=int:0:64");
  EXPECT_TRUE(has(m, "outside what conv1.filters takes")) << m;
  m = parse_error("optimizer=choice:adam,adagrad");
  EXPECT_TRUE(has(m, "adagrad")) << m;
  m = parse_error("batch=float:16:64");
  EXPECT_TRUE(has(m, "is an integer")) << m;
  m = parse_error("lr=normal:0:1");
  EXPECT_TRUE(has(m, "unknown kind 'normal'")) << m;
  m = parse_error("lr");
  EXPECT_TRUE(has(m, "expected NAME=KIND:ARGS")) << m;
  m = parse_error("lr=log:1e-4");
  EXPECT_TRUE(has(m, "two bounds")) << m;
  m = parse_error("lr=log:abc:1");
  EXPECT_TRUE(has(m, "'abc' is not a number")) << m;
  m = parse_error("batch=choice:");
  EXPECT_TRUE(has(m, "at least one value")) << m;
  m = parse_error("optimizer=float:0:1");
  EXPECT_TRUE(has(m, "use choice:")) << m;
  EXPECT_THROW(parse_search_space({"lr=log:1e-4:1e-2", "optimizer.lr=log:1e-3:1e-1"}, Graph()),
               Error);
  EXPECT_THROW(parse_search_space({}, Graph()), Error);
}

Dataset toy(int64_t n, uint64_t seed, double noise = 0) {
  return test::quadrant_toy(n, seed, noise);
}

Graph mlp() {
  return test::quadrant_mlp();
}

TEST(LrFind, FindsAFallingThenExplodingLossAndLeavesWeightsAlone) {
  const Graph g = mlp();
  // Noisy labels keep the loss from reaching 0, so large rates blow it up.
  const Dataset train = toy(512, 1, 0.3);
  TrainConfig c;
  c.batch = 32;
  c.threads = 1;
  c.optimizer.type = OptimizerType::Sgd;
  Plan before(g, 1);
  before.init_params(5);
  const auto initial = before.state();
  LrFindOptions o;
  o.steps = 60;
  o.start = 1e-5;
  o.end = 100;
  const LrFindResult r = lr_find(g, c, train, o, &initial);
  ASSERT_FALSE(r.lrs.empty());
  EXPECT_TRUE(r.diverged) << r.note;  // SGD at lr 100 blows up
  EXPECT_LT(r.lrs.size(), 60u);
  EXPECT_NEAR(r.lrs[0], 1e-5, 1e-12);
  for (size_t i = 1; i < r.lrs.size(); ++i) EXPECT_GT(r.lrs[i], r.lrs[i - 1]);
  EXPECT_DOUBLE_EQ(r.suggested_lr, r.min_lr / 10);
  EXPECT_GT(r.suggested_lr, 1e-4);
  EXPECT_LT(r.suggested_lr, 10);
  // The lowest smoothed loss is below the first.
  EXPECT_LT(*std::min_element(r.smoothed.begin(), r.smoothed.end()), r.smoothed.front());
  // Neither the weights given nor the dataset changed.
  const auto after = before.state();
  for (size_t i = 0; i < after.size(); ++i)
    EXPECT_EQ(0, std::memcmp(after[i].second.f32(), initial[i].second.f32(),
                             size_t(after[i].second.numel()) * 4));
  EXPECT_EQ(train.mean, 0.f);
  EXPECT_EQ(train.stddev, 1.f);
  // Same inputs, same curve.
  const LrFindResult again = lr_find(g, c, train, o, &initial);
  EXPECT_EQ(again.losses, r.losses);
  EXPECT_THROW(lr_find(g, c, train, {1e-3, 1e-4}), Error);
}

TEST(BatchAdvice, LinearAndSquareRootRulesAndWarmUp) {
  TrainConfig c;
  c.optimizer.lr = 1e-3;
  c.epochs = 90;
  const BatchLrAdvice up = batch_lr_advice(c, 64, 256, 6400);
  EXPECT_DOUBLE_EQ(up.linear_lr, 4e-3);
  EXPECT_DOUBLE_EQ(up.sqrt_lr, 2e-3);
  EXPECT_EQ(up.warmup_steps, 25 * 5);  // 25 steps per epoch, 5 of 90 epochs
  EXPECT_NE(up.text.find("Warm up"), std::string::npos);
  const BatchLrAdvice down = batch_lr_advice(c, 64, 16, 6400);
  EXPECT_DOUBLE_EQ(down.linear_lr, 2.5e-4);
  EXPECT_EQ(down.warmup_steps, 0);
  // The largest batch is the advisor's memory model's: the prediction at
  // max_batch fits, one more sample does not. (Until the models were unified
  // this bound was Plan::training_bytes, which leaves out the loader's
  // batches, the weight copies and the layers' scratch buffers.)
  const Graph g = mlp();
  const int64_t mib = int64_t(1) << 20;
  const BatchFit f = largest_batch(g, mib);
  EXPECT_GT(f.max_batch, 1);
  advisor::MemoryOptions o;
  o.batch = f.max_batch;
  EXPECT_LE(advisor::predict_memory(g, o).total, mib);
  o.batch = f.max_batch + 1;
  EXPECT_GT(advisor::predict_memory(g, o).total, mib);
  EXPECT_EQ(f.pow2 & (f.pow2 - 1), 0);
  EXPECT_LE(f.pow2, f.max_batch);
  EXPECT_EQ(largest_batch(g, 100).max_batch, 0);
}

// One "largest batch" model: batch-fit, the Training tab's hint, train's
// memory check (all largest_batch) and advise() (max_batch_that_fits) give
// the same figure for the same memory, optimizer and device.
TEST(BatchAdvice, LargestBatchIsTheAdvisorsFigure) {
  const Graph g = mlp();
  TrainConfig c;
  c.batch = 32;
  for (OptimizerType opt : {OptimizerType::Adam, OptimizerType::Sgd}) {
    c.optimizer.type = opt;
    c.optimizer.momentum = 0;
    advisor::MemoryOptions o;
    o.optimizer = c.optimizer;
    for (int64_t bytes : {int64_t(2) << 20, int64_t(64) << 20}) {
      const BatchFit f = largest_batch(g, bytes, c);
      EXPECT_EQ(f.max_batch, advisor::max_batch_that_fits(g, o, bytes));
      o.batch = 32;
      EXPECT_EQ(f.batch_bytes, advisor::predict_memory(g, o).total);
    }
  }
  // The CUDA figure includes the context's overhead: 256 MiB fits nothing.
  c.device.cuda = true;
  EXPECT_EQ(largest_batch(g, int64_t(256) << 20, c).max_batch, 0);
}

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dc_sweep_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    project_.graph = mlp();
    project_.training.batch = 32;
    project_.training.threads = 1;
    project_.training.schedule.type = ScheduleType::Constant;
    auto d = std::make_shared<TrainTest>();
    d->train = toy(400, 1);
    d->test = toy(100, 2);
    data_ = d;
    // Among the learning rates one (1e30) makes SGD's loss overflow to NaN
    // within the first epoch.
    space_ = parse_search_space(
        {"lr=choice:0.003,0.03,0.3,1e30", "hidden.units=int:4:32", "optimizer.type=choice:sgd"},
        project_.graph);
    opt_.trials = 8;
    opt_.epochs = 3;
    opt_.seed = 4;
    opt_.steps_per_epoch_limit = 4;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string state() const { return (dir_ / "p.sweep.json").string(); }
  // A Trainer run of the project on the toy data with c: its Epoch and
  // Validation events, in order.
  std::vector<TrainEvent> epochs_and_validations(const TrainConfig& c) const {
    Trainer t(project_.graph, c, std::make_shared<Dataset>(data_->train),
              std::make_shared<Dataset>(data_->test));
    t.start();
    std::vector<TrainEvent> got;
    for (;;) {
      auto e = t.events().pop(std::chrono::milliseconds(60000));
      if (!e) break;
      if (e->kind == TrainEvent::Kind::Epoch || e->kind == TrainEvent::Kind::Validation)
        got.push_back(*e);
      if (e->kind == TrainEvent::Kind::Finished || e->kind == TrainEvent::Kind::Failed) break;
    }
    t.wait();
    return got;
  }
  // A sweep with the state file, stopped once stop_at(trial) holds after an update.
  void run_stopped(const SweepOptions& o, const std::function<bool(const Trial&)>& stop_at) {
    std::atomic<bool> stop{false};
    Sweep first(project_, data_, space_, o, state());
    first.run(
        [&](const Trial& t) {
          if (stop_at(t)) stop = true;
        },
        &stop);
    EXPECT_FALSE(first.resumed());
  }

  fs::path dir_;
  Project project_;
  std::shared_ptr<const TrainTest> data_;
  SearchSpace space_;
  SweepOptions opt_;
};

TEST_F(SweepTest, RunsPrunesFailsAndRecordsEveryTrial) {
  // Rungs at epochs 1 and 3: a third of an epoch (the default) may prune the
  // diverging trial before its loss overflows.
  opt_.min_epochs = 1;
  Sweep s(project_, data_, space_, opt_, state());
  s.run();
  const SweepState st = s.state();
  ASSERT_EQ(st.trials.size(), 8u);
  int completed = 0, pruned = 0, failed = 0;
  for (const Trial& t : st.trials) {
    completed += t.status == Trial::Status::Completed;
    pruned += t.status == Trial::Status::Pruned;
    failed += t.status == Trial::Status::Failed;
    if (t.status == Trial::Status::Completed) {
      ASSERT_FALSE(t.epochs.empty());
      EXPECT_EQ(t.epochs.back().epoch, 3);
      EXPECT_EQ(t.epochs_trained(), 3.0);
    }
    if (t.status == Trial::Status::Pruned) {
      EXPECT_LT(t.epochs_trained(), 3.0);
    }
    if (t.status == Trial::Status::Failed) {
      EXPECT_NE(t.error.find("the loss became"), std::string::npos) << t.error;
      EXPECT_EQ(search_value(space_.params[0], t.x[0]), AttrValue(1e30));
    }
  }
  EXPECT_GE(completed, 1);
  EXPECT_GE(pruned, 1);
  EXPECT_GE(failed, 1);
  EXPECT_LT(st.epochs_used(), 8 * 3);
  ASSERT_GE(st.best(), 0);
  // The file holds the same as memory, and reads back.
  const SweepState back = sweep_from_json(read_file(state()), state());
  EXPECT_EQ(back.trials.size(), st.trials.size());
  EXPECT_EQ(back.best(), st.best());
  EXPECT_EQ(back.trials[3].x, st.trials[3].x);
  // Apply best writes the point into the graph and settings.
  Graph g = project_.graph;
  TrainConfig c = project_.training;
  s.apply_best(g, c);
  EXPECT_EQ(c.optimizer.type, OptimizerType::Sgd);
}

TEST_F(SweepTest, AKilledSweepResumesFromItsStateFile) {
  opt_.asha = false;
  opt_.trials = 5;
  // Uninterrupted, for reference (no state file).
  Sweep whole(project_, data_, space_, opt_, "");
  whole.run();
  // Stopped once the third trial has run an epoch.
  run_stopped(opt_, [](const Trial& t) { return t.id == 2 && !t.epochs.empty(); });
  const SweepState partial = sweep_from_json(read_file(state()), state());
  ASSERT_EQ(partial.trials.size(), 3u);
  EXPECT_EQ(partial.trials[2].status, Trial::Status::Running);
  Sweep second(project_, data_, space_, opt_, state());
  EXPECT_TRUE(second.resumed());
  second.run();
  const SweepState a = whole.state(), b = second.state();
  ASSERT_EQ(b.trials.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(a.trials[i].x, b.trials[i].x) << "trial " << i;
    EXPECT_EQ(a.trials[i].status, b.trials[i].status) << "trial " << i;
    if (a.trials[i].status == Trial::Status::Completed) {
      EXPECT_EQ(a.trials[i].epochs.back().val_accuracy, b.trials[i].epochs.back().val_accuracy);
    }
  }
  // Other options are another sweep: refused unless asked to start over.
  SweepOptions other = opt_;
  other.epochs = 2;
  EXPECT_THROW(Sweep(project_, data_, space_, other, state()), Error);
  Sweep fresh(project_, data_, space_, other, state(), /*fresh=*/true);
  EXPECT_FALSE(fresh.resumed());
}

TEST_F(SweepTest, ParallelTrialsFinishEveryTrial) {
  opt_.parallel = 2;
  opt_.trials = 4;
  Sweep s(project_, data_, space_, opt_, "");
  s.run();
  const SweepState st = s.state();
  ASSERT_EQ(st.trials.size(), 4u);
  int completed = 0;
  for (const Trial& t : st.trials) {
    EXPECT_NE(t.status, Trial::Status::Running);
    EXPECT_NE(t.status, Trial::Status::Pending);
    EXPECT_TRUE(t.error.empty() || t.error.find("the loss became") != std::string::npos) << t.error;
    completed += t.status == Trial::Status::Completed;
  }
  EXPECT_GE(completed, 1);
}

// Parallel trials each set one thread process-wide; the sweep puts back the
// count it found so later runs in the same process are not left at 1.
TEST_F(SweepTest, AParallelSweepPutsTheThreadCountBack) {
  opt_.parallel = 2;
  opt_.trials = 2;
  const int before = num_threads();
  set_num_threads(3);
  Sweep s(project_, data_, space_, opt_, "");
  s.run();
  // At least one trial trained (its Trainer set 1 thread process-wide).
  int trained = 0;
  for (const Trial& t : s.state().trials) trained += t.status == Trial::Status::Completed;
  EXPECT_GE(trained, 1);
  EXPECT_EQ(num_threads(), 3);
  set_num_threads(before);
}

// Validation inside an epoch (TrainConfig::validate_at) comes after the
// step nearest the point and changes nothing of the training: the epochs'
// figures are those of a run without it.
TEST_F(SweepTest, TheTrainerValidatesInsideAnEpochWithoutChangingTheTraining) {
  TrainConfig c = project_.training;  // batch 32, one thread, a constant rate
  c.epochs = 2;
  c.val_split = 0.2;
  c.steps_per_epoch_limit = 6;
  auto run = [&](const std::vector<double>& at) {
    TrainConfig cc = c;
    cc.validate_at = at;
    return epochs_and_validations(cc);
  };
  const std::vector<TrainEvent> plain = run({}), inside = run({1.0 / 3, 1, 1.5, 1.9, 2.5});
  ASSERT_EQ(plain.size(), 2u);
  // 1/3 of 6 steps: after step 2; 1.5: after step 3 of epoch 2; 1.9: 5.4
  // steps, after step 5; 1 is an epoch's end; 2.5 is past the last epoch.
  ASSERT_EQ(inside.size(), 5u);
  const std::vector<std::tuple<TrainEvent::Kind, int, int64_t, double>> want = {
      {TrainEvent::Kind::Validation, 1, 2, 1.0 / 3},
      {TrainEvent::Kind::Epoch, 1, 0, NAN},
      {TrainEvent::Kind::Validation, 2, 3, 1.5},
      {TrainEvent::Kind::Validation, 2, 5, 1.9},
      {TrainEvent::Kind::Epoch, 2, 0, NAN}};
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& [kind, epoch, step, at] = want[i];
    EXPECT_EQ(inside[i].kind, kind) << i;
    EXPECT_EQ(inside[i].epoch, epoch) << i;
    if (kind == TrainEvent::Kind::Validation) {
      EXPECT_EQ(inside[i].step_in_epoch, step) << i;
      EXPECT_EQ(inside[i].steps_per_epoch, 6) << i;
      EXPECT_EQ(inside[i].at, at) << i;
      EXPECT_TRUE(std::isfinite(inside[i].val_accuracy)) << i;
    }
  }
  for (size_t e = 0; e < 2; ++e) {
    const TrainEvent& a = plain[e];
    const TrainEvent& b = inside[e == 0 ? 1 : 4];
    EXPECT_EQ(a.train_loss, b.train_loss) << "epoch " << e + 1;
    EXPECT_EQ(a.val_accuracy, b.val_accuracy) << "epoch " << e + 1;
    EXPECT_EQ(a.val_loss, b.val_loss) << "epoch " << e + 1;
    EXPECT_EQ(a.test_accuracy, b.test_accuracy) << "epoch " << e + 1;
  }
}

// The test set every N steps (TrainConfig::test_every_steps, train
// --test-every: time-to-accuracy benchmarks) is measured after the N-th
// steps of the run, across epochs, with the training seconds so far, and
// changes nothing of the training.
TEST_F(SweepTest, TheTrainerMeasuresTheTestSetEveryNStepsWithoutChangingTheTraining) {
  TrainConfig c = project_.training;
  c.epochs = 2;
  c.steps_per_epoch_limit = 5;
  auto run = [&](int64_t every) {
    TrainConfig cc = c;
    cc.test_every_steps = every;
    return epochs_and_validations(cc);
  };
  const std::vector<TrainEvent> plain = run(0), tested = run(3);
  ASSERT_EQ(plain.size(), 2u);
  // Every third step of the run's 10 (5 per epoch), across the epoch end.
  std::vector<int64_t> steps;
  double last_seconds = 0;
  for (const TrainEvent& e : tested) {
    if (e.kind != TrainEvent::Kind::Validation) continue;
    steps.push_back(e.step);
    EXPECT_TRUE(std::isfinite(e.test_accuracy));
    EXPECT_TRUE(std::isnan(e.val_accuracy));
    EXPECT_GT(e.train_seconds, last_seconds);
    last_seconds = e.train_seconds;
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{3, 6, 9}));
  std::vector<const TrainEvent*> epochs;
  for (const TrainEvent& e : tested)
    if (e.kind == TrainEvent::Kind::Epoch) epochs.push_back(&e);
  ASSERT_EQ(epochs.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(plain[e].train_loss, epochs[e]->train_loss) << "epoch " << e + 1;
    EXPECT_EQ(plain[e].test_accuracy, epochs[e]->test_accuracy) << "epoch " << e + 1;
  }
}

TEST_F(SweepTest, TheDefaultFirstRungIsEpochsOverEtaSquared) {
  EXPECT_DOUBLE_EQ(sweep_min_epochs(opt_), 1.0 / 3);  // 3 epochs, eta 3
  SweepOptions o = opt_;
  o.epochs = 27;
  EXPECT_DOUBLE_EQ(sweep_min_epochs(o), 3);
  o.min_epochs = 0.5;
  EXPECT_EQ(sweep_min_epochs(o), 0.5);
  // The state keeps it resolved.
  Sweep s(project_, data_, space_, opt_, "");
  EXPECT_EQ(s.state().options.min_epochs, 1.0 / 3);
}

// A trial that ASHA stops at the rung a third into its first epoch trained
// a third of an epoch, and the sweep's count says so.
TEST_F(SweepTest, ATrialPrunedInsideAnEpochRecordsTheFractionItTrained) {
  opt_.steps_per_epoch_limit = 6;  // the 1/3 rung is after step 2
  Sweep s(project_, data_, space_, opt_, state());
  s.run();
  const SweepState st = s.state();
  ASSERT_EQ(st.options.min_epochs, 1.0 / 3);
  int at_first_rung = 0;
  double sum = 0;
  for (const Trial& t : st.trials) {
    sum += t.epochs_trained();
    if (t.status == Trial::Status::Completed) {
      ASSERT_GE(t.epochs.size(), 4u);  // 1/3, 1, 2, 3
      EXPECT_EQ(t.epochs[0].at, 1.0 / 3);
      EXPECT_EQ(t.epochs[0].epoch, 1);
      EXPECT_EQ(t.epochs_trained(), 3.0);
    }
    if (t.status == Trial::Status::Pruned && t.epochs.size() == 1) {
      ++at_first_rung;
      const TrialEpoch& e = t.epochs[0];
      EXPECT_EQ(e.epoch, 1);
      EXPECT_EQ(e.at, 1.0 / 3);
      EXPECT_DOUBLE_EQ(e.trained, 2.0 / 6);
      EXPECT_TRUE(std::isfinite(e.val_accuracy));
      EXPECT_TRUE(std::isnan(e.test_accuracy));  // only epoch ends are tested
      EXPECT_DOUBLE_EQ(t.epochs_trained(), 1.0 / 3);
    }
  }
  EXPECT_GE(at_first_rung, 1);
  EXPECT_DOUBLE_EQ(st.epochs_used(), sum);
  // The file and the JSON keep the fractions.
  const SweepState back = sweep_from_json(read_file(state()), state());
  EXPECT_DOUBLE_EQ(back.epochs_used(), st.epochs_used());
  ASSERT_EQ(back.trials.size(), st.trials.size());
  for (size_t i = 0; i < st.trials.size(); ++i) {
    ASSERT_EQ(back.trials[i].epochs.size(), st.trials[i].epochs.size()) << i;
    for (size_t k = 0; k < st.trials[i].epochs.size(); ++k) {
      EXPECT_EQ(back.trials[i].epochs[k].at, st.trials[i].epochs[k].at);
      EXPECT_EQ(back.trials[i].epochs[k].trained, st.trials[i].epochs[k].trained);
    }
  }
  const auto j = nlohmann::json::parse(sweep_to_json(st, space_));
  EXPECT_DOUBLE_EQ(j.at("epochs_used").get<double>(), st.epochs_used());
}

// A state file from before fractional rungs (epoch ends only, no "at" or
// "trained") reads as whole epochs.
TEST_F(SweepTest, AnOlderStateFileReadsAsWholeEpochs) {
  const std::string text =
      R"({"format":"deepcanvas-sweep","version":1,"space":["lr=log:0.001:0.01"],
    "options":{"trials":2,"epochs":3,"pruner":"asha","eta":3,"min_epochs":1,"sampler":"tpe",
    "n_startup":2,"seed":0,"parallel":1,"val_split":0.1,"steps_per_epoch_limit":0},
    "trials":[{"id":0,"x":[0.003],"status":"pruned","metrics":[{"epoch":1,"train_loss":1,
    "val_loss":1,"val_accuracy":0.5,"test_loss":1,"test_accuracy":0.5}]}]})";
  const SweepState s = sweep_from_json(text, "old.sweep.json");
  EXPECT_EQ(s.options.min_epochs, 1.0);
  ASSERT_EQ(s.trials.size(), 1u);
  EXPECT_EQ(s.trials[0].epochs[0].at, 1.0);
  EXPECT_EQ(s.trials[0].epochs[0].trained, 1.0);
  EXPECT_EQ(s.epochs_used(), 1.0);
}

// Killed and resumed with a fractional first rung, the sweep ends as the
// uninterrupted one: the rungs recorded before the kill are replayed.
TEST_F(SweepTest, AKilledSweepWithAFractionalRungResumes) {
  opt_.trials = 6;
  opt_.min_epochs = 1.0 / 3;
  opt_.steps_per_epoch_limit = 6;
  Sweep whole(project_, data_, space_, opt_, "");
  whole.run();
  // Stopped once the fourth trial (or a later one, should it fail first) has measured.
  run_stopped(opt_, [](const Trial& t) { return t.id >= 3 && !t.epochs.empty(); });
  const SweepState partial = sweep_from_json(read_file(state()), state());
  ASSERT_GE(partial.trials.size(), 4u);
  ASSERT_LT(partial.trials.size(), 6u);
  EXPECT_EQ(partial.options.min_epochs, 1.0 / 3);
  // A different first rung is another sweep.
  SweepOptions other = opt_;
  other.min_epochs = 1;
  EXPECT_THROW(Sweep(project_, data_, space_, other, state()), Error);
  // The default resolves to the same 1/3 (3 epochs, eta 3): the same sweep.
  SweepOptions by_default = opt_;
  by_default.min_epochs = 0;
  Sweep second(project_, data_, space_, by_default, state());
  EXPECT_TRUE(second.resumed());
  second.run();
  const SweepState a = whole.state(), b = second.state();
  ASSERT_EQ(b.trials.size(), a.trials.size());
  for (size_t i = 0; i < a.trials.size(); ++i) {
    EXPECT_EQ(a.trials[i].x, b.trials[i].x) << "trial " << i;
    EXPECT_EQ(a.trials[i].status, b.trials[i].status) << "trial " << i;
    EXPECT_EQ(a.trials[i].epochs_trained(), b.trials[i].epochs_trained()) << "trial " << i;
    if (!a.trials[i].epochs.empty() && !b.trials[i].epochs.empty()) {
      EXPECT_EQ(a.trials[i].epochs.back().val_accuracy, b.trials[i].epochs.back().val_accuracy)
          << "trial " << i;
    }
  }
  EXPECT_EQ(a.epochs_used(), b.epochs_used());
}

TEST(SearchSpace, TheCurrentPointIsTheProjectsValuesOrSaysWhichLiesOutside) {
  Graph g = conv_graph();  // conv1: 8 filters; dropout's rate left at its default
  const SearchSpace s =
      parse_search_space({"lr=log:3e-4:1e-2", "batch=choice:32,64,128", "conv1.filters=int:4:64",
                          "dropout.rate=float:0:0.6", "optimizer.type=choice:adam,sgd"},
                         g);
  TrainConfig c;
  c.optimizer.lr = 3e-4;  // on the bound as written
  c.batch = 64;
  c.optimizer.type = OptimizerType::Sgd;
  SearchPoint x;
  EXPECT_EQ(current_search_point(s, g, c, x), "");
  const double rate =
      std::get<double>(LayerRegistry::instance().get("Dropout").find_attr("rate")->def);
  EXPECT_EQ(x, (SearchPoint{3e-4, 1, 8, rate, 1}));
  // Written back, the point changes nothing.
  Graph g2 = g;
  TrainConfig c2 = c;
  apply_search_point(s, x, g2, c2);
  EXPECT_EQ(c2.optimizer.lr, c.optimizer.lr);
  EXPECT_EQ(c2.batch, 64);
  EXPECT_EQ(g2.find_by_name("conv1")->attrs.i("filters"), 8);
  c.batch = 48;
  EXPECT_EQ(current_search_point(s, g, c, x), "batch = 48 is outside choice:32,64,128");
  c.batch = 64;
  c.optimizer.lr = 0.05;
  EXPECT_EQ(current_search_point(s, g, c, x), "lr = 0.05 is outside log:0.0003:0.01");
}

TEST_F(SweepTest, TrialZeroTrainsTheProjectsOwnValues) {
  project_.training.optimizer.type = OptimizerType::Sgd;
  project_.training.optimizer.lr = 0.03;
  opt_.asha = false;
  opt_.trials = 3;
  Sweep s(project_, data_, space_, opt_, state());
  s.run();
  const SweepState st = s.state();
  EXPECT_EQ(st.baseline_skipped, "");
  ASSERT_EQ(st.trials.size(), 3u);
  // lr 0.03 (choice 1), the hidden layer's 16 units, sgd (choice 0).
  EXPECT_TRUE(st.trials[0].baseline);
  EXPECT_EQ(st.trials[0].x, (SearchPoint{1, 16, 0}));
  EXPECT_FALSE(st.trials[1].baseline);
  EXPECT_FALSE(st.trials[2].baseline);
  // It is the project's run: the same figures as training the project
  // with the sweep's settings (its epochs, validation split and steps).
  TrainConfig c = project_.training;
  c.epochs = opt_.epochs;
  c.val_split = opt_.val_split;
  c.steps_per_epoch_limit = opt_.steps_per_epoch_limit;
  c.restore_best = false;
  Trainer t(project_.graph, c, std::make_shared<Dataset>(data_->train),
            std::make_shared<Dataset>(data_->test));
  t.start();
  double val = NAN;
  for (;;) {
    auto e = t.events().pop(std::chrono::milliseconds(60000));
    if (!e) break;
    if (e->kind == TrainEvent::Kind::Epoch) val = e->val_accuracy;
    if (e->kind == TrainEvent::Kind::Finished || e->kind == TrainEvent::Kind::Failed) break;
  }
  t.wait();
  ASSERT_EQ(st.trials[0].status, Trial::Status::Completed);
  EXPECT_EQ(st.trials[0].epochs.back().val_accuracy, val);
  // The file says which trial it was, and a resumed sweep keeps it.
  const SweepState back = sweep_from_json(read_file(state()), state());
  EXPECT_TRUE(back.trials[0].baseline);
  EXPECT_TRUE(back.options.baseline);
  EXPECT_TRUE(Sweep(project_, data_, space_, opt_, state()).resumed());
}

TEST_F(SweepTest, TheBestTrialsTrainedWeightsAreKept) {
  opt_.asha = false;
  opt_.trials = 4;
  const std::string weights = sweep_weights_path(state());
  EXPECT_EQ(weights, (dir_ / "p.sweep.best.safetensors").string());
  // What an earlier sweep kept goes when this one starts afresh.
  write_file_atomic(weights, "an earlier sweep's weights");
  Sweep s(project_, data_, space_, opt_, state());
  s.keep_best_weights(weights);
  EXPECT_FALSE(fs::exists(weights));
  s.run();
  const SweepState st = s.state();
  const int b = st.best();
  ASSERT_GE(b, 0);
  EXPECT_EQ(s.weights_problem(), "");
  ASSERT_EQ(sweep_best_weights(st, weights), weights);
  const CheckpointInfo kept = read_checkpoint(weights);
  EXPECT_EQ(kept.sweep_trial, b);
  EXPECT_EQ(kept.epoch, opt_.epochs);
  // They are the best trial's weights: training its point as the sweep
  // trains a trial (its epochs, validation split and steps) gives the same
  // tensors bit for bit.
  Graph g = project_.graph;
  TrainConfig c = project_.training;
  s.apply_best(g, c);
  c.epochs = opt_.epochs;
  c.val_split = opt_.val_split;
  c.steps_per_epoch_limit = opt_.steps_per_epoch_limit;
  c.restore_best = false;
  Trainer t(g, c, std::make_shared<Dataset>(data_->train), std::make_shared<Dataset>(data_->test));
  t.start();
  for (;;) {
    auto e = t.events().pop(std::chrono::milliseconds(60000));
    if (!e || e->kind == TrainEvent::Kind::Finished || e->kind == TrainEvent::Kind::Failed) break;
  }
  t.wait();
  const auto trained = t.plan().state();
  ASSERT_EQ(trained.size(), kept.model.size());
  for (const auto& named : trained) {
    const std::string& name = named.first;
    const Tensor& tensor = named.second;
    auto it = std::find_if(kept.model.begin(), kept.model.end(),
                           [&](const auto& k) { return k.first == name; });
    ASSERT_NE(it, kept.model.end()) << name;
    ASSERT_EQ(tensor.numel(), it->second.numel()) << name;
    EXPECT_EQ(0,
              std::memcmp(tensor.f32(), it->second.f32(), size_t(tensor.numel()) * sizeof(float)))
        << name;
  }
  // Not offered as the best of a state whose best is another trial.
  SweepState other = st;
  other.trials[size_t(b)].status = Trial::Status::Pruned;
  EXPECT_EQ(sweep_best_weights(other, weights), "");
  // A resumed sweep keeps them; a fresh one does not.
  Sweep resumed(project_, data_, space_, opt_, state());
  ASSERT_TRUE(resumed.resumed());
  resumed.keep_best_weights(weights);
  EXPECT_EQ(sweep_best_weights(resumed.state(), weights), weights);
  Sweep fresh(project_, data_, space_, opt_, state(), /*fresh=*/true);
  fresh.keep_best_weights(weights);
  EXPECT_FALSE(fs::exists(weights));
  // A damaged file is not offered.
  write_file_atomic(weights, "not a checkpoint");
  EXPECT_EQ(sweep_best_weights(st, weights), "");
}

TEST_F(SweepTest, ASweepThatCannotWriteItsWeightsGoesOnAndSaysWhy) {
  opt_.asha = false;
  opt_.trials = 2;
  // The weights' folder is a file: nothing can be written under it.
  write_file_atomic((dir_ / "blocked").string(), "");
  Sweep s(project_, data_, space_, opt_, state());
  s.keep_best_weights((dir_ / "blocked" / "best.safetensors").string());
  s.run();
  EXPECT_GE(s.state().best(), 0);
  EXPECT_NE(s.weights_problem(), "");
}

TEST_F(SweepTest, ValuesOutsideTheSpaceGiveNoBaselineAndSaySo) {
  project_.training.optimizer.lr = 0.01;  // not one of the choices
  opt_.asha = false;
  opt_.trials = 2;
  Sweep s(project_, data_, space_, opt_, "");
  s.run();
  const SweepState st = s.state();
  EXPECT_EQ(st.baseline_skipped, "lr = 0.01 is outside choice:0.003,0.03,0.3,1e30");
  ASSERT_EQ(st.trials.size(), 2u);
  EXPECT_FALSE(st.trials[0].baseline);
  // Without it asked for, nothing is said.
  opt_.baseline = false;
  EXPECT_EQ(Sweep(project_, data_, space_, opt_, "").state().baseline_skipped, "");
}

}  // namespace
}  // namespace dc
