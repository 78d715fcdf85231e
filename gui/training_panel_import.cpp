// File > Open Run...: a run an exported train.py wrote, read back from its
// metrics.jsonl into the plots and the Runs table, followed while it grows.
#include <deepcanvas/errors.h>

#include <QDir>
#include <QFileInfo>
#include <QTableWidget>
#include <cmath>

#include "gui/run_follower.h"
#include "gui/run_history.h"
#include "gui/training_panel.h"
#include "gui/training_plots.h"

namespace dc::gui {

QString TrainingPanel::openRun(const QString& dir) {
  return beginImport(dir, false);
}

QString TrainingPanel::followRun(const QString& dir) {
  return beginImport(dir, true);
}

QString TrainingPanel::beginImport(const QString& dir, bool wait) {
  const QString metrics = QDir(dir).filePath("metrics.jsonl");
  const bool there = QFileInfo(metrics).isFile();
  if (!there && !wait)
    return tr("%1 has no metrics.jsonl; choose a run's own folder (one the app, deepcanvas-cli "
              "train or an exported train.py wrote)")
        .arg(QDir::toNativeSeparators(dir));
  if (session_->active()) return tr("a run is training here; open the run when it has ended");
  // A run that cannot be read leaves the one being followed alone.
  std::vector<TrainEvent> first;
  std::unique_ptr<RunLogReader> reader;
  try {
    reader = RunFollower::open(dir, first);
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  if (follower_->active()) stopFollowingRun(tr("no longer followed (another run opened)"));
  follower_->begin(std::move(reader), dir);
  ++run_;
  best_epoch_.clear();
  plots_->startRun(run_, -1, /*sample_device=*/false);  // this machine says nothing of it
  plots_->setEpochScores(true, true);                   // whichever its metrics have
  import_row_ =
      history_->addRun(run_,
                       follower_->waiting() ? tr("imported: waiting for metrics.jsonl")
                                            : tr("imported: %1").arg(follower_->summary()),
                       follower_->dir());
  appendLog(tr("Run %1: opened %2").arg(run_).arg(QDir::toNativeSeparators(follower_->dir())));
  // The first lines are already read; feed them through the same path.
  const bool ended = showImportedEvents(first);
  if (!ended) {
    follower_->watch();
    history_->setCell(import_row_, RunHistory::kResult, tr("following"));
  }
  pollImportedRun();  // reports warnings, and ends the following of an ended run
  return {};
}

bool TrainingPanel::followingRun() const {
  return follower_->active();
}

void TrainingPanel::pollImportedRun() {
  readImportedRun(false);
}

void TrainingPanel::endFollowedRun(const QString& dir, const QString& result) {
  if (!follower_->active() || QDir(dir).absolutePath() != follower_->dir()) return;
  if (follower_->fileExists()) readImportedRun(true);  // a last line without its newline counts now
  stopFollowingRun(result);                            // nothing when the run's end line was read
}

bool TrainingPanel::showImportedEvents(std::vector<TrainEvent>& events) {
  QVector<TrainEvent> steps;
  auto flush = [&] {
    if (!steps.isEmpty()) plots_->addSteps(steps);
    steps.clear();
  };
  bool ended = false;
  for (TrainEvent& e : events) {
    if (e.kind == TrainEvent::Kind::Step) {
      steps.push_back(std::move(e));
      continue;
    }
    flush();
    if (e.kind == TrainEvent::Kind::Epoch) onEpoch(e);
    ended = ended || e.kind == TrainEvent::Kind::Finished;
  }
  flush();
  return ended;
}

void TrainingPanel::readImportedRun(bool final) {
  if (!follower_->active()) return;
  std::vector<TrainEvent> events;
  try {
    events = follower_->read(final);
  } catch (const std::exception& e) {
    stopFollowingRun(QString::fromUtf8(e.what()));
    return;
  }
  showImportedEvents(events);
  if (follower_->takeSummary())
    history_->setCell(import_row_, RunHistory::kSettings,
                      tr("imported: %1").arg(follower_->summary()));
  for (const QString& w : follower_->newWarnings()) {
    appendLog(tr("Warning: %1").arg(w));
    Q_EMIT message(w);
  }
  if (follower_->finished()) stopFollowingRun(tr("finished (imported)"));
}

void TrainingPanel::stopFollowingRun(const QString& result) {
  if (!follower_->active()) return;
  const QString dir = follower_->dir();
  follower_->stop();
  history_->setCell(import_row_, RunHistory::kResult, result);
  // Its checkpoints, for the Inference tab (and `deepcanvas-cli eval`).
  QVector<RunCheckpoint> offered;
  const int run = history_->runOf(import_row_);
  for (const auto& [file, label] :
       {std::pair{QStringLiteral("best.safetensors"), tr("Run %1 (imported): best")},
        std::pair{QStringLiteral("last.safetensors"), tr("Run %1 (imported): last epoch")}}) {
    const QString path = QDir(dir).filePath(file);
    if (QFileInfo::exists(path)) offered.push_back({run, label.arg(run), path});
  }
  if (!offered.isEmpty()) ctx_->addRunCheckpoints(offered);
  appendLog(tr("Run %1 (%2): %3").arg(run).arg(QDir::toNativeSeparators(dir), result));
  import_row_ = -1;
}

}  // namespace dc::gui
