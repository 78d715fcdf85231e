// A sweep state file read back (PROJECT.sweep.json, rewritten by the tool
// and editable by anyone): each case that once crashed or hung a resume is
// refused with the field named, and the file is left as it was.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/search_space.h>
#include <deepcanvas/sweep.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace dc {
namespace {

using json = nlohmann::json;

json measurement(int epoch) {
  return {
      {"epoch", epoch},  {"at", epoch},         {"trained", epoch},     {"train_loss", 1.0},
      {"val_loss", 0.9}, {"val_accuracy", 0.5}, {"test_loss", nullptr}, {"test_accuracy", nullptr}};
}

class SweepStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Settings only, so the project's graph can stay empty: no trial runs.
    space_ = parse_search_space({"lr=log:0.001:0.01", "batch=choice:16,32"}, Graph());
    o_.trials = 4;
    o_.epochs = 3;
    o_.eta = 3;
    o_.min_epochs = 1;
    o_.n_startup = 2;
    o_.seed = 7;
    o_.baseline = false;
    // Rungs at epochs 1 and 3; a completed, a pruned, a running and a pending trial.
    state_ = {
        {"format", "deepcanvas-sweep"},
        {"version", 1},
        {"space", {"lr=log:0.001:0.01", "batch=choice:16,32"}},
        {"options",
         {{"trials", 4},
          {"epochs", 3},
          {"pruner", "asha"},
          {"eta", 3},
          {"min_epochs", 1},
          {"sampler", "tpe"},
          {"n_startup", 2},
          {"seed", 7},
          {"parallel", 1},
          {"val_split", 0.1},
          {"steps_per_epoch_limit", 0},
          {"baseline", false}}},
        {"trials",
         {{{"id", 0},
           {"x", {0.003, 1}},
           {"status", "completed"},
           {"metrics", {measurement(1), measurement(2), measurement(3)}}},
          {{"id", 1}, {"x", {0.002, 0}}, {"status", "pruned"}, {"metrics", {measurement(1)}}},
          {{"id", 2}, {"x", {0.005, 1}}, {"status", "running"}, {"metrics", {measurement(1)}}},
          {{"id", 3}, {"x", {0.004, 0}}, {"status", "pending"}, {"metrics", json::array()}}}}};
  }
  std::string path() const { return dir_.path("p.sweep.json"); }

  Sweep resume() { return Sweep(Project(), std::make_shared<TrainTest>(), space_, o_, path()); }

  // Writes the state with `edit` applied; a resume must refuse it with a
  // message holding `field` and leave the file byte for byte as it was.
  void expect_refused(const std::function<void(json&)>& edit, const std::string& field) {
    json j = state_;
    edit(j);
    write_file_atomic(path(), j.dump(1));
    const std::string before = read_file(path());
    std::string message;
    try {
      resume();
    } catch (const IoError& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(path() + ": " + field), std::string::npos)
        << "expected a refusal naming " << field << ", got: " << message;
    EXPECT_EQ(read_file(path()), before) << field;
  }

  test::TmpDir dir_;
  SearchSpace space_;
  SweepOptions o_;
  json state_;
};

TEST_F(SweepStateTest, AValidFileResumes) {
  write_file_atomic(path(), state_.dump(1));
  Sweep s = resume();
  EXPECT_TRUE(s.resumed());
  const SweepState st = s.state();
  ASSERT_EQ(st.trials.size(), 4u);
  EXPECT_EQ(st.trials[0].epochs.size(), 3u);
  EXPECT_EQ(st.trials[2].status, Trial::Status::Pending);  // running starts again
  EXPECT_TRUE(st.trials[2].epochs.empty());
  EXPECT_EQ(st.best(), 0);
  // What the tool writes reads back as the same state.
  const SweepState back = sweep_from_json(sweep_to_json(st, space_), "again");
  EXPECT_EQ(back.trials.size(), 4u);
  EXPECT_EQ(back.options, st.options);
}

TEST_F(SweepStateTest, AHugePendingTrialIdIsRefused) {
  expect_refused([](json& j) { j["trials"][3]["id"] = 1000000000000000000; }, "trials[3].id");
  expect_refused([](json& j) { j["trials"][3]["id"] = 2; },
                 "trials[3].id: must be 3 (trials are numbered in order), got 2");
  expect_refused([](json& j) { j["trials"][0]["id"] = -1; }, "trials[0].id");
}

TEST_F(SweepStateTest, ACompletedTrialWithoutMetricsIsRefused) {
  expect_refused([](json& j) { j["trials"][0]["metrics"] = json::array(); },
                 "trials[0].metrics: a completed trial needs at least one measurement");
  expect_refused([](json& j) { j["trials"][1]["metrics"] = json::array(); }, "trials[1].metrics");
  expect_refused([](json& j) { j["trials"][0].erase("metrics"); }, "trials[0].metrics: missing");
}

TEST_F(SweepStateTest, AParameterVectorOfTheWrongLengthIsRefused) {
  expect_refused([](json& j) { j["trials"][1]["x"] = {0.002}; },
                 "trials[1].x: holds 1 values for the 2 parameters");
  expect_refused([](json& j) { j["trials"][1]["x"] = json::array(); }, "trials[1].x");
  expect_refused([](json& j) { j["trials"][1]["x"] = {0.002, 0, 1}; }, "trials[1].x");
}

TEST_F(SweepStateTest, ACoordinateOutsideItsParameterIsRefused) {
  expect_refused([](json& j) { j["trials"][0]["x"][0] = 1e300; }, "trials[0].x[0]");
  expect_refused([](json& j) { j["trials"][0]["x"][1] = 2; }, "trials[0].x[1]");
  expect_refused([](json& j) { j["trials"][0]["x"][1] = 0.5; }, "trials[0].x[1]");
  expect_refused([](json& j) { j["trials"][0]["x"][0] = "0.003"; }, "trials[0].x[0]");
}

TEST_F(SweepStateTest, AnEpochBeyondAnIntIsRefused) {
  expect_refused([](json& j) { j["trials"][0]["metrics"][0]["epoch"] = 1e30; },
                 "trials[0].metrics[0].epoch: must be an integer in [1, 3], got 1e+30");
  expect_refused([](json& j) { j["trials"][0]["metrics"][0]["epoch"] = 2147483648LL; },
                 "trials[0].metrics[0].epoch");
  expect_refused([](json& j) { j["trials"][0]["metrics"][0]["at"] = 1e30; },
                 "trials[0].metrics[0].at");
}

TEST_F(SweepStateTest, TooManyTrialsAreRefusedByTheLimitNotReplayed) {
  // A million entries, refused on their count before any is read.
  expect_refused(
      [](json& j) {
        j["trials"] = json::array();
        for (int i = 0; i < 1000000; ++i) j["trials"].push_back(0);
      },
      "trials: holds 1000000 trials, more than options.trials (4)");
  expect_refused([](json& j) { j["options"]["trials"] = 1000000; },
                 "options.trials: must be an integer in [1, 100000]");
}

TEST_F(SweepStateTest, AHugeMetricsListIsRefusedAtItsFirstExtraMeasurement) {
  // Measurements lie at epoch ends or rungs, each later than the last, so a
  // trial holds at most epochs + rungs of them.
  expect_refused(
      [](json& j) {
        json& m = j["trials"][0]["metrics"];
        for (int i = 0; i < 10000; ++i) m.push_back(measurement(3));
      },
      "trials[0].metrics[3].at: 3 is not later than the measurement before it");
  expect_refused([](json& j) { j["trials"][0]["metrics"].push_back(measurement(4)); },
                 "trials[0].metrics[3].epoch");
  // A fraction of an epoch only where ASHA has a rung.
  expect_refused([](json& j) { j["trials"][0]["metrics"][0]["at"] = 0.5; },
                 "trials[0].metrics[0].at: 0.5 is neither");
}

TEST_F(SweepStateTest, OptionsAndFieldsOfTheWrongTypeOrRangeAreRefused) {
  expect_refused([](json& j) { j["options"]["eta"] = 1; }, "options.eta");
  expect_refused([](json& j) { j["options"]["seed"] = -1; }, "options.seed");
  expect_refused([](json& j) { j["options"]["pruner"] = "hyperband"; }, "options.pruner");
  expect_refused([](json& j) { j["options"]["min_epochs"] = "1"; }, "options.min_epochs");
  expect_refused([](json& j) { j["options"].erase("epochs"); }, "options.epochs: missing");
  expect_refused([](json& j) { j["trials"][0]["status"] = "done"; }, "trials[0].status");
  expect_refused([](json& j) { j["trials"][0]["metrics"][0]["val_accuracy"] = 7; },
                 "trials[0].metrics[0].val_accuracy");
  expect_refused([](json& j) { j["trials"][0]["error"] = 5; }, "trials[0].error");
  expect_refused([](json& j) { j["space"][0] = 5; }, "space[0]");
  expect_refused([](json& j) { j["trials"] = json::object(); }, "trials: must be a list");
  expect_refused([](json& j) { j["version"] = 2; }, "is not a DeepCanvas sweep state");
}

}  // namespace
}  // namespace dc
