// The app refuses a run for the same reasons as the CLI, both through the
// engine's prepare_run(): the Training tab words the engine's problem for
// the app (where to fix it, no CLI flag), the CLI for its flags. Named
// dashboard_* so tests/CMakeLists.txt's glob builds it into dashboard_tests.
#include <deepcanvas/prepare_run.h>

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>

#include "dashboard_test_util.h"
#include "gui/training_panel.h"

using namespace dc;

namespace {

// Below a regular file no folder can be created, not even by root (the
// tests may run as root, for whom permissions do not stop a write).
QString blocked_folder(const QTemporaryDir& tmp) {
  QFile f(tmp.path() + "/a-file");
  EXPECT_TRUE(f.open(QIODevice::WriteOnly));
  f.write("x");
  return tmp.path() + "/a-file/runs";
}

// deepcanvas-cli beside this test binary (the build's bin/), run on the
// sample project with `args`; its stdout and stderr together.
QString run_cli(const QStringList& args, const QString& cwd, int* code) {
  const QString cli = QCoreApplication::applicationDirPath() + "/deepcanvas-cli";
  EXPECT_TRUE(QFileInfo::exists(cli)) << cli.toStdString() << " not built";
  QProcess proc;
  proc.setWorkingDirectory(cwd);
  proc.setProcessChannelMode(QProcess::MergedChannels);
  proc.start(cli, QStringList{"train", test::sample_project_path()} + args);
  // A bound for a stuck process, not a timing check: both refusals come
  // before any data is read.
  EXPECT_TRUE(proc.waitForFinished(300000));
  *code = proc.exitCode();
  return QString::fromUtf8(proc.readAll());
}

const RunProblem* blocking(const PreparedRun& r) {
  const RunProblem* b = r.first_blocking();
  EXPECT_NE(b, nullptr);
  return b;
}

}  // namespace

TEST(Prep31AppRefusal, AnUnwritableCheckpointFolderIsRefusedInTheAppsWords) {
  auto ctx = test::sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir tmp;
  const QString folder = blocked_folder(tmp);
  panel.setCheckpointDir(folder);
  panel.startTraining();
  EXPECT_FALSE(panel.session()->active());
  const QString text = panel.problemText();
  EXPECT_TRUE(text.contains("The checkpoint folder " + folder)) << text.toStdString();
  EXPECT_TRUE(text.contains("Training tab's Checkpoints box")) << text.toStdString();
  EXPECT_FALSE(text.contains("--")) << text.toStdString();

  // The engine's structured problem behind it.
  gui::AppRunCheck check;
  check.checkpoint_folder = folder.toStdString();
  const PreparedRun r = ctx->prepareRun(panel.config(), check);
  const RunProblem* b = blocking(r);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->kind, RunProblem::Kind::Output);
  EXPECT_EQ(b->subject, "checkpoint folder");
  EXPECT_TRUE(text.contains(QString::fromStdString(b->reason))) << text.toStdString();

  // A writable folder: the run starts.
  panel.setCheckpointDir(tmp.path() + "/runs");
  panel.setEpochs(1);
  panel.setStepsPerEpochLimit(1);
  panel.setBatch(8);
  panel.startTraining();
  EXPECT_TRUE(panel.problemText().isEmpty()) << panel.problemText().toStdString();
  EXPECT_TRUE(panel.session()->active());
  panel.session()->stopAndWait();
}

TEST(Prep31AppRefusal, ABatchThatDoesNotFitMemoryIsRefusedInTheAppsWords) {
  auto ctx = test::sample_context();
  gui::TrainingPanel panel(ctx.get());
  QTemporaryDir tmp;
  panel.setCheckpointDir(tmp.path());
  panel.setBatch(1'000'000);
  panel.startTraining();
  EXPECT_FALSE(panel.session()->active());
  const QString text = panel.problemText();
  EXPECT_TRUE(text.contains("Training at batch 1000000 needs about")) << text.toStdString();
  EXPECT_TRUE(text.contains("Lower the batch size in the Training tab")) << text.toStdString();
  EXPECT_FALSE(text.contains("--")) << text.toStdString();
  // The Dataset tab's list says the same before a run is tried.
  TrainConfig c = panel.config();
  const QStringList problems = ctx->trainingProblems(c);
  ASSERT_FALSE(problems.isEmpty());
  EXPECT_TRUE(problems.front().contains("needs about")) << problems.front().toStdString();
}

// The same project and settings: the Training tab's refusal and the CLI's
// preflight are the same problem kind with the same engine sentence, each
// with its own remedy.
TEST(Prep31AppRefusal, TheTrainingTabAndTheCliRefuseTheSameProblem) {
  auto ctx = test::sample_context();
  QTemporaryDir tmp;
  const QString folder = blocked_folder(tmp);

  // Memory.
  TrainConfig c = ctx->project().training;
  c.batch = 1'000'000;
  const PreparedRun mem = ctx->prepareRun(c, {});
  const RunProblem* m = blocking(mem);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->kind, RunProblem::Kind::Memory);
  const QString app_mem = gui::appProblemText(*m);
  int code = 0;
  QString cli = run_cli({"--batch", "1000000"}, tmp.path(), &code);
  EXPECT_NE(code, 0) << cli.toStdString();
  // The sentence up to the numbers, which the free memory moves between
  // the two processes.
  const QString head = "training at batch 1000000 needs about";
  EXPECT_TRUE(cli.contains(head)) << cli.toStdString();
  EXPECT_TRUE(app_mem.contains(head, Qt::CaseInsensitive)) << app_mem.toStdString();
  EXPECT_TRUE(cli.contains("Lower --batch")) << cli.toStdString();  // the CLI's Memory remedy
  EXPECT_FALSE(app_mem.contains("--")) << app_mem.toStdString();

  // An output folder that cannot be made.
  gui::AppRunCheck check;
  check.checkpoint_folder = folder.toStdString();
  const PreparedRun out = ctx->prepareRun(ctx->project().training, check);
  const RunProblem* o = blocking(out);
  ASSERT_NE(o, nullptr);
  ASSERT_EQ(o->kind, RunProblem::Kind::Output);
  const QString app_out = gui::appProblemText(*o);
  cli = run_cli({"--checkpoint-dir", folder}, tmp.path(), &code);
  EXPECT_NE(code, 0) << cli.toStdString();
  EXPECT_TRUE(cli.contains("--checkpoint-dir " + folder + ": cannot create the folder"))
      << cli.toStdString();
  EXPECT_TRUE(cli.contains(QString::fromStdString(o->reason))) << cli.toStdString();
  EXPECT_TRUE(cli.contains("Nothing was trained")) << cli.toStdString();  // the CLI's Output remedy
  EXPECT_TRUE(app_out.contains(QString::fromStdString(o->reason))) << app_out.toStdString();
  EXPECT_FALSE(app_out.contains("--")) << app_out.toStdString();
}

// A setting the engine names by its key reads as the Training tab's label.
TEST(Prep31AppRefusal, SettingKeysReadAsTheTrainingTabsLabels) {
  RunProblem p{RunProblem::Kind::Settings,
               "the checkpoint has 3 epochs; ask for more than that (training.epochs)"};
  const QString text = gui::appProblemText(p);
  EXPECT_FALSE(text.contains("training.epochs")) << text.toStdString();
  EXPECT_TRUE(text.contains(QString::fromUtf8("the Training tab's \u201cepochs\u201d")))
      << text.toStdString();
  EXPECT_TRUE(text.startsWith("The checkpoint")) << text.toStdString();
  RunProblem dotted{RunProblem::Kind::Settings, "beta1 (training.optimizer.beta1) is too large"};
  const QString d = gui::appProblemText(dotted);
  EXPECT_FALSE(d.contains("training.")) << d.toStdString();
  EXPECT_FALSE(d.contains(QString::fromUtf8("\u201d.beta1"))) << d.toStdString();
}
