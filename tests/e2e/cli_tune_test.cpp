// deepcanvas-cli lr-find, batch-fit and sweep end to end on the sample
// project, with few steps per epoch so they stay quick.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/project.h>

#include "cli_util.h"

namespace dc::e2e {
namespace {

// The sample project with a narrower network (conv 8/8, dense 16), so that
// its trials cost little; the data stays the bundled subset.
std::string small_project(const Tmp& t) {
  std::string text = replaced(sample_text(), "\"filters\": 32", "\"filters\": 8");
  text = replaced(text, "\"filters\": 64", "\"filters\": 8");
  return project_in(t, replaced(text, "\"units\": 128", "\"units\": 16"));
}

TEST(CliTune, LrFindPrintsASuggestionAndLeavesTheProjectAlone) {
  Tmp t;
  const std::string proj = small_project(t);
  const std::string before = dc::read_file(proj);
  CliRun r = cli("lr-find " + proj + " --json --steps 30 --start 1e-5 --end 1");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  ASSERT_TRUE(j.contains("suggested_lr")) << r.out;
  const double lr = j["suggested_lr"];
  EXPECT_GT(lr, 1e-6);
  EXPECT_LT(lr, 1.0);
  EXPECT_EQ(j["lr"].size(), j["smoothed_loss"].size());
  EXPECT_EQ(j["rule"], "min_loss_lr / 10");
  EXPECT_EQ(dc::read_file(proj), before);
  CliRun bad = cli("lr-find " + proj + " --start 1 --end 0.1");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("must be positive and below the end"), std::string::npos) << bad.out;
}

TEST(CliTune, BatchFitGivesTheLargestBatchAndTheScaledLearningRates) {
  CliRun r = cli("batch-fit " + kSample + " --to 256 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  EXPECT_GT(j["max_batch"].get<int64_t>(), 256);
  EXPECT_EQ(j["new_batch"], 256);
  EXPECT_NEAR(j["linear_lr"].get<double>(), 0.003 * 4, 1e-12);
  EXPECT_NEAR(j["sqrt_lr"].get<double>(), 0.003 * 2, 1e-12);
  EXPECT_GT(j["warmup_steps"].get<int64_t>(), 0);
}

TEST(CliTune, SweepRecordsTrialsResumesAndRefusesBadSpaces) {
  Tmp t;
  const std::string proj = small_project(t);
  const std::string cmd = "sweep " + proj +
                          " --trials 3 --epochs 2 --steps-per-epoch 3 --seed 1 --json"
                          " --param lr=log:1e-4:1e-2 --param batch=choice:32,64"
                          " --param conv1.filters=int:4:8 --pruner asha --sampler tpe";
  CliRun r = cli(cmd);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  ASSERT_EQ(j["trials"].size(), 3u);
  for (auto& tr : j["trials"]) {
    EXPECT_TRUE(tr["params"].contains("lr"));
    EXPECT_TRUE(tr["params"].contains("conv1.filters"));
    const std::string st = tr["status"];
    EXPECT_TRUE(st == "completed" || st == "pruned" || st == "failed") << st;
    EXPECT_FALSE(tr["metrics"].empty());
  }
  ASSERT_FALSE(j["best"].is_null());
  EXPECT_TRUE(fs::exists(t.path("p.sweep.json")));
  // The best trial's trained weights are kept beside the state, naming it.
  const std::string weights = t.path("p.sweep.best.safetensors");
  EXPECT_EQ(j["best_weights"], weights);
  EXPECT_EQ(dc::read_checkpoint(weights).sweep_trial, j["best"]["id"].get<int>());
  // The same command again continues the recorded sweep: nothing left to run.
  CliRun again = cli(cmd);
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(last_json_line(again.out)["trials"], j["trials"]);
  const std::string best_project = t.path("best.dcproj");
  CliRun text = cli(replaced(cmd, " --json", " --save-best " + best_project));
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("best trial's weights: " + weights), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the project with the best trial's values: " + best_project),
            std::string::npos)
      << text.out;
  // The two go together: the weights evaluate on the written project (the
  // best trial's conv1.filters may differ from the project's).
  const Project written = load_project(best_project);
  EXPECT_EQ(written.graph.find_by_name("conv1")->attrs.i("filters"),
            j["best"]["params"]["conv1.filters"].get<int64_t>());
  CliRun ev = cli("eval " + best_project + " --checkpoint " + weights + " --json");
  ASSERT_EQ(ev.code, 0) << ev.out;
  // The trial's own test figure; a few samples of slack for argmax ties
  // under another batch size's arithmetic.
  EXPECT_NEAR(last_json_line(ev.out)["test_accuracy"].get<double>(),
              j["best"]["test_accuracy"].get<double>(), 0.005)
      << ev.out;
  // Other options are another sweep.
  CliRun other = cli(replaced(cmd, "--trials 3", "--trials 5"));
  EXPECT_EQ(other.code, 1);
  EXPECT_NE(other.out.find("--fresh"), std::string::npos) << other.out;

  struct Bad {
    std::string param, expect;
  };
  for (const Bad& b : std::vector<Bad>{
           {"lr=log:1e-2:1e-4", "empty range"},
           {"weight-decay=log:0:0.1", "log range must be above 0"},
           {"conv1.filtrs=int:4:8", "did you mean 'conv1.filters'"},
           {"batch=int:0:64", "outside what batch takes"},
       }) {
    CliRun e = cli("sweep " + proj + " --fresh --trials 1 --param " + b.param);
    EXPECT_EQ(e.code, 1) << b.param;
    EXPECT_NE(e.out.find(b.expect), std::string::npos) << e.out;
  }
}

// A batch from a flag gets the memory check train makes: a million samples
// of the sample CNN need hundreds of GiB, and each command refuses them
// before allocating (they once grew to gigabytes and died with bad_alloc).
TEST(CliTune, ABatchFromAFlagThatCannotFitIsRefusedBeforeAllocating) {
  Tmp t;
  CliRun lr = cli("lr-find " + kSample + " --batch 1000000");
  EXPECT_EQ(lr.code, 1) << lr.out;
  EXPECT_NE(lr.out.find("the LR range test at batch 1000000 needs about"), std::string::npos)
      << lr.out;
  EXPECT_NE(lr.out.find("Lower --batch"), std::string::npos) << lr.out;
  const std::string state = t.path("p.sweep.json");
  CliRun sweep = cli("sweep " + kSample + " --param batch=choice:32,1000000 --trials 2 --state " +
                     state + " --quiet");
  EXPECT_EQ(sweep.code, 1) << sweep.out;
  EXPECT_NE(sweep.out.find("a sweep trial at batch 1000000 needs about"), std::string::npos)
      << sweep.out;
  EXPECT_NE(sweep.out.find("--param batch=choice:32,1000000"), std::string::npos) << sweep.out;
  EXPECT_FALSE(fs::exists(state));
  CliRun profile = cli("advise " + kSample + " --profile --batch 1000000");
  EXPECT_EQ(profile.code, 1) << profile.out;
  EXPECT_NE(profile.out.find("profiling at batch 1000000 needs about"), std::string::npos)
      << profile.out;
}

}  // namespace
}  // namespace dc::e2e
