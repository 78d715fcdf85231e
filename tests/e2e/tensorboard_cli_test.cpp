// deepcanvas-cli train's run log (issue 35): --log-dir, --no-tensorboard,
// the default run folder, and an unwritable folder that does not stop the run.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "cli_util.h"

namespace dc::e2e {
namespace {

int event_files(const fs::path& dir) {
  int n = 0;
  if (!fs::is_directory(dir)) return 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    n += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  return n;
}

const std::string kQuick = " --epochs 1 --steps-per-epoch 3 --threads 2 ";

TEST(CliTensorBoard, LogDirGetsTheMetricsAndTheEventFile) {
  Tmp t;
  CliRun r = cli("train " + kSample + kQuick + "--log-dir " + t.path("run"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(t.path("run/metrics.jsonl"))) << r.out;
  EXPECT_EQ(event_files(t.path("run")), 1) << r.out;
  EXPECT_NE(r.out.find("run log: " + t.path("run")), std::string::npos) << r.out;

  CliRun off =
      cli("train " + kSample + kQuick + "--quiet --no-tensorboard --log-dir " + t.path("off"));
  ASSERT_EQ(off.code, 0) << off.out;
  EXPECT_TRUE(fs::exists(t.path("off/metrics.jsonl")));
  EXPECT_EQ(event_files(t.path("off")), 0);
}

// Without --log-dir: a new folder in the runs folder, none in the
// checkpoint folder (which holds checkpoints only).
TEST(CliTensorBoard, ByDefaultARunGoesToTheRunsFolder) {
  Tmp t;
  CliRun r = cli_command("XDG_DATA_HOME=" + t.path("data") + " " + DC_CLI + " train " + kSample +
                         kQuick + "--quiet --checkpoint-dir " + t.path("ck"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(event_files(t.path("data/DeepCanvas/runs")), 1) << r.out;
  EXPECT_EQ(event_files(t.path("ck")), 0);
  EXPECT_FALSE(fs::exists(t.path("ck/metrics.jsonl")));
}

TEST(CliTensorBoard, AnUnwritableLogFolderIsSaidOnceAndTheRunFinishes) {
  Tmp t;
  const std::string file = t.write("a-file", "not a folder");
  CliRun r = cli("train " + kSample + kQuick + "--quiet --log-dir " + file + "/run");
  EXPECT_EQ(r.code, 0) << r.out;
  size_t said = 0;
  for (size_t at = 0; (at = r.out.find("training goes on", at)) != std::string::npos; ++at) ++said;
  EXPECT_EQ(said, 2u) << r.out;  // metrics.jsonl and the event file, each once
  EXPECT_NE(r.out.find("test accuracy"), std::string::npos) << r.out;
}

// TensorBoard's HParams data of a 4-trial sweep, read by TensorBoard itself
// (PyPI's tensorboard, in the environment installer/verify-venv.sh makes).
TEST(CliTensorBoard, ASweepsTrialsAreHParamsSessions) {
  const char* env = std::getenv("DC_VERIFY_VENV");
  const std::string venv = env ? env : src(".venv-verify");
  const std::string python = venv + "/bin/python";
  if (!fs::exists(python) || cli_command(python + " -c 'import tensorboard'").code != 0)
    GTEST_SKIP() << "tensorboard is not installed in " << venv
                 << ": run installer/verify-venv.sh (downloads it from PyPI)";
  Tmp t;
  CliRun r = cli("sweep " + kSample +
                 " --param lr=log:1e-4:1e-2 --param batch=choice:32,64 --trials 4 --epochs 2 "
                 "--steps-per-epoch 3 --threads 2 --quiet --state " +
                 t.path("s.json") + " --log-dir " + t.path("hp"));
  ASSERT_EQ(r.code, 0) << r.out;
  CliRun check = cli_command(python + " " + src("tests/e2e/tensorboard_sweep_check.py") + " " +
                             t.path("hp") + " " + t.path("s.json"));
  EXPECT_EQ(check.code, 0) << check.out;
  EXPECT_NE(check.out.find("4 sessions, 4 trials"), std::string::npos) << check.out;
}

}  // namespace
}  // namespace dc::e2e

namespace dc::e2e {
namespace {

// SIGKILL in the middle of an epoch: the event file reads with TensorBoard's
// reader, without data-loss errors, and agrees with metrics.jsonl.
TEST(CliTensorBoard, ARunKilledMidEpochStillReads) {
  const char* env = std::getenv("DC_VERIFY_VENV");
  const std::string venv = env ? env : src(".venv-verify");
  const std::string python = venv + "/bin/python";
  if (!fs::exists(python) || cli_command(python + " -c 'import tensorboard'").code != 0)
    GTEST_SKIP() << "tensorboard is not installed in " << venv
                 << ": run installer/verify-venv.sh (downloads it from PyPI)";
  Tmp t;
  const std::string dir = t.path("run");
  CliRun started = cli_command(std::string(DC_CLI) + " train " + kSample +
                               " --epochs 50 --threads 2 --quiet --log-dir " + dir + " > " +
                               t.path("log") + " 2>&1 & echo $!");
  const int pid = std::atoi(started.out.c_str());
  ASSERT_GT(pid, 0) << started.out;
  // Five steps into the first epoch (the sample's has 157).
  int steps = 0;
  for (int i = 0; i < 600 && steps < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream f(dir + "/metrics.jsonl");
    std::string line;
    steps = 0;
    while (std::getline(f, line)) steps += line.find("\"kind\":\"step\"") != std::string::npos;
  }
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(steps, 5) << read_file(t.path("log"));
  CliRun check = cli_command(python + " " + src("tests/engine/tensorboard_check.py") + " " + dir +
                             " --killed");
  EXPECT_EQ(check.code, 0) << check.out;
}

}  // namespace
}  // namespace dc::e2e
