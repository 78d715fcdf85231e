#include "test_util.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace dc {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<Dataset> toy(int64_t n, uint64_t seed) {
  return std::make_shared<Dataset>(test::quadrant_toy(n, seed));
}

Graph mlp(bool dropout = false) {
  return test::quadrant_mlp(dropout);
}

TrainConfig cfg(int epochs) {
  TrainConfig c;
  c.epochs = epochs;
  c.batch = 32;
  c.threads = 2;
  c.optimizer.lr = 0.01;
  return c;
}

std::vector<TrainEvent> drain(Trainer& t) {
  std::vector<TrainEvent> ev;
  for (;;) {
    auto e = t.events().pop(std::chrono::milliseconds(30000));
    if (!e) {
      ADD_FAILURE() << "no event for 30 s";
      break;
    }
    ev.push_back(*e);
    if (e->kind == TrainEvent::Kind::Finished || e->kind == TrainEvent::Kind::Failed ||
        e->kind == TrainEvent::Kind::Cancelled)
      break;
  }
  t.wait();
  return ev;
}

std::vector<float> weights(Trainer& t) {
  std::vector<float> w;
  for (auto& [k, v] : t.plan().state()) w.insert(w.end(), v.f32(), v.f32() + v.numel());
  return w;
}

TEST(Trainer, LearnsAndReportsEveryEvent) {
  Trainer t(mlp(), cfg(3), toy(512, 1), toy(128, 2));
  t.start();
  auto ev = drain(t);
  ASSERT_EQ(ev.back().kind, TrainEvent::Kind::Finished) << ev.back().message;
  EXPECT_EQ(ev.front().kind, TrainEvent::Kind::Started);
  int steps = 0, epochs = 0;
  for (auto& e : ev) {
    steps += e.kind == TrainEvent::Kind::Step;
    epochs += e.kind == TrainEvent::Kind::Epoch;
  }
  EXPECT_EQ(steps, 3 * 16);
  EXPECT_EQ(epochs, 3);
  EXPECT_GT(t.result().test_accuracy, 0.9);
  EXPECT_EQ(t.result().confusion.size(), 4u);
}

// Step events carry the step's own loss and accuracy beside the epoch's
// running means: weighted by batch size, the steps of an epoch average to
// the running mean its last step reports.
TEST(Trainer, StepEventsCarryThePerStepLoss) {
  TrainConfig c = cfg(2);
  c.batch = 48;  // 512 = 10 * 48 + 32: the last batch is smaller
  Trainer t(mlp(), c, toy(512, 1), toy(128, 2));
  t.start();
  auto ev = drain(t);
  ASSERT_EQ(ev.back().kind, TrainEvent::Kind::Finished) << ev.back().message;
  double loss_sum = 0, hits = 0, n = 0;
  bool varied = false;
  const TrainEvent* prev = nullptr;
  for (auto& e : ev) {
    if (e.kind != TrainEvent::Kind::Step) continue;
    if (e.step_in_epoch == 1) loss_sum = hits = n = 0;
    const double bn = e.step_in_epoch == e.steps_per_epoch ? 32 : 48;
    loss_sum += e.batch_loss * bn;
    hits += e.batch_accuracy * bn;
    n += bn;
    EXPECT_NEAR(loss_sum / n, e.loss, 1e-9 * std::max(1.0, e.loss)) << "step " << e.step;
    EXPECT_NEAR(hits / n, e.accuracy, 1e-9) << "step " << e.step;
    if (prev && prev->epoch == e.epoch && e.batch_loss != prev->batch_loss) varied = true;
    prev = &e;
  }
  EXPECT_TRUE(varied);
}

TEST(Trainer, SameSeedSameThreadsIsBitForBit) {
  auto run = [](uint64_t seed) {
    TrainConfig c = cfg(2);
    c.seed = seed;
    Trainer t(mlp(true), c, toy(256, 1), nullptr);
    t.start();
    drain(t);
    return weights(t);
  };
  auto a = run(7), b = run(7), c = run(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Trainer, ResumeContinuesExactlyLikeAnUninterruptedRun) {
  fs::path dir = fs::temp_directory_path() / "dc_trainer_resume";
  fs::remove_all(dir);
  TrainConfig c = cfg(3);
  c.restore_best = false;
  Trainer full(mlp(true), c, toy(256, 1), nullptr);
  full.start();
  drain(full);
  auto w_full = weights(full);

  TrainConfig c2 = cfg(2);
  c2.checkpoint_dir = dir.string();
  c2.restore_best = false;
  {
    Trainer first(mlp(true), c2, toy(256, 1), nullptr);
    first.start();
    drain(first);
  }
  ASSERT_TRUE(fs::exists(dir / "last.safetensors"));
  TrainConfig c3 = cfg(3);
  c3.resume = (dir / "last.safetensors").string();
  c3.restore_best = false;
  Trainer second(mlp(true), c3, toy(256, 1), nullptr);
  second.start();
  auto ev = drain(second);
  ASSERT_EQ(ev.back().kind, TrainEvent::Kind::Finished) << ev.back().message;
  EXPECT_EQ(weights(second), w_full);
  fs::remove_all(dir);
}

// A frozen layer keeps its initial weights through a whole run, and a
// resume must freeze the same layers: optimizer state is indexed by the
// trainable parameters.
TEST(Trainer, FrozenLayerKeepsItsWeightsAndResumeNeedsTheSameFrozenLayers) {
  fs::path dir = fs::temp_directory_path() / "dc_trainer_frozen";
  fs::remove_all(dir);
  Graph frozen = mlp();
  frozen.set_trainable(frozen.find_by_name("hidden")->id, false);
  TrainConfig c = cfg(2);
  c.checkpoint_dir = dir.string();
  c.restore_best = false;
  c.optimizer.weight_decay = 0.01;
  Plan init(frozen, 32);
  init.init_params(c.seed);
  auto initial = init.state();
  Trainer t(frozen, c, toy(256, 1), nullptr);
  t.start();
  auto ev = drain(t);
  ASSERT_EQ(ev.back().kind, TrainEvent::Kind::Finished) << ev.back().message;
  auto trained = t.plan().state();
  ASSERT_EQ(trained.size(), initial.size());
  for (size_t k = 0; k < trained.size(); ++k) {
    const bool same =
        std::equal(trained[k].second.f32(), trained[k].second.f32() + trained[k].second.numel(),
                   initial[k].second.f32());
    EXPECT_EQ(same, trained[k].first.rfind("hidden.", 0) == 0) << trained[k].first;
  }

  TrainConfig c2 = cfg(3);
  c2.resume = (dir / "last.safetensors").string();
  {
    Trainer again(frozen, c2, toy(256, 1), nullptr);
    again.start();
    auto ok = drain(again);
    EXPECT_EQ(ok.back().kind, TrainEvent::Kind::Finished) << ok.back().message;
  }
  std::string why;
  try {
    Trainer other(mlp(), c2, toy(256, 1), nullptr);
    other.start();
    auto bad = drain(other);
    if (bad.back().kind == TrainEvent::Kind::Failed) why = bad.back().message;
  } catch (const Error& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("frozen parameters hidden.weight, hidden.bias"), std::string::npos) << why;
  fs::remove_all(dir);
}

TEST(Trainer, NanLossStopsAndKeepsTheLastGoodWeights) {
  TrainConfig c = cfg(5);
  c.optimizer.type = OptimizerType::Sgd;
  c.optimizer.momentum = 0;
  c.optimizer.lr = 1e12;  // diverges within a few steps
  Trainer t(mlp(), c, toy(256, 1), nullptr);
  t.start();
  auto ev = drain(t);
  ASSERT_EQ(ev.back().kind, TrainEvent::Kind::Failed);
  EXPECT_NE(ev.back().message.find("last good weights"), std::string::npos) << ev.back().message;
  for (float w : weights(t)) ASSERT_TRUE(std::isfinite(w));
}

TEST(Trainer, PauseResumeAndCancelAtStepBoundaries) {
  TrainConfig c = cfg(200);
  Trainer t(mlp(), c, toy(512, 1), nullptr);
  t.start();
  // Wait for a few steps, pause, check no steps arrive, resume, cancel.
  int steps = 0;
  while (steps < 5) {
    auto e = t.events().pop(std::chrono::milliseconds(30000));
    ASSERT_TRUE(e);
    steps += e->kind == TrainEvent::Kind::Step;
  }
  t.pause();
  bool paused = false;
  while (!paused) {
    auto e = t.events().pop(std::chrono::milliseconds(30000));
    ASSERT_TRUE(e);
    paused = e->kind == TrainEvent::Kind::Paused;
  }
  EXPECT_FALSE(t.events().pop(std::chrono::milliseconds(300)).has_value());
  t.resume();
  auto e = t.events().pop(std::chrono::milliseconds(30000));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, TrainEvent::Kind::Resumed);
  t.cancel();
  auto ev = drain(t);
  EXPECT_EQ(ev.back().kind, TrainEvent::Kind::Cancelled);
  EXPECT_TRUE(t.result().cancelled);
}

TEST(Trainer, EarlyStoppingAndBestCheckpoint) {
  fs::path dir = fs::temp_directory_path() / "dc_trainer_best";
  fs::remove_all(dir);
  TrainConfig c = cfg(50);
  c.val_split = 0.25;
  c.early_stopping_patience = 2;
  c.optimizer.lr = 0.05;
  c.checkpoint_dir = dir.string();
  Trainer t(mlp(), c, toy(256, 1), nullptr);
  t.start();
  auto ev = drain(t);
  ASSERT_EQ(ev.back().kind, TrainEvent::Kind::Finished) << ev.back().message;
  EXPECT_LT(t.result().epochs_run, 50);
  EXPECT_EQ(t.result().epochs_run, t.result().best_epoch + 2);
  EXPECT_TRUE(fs::exists(dir / "best.safetensors"));
  CheckpointInfo ck = read_checkpoint((dir / "best.safetensors").string());
  EXPECT_EQ(ck.epoch, t.result().best_epoch);
  fs::remove_all(dir);
}

// Without a validation split "best" is the lowest training loss, also while
// that loss is above 1 (4 classes start at ln 4 = 1.39): the first epoch is
// the best so far and its checkpoint is written.
TEST(Trainer, TheFirstEpochIsTheBestSoFarWhateverItsLoss) {
  fs::path dir = fs::temp_directory_path() / "dc_trainer_first_best";
  fs::remove_all(dir);
  TrainConfig c = cfg(1);
  c.val_split = 0;
  c.optimizer.lr = 1e-6;  // the loss stays near ln 4
  c.checkpoint_dir = dir.string();
  Trainer t(mlp(), c, toy(128, 1), nullptr);
  t.start();
  auto ev = drain(t);
  ASSERT_EQ(ev.back().kind, TrainEvent::Kind::Finished) << ev.back().message;
  bool saw_epoch = false;
  for (auto& e : ev) {
    if (e.kind != TrainEvent::Kind::Epoch) continue;
    saw_epoch = true;
    ASSERT_GT(e.train_loss, 1.0) << "the premise: a loss above 1";
    EXPECT_TRUE(e.best);
  }
  ASSERT_TRUE(saw_epoch);
  EXPECT_EQ(t.result().best_epoch, 1);
  EXPECT_TRUE(fs::exists(dir / "best.safetensors"));
  fs::remove_all(dir);
}

// Without a validation split the test set must not pick the kept weights.
// Here the test labels are shifted by one class, so the test accuracy falls
// as the network learns; a trainer that chose by test accuracy would keep
// an early epoch.
TEST(Trainer, TheTestSetNeverSelectsTheKeptWeights) {
  auto test = toy(128, 2);
  for (auto& l : test->labels) l = (l + 1) % 4;
  TrainConfig c = cfg(6);
  c.val_split = 0;
  c.early_stopping_patience = 2;
  Trainer t(mlp(), c, toy(512, 1), test);
  t.start();
  auto ev = drain(t);
  ASSERT_EQ(ev.back().kind, TrainEvent::Kind::Finished) << ev.back().message;
  int best_by_loss = 0, best_by_test = 0;
  double low_loss = INFINITY, high_test = -1;
  for (auto& e : ev) {
    if (e.kind != TrainEvent::Kind::Epoch) continue;
    if (e.train_loss < low_loss) low_loss = e.train_loss, best_by_loss = e.epoch;
    if (e.test_accuracy > high_test) high_test = e.test_accuracy, best_by_test = e.epoch;
  }
  ASSERT_NE(best_by_loss, best_by_test) << "the shifted labels should disagree with training";
  EXPECT_EQ(t.result().best_epoch, best_by_loss);
  EXPECT_EQ(t.result().epochs_run, 6);  // nor did the test set stop it early
}

TEST(Trainer, DataThatDoesNotFitTheNetworkIsRefusedUpFront) {
  auto d = toy(64, 1);
  d->labels[3] = 9;  // more classes than the 4 outputs
  try {
    Trainer t(mlp(), cfg(1), d, nullptr);
    FAIL() << "accepted labels beyond the output size";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("units to 10"), std::string::npos) << e.what();
  }
  auto wrong = toy(64, 1);
  wrong->sample_shape = Shape{1, 4, 16};
  EXPECT_THROW(Trainer(mlp(), cfg(1), wrong, nullptr), DataError);
}

}  // namespace
}  // namespace dc
