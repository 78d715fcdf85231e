// End-to-end reliability of deepcanvas-cli (issue 17): a diverged or worse
// run never replaces a good checkpoint, Ctrl-C saves a resumable model and
// exits 130, and predict takes folders and names the file it cannot read.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/io.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"

namespace {

using namespace dc::e2e;

// A short run of the sample project (a few dozen steps) is a usable model.
class Trained : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new Tmp;
    ck_ = tmp_->path("base.safetensors");
    CliRun r =
        cli("train " + kSample + " --epochs 1 --steps-per-epoch 60 --quiet --checkpoint " + ck_);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  static inline Tmp* tmp_ = nullptr;
  static inline std::string ck_;
};

TEST_F(Trained, DivergedRunKeepsTheCheckpointAndFails) {
  Tmp t;
  std::string ck = t.path("model.safetensors");
  fs::copy_file(ck_, ck);
  const std::string before = dc::read_file(ck);
  // Adam with a learning rate of 5 blows the loss up by orders of magnitude
  // without reaching NaN.
  const std::string diverging =
      "train " + kSample + " --epochs 1 --steps-per-epoch 30 --lr 5 --quiet --checkpoint " + ck;
  CliRun r = cli(diverging);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("training diverged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--overwrite"), std::string::npos) << r.out;
  EXPECT_EQ(dc::read_file(ck), before) << "the good checkpoint was replaced";

  // Asked for explicitly, the diverged model is saved (and still reported).
  CliRun o = cli(diverging + " --overwrite");
  EXPECT_EQ(o.code, 1) << o.out;
  EXPECT_NE(o.out.find("training diverged"), std::string::npos) << o.out;
  EXPECT_NE(dc::read_file(ck), before);
}

TEST_F(Trained, AWorseModelIsWrittenBesideTheBetterOne) {
  Tmp t;
  std::string ck = t.path("model.safetensors");
  fs::copy_file(ck_, ck);
  const std::string before = dc::read_file(ck);
  // Two steps train far less than the sixty behind the existing model.
  CliRun r = cli("train " + kSample + " --epochs 1 --steps-per-epoch 2 --quiet --checkpoint " + ck);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("was kept"), std::string::npos) << r.out;
  EXPECT_EQ(dc::read_file(ck), before);
  std::string side = t.path("model.new.safetensors");
  ASSERT_TRUE(fs::exists(side)) << r.out;
  EXPECT_NO_THROW(dc::read_checkpoint(side));
}

TEST_F(Trained, PredictTakesAFolderAndNamesUnreadableImages) {
  Tmp t;
  fs::create_directories(t.path("imgs"));
  std::string img(28 * 28, '\0');
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<char>(i * 7);
  t.write("imgs/b.pgm", "P5\n28 28\n255\n" + img);
  t.write("imgs/a.pgm", "P5\n28 28\n255\n" + std::string(28 * 28, '\x80'));
  t.write("imgs/notes.txt", "not an image");
  CliRun r = cli("predict " + kSample + " --checkpoint " + ck_ + " " + t.path("imgs"));
  ASSERT_EQ(r.code, 0) << r.out;
  size_t a = r.out.find(t.path("imgs/a.pgm")), b = r.out.find(t.path("imgs/b.pgm"));
  ASSERT_NE(a, std::string::npos) << r.out;
  ASSERT_NE(b, std::string::npos) << r.out;
  EXPECT_LT(a, b) << "folder contents are predicted in name order";
  EXPECT_EQ(r.out.find("notes.txt"), std::string::npos) << r.out;

  fs::create_directories(t.path("empty"));
  CliRun e = cli("predict " + kSample + " --checkpoint " + ck_ + " " + t.path("empty"));
  EXPECT_EQ(e.code, 1);
  EXPECT_NE(e.out.find(t.path("empty") + ": is a directory with no image files"), std::string::npos)
      << e.out;

  // 40000 x 40000 pixels is above the pixel limit: its header alone is enough.
  std::string huge = t.write("huge.pgm", "P5\n40000 40000\n255\n" + img);
  CliRun h = cli("predict " + kSample + " --checkpoint " + ck_ + " " + huge);
  EXPECT_EQ(h.code, 1);
  EXPECT_NE(h.out.find("deepcanvas-cli: " + huge + ": cannot be read as an image"),
            std::string::npos)
      << h.out;
}

// Starts deepcanvas-cli with its output going to a file, so the test can
// watch its progress and signal it.
struct Child {
  pid_t pid = -1;
  std::string log;
};

Child spawn(const std::vector<std::string>& args, const std::string& log) {
  Child c;
  c.log = log;
  c.pid = fork();
  if (c.pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    std::string cli_path = DC_CLI;
    argv.push_back(cli_path.data());
    std::vector<std::string> copy = args;
    for (auto& s : copy) argv.push_back(s.data());
    argv.push_back(nullptr);
    execv(cli_path.c_str(), argv.data());
    _exit(127);
  }
  return c;
}

// Waits until the log contains `text` or the child has exited.
bool wait_for(const Child& c, const std::string& text) {
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    try {
      s = dc::read_file(c.log);
    } catch (...) {
    }
    if (s.find(text) != std::string::npos) return true;
    int st;
    if (waitpid(c.pid, &st, WNOHANG) == c.pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int exit_code(const Child& c) {
  int st = 0;
  waitpid(c.pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(CliInterrupt, CtrlCSavesAResumableModelAndExits130) {
  Tmp t;
  fs::create_directories(t.path("out"));
  Child c = spawn({"train", kSample, "--epochs", "1000", "--steps-per-epoch", "20", "--checkpoint",
                   t.path("out/model.safetensors")},
                  t.path("log"));
  ASSERT_TRUE(wait_for(c, "epoch 1/1000")) << dc::read_file(c.log);
  kill(c.pid, SIGINT);
  EXPECT_EQ(exit_code(c), 130) << dc::read_file(c.log);
  std::string log = dc::read_file(c.log);
  std::string saved = t.path("out/interrupted.safetensors");
  EXPECT_NE(log.find("SIGINT"), std::string::npos) << log;
  EXPECT_NE(log.find("--resume " + saved), std::string::npos) << log;
  ASSERT_TRUE(fs::exists(saved)) << log;
  EXPECT_FALSE(fs::exists(t.path("out/model.safetensors"))) << "an unfinished run is no result";
  dc::CheckpointInfo ck = dc::read_checkpoint(saved);
  EXPECT_GT(ck.step, 0);

  // It resumes where it stopped: one more epoch after the completed ones.
  CliRun r = cli("train " + kSample + " --quiet --steps-per-epoch 2 --resume " + saved +
                 " --epochs " + std::to_string(ck.epoch + 1));
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(CliInterrupt, SigtermStopsLikeCtrlCAndASecondSignalExitsAtOnce) {
  Tmp t;
  Child c = spawn({"train", kSample, "--epochs", "1000", "--steps-per-epoch", "20",
                   "--checkpoint-dir", t.path("ckpts")},
                  t.path("log"));
  ASSERT_TRUE(wait_for(c, "epoch 1/1000")) << dc::read_file(c.log);
  kill(c.pid, SIGTERM);
  kill(c.pid, SIGTERM);
  EXPECT_EQ(exit_code(c), 130) << dc::read_file(c.log);
  // Whatever the second signal interrupted, no partial file is left behind.
  for (const auto& e : fs::directory_iterator(t.path("ckpts")))
    EXPECT_EQ(e.path().extension(), ".safetensors") << e.path();
}

}  // namespace
