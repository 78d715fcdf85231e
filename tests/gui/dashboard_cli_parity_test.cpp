// The app and deepcanvas-cli train alike (issue 31): the same project on a
// photo folder, with the same seed, gives the same losses and accuracies
// whichever of the two runs it, because both prepare the run with the
// engine's prepare_run() and train with its Trainer. One thread on both
// sides: a reduction's order then does not depend on the machine.
#include "dashboard_test_util.h"

#include <deepcanvas/project.h>
#include <deepcanvas/run_log.h>

#include <cstdio>

#include <QCoreApplication>
#include <QDirIterator>
#include <QImage>
#include <QPainter>
#include <QProcess>

namespace dc::test {
namespace {

// Three classes a small CNN can tell apart: a bright disc, a dark bar and
// a gradient, each drawn with seeded jitter on a noisy background.
void write_folder(const QString& root) {
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return int(state >> 24);
  };
  for (int c = 0; c < 3; ++c) {
    const QString dir = root + QString("/class%1").arg(c);
    QDir().mkpath(dir);
    for (int i = 0; i < 16; ++i) {
      QImage img(48 + next() % 24, 48 + next() % 24, QImage::Format_RGB888);
      for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x)
          img.setPixel(x, y, qRgb(next() / 2, next() / 2, next() / 2));
      QPainter p(&img);
      if (c == 0) {
        p.setBrush(QColor(230, 220, 40));
        p.drawEllipse(QPoint(img.width() / 2, img.height() / 2), 14, 14);
      } else if (c == 1) {
        p.fillRect(QRect(4 + next() % 8, 10, 10, img.height() - 20), QColor(20, 30, 200));
      } else {
        QLinearGradient g(0, 0, img.width(), 0);
        g.setColorAt(0, Qt::black);
        g.setColorAt(1, QColor(40, 220, 90));
        p.fillRect(img.rect().adjusted(6, 6, -6, -6), g);
      }
      p.end();
      ASSERT_TRUE(img.save(dir + QString("/p%1.png").arg(i)));
    }
  }
}

std::vector<TrainEvent> epochs_of(const QString& metrics) {
  RunLogReader r(metrics.toStdString());
  std::vector<TrainEvent> out;
  for (const TrainEvent& e : r.poll(true))
    if (e.kind == TrainEvent::Kind::Epoch) out.push_back(e);
  return out;
}

QString find_metrics(const QString& root) {
  QDirIterator it(root, {"metrics.jsonl"}, QDir::Files, QDirIterator::Subdirectories);
  return it.hasNext() ? it.next() : QString();
}

}  // namespace

TEST(DashboardCliParity, TheAppAndTheCliTrainAPhotoFolderToTheSameFigures) {
  const QString cli = QCoreApplication::applicationDirPath() + "/deepcanvas-cli";
  if (!QFileInfo(cli).isExecutable()) GTEST_SKIP() << "no deepcanvas-cli beside the tests";
  QTemporaryDir dir;
  // The benchmark's 64 px CNN, two epochs, on a small generated folder; or,
  // for the measurement in docs/BENCHMARKS.md, DC_PARITY_PROJECT on
  // DC_PARITY_DATA with their own settings.
  const QString project_env = qEnvironmentVariable("DC_PARITY_PROJECT");
  Project p =
      load_project(project_env.isEmpty() ? std::string(DC_SOURCE_DIR) + "/bench/image_cnn64.dcproj"
                                         : project_env.toStdString());
  if (project_env.isEmpty()) {
    write_folder(dir.path() + "/photos");
    p.dataset.path = (dir.path() + "/photos").toStdString();
    p.dataset.test_fraction = 0.25;
    p.graph.set_attr(p.graph.find_by_name("dense2")->id, "units", int64_t(3));  // three classes
    p.training.epochs = 2;
    p.training.batch = 8;
    p.training.seed = 7;
  } else {
    p.dataset.path = qEnvironmentVariable("DC_PARITY_DATA").toStdString();
  }
  p.training.threads = 1;
  const QString project = dir.path() + "/cnn64.dcproj";
  save_project(p, project.toStdString());

  QProcess run;
  run.start(cli, {"train", project, "--log-dir", dir.path() + "/cli", "--no-tensorboard"});
  ASSERT_TRUE(run.waitForFinished(600000));
  ASSERT_EQ(run.exitCode(), 0) << run.readAllStandardError().toStdString();
  const std::vector<TrainEvent> cli_epochs = epochs_of(find_metrics(dir.path() + "/cli"));

  auto ctx = gui::ProjectContext::load(project);
  gui::TrainingPanel panel(ctx.get());
  panel.setCheckpointDir(dir.path() + "/app");
  QSignalSpy done(panel.session(), &gui::TrainingSession::finished);
  panel.startTraining();
  ASSERT_TRUE(panel.problemText().isEmpty()) << panel.problemText().toStdString();
  ASSERT_TRUE(done.wait(600000));  // a bound for a stuck run, not a timing
  ASSERT_TRUE(done.first().at(0).toBool()) << panel.logText().toStdString();
  const std::vector<TrainEvent> app_epochs = epochs_of(find_metrics(dir.path() + "/app"));

  ASSERT_EQ(cli_epochs.size(), size_t(p.training.epochs));
  ASSERT_EQ(app_epochs.size(), cli_epochs.size());
  for (size_t e = 0; e < cli_epochs.size(); ++e) {
    std::printf("epoch %zu: CLI test accuracy %.4f loss %.6f, app %.4f loss %.6f\n", e + 1,
                cli_epochs[e].test_accuracy, cli_epochs[e].test_loss, app_epochs[e].test_accuracy,
                app_epochs[e].test_loss);
    EXPECT_DOUBLE_EQ(app_epochs[e].train_loss, cli_epochs[e].train_loss) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(app_epochs[e].test_loss, cli_epochs[e].test_loss) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(app_epochs[e].test_accuracy, cli_epochs[e].test_accuracy) << "epoch " << e + 1;
  }
  // It learned something, so equal figures are not two failures alike.
  if (project_env.isEmpty()) {
    EXPECT_GT(cli_epochs.back().test_accuracy, 0.5);
  }
}

}  // namespace dc::test
