#pragma once
// Shared by the dashboard tests: the sample project, a scratch folder, and
// one short training run whose checkpoint several tests use (training once
// keeps the suite quick on a 2-core CI machine).
#include "gui/project_context.h"
#include "gui/training_panel.h"

#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QString>
#include <QTemporaryDir>
#include <memory>
#include <vector>

namespace dc::test {

inline QString sample_project_path() {
  return QString(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj";
}

// The sample project with the bundled Fashion-MNIST subset loaded.
inline std::unique_ptr<gui::ProjectContext> sample_context() {
  auto ctx = gui::ProjectContext::load(sample_project_path());
  gui::DatasetSource s;
  s.kind = gui::DatasetSource::Kind::Sample;
  ctx->loadDataset(s);
  return ctx;
}

// A short run (1 epoch of `steps` steps) from the TrainingPanel, waited for
// with QSignalSpy. Returns whether it finished.
inline bool train_briefly(gui::TrainingPanel& panel, const QString& dir, int steps) {
  panel.setEpochs(1);
  panel.setStepsPerEpochLimit(steps);
  panel.setBatch(64);
  panel.setCheckpointDir(dir);
  QSignalSpy done(panel.session(), &gui::TrainingSession::finished);
  panel.startTraining();
  if (!panel.problemText().isEmpty()) {
    ADD_FAILURE() << panel.problemText().toStdString();
    return false;
  }
  // Generous: a bound for a stuck run, not a timing check.
  if (!done.wait(600000)) return false;
  return done.first().at(0).toBool();
}

// The off-diagonal cell of a confusion matrix with the most samples, as
// {true class, predicted class, count}; count 0 when there is no mistake.
struct Mistake {
  int truth = -1, guess = -1;
  int64_t count = 0;
};
inline Mistake busiest_mistake(const std::vector<std::vector<int64_t>>& m) {
  Mistake b;
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t j = 0; j < m[i].size(); ++j)
      if (i != j && m[i][j] > b.count) b = {int(i), int(j), m[i][j]};
  return b;
}

// The checkpoint of one trained run, made on first use and shared.
struct TrainedRun {
  QTemporaryDir dir;
  QString checkpoint;
  bool ok = false;
  static TrainedRun& get() {
    static std::unique_ptr<TrainedRun> r = [] {
      auto t = std::make_unique<TrainedRun>();
      auto ctx = sample_context();
      gui::TrainingPanel panel(ctx.get());
      t->ok = train_briefly(panel, t->dir.path(), 80);
      t->checkpoint = panel.session()->lastCheckpoint();
      return t;
    }();
    return *r;
  }
};

}  // namespace dc::test
